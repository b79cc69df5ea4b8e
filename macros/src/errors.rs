//! Every error of one expansion, collected in one place with its span (`syn::Error::combine`), so
//! a user sees all independent mistakes at once.

use proc_macro2::Span;

/// Where something comes from: the most specific token (the op name or operator) for generated
/// code and compiler checks, and the whole user expression for the macro's own errors.
#[derive(Clone)]
pub(crate) struct Site {
    pub(crate) span: Span,
    /// The spans of the expression's first and last tokens (what `syn::Error::new_spanned`
    /// underlines), when it is more than its key token.
    ends: Option<(Span, Span)>,
}

/// The spans of the first and last tokens of `tokens` (the call site for none).
fn token_ends(tokens: proc_macro2::TokenStream) -> (Span, Span) {
    let mut iter = tokens.into_iter();
    let start = iter.next().map_or_else(Span::call_site, |t| t.span());
    let end = iter.last().map_or(start, |t| t.span());
    (start, end)
}

/// The spans of `expr`'s first and last tokens, read off its syntax tree for the forms a model
/// writes (every node of a model has a site, so printing each expression's tokens — nested ones
/// again for every level, every loop iteration again — was the macro's largest cost); printed
/// for the others. The same spans as [`token_ends`] of its tokens.
fn expr_ends(expr: &syn::Expr) -> (Span, Span) {
    use syn::Expr;
    let group = |d: &proc_macro2::extra::DelimSpan| d.join();
    match expr {
        Expr::Binary(b) if b.attrs.is_empty() => (expr_ends(&b.left).0, expr_ends(&b.right).1),
        Expr::Call(c) if c.attrs.is_empty() => (expr_ends(&c.func).0, group(&c.paren_token.span)),
        Expr::MethodCall(m) if m.attrs.is_empty() => (expr_ends(&m.receiver).0, group(&m.paren_token.span)),
        Expr::Index(i) if i.attrs.is_empty() => (expr_ends(&i.expr).0, group(&i.bracket_token.span)),
        Expr::Paren(p) if p.attrs.is_empty() => (group(&p.paren_token.span), group(&p.paren_token.span)),
        Expr::Lit(l) if l.attrs.is_empty() => (l.lit.span(), l.lit.span()),
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() && p.path.leading_colon.is_none() => {
            match (p.path.segments.first(), p.path.segments.last()) {
                (Some(first), Some(last)) if last.arguments.is_none() => (first.ident.span(), last.ident.span()),
                _ => token_ends(quote::ToTokens::to_token_stream(expr)),
            }
        }
        _ => token_ends(quote::ToTokens::to_token_stream(expr)),
    }
}

impl Site {
    /// The site of `expr`, whose key token is at `span`.
    pub(crate) fn new(span: Span, expr: &impl quote::ToTokens) -> Self {
        Site { span, ends: Some(token_ends(expr.to_token_stream())) }
    }

    /// [`new`](Self::new) for an expression, its ends read off its syntax tree.
    pub(crate) fn of(span: Span, expr: &syn::Expr) -> Self {
        Site { span, ends: Some(expr_ends(expr)) }
    }

    /// The site of the whole expression: [`of`](Self::of) at the span `syn`'s `Spanned::span`
    /// gives it (its first token's span joined to its last's where the compiler joins spans, else
    /// the first's), without printing it.
    pub(crate) fn whole(expr: &syn::Expr) -> Self {
        let (start, end) = expr_ends(expr);
        Site { span: start.join(end).unwrap_or(start), ends: Some((start, end)) }
    }

    /// A site that is one span.
    pub(crate) fn span_only(span: Span) -> Self {
        Site { span, ends: None }
    }
}

/// The errors found so far, and the context put in front of each new one (the loop iteration
/// being lowered, `in iteration i = 3 of `for i in 0..4`: `).
#[derive(Default)]
pub(crate) struct Errors {
    all: Option<syn::Error>,
    count: usize,
    pub(crate) prefix: String,
}

impl Errors {
    fn add(&mut self, e: syn::Error) {
        self.count += 1;
        match &mut self.all {
            Some(all) => all.combine(e),
            None => self.all = Some(e),
        }
    }

    /// How many errors were reported.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// An error at one span.
    pub(crate) fn at(&mut self, span: Span, message: impl core::fmt::Display) {
        let e = syn::Error::new(span, format!("{}{message}", self.prefix));
        self.add(e);
    }

    /// An error made elsewhere (its message gets the current prefix).
    pub(crate) fn push(&mut self, e: syn::Error) {
        if self.prefix.is_empty() {
            self.add(e);
        } else {
            for one in e {
                let e = syn::Error::new(one.span(), format!("{}{one}", self.prefix));
                self.add(e);
            }
        }
    }

    /// An error underlining the whole site.
    pub(crate) fn at_site(&mut self, site: &Site, message: impl core::fmt::Display) {
        match site.ends {
            Some((start, end)) => {
                // Two tokens at the two ends: `new_spanned` underlines from the first to the last.
                let ends: proc_macro2::TokenStream =
                    [proc_macro2::Ident::new("start", start), proc_macro2::Ident::new("end", end)]
                        .into_iter()
                        .map(proc_macro2::TokenTree::from)
                        .collect();
                let e = syn::Error::new_spanned(ends, format!("{}{message}", self.prefix));
                self.add(e);
            }
            None => self.at(site.span, message),
        }
    }

    /// `Ok` when nothing was reported, else every error combined.
    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.all.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_s_ends_are_its_first_and_last_tokens() {
        let at = |s: Span| (s.start(), s.end());
        for src in [
            "tanh(h * a[i] + b[i])",
            "x.matmul(w[i + 1]).relu()",
            "-(a + b) * 0.5",
            "layer_norm(x, g, b, eps = 1e-5)",
            "h",
            "w[2]",
            "mod_a::f(x)",
            "::f(x) + y",
            "f::<T>(x)",
            "(x)",
            "2.0 * x",
            "x as f32",
        ] {
            let expr: syn::Expr = syn::parse_str(src).expect("parses");
            let (a, b) = expr_ends(&expr);
            let (c, d) = token_ends(quote::ToTokens::to_token_stream(&expr));
            assert_eq!((at(a), at(b)), (at(c), at(d)), "{src}");
            let whole = Site::whole(&expr).span;
            assert_eq!(at(whole), at(syn::spanned::Spanned::span(&expr)), "{src}");
        }
    }

    #[test]
    fn errors_accumulate_in_order() {
        let mut e = Errors::default();
        assert!(Errors::default().into_result().is_ok());
        e.at(Span::call_site(), "first");
        e.at_site(&Site::new(Span::call_site(), &quote::quote!(a + b)), "second");
        let all: Vec<String> = e.into_result().unwrap_err().into_iter().map(|e| e.to_string()).collect();
        assert_eq!(all, ["first", "second"]);
    }
}
