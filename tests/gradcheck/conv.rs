//! Finite-difference gradient checks of the sliding-window ops through the **typed** API:
//! `conv1d`, `conv2d` (with padding, strides, dilations, and the same position as input and
//! weight), `max_pool2d` (overlapping windows, padding) and `avg_pool2d` (padding not counted), and
//! a small convolutional model (conv2d, relu, max_pool2d, conv2d, avg_pool2d).
//!
//! As in the other modules: `loss = sum(op(inputs) * w)` with fixed, varied weights `w`, the
//! gradient of `backprop_from(loss, 1)` (checked bit-equal to `backprop_from_dense`) against
//! central differences `(L(x + h) - L(x - h)) / ((x + h) - (x - h))`, `h = 1e-6`, in `f64`, to a
//! relative tolerance of `1e-6` (relative to `max(1, |numeric|, |analytic|)`). Inputs keep their
//! elements apart (no ties within a pooling window), so the max is differentiable there.

use exactgrad::typenum::{U0, U1, U2, U3, U4, U5, U6};
use exactgrad::{ops, GraphData, Pack, Position, RawPackIter, SavedGraph, Shape, Snoc, Tensor};

const H: f64 = 1e-6;
const TOL: f64 = 1e-6;

/// Varied values in about `[-1, 1.8]`, none near zero and no two within `1e-4` of each other (so
/// no max-pooling window has a tie within reach of the finite differences).
fn sample(n: usize, seed: u64) -> Vec<f64> {
    let v: Vec<f64> = (0..n as u64)
        .map(|i| {
            let x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let v = u * 1.6 - 0.8;
            v + 0.2 * v.signum() + i as f64 * 1e-2
        })
        .collect();
    for (i, a) in v.iter().enumerate() {
        assert!(a.abs() > 1e-3 && v[..i].iter().all(|b| (a - b).abs() > 1e-4), "sample {seed}: pick another seed");
    }
    v
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
fn weighted_sum<G, Ss, S: Shape>(
    g: GraphData<f64, (), G, Ss>,
    y: Position<S>,
    w: Position<S>,
) -> (GraphData<f64, (), G, Snoc<Snoc<Ss, S>, ()>>, Position<()>) {
    let (g, yw) = g.push(ops::mul(y, w));
    g.push(ops::sum(yw))
}

/// The loss value and the gradients at positions `of`, from `backprop_from(loss, 1)` (checked
/// bit-equal to `backprop_from_dense`).
fn run<G, Ss>(saved: &SavedGraph<'_, f64, (), G, Ss>, loss: Position<()>, of: &[usize]) -> (f64, Vec<Vec<f64>>) {
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

type Image = (U2, U2, U5, U4);

#[test]
fn conv2d_plain() {
    check(&[sample(80, 1), sample(36, 2)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<Image>();
        let (g, k) = g.input::<(U3, U2, U2, U3)>();
        let (g, w) = g.input::<(U2, U3, U4, U2)>();
        let (g, y) = g.push(ops::conv2d(a, k, (U1::new(), U1::new()), (U0::new(), U0::new()), (U1::new(), U1::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), k.index()])
    });
}

#[test]
fn conv2d_padded_strided_dilated() {
    // Height (5 + 4 − 3) / 2 + 1 = 4, width (4 + 2 − 5) / 1 + 1 = 2.
    check(&[sample(80, 3), sample(36, 4)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<Image>();
        let (g, k) = g.input::<(U3, U2, U2, U3)>();
        let (g, w) = g.input::<(U2, U3, U4, U2)>();
        let (g, y) = g.push(ops::conv2d(a, k, (U2::new(), U1::new()), (U2::new(), U1::new()), (U2::new(), U2::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), k.index()])
    });
}

#[test]
fn conv2d_same_position_as_input_and_weight() {
    // x: [2, 2, 2, 3] as input and as weight (2 filters of 2 × 2 × 3), padding (1, 1): [2, 2, 3, 3].
    check(&[sample(24, 5)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U2, U2, U3)>();
        let (g, w) = g.input::<(U2, U2, U3, U3)>();
        let (g, y) = g.push(ops::conv2d(a, a, (U1::new(), U1::new()), (U1::new(), U1::new()), (U1::new(), U1::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn conv1d() {
    // Length (6 + 2 − 3) / 2 + 1 = 3 (padding 1, dilation 1, stride 2); then dilation 2.
    check(&[sample(24, 6), sample(18, 7)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U2, U6)>();
        let (g, k) = g.input::<(U3, U2, U3)>();
        let (g, w) = g.input::<(U2, U3, U3)>();
        let (g, y) = g.push(ops::conv1d(a, k, U2::new(), U1::new(), U1::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), k.index()])
    });
    check(&[sample(24, 8), sample(18, 9)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U2, U6)>();
        let (g, k) = g.input::<(U3, U2, U3)>();
        let (g, w) = g.input::<(U2, U3, U4)>();
        let (g, y) = g.push(ops::conv1d(a, k, U1::new(), U1::new(), U2::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), k.index()])
    });
}

#[test]
fn max_pool2d_overlapping_and_padded() {
    // Kernel (3, 2), stride 1, padding (1, 1): height (5 + 2 − 3) + 1 = 5, width (4 + 2 − 2) + 1 = 5.
    check(&[sample(80, 10)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<Image>();
        let (g, w) = g.input::<(U2, U2, U5, U5)>();
        let (g, y) = g.push(ops::max_pool2d(a, (U3::new(), U2::new()), (U1::new(), U1::new()), (U1::new(), U1::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn avg_pool2d_padding_not_counted() {
    // Kernel 2, stride 2, padding 1: height (5 + 2 − 2) / 2 + 1 = 3, width (4 + 2 − 2) / 2 + 1 = 3.
    check(&[sample(80, 11)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<Image>();
        let (g, w) = g.input::<(U2, U2, U3, U3)>();
        let (g, y) = g.push(ops::avg_pool2d(a, (U2::new(), U2::new()), (U2::new(), U2::new()), (U1::new(), U1::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn small_convolutional_model() {
    // conv2d (padding 1) → relu → max_pool2d 2 × 2 → conv2d → avg_pool2d.
    check(&[sample(36, 12), sample(18, 13), sample(8, 14)], |x| {
        let (g, img) = GraphData::<f64, ()>::new().input::<(U1, U1, U6, U6)>();
        let (g, k1) = g.input::<(U2, U1, U3, U3)>();
        let (g, k2) = g.input::<(U1, U2, U2, U2)>();
        let (g, w) = g.input::<(U1, U1, U1, U1)>();
        let one = || (U1::new(), U1::new());
        let (g, h) = g.push(ops::conv2d(img, k1, one(), one(), one()));
        let (g, r) = g.push(ops::relu(h));
        let (g, p) = g.push(ops::max_pool2d(r, (U2::new(), U2::new()), (U2::new(), U2::new()), (U0::new(), U0::new())));
        let (g, c) = g.push(ops::conv2d(p, k2, one(), (U0::new(), U0::new()), one()));
        let (g, y) = g.push(ops::avg_pool2d(c, (U2::new(), U2::new()), (U2::new(), U2::new()), (U0::new(), U0::new())));
        let (g, l) = weighted_sum(g, y, w);
        let inputs = Pack::new().push(t(&x[0])).push(t(&x[1])).push(t(&x[2])).push(weights());
        let saved = g.compile(inputs, ()).unwrap();
        run(&saved, l, &[img.index(), k1.index(), k2.index()])
    });
}
