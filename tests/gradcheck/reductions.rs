//! Reductions and row-wise ops: `sum`, `mean`, `sum_axis`, `mean_axis`, `softmax`, `log_softmax`,
//! `layer_norm`, `mse`.

use exactgrad::typenum::{U0, U1, U2, U3, U4};
use exactgrad::{ops, GraphData, Pack};

use super::{check, run, sample, t, weighted_sum, weights, M23, M32};

/// A rank-3 shape, so that an axis reduction over the middle axis has rows on both sides.
type T232 = (U2, U3, U2);

#[test]
fn sum() {
    check(&[sample(6, 15)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<()>();
        let (g, s) = g.push(ops::sum(a));
        let (g, sq) = g.push(ops::mul(s, s));
        let (g, l) = weighted_sum(g, sq, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&[-1.3])), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn mean() {
    check(&[sample(6, 16)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M32>();
        let (g, w) = g.input::<()>();
        let (g, m) = g.push(ops::mean(a));
        let (g, e) = g.push(ops::exp(m));
        let (g, l) = weighted_sum(g, e, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&[0.8])), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Over the middle axis of a rank-3 tensor: `(2, 3, 2) → (2, 2)`.
#[test]
fn sum_axis() {
    check(&[sample(12, 50)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<T232>();
        let (g, w) = g.input::<(U2, U2)>();
        let (g, y) = g.push(ops::sum_axis(a, U1::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Over the first axis of a rank-3 tensor: `(2, 3, 2) → (3, 2)`.
#[test]
fn mean_axis() {
    check(&[sample(12, 51)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<T232>();
        let (g, w) = g.input::<M32>();
        let (g, y) = g.push(ops::mean_axis(a, U0::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Over the last axis of a rank-3 tensor (four rows of two). The varied weights matter: each
/// softmax row sums to `1`, so an unweighted sum would have a zero gradient.
#[test]
fn softmax() {
    check(&[sample(8, 52).iter().map(|v| 2.0 * v).collect()], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U2, U2)>();
        let (g, w) = g.input::<(U2, U2, U2)>();
        let (g, y) = g.push(ops::softmax(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn log_softmax() {
    check(&[sample(8, 53).iter().map(|v| 2.0 * v).collect()], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U4)>();
        let (g, w) = g.input::<(U2, U4)>();
        let (g, y) = g.push(ops::log_softmax(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// All three operands: `x` (rows of four, each with a variance far above `eps`), the gain and
/// the bias.
#[test]
fn layer_norm() {
    let x0 = sample(12, 54);
    for row in x0.chunks(4) {
        let mu = row.iter().sum::<f64>() / 4.0;
        assert!(row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / 4.0 > 0.01, "{row:?}");
    }
    check(&[x0, sample(4, 55), sample(4, 56)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U3, U4)>();
        let (g, gain) = g.input::<(U4,)>();
        let (g, bias) = g.input::<(U4,)>();
        let (g, w) = g.input::<(U3, U4)>();
        let (g, y) = g.push(ops::layer_norm(a, gain, bias, 1e-5));
        let (g, l) = weighted_sum(g, y, w);
        let inputs = Pack::new().push(t(&x[0])).push(t(&x[1])).push(t(&x[2])).push(weights());
        let saved = g.compile(inputs, ()).unwrap();
        run(&saved, l, &[a.index(), gain.index(), bias.index()])
    });
}

/// Both operands (the prediction and the target).
#[test]
fn mse() {
    check(&[sample(6, 57), sample(6, 58)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<()>();
        let (g, y) = g.push(ops::mse(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(t(&[-1.3])), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}
