//! Helpers inlined: labels, errors naming the call, recursion, constants and data.

use crate::ir::{Graph, NodeKind};

fn lower_src(src: &str) -> Result<Graph, Vec<String>> {
    let def: crate::parse::GraphDef = syn::parse_str(src).expect("the test source parses");
    crate::lower::lower(&def).map_err(|e| e.into_iter().map(|e| e.to_string()).collect())
}

fn ops(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .map(|n| {
            let op = match &n.kind {
                NodeKind::Builtin(op, _) => op.name,
                _ => "other",
            };
            format!("{op} {}", n.label.as_deref().unwrap_or("-"))
        })
        .collect()
}

#[test]
fn helpers_are_inlined_with_call_path_labels() {
    let g = lower_src(
        "fn dense(x, w, b) { let z = x.matmul(w) + b; tanh(z) }
         fn f(x: [2, 3], w: [[3, 3]; 2], b: [3]) -> [] {
             let mut h = x;
             for i in 0..2 { h = dense(h, w[i], b) * 0.5; }
             sum(block(h, w, 1))
         }
         const K: usize = 1;
         fn block(x: [n, d], ws, k) { let y: [n, d] = dense(x, ws[k], x); sum_axis(y, K - 1) }",
    )
    .expect("lowers");
    assert_eq!(
        ops(&g),
        [
            "matmul dense#1/z@i=0",
            "add_row dense#1/z@i=0",
            "tanh dense#1/result@i=0",
            "scale h@i=0",
            "matmul dense#2/z@i=1",
            "add_row dense#2/z@i=1",
            "tanh dense#2/result@i=1",
            "scale h@i=1",
            "matmul block#1/dense#3/z",
            "add block#1/dense#3/z",
            "tanh block#1/dense#3/result",
            "sum_axis block#1/result",
            "sum -",
        ]
    );
    // The second call of `dense` reads `w[1]`.
    assert_eq!(g.nodes[4].parents[1], 2);
}

#[test]
fn errors_name_the_call_and_the_call_site() {
    let errors = lower_src(
        "fn dense(x, w) { relu(x.matmul(w)) }
         fn f(x: [2, 3], w: [4, 4], v: [3, 4]) -> [] { let a = dense(x, v); sum(dense(x, w) + a) }",
    )
    .err()
    .expect("a shape mismatch in the second call");
    assert_eq!(
        errors,
        [
            "in call dense#2 `dense(x, w)`: matmul needs the left operand's columns (3) to equal the right operand's rows (4)",
            "this call of `dense` fails: the errors above in `dense`'s body name it `in call dense#2`",
        ]
    );
    let errors = lower_src(
        "fn dense(x, w) { relu(x.matmul(w)) }
         fn f(x: [2, 3], w: [3, 3]) -> [] {
             let mut h = x;
             for i in 0..3 { h = x.dense(w) + slice(h, 1, i, 3); }
             sum(h)
         }",
    )
    .err()
    .expect("an out-of-range slice in the second iteration");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("in iteration i = 1 of `for i in 0..3`: slice"), "{errors:?}");
}

#[test]
fn recursion_and_misuse_are_reported() {
    let e = |src: &str| lower_src(src).err().unwrap_or_default();
    assert_eq!(
        e("fn a(x) { b(x) } fn b(x) { relu(a(x)) } fn f(x: [2]) -> [] { sum(a(x)) }"),
        [
            "in call a#1 `a(x)`: in call b#1 `b(x)`: the helper `a` calls itself (a → b → a): a helper is inlined at each call, so the recursion would never end; repeat with a `for` loop instead",
            "in call a#1 `a(x)`: this call of `b` fails: the errors above in `b`'s body name it `in call b#1`",
            "this call of `a` fails: the errors above in `a`'s body name it `in call a#1`",
        ]
    );
    assert_eq!(
        e("fn g(x, y) { x + y } fn f(x: [2]) -> [] { sum(g(x)) }"),
        ["the helper `g` takes 2 arguments (x, y), got 1"]
    );
    assert_eq!(
        e("fn g(x: [n, n]) { x } fn f(x: [2, 3]) -> [] { sum(g(x)) }"),
        ["in call g#1 `g(x)`: `g`'s parameter `x` is declared [n, n] (here [2, 2]), but the call passes shape [2, 3]"]
    );
    assert_eq!(
        e("fn g(x: [3]) { x } fn f(x: [2]) -> [] { sum(g(2.0)) }"),
        ["in call g#1 `g(2.0)`: `g`'s parameter `x` is a tensor of shape [3], but the call passes a constant"]
    );
    assert_eq!(
        e("fn relu(x) { x } fn Block(x) { x } fn f(x: [2]) -> [] { sum(x) }"),
        [
            "the helper `relu` has the name of a built-in op; give the helper another name",
            "a helper's name is snake_case (`block`): a CamelCase call is a user op",
        ]
    );
    assert_eq!(
        e("fn g(w) { w } fn f(x: [2]) -> [] { sum(g(x) + x + y) }"),
        ["cannot find `y` in this graph: it is neither an input nor a `let` binding above"]
    );
    assert_eq!(
        e("fn g(w) { w + x } fn f(x: [2]) -> [] { sum(g(x)) }"),
        [
            "in call g#1 `g(x)`: cannot find `x` in this graph: it is neither an input nor a `let` binding above; a helper sees only its parameters, the macro's `const`s and the graph's data: pass it as an argument",
            "this call of `g` fails: the errors above in `g`'s body name it `in call g#1`",
        ]
    );
}

#[test]
fn constants_and_data_reach_the_helper() {
    let g = lower_src(
        "const C: f64 = 0.25;
         fn g(x, c, k) { let y: [1, k] = x * c * C; y.matmul(m) }
         fn f(x: [1, 3]; m: [3, 2]) -> [1, 2] { g(x, 2 * 0.5, 3) }",
    )
    .expect("lowers");
    assert_eq!(ops(&g), ["scale g#1/y", "scale g#1/y", "data_tensor g#1/result", "matmul g#1/result"]);
}
