//! Constants in the scalar type: a (possibly negated) literal is parsed in the scalar type itself
//! (rounded once; rationals get the exact fraction); any other constant expression is evaluated in
//! `f64` first.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Ident;

use super::private;

/// The scalar constant for `c`: a (possibly negated) literal is parsed in the scalar type itself
/// (rounded once); any other constant expression is evaluated in `f64` first.
pub(super) fn constant_tokens(c: &syn::Expr, s: &Ident) -> TokenStream {
    let p = private();
    if let Some(text) = literal_text(c) {
        return quote!(#p::constant::<#s>(#text));
    }
    let v = float_constant(c);
    quote!(#p::constant_f64::<#s>(#v))
}

/// The text of `lit` or `-lit` (suffix dropped), if `c` is one.
fn literal_text(c: &syn::Expr) -> Option<String> {
    match c {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => Some(i.base10_digits().to_owned()),
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => Some(f.base10_digits().to_owned()),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => {
            literal_text(expr).filter(|t| !t.starts_with('-')).map(|t| format!("-{t}"))
        }
        syn::Expr::Paren(p) => literal_text(&p.expr),
        _ => None,
    }
}

/// A constant expression with every literal written as an unsuffixed float literal, so it is an
/// `f64` expression.
fn float_constant(e: &syn::Expr) -> TokenStream {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
            syn::LitFloat::new(&format!("{}.0", i.base10_digits()), i.span()).to_token_stream()
        }
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => {
            syn::LitFloat::new(f.base10_digits(), f.span()).to_token_stream()
        }
        syn::Expr::Unary(u) => {
            let (op, inner) = (&u.op, float_constant(&u.expr));
            quote!(#op #inner)
        }
        syn::Expr::Paren(p) => float_constant(&p.expr),
        syn::Expr::Binary(b) => {
            let (l, op, r) = (float_constant(&b.left), &b.op, float_constant(&b.right));
            quote!((#l #op #r))
        }
        other => other.to_token_stream(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_their_text_and_expressions_become_f64() {
        let e = |s: &str| syn::parse_str::<syn::Expr>(s).unwrap();
        assert_eq!(literal_text(&e("-0.5")).as_deref(), Some("-0.5"));
        assert_eq!(literal_text(&e("(3)")).as_deref(), Some("3"));
        assert_eq!(literal_text(&e("1.0 / 4.0")), None);
        assert_eq!(float_constant(&e("1 / 4")).to_string(), "(1.0 / 4.0)");
    }
}
