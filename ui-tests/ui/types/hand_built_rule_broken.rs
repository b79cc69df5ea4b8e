//! Hand-written code pushes a matmul whose operands do not fit onto handles of a generated graph:
//! the rule trait rejects it, in words.
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
    let _ = b.push(ops::matmul::<f32, (), (U2, U3), (U2, U3), (U2, U3), AffineBrand>(x, x));
    let _ = w;
}
