//! Parsing: a definition into its parts, and what malformed ones are told.

use super::*;

#[test]
fn a_definition_parses_into_its_parts() {
    let def: GraphDef = syn::parse_str(
        "/// docs
         pub fn f<T: num_traits::Float, B>(x: [B, 3], w: [3, 4]; labels: Vec<usize>, m: [B, 4]) -> ([], [B, 4]) {
             let h: [B, 4] = x.matmul(w);
             (sum(h), h)
         }",
    )
    .expect("parses");
    assert_eq!(def.name, "f");
    assert_eq!(def.dims, ["B"]);
    assert!(def.scalar.as_ref().is_some_and(|(t, _)| t == "T"));
    assert_eq!(def.inputs.len(), 2);
    assert_eq!(def.data.iter().map(|d| d.tensor_shape().is_some()).collect::<Vec<_>>(), [false, true]);
    assert_eq!(def.outputs.len(), 2);
    assert_eq!(def.stmts.len(), 1);
    assert!(matches!(&def.stmts[0], Stmt::Let(l) if l.annotation.is_some() && !l.mutable));
}

#[test]
fn malformed_definitions_say_what_is_expected() {
    let e = |s: &str| syn::parse_str::<GraphDef>(s).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e("fn f(x: 3) -> [] { x }").starts_with("a shape is written `[d0, d1, …]`"));
    // A constant expression is a dim (lowering evaluates it); a float or a call is not.
    assert_eq!(e("fn f(x: [2 + 1]) -> [] { x }"), "");
    assert_eq!(
        e("fn f(x: [2.5]) -> [] { x }"),
        "a dim is an integer literal, a declared generic dim (e.g. `B`) or an integer constant expression (e.g. `T * B`)"
    );
    assert_eq!(
        e("fn f(x: [g(2)]) -> [] { x }"),
        "a dim is an integer literal, a declared generic dim (e.g. `B`) or an integer constant expression (e.g. `T * B`)"
    );
    assert_eq!(e("fn f(x: [1, 1, 1, 1, 1]) -> [] { x }"), "a shape has at most 4 dims");
    assert_eq!(e("fn f(x: [2]) -> [] { let y = x; }"), "the body must end with the graph's result expression");
}
