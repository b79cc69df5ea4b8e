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

    #[test]
    fn a_pointwise_op_is_called_as_a_function_or_a_method() {
        // `silu` has nothing in the macro but its spec line: both forms come from it.
        for src in ["fn f(x: [2, 3]) -> [] { sum(silu(x)) }", "fn f(x: [2, 3]) -> [] { sum(x.silu()) }"] {
            assert_eq!(check_source(src).map(|s| s.nodes).map_err(|e| e.to_string()), Ok(2), "{src}");
        }
        let e = check_source("fn f(x: [2, 3]) -> [] { sum(silu(x, x)) }").expect_err("one operand");
        assert!(e.to_string().contains("silu"), "{e}");
    }

    #[test]
    fn window_ops_take_named_constants() {
        for src in [
            "fn f(x: [2, 3, 8, 8], w: [4, 3, 3, 3]) -> [2, 4, 4, 4] { conv2d(x, w, stride = 2, padding = 1) }",
            "fn f<B>(x: [B, 3, 8, 8], w: [4, 3, 3, 3]) -> [B, 4, 3, 2] { max_pool2d(x.conv2d(w, dilation = (1, 2)), kernel = 2) }",
            "fn f(x: [1, 2, 7], w: [2, 2, 3]) -> [1, 2, 4] { conv1d(x, w, padding = 1, stride = 2) }",
            "fn f(x: [1, 2, 5, 4]) -> [1, 2, 5, 2] { avg_pool2d(x, kernel = (3, 2), stride = (1, 2), padding = (1, 0)) }",
        ] {
            assert!(check_source(src).is_ok(), "{src}: {:?}", check_source(src).err().map(|e| e.to_string()));
        }
        for (src, message) in [
            ("fn f(x: [1, 1, 4, 4], w: [1, 1, 3, 3]) -> [] { sum(conv2d(x, w, 1)) }", "conv2d takes 2 values and its constants by name, as in `conv2d(x, w, stride = 1, padding = 0, dilation = 1)`, got 3 values"),
            ("fn f(x: [1, 1, 4, 4]) -> [] { sum(max_pool2d(x)) }", "max_pool2d needs its kernel size, as in `max_pool2d(x, kernel = 2, stride = 2, padding = 0)`"),
            ("fn f(x: [1, 1, 4], w: [1, 1, 2]) -> [] { sum(conv1d(x, w, stride = (1, 2))) }", "conv1d's stride is an integer literal"),
            ("fn f(x: [1, 1, 4, 4]) -> [] { sum(max_pool2d(x, kernel = 2, kernel = 3)) }", "max_pool2d's kernel is given twice"),
            ("fn f(x: [1, 1, 4, 4]) -> [] { sum(max_pool2d(x, size = 2)) }", "max_pool2d takes the constants kernel, stride, padding"),
            ("fn f(x: [1, 1, 4, 4]) -> [] { sum(avg_pool2d(x, kernel = x)) }", "avg_pool2d's kernel is an integer literal or a pair `(h, w)` of them"),
            ("fn f<H>(x: [1, 1, H, 4]) -> [] { sum(max_pool2d(x, kernel = 2)) }", "max_pool2d needs literal spatial sizes to compute its output, got shape [1, 1, H, 4]"),
            ("fn f(x: [1, 3, 4, 4], w: [2, 2, 3, 3]) -> [] { sum(conv2d(x, w)) }", "conv2d needs the weight's input channels (2) to equal the input's channels (3), got shapes [1, 3, 4, 4] and [2, 2, 3, 3]"),
        ] {
            let e = check_source(src).expect_err(src).to_string();
            assert!(e.starts_with(message), "{src}: {e}");
        }
    }

    #[test]
    fn concat_split_and_dropout_lower_and_check() {
        for (src, nodes) in [
            ("fn f(a: [2, 1], b: [2, 3]) -> [2, 5] { concat([a, b, a], 1) }", 1),
            ("fn f(a: [2, 1]) -> [2, 1] { concat([a], 1) }", 1),
            ("fn f<B>(a: [B, 1], b: [B, 3]) -> [B, 4] { concat(a, b, 1) }", 1),
            ("fn f(x: [2, 9]) -> [2, 4] { let (a, b, c) = split(x, 1, [2, 3, 4]); c }", 3),
            ("fn f(x: [6, 2]) -> [2, 2] { let (a, b, c) = split(x, 0, 3); b }", 3),
            ("fn f(x: [2, 3]; seed: u64) -> [2, 3] { dropout(x, 0.25, seed) }", 1),
            ("const P: f64 = 0.5; fn f(x: [2, 3]; seed: u64) -> [2, 3] { x.dropout(P, seed) }", 1),
            (
                "fn f(x: [2, 8]) -> [2, 8] { let mut h = x; for i in 0..3 { let (a, b) = split(h, 1, [i + 1, 7 - i]); h = concat([b, a], 1); } h }",
                9,
            ),
        ] {
            let s = check_source(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(s.nodes, nodes, "{src}");
        }
        for (src, message) in [
            (
                "fn f(a: [2, 1], b: [3, 3]) -> [] { sum(concat([a, a, b], 1)) }",
                "concat along axis 1 needs the other dims equal, got [2, 1] and [3, 3] (part 2)",
            ),
            ("fn f(a: [2, 1]) -> [] { sum(concat(a, 1)) }", "concat takes its parts as an array literal and an axis"),
            ("fn f(a: [2, 1]) -> [] { sum(concat([], 1)) }", "concat along axis 1 needs at least one part"),
            (
                "fn f(x: [2, 9]) -> [] { let (a, b) = split(x, 1, [2, 3]); sum(a) }",
                "split sizes [2, 3] add up to 5, but axis 1 of shape [2, 9] has 9 entries",
            ),
            (
                "fn f(x: [2, 9]) -> [] { let (a, b) = split(x, 1, [4, 5, 0]); sum(a) }",
                "split makes 3 parts here, but the binding names 2",
            ),
            (
                "fn f(x: [2, 9]) -> [] { let (a, b) = split(x, 1, 2); sum(a) }",
                "split of axis 1 of shape [2, 9] (9 entries) into 2 equal parts: 2 does not divide 9",
            ),
            (
                "fn f(x: [2, 9]) -> [] { let (a, b) = split(x, 1, 1000000000000); sum(a) }",
                "split of axis 1 of shape [2, 9] (9 entries) into 1000000000000 equal parts: at most 9 parts",
            ),
            ("fn f(x: [2, 9]) -> [] { sum(split(x, 1, [4, 5])) }", "split gives several values"),
            (
                "fn f(x: [2, 8]) -> [] { for i in 0..3 { let (a, b) = split(x, 1, [i, 7]); } sum(x) }",
                "in iteration i = 0 of `for i in 0..3`: split sizes [0, 7] add up to 7",
            ),
            (
                "fn f(x: [2, 9]) -> [] { let (a, b) = relu(x); sum(a) }",
                "a tuple binding `let (a, b, …) = …` takes the parts of `split",
            ),
            (
                "fn f(x: [2, 3]; seed: u64) -> [] { sum(dropout(x, 1.0, seed)) }",
                "dropout needs a probability p in [0, 1), got 1",
            ),
            (
                "fn f(x: [2, 3]; seed: u64) -> [] { sum(dropout(x, x, seed)) }",
                "dropout's probability is a constant in [0, 1)",
            ),
            (
                "fn f(x: [2, 3]) -> [] { sum(dropout(x, 0.5, nope)) }",
                "dropout's seed is a data parameter holding a `u64`",
            ),
            (
                "fn f(x: [2, 3]; seed: u64) -> [] { sum(dropout(x, 0.5)) }",
                "dropout takes a value, a constant probability in [0, 1)",
            ),
        ] {
            let e = check_source(src).expect_err(src).to_string();
            assert!(e.starts_with(message), "{src}: {e}");
        }
    }
}

#[cfg(test)]
mod readable {
    use super::*;

    /// The expansion without the hidden sizes module (whose aliases are built bit by bit).
    fn visible_expansion(src: &str) -> String {
        let text = expand(src.parse().expect("lexes")).to_string();
        match text.find("mod __exactgrad_sizes_") {
            Some(at) => text[..at].to_owned(),
            None => text,
        }
    }

    #[test]
    fn generated_items_name_sizes_in_decimal() {
        for src in [
            // Sizes typenum predefines and others, generic dims, const dims, a data tensor, a
            // parameter array, window constants, an axis.
            "const N: usize = 3072;
             pub fn model<B>(w: [3072, 784], v: [[784, 10]; 2]; x: [B, N], y: [B, 50000]) -> ([B, 10], []) {
                 let h = relu(x.matmul(w));
                 let z = h.matmul(v[0]) + h.matmul(v[1]);
                 (z, sum(sum_axis(y, 1)))
             }",
            "fn conv(x: [2, 3, 33, 33], k: [5, 3, 3, 3]) -> [] { sum(max_pool2d(conv2d(x, k, stride = 2), kernel = 2)) }",
            // The error stub too.
            "const N: usize = 1500; fn broken(x: [N, 3]; d: [N, 7]) -> [] { sum(nope(x)) }",
        ] {
            let text = visible_expansion(src);
            for binary in ["UInt", "UTerm", ":: B1", ":: B0"] {
                assert!(!text.contains(binary), "`{binary}` in the expansion of {src}:\n{text}");
            }
            assert!(text.contains("U3") || text.contains("U1500"), "{text}");
        }
        let text = expand("fn f(x: [3072]) -> [] { sum(x) }".parse().expect("lexes")).to_string();
        assert!(text.contains("__exactgrad_sizes_f :: U3072"), "{text}");
        assert!(text.contains("pub type U3072 ="), "{text}");
    }
}
