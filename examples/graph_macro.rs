//! The `graph!` macro: a small MLP with a generic batch dim.
use exactgrad::graph;
use exactgrad::typenum::U2;
use exactgrad::Tensor;

graph! {
    /// A two-layer perceptron with a batch dim `B`.
    pub fn mlp<B>(x: [B, 3], w1: [3, 4], b1: [4], w2: [4, 2]) -> [] {
        let h = relu(x.matmul(w1) + b1);
        let y = h.matmul(w2);
        mean(tanh(y) * 0.5)
    }
}

fn main() {
    let (g, h) = mlp::<f64, U2>();
    println!("{g}");
    let inputs = h.inputs(
        Tensor::from_fn(|i| i as f64 / 6.0),
        Tensor::from_fn(|i| (i as f64 - 6.0) / 12.0),
        Tensor::full(0.1),
        Tensor::from_fn(|i| (i as f64 - 4.0) / 8.0),
    );
    let saved = g.compile(inputs, ()).expect("compiles");
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).expect("runs");
    println!("d/dw1 = {:?}", grads.get(h.w1).expect("w1").data());
}
