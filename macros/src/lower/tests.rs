//! Lowering as a whole: desugaring, errors without cascades, checks left to the compiler.

use super::*;

fn lower_src(src: &str) -> Result<Graph, Vec<String>> {
    let def: GraphDef = syn::parse_str(src).expect("the test source parses");
    lower(&def).map_err(|e| e.into_iter().map(|e| e.to_string()).collect())
}

fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Builtin(op, _) => op.name,
            NodeKind::Opaque { .. } => "opaque",
            NodeKind::Custom(_) => "custom",
        })
        .collect()
}

#[test]
fn operators_and_data_tensors_are_desugared() {
    let g = lower_src(
        "fn f<B>(w: [3, 4], b: [4]; x: [B, 3]) -> [] {
            let h = x.matmul(w) + b;
            let y = h * 0.5 - -h;
            sum(y * (x.matmul(w)) + x.matmul(w) * 2)
        }",
    )
    .expect("lowers");
    assert_eq!(
        ops(&g),
        ["matmul_data", "add_row", "scale", "neg", "sub", "matmul_data", "mul", "matmul_data", "scale", "add", "sum"]
    );
    assert_eq!(g.nodes[1].shape.to_string(), "[B, 4]");
    assert_eq!(g.outputs, [2 + 10]);
    let g = lower_src("fn f(w: [2]; x: [2]) -> [] { sum(x * w + x) }").expect("lowers");
    // One data_tensor leaf, made at the first use and shared by the second.
    assert_eq!(ops(&g), ["data_tensor", "mul", "add", "sum"]);
    assert_eq!(g.nodes[2].parents, [2, 1]);
}

#[test]
fn operators_with_constants_lower_to_their_ops() {
    let g = lower_src("fn f(x: [2], y: [2]) -> [] { sum((x / y * 0.5 + 1.0) / 4.0 - 2.0 + (3 + x)) }").expect("lowers");
    assert_eq!(ops(&g), ["div", "scale", "offset", "div_const", "offset", "offset", "add", "sum"]);
    let e = |src: &str| lower_src(src).err().unwrap_or_default().join("\n");
    assert!(
        e("fn f(x: [2]) -> [] { sum(1.0 - x) }").starts_with("`c - x` with a constant on the left is not an op"),
        "{}",
        e("fn f(x: [2]) -> [] { sum(1.0 - x) }")
    );
    assert!(e("fn f(x: [2]) -> [] { sum(1.0 / x) }").contains("divide two graph values with `x / y`"));
}

#[test]
fn independent_errors_are_all_reported_without_cascades() {
    let errors = lower_src(
        "fn f(x: [4, 3], w: [2, 5], b: [7]) -> [] {
            let h = x.matmul(w);
            let z = relu(h) + b;
            let q = x + b;
            sum(nope(x))
        }",
    )
    .err()
    .expect("three mistakes");
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!(errors[0], "matmul needs the left operand's columns (3) to equal the right operand's rows (2)");
    assert!(errors[1].starts_with("add_row needs the row vector's length (7)"), "{}", errors[1]);
    assert!(errors[2].starts_with("unknown op `nope`"), "{}", errors[2]);
}

#[test]
fn generic_declared_shapes_are_left_to_the_compiler() {
    let g = lower_src("fn f<B, C>(x: [B, 3], c: [C]) -> [C, 3] { let y: [B, 3] = relu(x); y }").expect("lowers");
    assert_eq!(g.checks.len(), 1);
    assert_eq!((g.checks[0].declared.to_string(), g.checks[0].actual.to_string()), ("[C, 3]".into(), "[B, 3]".into()));
    let errors = lower_src("fn f(x: [2, 3]) -> [3, 2] { x }").err().expect("a literal mismatch");
    assert_eq!(errors, ["the graph returns shape [2, 3] here, but its signature declares [3, 2]"]);
}
