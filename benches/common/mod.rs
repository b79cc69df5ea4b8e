//! Shared graph builders for the benchmarks.

use exactgrad::ops::{Add, Mul, Tanh};
use exactgrad::{Dims, RawGraph, RawNode, RawTensor};

/// Elements per tensor in the chain benchmarks.
pub(crate) const WIDTH: usize = 16;

/// A chain of `nodes` nodes on 16-element `f32` tensors: layers of `x = tanh(x * a + b)` (three nodes
/// each), with inputs `x0`, `a`, `b`. Returns the graph and its inputs.
pub(crate) fn tanh_chain(nodes: usize) -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>) {
    let d = Dims::vector(WIDTH);
    let mut g = RawGraph::new(vec![d, d, d]);
    let (a, b) = (1, 2);
    let mut x = 0;
    for k in 0..nodes {
        let node = match k % 3 {
            0 => RawNode::compact(Mul::new(x, a)),
            1 => RawNode::compact(Add::new(x, b)),
            _ => RawNode::compact(Tanh::new(x)),
        };
        x = g.push(node).expect("chain nodes are well-formed").index();
    }
    let input = |s: f32| RawTensor::from_fn(d, move |i| s * (i as f32 + 1.0) / WIDTH as f32);
    (g, vec![input(0.5), input(0.9), input(0.1)])
}

/// Seeds with `1` at the last position and zeros elsewhere.
pub(crate) fn last_seed(g: &RawGraph<f32, ()>) -> Vec<RawTensor<f32>> {
    let n = g.dims().len();
    g.dims().iter().enumerate().map(|(p, &d)| RawTensor::full(d, if p + 1 == n { 1.0 } else { 0.0 })).collect()
}
