//! Hand-written code builds a graph of the generated type `AffineGraph<f32>` with one node of the wrong
//! shape: the node lists differ, so it does not compile.
use exactgrad::typenum::{U2, U3, U4};
use exactgrad::{graph, ops, MacroBuilder};

graph! {
    fn affine(x: [2, 3], w: [3, 4]) -> [2, 4] {
        relu(x.matmul(w))
    }
}

fn main() {
    let b = MacroBuilder::<f32, (), AffineBrand>::new();
    let (b, x) = b.input::<(U2, U3)>();
    let (mut b, w) = b.input::<(U3, U4)>();
    let h = b.push(ops::matmul(x, w));
    let t = b.push(ops::transpose(h)); // [4, 2], where `affine` has relu: [2, 4]
    let b = b.chunk((h, t));
    let _graph: AffineGraph<f32> = b.finish();
}
