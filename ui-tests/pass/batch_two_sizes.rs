//! One graph with a generic batch dim, instantiated at two batch sizes.
use exactgrad::typenum::{U2, U7};
use exactgrad::{graph, Tensor};

graph! {
    fn mlp<B>(x: [B, 3], w: [3, 4], b: [4]) -> [] {
        sum(relu(x.matmul(w) + b))
    }
}

fn main() {
    let (g2, h2) = mlp::<f32, U2>();
    let (g7, h7) = mlp::<f32, U7>();
    let s2 = g2.compile(h2.inputs(Tensor::full(1.0), Tensor::full(0.5), Tensor::full(0.0)), ()).unwrap();
    let s7 = g7.compile(h7.inputs(Tensor::full(1.0), Tensor::full(0.5), Tensor::full(0.0)), ()).unwrap();
    assert_eq!(s2.value(h2.output).unwrap().data(), &[2.0 * 4.0 * 1.5]);
    assert_eq!(s7.value(h7.output).unwrap().data(), &[7.0 * 4.0 * 1.5]);
    let d7 = s7.backprop_from(h7.output, Tensor::full(1.0)).unwrap();
    assert_eq!(d7.get(h7.x).unwrap().dims().as_slice(), &[7, 3]);
}
