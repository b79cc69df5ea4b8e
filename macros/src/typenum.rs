//! Any literal size to typenum tokens, built structurally (`UInt<…, B1>`), so every value works,
//! not only the predefined `U0`…`U1024` aliases.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// `n` as a typenum unsigned type, spanned at `span`.
pub(crate) fn unsigned(n: u64, span: Span) -> TokenStream {
    let mut ty = quote_spanned!(span=> ::exactgrad::__private::typenum::UTerm);
    for bit in (0..64 - n.leading_zeros()).rev() {
        let b = if (n >> bit) & 1 == 1 {
            quote_spanned!(span=> ::exactgrad::__private::typenum::B1)
        } else {
            quote_spanned!(span=> ::exactgrad::__private::typenum::B0)
        };
        ty = quote_spanned!(span=> ::exactgrad::__private::typenum::UInt<#ty, #b>);
    }
    ty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_encoding() {
        let s = |n| unsigned(n, Span::call_site()).to_string().replace(' ', "");
        assert_eq!(s(0), "::exactgrad::__private::typenum::UTerm");
        assert_eq!(
            s(2),
            "::exactgrad::__private::typenum::UInt<::exactgrad::__private::typenum::UInt<::exactgrad::__private::typenum::UTerm,::exactgrad::__private::typenum::B1>,::exactgrad::__private::typenum::B0>"
        );
    }
}
