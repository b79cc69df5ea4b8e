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

use super::{check, run, t, weighted_sum, weights};
use exactgrad::typenum::{U0, U1, U2, U3, U4, U5, U6};
use exactgrad::{ops, GraphData, Pack};

/// Varied values in about `[-1, 1.8]` (the other modules' [`sample`](super::sample) plus `i / 100`),
/// none near zero and no two within `1e-4` of each other (so no max-pooling window has a tie
/// within reach of the finite differences).
fn sample(n: usize, seed: u64) -> Vec<f64> {
    let v: Vec<f64> = super::sample(n, seed).into_iter().enumerate().map(|(i, v)| v + i as f64 * 1e-2).collect();
    for (i, a) in v.iter().enumerate() {
        assert!(a.abs() > 1e-3 && v[..i].iter().all(|b| (a - b).abs() > 1e-4), "sample {seed}: pick another seed");
    }
    v
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
