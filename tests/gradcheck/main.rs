//! Finite-difference gradient checks of **every built-in op** (every entry of
//! `exactgrad::spec::OPS`, the op table; `every_built_in_op_is_gradchecked` keeps the two lists
//! equal), each through the **typed** API (`GraphData`, the constructors `ops::*`).
//!
//! Each check builds `loss = sum(op(inputs) * w)`, `w` a fixed input of non-zero weights of both
//! signs that vary from one element to the next (a single weight for the ops with a scalar output:
//! `sum`, `mean`, `mse`, `cross_entropy`), so that a transposed or misplaced gradient element shows
//! up. It then compares, for every element of every checked input, the gradient
//! `backprop_from(loss, 1)` returns with the central difference
//! `(L(x + h) - L(x - h)) / ((x + h) - (x - h))` of the loss, `h = 1e-6`, all in `f64`: they must
//! agree to `1e-6 · max(1, |numeric|, |analytic|)`. Every evaluation (at the point and at each
//! perturbed point) also checks that `backprop_from` equals `backprop_from_dense` bit for bit at
//! every position.
//!
//! What is checked, per op:
//! * every differentiable operand: both operands of the binary ops, `x`, gain and bias of
//!   `layer_norm`, both operands of `mse`; with the same position as both operands for `add`,
//!   `mul`, `div`, `matmul` and `concat` (the two VJP terms reach one gradient), and `concat` of
//!   three parts with a repeated one;
//! * `dropout` with a fixed seed (the mask is part of the data, so the op is linear in `x`);
//! * the ops that read the graph's data only from their differentiable input: the table of
//!   `gather_rows` (not the ids; an id repeated and one unused), the logits of `cross_entropy`
//!   (not the labels), `w` of `matmul_data` (not the data `x`);
//! * `data_tensor`, a leaf with no parent: an input combined with it, and the cotangent the pass
//!   leaves at the leaf's own position against differences in the data tensor.
//!
//! Inputs are varied values in `[-1, -0.2] ∪ [0.2, 1)` (some scaled), kept away from the points
//! where an op is not differentiable, so that the differences measure a derivative: `relu`
//! inputs are at least `0.2` from its kink, `max`/`min` operands at least `0.05` apart (no tie),
//! `log`, `sqrt` and divisors in `[0.7, 1.5]`, `softplus` inputs away from `0` (where its stable
//! form switches branch), `layer_norm` rows with a variance far above `eps`. The value chosen at a
//! kink or a tie is a convention (SEMANTICS, the ops' docs), not checked here.
//!
//! Also: an opaque node with a correct dense VJP, a small composite model with fan-out, and a
//! wrong opaque VJP that the checker must catch.
//!
//! Layout: the helpers and the coverage test here; the checks in `elementwise`, `reductions`,
//! `structure`, `data`, `conv` (the sliding-window ops), `attention` (batched `matmul`,
//! `embedding`, `masked_fill`, `causal_mask`) and `custom`.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod attention;
mod conv;
mod custom;
mod data;
mod elementwise;
mod reductions;
mod structure;

use std::collections::BTreeSet;

use exactgrad::typenum::{U2, U3};
use exactgrad::{ops, GraphData, Position, RawPackIter, SavedGraph, Shape, Snoc, Tensor};

/// The name of every op this file checks: `every_built_in_op_is_gradchecked` fails when it
/// differs from the op table's names (a new op needs a check here), or when a listed op is called
/// by none of the modules.
const CHECKED: &[&str] = &[
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "neg",
    "relu",
    "tanh",
    "exp",
    "sigmoid",
    "softplus",
    "log",
    "sqrt",
    "gelu",
    "silu",
    "square",
    "scale",
    "offset",
    "div_const",
    "matmul",
    "transpose",
    "sum",
    "mean",
    "add_row",
    "softmax",
    "log_softmax",
    "mse",
    "sum_axis",
    "mean_axis",
    "layer_norm",
    "cross_entropy",
    "concat",
    "slice",
    "permute",
    "reshape",
    "gather_rows",
    "matmul_data",
    "data_tensor",
    "conv1d",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "masked_fill",
    "causal_mask",
    "dropout",
];

/// The sources of the modules holding the checks.
const SOURCES: &[&str] = &[
    include_str!("attention.rs"),
    include_str!("conv.rs"),
    include_str!("custom.rs"),
    include_str!("data.rs"),
    include_str!("elementwise.rs"),
    include_str!("reductions.rs"),
    include_str!("structure.rs"),
];

const H: f64 = 1e-6;
const TOL: f64 = 1e-6;

type M23 = (U2, U3);
type M32 = (U3, U2);
type M22 = (U2, U2);
type M33 = (U3, U3);
type V3 = (U3,);

/// Varied values in `[-1, -0.2] ∪ [0.2, 1)`: none near zero.
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

#[test]
fn every_built_in_op_is_gradchecked() {
    let spec: BTreeSet<&str> = exactgrad::spec::OPS.iter().map(|op| op.name).collect();
    let checked: BTreeSet<&str> = CHECKED.iter().copied().collect();
    assert_eq!(checked.len(), CHECKED.len(), "CHECKED lists an op twice");
    let missing: Vec<&str> = spec.difference(&checked).copied().collect();
    let unknown: Vec<&str> = checked.difference(&spec).copied().collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "ops of exactgrad::spec::OPS with no gradcheck here: {missing:?}; names in CHECKED that are no op: {unknown:?}"
    );
    for name in CHECKED {
        let (call, turbofish) = (format!("ops::{name}("), format!("ops::{name}::<"));
        assert!(
            SOURCES.iter().any(|s| s.contains(&call) || s.contains(&turbofish)),
            "{name} is in CHECKED, but no check calls `ops::{name}`"
        );
    }
}
