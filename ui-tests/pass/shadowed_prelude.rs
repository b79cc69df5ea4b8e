//! Generated code names everything by absolute path: a crate that shadows prelude names and has a
//! module called `exactgrad` still compiles.
#![allow(dead_code)]

struct Option;
struct Result;
struct Box;
struct Vec;
struct String;
mod exactgrad {}
mod core {}

::exactgrad::graph! {
    /// A model written next to hostile names.
    pub fn model<B>(x: [B, 3], w: [3, 2], b: [2]) -> [] {
        let h = x.matmul(w) + b;
        let y: [B, 2] = opaque(h, forward = |h| h.clone(), vjp = |_h, g| [g.clone()]);
        mean(tanh(-y) * 2)
    }
}

fn main() {
    use ::exactgrad::typenum::U4;
    let (g, h) = model::<f64, U4>();
    let inputs = h.inputs(::exactgrad::Tensor::full(0.5), ::exactgrad::Tensor::full(0.25), ::exactgrad::Tensor::full(0.0));
    let saved = g.compile(inputs, ()).unwrap();
    let grads = saved.backprop_from(h.output, ::exactgrad::Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.w).unwrap().dims().as_slice(), &[3, 2]);
}
