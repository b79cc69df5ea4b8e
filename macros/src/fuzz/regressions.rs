//! Inputs the fuzzers found to panic, each a test named after the mistake (each panicked before
//! its fix), plus edge cases that must keep returning errors.

use crate::check::check_source;

fn checks(src: &str) -> String {
    match check_source(src) {
        Ok(s) => format!("ok: {} nodes, {} outputs", s.nodes, s.outputs),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_raw_graph_name_gets_camel_case_names() {
    // `Ident::new("R#match")` panicked.
    assert_eq!(checks("fn r#match(x: [2]) -> [2] { relu(x) }"), "ok: 1 nodes, 1 outputs");
    let out = crate::check::expand("fn r#match(x: [2]) -> [2] { x }".parse().unwrap_or_default()).to_string();
    assert!(out.contains("MatchGraph") && out.contains("struct Match"), "{out}");
}

#[test]
fn a_graph_name_without_a_letter_to_capitalise_gets_a_prefix() {
    // The CamelCase of `_1` is `1`, of `__` empty: `Ident::new` panicked on both.
    for (src, model) in [("fn _1(x: [2]) -> [2] { x }", "struct G1"), ("fn __(x: [2]) -> [2] { x }", "struct G ")] {
        assert_eq!(checks(src), "ok: 0 nodes, 1 outputs");
        let out = crate::check::expand(src.parse().unwrap_or_default()).to_string();
        assert!(out.contains(model), "{out}");
    }
}

#[test]
fn a_raw_generic_dim_is_kept_raw() {
    // A shape type re-made its dims with `Ident::new("r#B")`, which panicked.
    assert_eq!(checks("fn f<r#B>(x: [r#B, 2]) -> [r#B, 2] { relu(x) }"), "ok: 1 nodes, 1 outputs");
}

#[test]
fn overflowing_and_out_of_range_literals_are_errors() {
    let max = u64::MAX;
    for (src, error) in [
        (
            format!("fn f(x: [{max}, {max}]) -> [] {{ let y: [1] = reshape(x); sum(y) }}"),
            "its element count overflows usize",
        ),
        (format!("fn f(x: [2, 3]) -> [2, 3] {{ slice(x, 1, {max}, 2) }}"), "is out of range for axis 1"),
        (format!("fn f(x: [2, 3]) -> [2, 3] {{ slice(x, 1, 2, {max}) }}"), "is out of range for axis 1"),
        (format!("fn f(x: [2, 3]) -> [3, 2] {{ permute(x, [{max}, 0]) }}"), "permute needs a permutation"),
        (
            "fn f(x: [9223372036854775808, 2], y: [9223372036854775808, 2]) -> [] { sum(concat(x, y, 0)) }".into(),
            "overflows",
        ),
        ("fn f(x: [18446744073709551616]) -> [] { sum(x) }".into(), "number too large to fit in target type"),
        ("fn _(x: [2]) -> [2] { x }".into(), "expected identifier, found keyword `_`"),
    ] {
        let got = checks(&src);
        assert!(got.contains(error), "{src}: {got}");
    }
}

#[test]
fn huge_parameter_arrays_and_empty_loops_are_capped() {
    // A parameter array of `u64::MAX` inputs was allocated (out of memory); an empty loop body of
    // 2^32 iterations counted no statement, so it ran to the end.
    assert_eq!(
        checks("fn f(w: [[2]; 18446744073709551615]) -> [] { sum(w[0]) }"),
        "a parameter array holds at most 100000 inputs, not 18446744073709551615"
    );
    assert_eq!(
        checks("fn f(x: [2]) -> [] { for i in 0..4294967296 { } sum(x) }"),
        "in iteration i = 99999 of `for i in 0..4294967296`: the graph unrolls to more than 100000 nodes or 100000 statements; use fewer loop iterations or helper calls"
    );
    // A loop reassigning a binding whose value failed stops after one iteration, as one with an
    // error does (it ran 2^32 times).
    assert_eq!(
        checks("fn f(x: [2]) -> [] { let mut h = nope(x); for i in 0..4294967296 { h = h; } sum(x) }")
            .split(';')
            .next()
            .unwrap_or_default(),
        "unknown op `nope`"
    );
}
