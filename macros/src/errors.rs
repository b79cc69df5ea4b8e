//! Every error of one expansion, collected in one place with its span (`syn::Error::combine`), so
//! a user sees all independent mistakes at once.

use proc_macro2::Span;

/// Where something comes from: the most specific token (the op name or operator) for generated
/// code and compiler checks, and the whole user expression for the macro's own errors.
#[derive(Clone)]
pub(crate) struct Site {
    pub(crate) span: Span,
    tokens: Option<proc_macro2::TokenStream>,
}

impl Site {
    /// The site of `expr`, whose key token is at `span`.
    pub(crate) fn new(span: Span, expr: &impl quote::ToTokens) -> Self {
        Site { span, tokens: Some(expr.to_token_stream()) }
    }

    /// A site that is one span.
    pub(crate) fn span_only(span: Span) -> Self {
        Site { span, tokens: None }
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
        match &site.tokens {
            Some(t) => {
                let e = syn::Error::new_spanned(t, format!("{}{message}", self.prefix));
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
    fn errors_accumulate_in_order() {
        let mut e = Errors::default();
        assert!(Errors::default().into_result().is_ok());
        e.at(Span::call_site(), "first");
        e.at_site(&Site::new(Span::call_site(), &quote::quote!(a + b)), "second");
        let all: Vec<String> = e.into_result().unwrap_err().into_iter().map(|e| e.to_string()).collect();
        assert_eq!(all, ["first", "second"]);
    }
}
