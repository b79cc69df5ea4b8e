//! Everything the macro does with its input, as one function over tokens ([`expand`]: parse, then
//! lower, infer, plan and emit), and the same pipeline over source text for the tests and the
//! fuzzers ([`check_source`]), which cannot call a `#[proc_macro]` entry from a test.

use proc_macro2::TokenStream;

use crate::parse::GraphDef;

/// The expansion of `graph! { input }`: the graph's items, or a well-typed stub plus every error.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    match syn::parse2::<GraphDef>(input) {
        Ok(def) => crate::emit::expand(&def),
        Err(e) => e.to_compile_error(),
    }
}

/// What a successful check found.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Nodes of the lowered graph.
    pub(crate) nodes: usize,
    /// Outputs of the graph.
    pub(crate) outputs: usize,
    /// Token trees of the expansion (at top level).
    pub(crate) tokens: usize,
}

/// Runs the whole macro on `src` (the text inside `graph! { … }`): lexes it, parses it, lowers and
/// checks it, plans it and emits its tokens — the error path's stub included. `Err` holds every
/// error, each with its span.
#[cfg(test)]
pub(crate) fn check_source(src: &str) -> Result<Summary, syn::Error> {
    let tokens: TokenStream =
        src.parse().map_err(|e: proc_macro2::LexError| syn::Error::new(e.span(), format!("lex error: {e}")))?;
    let expanded = expand(tokens.clone());
    let def = syn::parse2::<GraphDef>(tokens)?;
    let graph = crate::lower::lower(&def)?;
    Ok(Summary { nodes: graph.nodes.len(), outputs: graph.outputs.len(), tokens: expanded.into_iter().count() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_source_checks_and_a_broken_one_gives_spanned_errors() {
        let ok = check_source("fn f(x: [2, 3], w: [3, 4]) -> [] { let h = relu(x.matmul(w)); sum(h) }").expect("valid");
        assert_eq!((ok.nodes, ok.outputs), (3, 1));
        assert!(ok.tokens > 0);
        let e = check_source("fn f(x: [2, 3]) -> [] { sum(nope(x)) }").expect_err("an unknown op");
        assert!(e.to_string().starts_with("unknown op `nope`"), "{e}");
        assert!(check_source("fn f(x: [2]) -> [2] { \"unterminated }").is_err());
    }
}
