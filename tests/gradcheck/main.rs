//! Finite-difference gradient checks: the gradient `backprop_from` returns through the **typed**
//! API is the derivative of the forward, for the built-in ops add, sub, mul (including `x * x`),
//! neg, scale, matmul including a square `matmul(x, x)`, transpose, sum, mean, add_row, relu away
//! from its kink, tanh, exp), for an opaque node with a correct dense VJP, and for a small
//! composite model.
//!
//! Each check builds `loss = sum(op(inputs) * w)` (`w` a fixed input with varied non-zero weights,
//! so every output element is weighted differently and a transposed or misplaced gradient
//! element shows up), compares `backprop_from(loss, 1)` with central differences
//! `(L(x + h) - L(x - h)) / ((x + h) - (x - h))`, `h = 1e-6`, in `f64`, to a relative tolerance of
//! `1e-6` (relative to `max(1, |numeric|, |analytic|)`), and also checks that `backprop_from`
//! equals `backprop_from_dense` bit for bit.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod custom;
mod data;
mod elementwise;
mod reductions;
mod structure;

use exactgrad::typenum::{U2, U3};
use exactgrad::{ops, GraphData, Position, RawPackIter, SavedGraph, Shape, Snoc, Tensor};

const H: f64 = 1e-6;
const TOL: f64 = 1e-6;

type M23 = (U2, U3);
type M32 = (U3, U2);
type M22 = (U2, U2);
type M33 = (U3, U3);
type V3 = (U3,);

/// Varied values in `[-1, 1)`, none near zero.
fn sample(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let v = u * 1.6 - 0.8;
            v + 0.2 * v.signum()
        })
        .collect()
}

/// Varied values in `[0.7, 1.5]`: inputs for `log`, `sqrt` and divisors, kept away from `0` (where
/// `log` and `sqrt` are not differentiable and `1/x` blows up).
fn positive(n: usize, seed: u64) -> Vec<f64> {
    sample(n, seed).iter().map(|v| 0.5 + v.abs()).collect()
}

fn t<S: Shape>(v: &[f64]) -> Tensor<f64, S> {
    Tensor::from_vec(v.to_vec()).unwrap()
}

/// Fixed, non-zero weights of varied sign.
fn weights<S: Shape>() -> Tensor<f64, S> {
    Tensor::from_fn(|i| ((i * 7 + 3) % 5) as f64 * 0.4 - 0.9)
}

/// `loss = sum(y * w)`.
#[allow(clippy::type_complexity)]
fn weighted_sum<D: 'static, G, Ss, S: Shape>(
    g: GraphData<f64, D, G, Ss>,
    y: Position<S>,
    w: Position<S>,
) -> (GraphData<f64, D, G, Snoc<Snoc<Ss, S>, ()>>, Position<()>) {
    let (g, yw) = g.push(ops::mul(y, w));
    g.push(ops::sum(yw))
}

/// The loss value and the gradients at positions `of`, from `backprop_from(loss, 1)` (checked
/// bit-equal to `backprop_from_dense`).
fn run<D: 'static, G, Ss>(
    saved: &SavedGraph<'_, f64, D, G, Ss>,
    loss: Position<()>,
    of: &[usize],
) -> (f64, Vec<Vec<f64>>) {
    let value = saved.value(loss).unwrap().data()[0];
    let grads = saved.backprop_from(loss, Tensor::full(1.0)).unwrap();
    let dense = saved.backprop_from_dense(loss, Tensor::full(1.0)).unwrap();
    let bits = |p: RawPackIter<'_, f64>| -> Vec<Vec<u64>> {
        p.map(|t| t.data().iter().map(|x| x.to_bits()).collect()).collect()
    };
    assert_eq!(bits(grads.iter()), bits(dense.iter()), "backprop_from vs backprop_from_dense");
    (value, of.iter().map(|&p| grads.raw()[p].data().to_vec()).collect())
}

/// Compares the analytic gradients of `f` at `inputs` with central differences of its value.
fn check(inputs: &[Vec<f64>], f: impl Fn(&[Vec<f64>]) -> (f64, Vec<Vec<f64>>)) {
    let (_, analytic) = f(inputs);
    assert_eq!(analytic.len(), inputs.len());
    for (q, x) in inputs.iter().enumerate() {
        assert_eq!(analytic[q].len(), x.len());
        for i in 0..x.len() {
            let (xp, xm) = (x[i] + H, x[i] - H);
            let mut plus = inputs.to_vec();
            plus[q][i] = xp;
            let mut minus = inputs.to_vec();
            minus[q][i] = xm;
            let numeric = (f(&plus).0 - f(&minus).0) / (xp - xm);
            let a = analytic[q][i];
            let scale = 1f64.max(numeric.abs()).max(a.abs());
            assert!(
                (numeric - a).abs() <= TOL * scale,
                "input {q} element {i}: numeric {numeric:e} vs analytic {a:e} (diff {:e})",
                (numeric - a).abs()
            );
        }
    }
}
