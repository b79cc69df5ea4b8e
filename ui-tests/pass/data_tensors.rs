//! Data tensors: generated code is clean under strict lint settings and names everything by
//! absolute path; a batch dim used only by a data tensor leaves the handles without generics.
#![deny(warnings, unused, nonstandard_style, rust_2018_idioms, unused_qualifications, trivial_casts)]

struct Option;
struct Vec;
mod exactgrad {}
mod core {}

::exactgrad::graph! {
    /// An MLP whose batch is data; `m` is a data tensor read as a leaf.
    pub fn mlp<B>(w1: [4, 3], b1: [3], w2: [3, 2]; x: [B, 4], m: [B, 3], labels: ::std::vec::Vec<usize>) -> [] {
        let h = relu(x.matmul(w1) + b1) * m;
        cross_entropy(h.matmul(w2), labels)
    }
}

::exactgrad::graph! {
    /// A private graph with literal dims: its data struct is generic over the scalar only. An
    /// array type (`[u8; 2]`) is a plain data parameter, not a shape.
    fn masked(w: [2]; mask: [2], note: [u8; 2]) -> [2] {
        w * mask
    }
}

fn main() {
    use ::exactgrad::typenum::U2;
    let _ = (Option, Vec);
    let (g, h): (MlpGraph<f32, U2>, MlpHandles) = mlp::<f32, U2>();
    let data: MlpData<f32, U2> = MlpData {
        x: ::exactgrad::Tensor::full(0.5),
        m: ::exactgrad::Tensor::full(1.0),
        labels: ::std::vec![1, 0],
    };
    let inputs = h.inputs(::exactgrad::Tensor::full(0.1), ::exactgrad::Tensor::zeros(), ::exactgrad::Tensor::full(-0.2));
    let saved = g.compile(inputs, data).unwrap();
    let grads = saved.backprop_from(h.output, ::exactgrad::Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.w1).unwrap().dims().as_slice(), &[4, 3]);

    let (g, h) = masked::<f64>();
    let data: MaskedData<f64> = MaskedData { mask: ::exactgrad::Tensor::full(2.0), note: [1, 2] };
    assert_eq!(data.note, [1, 2]);
    let saved = g.compile(h.inputs(::exactgrad::Tensor::full(3.0)), data).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[6.0, 6.0]);
}
