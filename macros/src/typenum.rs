//! Any literal size to typenum tokens that read decimally: typenum's own alias (`U784`) for the
//! sizes it predefines, and for any other size an alias named after it (`U3072`) in a hidden
//! module the expansion defines next to the graph ([`sizes_module`]), built structurally
//! (`UInt<…, B1>`) so every value works. Rustdoc and the generated items then say `U784`, never
//! the binary `UInt<UInt<…>, B0>`.

use std::cell::RefCell;
use std::collections::BTreeSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

thread_local! {
    /// The hidden module of the expansion under way and the sizes it must define.
    static SIZES: RefCell<Option<(Ident, TokenStream, BTreeSet<u64>)>> = const { RefCell::new(None) };
}

/// Whether typenum defines `U{n}` (`typenum::consts`): `0..=1024`, the powers of two, the
/// `2^k - 1` (short of `u64::MAX`), the powers of ten, and 3600.
pub(crate) fn predefined(n: u64) -> bool {
    let power_of_ten = {
        let mut m = n;
        while m >= 10 && m.is_multiple_of(10) {
            m /= 10;
        }
        m == 1
    };
    n <= 1024 || n.is_power_of_two() || (n != u64::MAX && (n + 1).is_power_of_two()) || power_of_ten || n == 3600
}

/// Starts an expansion whose other sizes go in the module `module` (one per graph), of the
/// graph's visibility `vis` (so rustdoc, which spells out aliases it cannot link to, names them).
pub(crate) fn begin(module: Ident, vis: TokenStream) {
    SIZES.with(|s| *s.borrow_mut() = Some((module, vis, BTreeSet::new())));
}

/// Ends the expansion: the hidden module with an alias for every size used that typenum does not
/// predefine (nothing when there is none).
pub(crate) fn sizes_module() -> TokenStream {
    let Some((module, vis, sizes)) = SIZES.with(|s| s.borrow_mut().take()) else { return TokenStream::new() };
    if sizes.is_empty() {
        return TokenStream::new();
    }
    let aliases = sizes.iter().map(|&n| {
        let name = format_ident!("U{}", n);
        let ty = structural(n, Span::call_site());
        let doc = format!("The size {n}.");
        quote!(#[doc = #doc] pub type #name = #ty;)
    });
    quote! {
        /// Sizes of the graph that typenum does not predefine, named in decimal.
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code, unreachable_pub)]
        #vis mod #module {
            #(#aliases)*
        }
    }
}

/// `n` as a typenum unsigned type, spanned at `span`: `U{n}`, typenum's or the expansion's.
pub(crate) fn unsigned(n: u64, span: Span) -> TokenStream {
    let name = format_ident!("U{}", n, span = span);
    if predefined(n) {
        return quote_spanned!(span=> ::exactgrad::__private::typenum::#name);
    }
    let module = SIZES.with(|s| {
        s.borrow_mut().as_mut().map(|(m, _, sizes)| {
            sizes.insert(n);
            m.clone()
        })
    });
    match module {
        Some(m) => quote_spanned!(span=> #m::#name),
        None => structural(n, span),
    }
}

/// `n` built bit by bit: `UInt<…UInt<UTerm, B1>…, B0>`.
fn structural(n: u64, span: Span) -> TokenStream {
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
    fn predefined_sizes_use_typenum_aliases_and_others_the_module() {
        let s = |n| unsigned(n, Span::call_site()).to_string().replace(' ', "");
        assert_eq!(s(0), "::exactgrad::__private::typenum::U0");
        assert_eq!(s(784), "::exactgrad::__private::typenum::U784");
        for n in [2047, 4096, 3600, 100_000, 1 << 40, u64::MAX / 2] {
            assert!(predefined(n), "{n}");
        }
        for n in [1025, 3072, 50_000, 3601, u64::MAX] {
            assert!(!predefined(n), "{n}");
        }
        // Outside an expansion (no module), a size is built structurally.
        assert_eq!(s(1025), structural(1025, Span::call_site()).to_string().replace(' ', ""),);
        begin(format_ident!("__sizes"), TokenStream::new());
        assert_eq!(s(3072), "__sizes::U3072");
        let module = sizes_module().to_string();
        assert!(module.contains("pub type U3072 = :: exactgrad :: __private :: typenum :: UInt"), "{module}");
        assert!(sizes_module().is_empty());
        assert_eq!(
            structural(2, Span::call_site()).to_string().replace(' ', ""),
            "::exactgrad::__private::typenum::UInt<::exactgrad::__private::typenum::UInt<::exactgrad::__private::typenum::UTerm,::exactgrad::__private::typenum::B1>,::exactgrad::__private::typenum::B0>"
        );
    }
}
