use exactgrad::{graph, Tensor};

graph! {
    const LAYERS: usize = 4;
    fn deep(x: [2, 8], w: [[8, 8]; LAYERS], b: [[8]; LAYERS]) -> [] {
        let mut h = x;
        for i in 0..LAYERS {
            for j in 0..2 {
                h = h + slice(x, 1, j * 4, 4).matmul(slice(w[i], 0, j * 4, 4)) * (1.0 / 16.0);
            }
            h = tanh(h.matmul(w[LAYERS - 1 - i]) + b[i]);
        }
        mean(h)
    }
}

fn main() {
    let (g, h) = deep::<f64>();
    let inputs = h.inputs(Tensor::full(0.5), core::array::from_fn(|_| Tensor::full(0.1)), core::array::from_fn(|_| Tensor::zeros()));
    let saved = g.compile(inputs, ()).unwrap();
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    assert!(grads.get(h.w[3]).is_ok());
}
