//! Elementwise ops: binary (`add`, `sub`, `mul`, `div`, `max`, `min`) and pointwise (`neg`,
//! `scale`, `offset`, `div_const`, `square`, `relu`, `tanh`, `exp`, `sigmoid`, `softplus`, `log`, `sqrt`, `gelu`, `silu`).

use exactgrad::{ops, GraphData, Pack};

use super::{check, positive, run, sample, t, weighted_sum, weights, M23, M32, V3};

#[test]
fn add() {
    check(&[sample(6, 1), sample(6, 2)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::add(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn add_same_operand() {
    check(&[sample(3, 3)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<V3>();
        let (g, w) = g.input::<V3>();
        let (g, y) = g.push(ops::add(a, a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn sub() {
    check(&[sample(6, 4), sample(6, 5)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M32>();
        let (g, b) = g.input::<M32>();
        let (g, w) = g.input::<M32>();
        let (g, y) = g.push(ops::sub(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn mul() {
    check(&[sample(6, 6), sample(6, 7)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::mul(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn mul_square() {
    check(&[sample(6, 8)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::mul(a, a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn neg() {
    check(&[sample(3, 9)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<V3>();
        let (g, w) = g.input::<V3>();
        let (g, y) = g.push(ops::neg(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn offset() {
    check(&[sample(6, 11)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::offset(a, -1.7));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn div_const() {
    check(&[sample(6, 12)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::div_const(a, -1.7));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn scale() {
    check(&[sample(6, 10)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::scale(a, -1.7));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn relu_away_from_zero() {
    let x = sample(6, 19);
    assert!(x.iter().all(|v| v.abs() >= 0.2) && x.iter().any(|&v| v < 0.0) && x.iter().any(|&v| v > 0.0));
    check(&[x], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::relu(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn tanh() {
    check(&[sample(6, 20)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::tanh(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn exp() {
    check(&[sample(6, 21)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::exp(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn div() {
    // The divisor is kept in `[0.7, 1.5]`, away from the pole at `0`.
    check(&[sample(6, 30), positive(6, 31)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::div(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

/// `div(x, x)` is `1`: the two terms of its VJP (`δ/x` and `-δ·y/x`) must cancel.
#[test]
fn div_same_operand() {
    check(&[positive(3, 32)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<V3>();
        let (g, w) = g.input::<V3>();
        let (g, y) = g.push(ops::div(a, a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Operands of `min`/`max` at least `0.05` apart everywhere (no tie, where neither is
/// differentiable), each operand chosen somewhere.
fn apart(a: &[f64], b: &[f64]) {
    assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() >= 0.05), "{a:?} vs {b:?}");
    assert!(a.iter().zip(b).any(|(x, y)| x < y) && a.iter().zip(b).any(|(x, y)| x > y), "{a:?} vs {b:?}");
}

#[test]
fn max() {
    let (a0, b0) = (sample(6, 33), sample(6, 34));
    apart(&a0, &b0);
    check(&[a0, b0], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M32>();
        let (g, b) = g.input::<M32>();
        let (g, w) = g.input::<M32>();
        let (g, y) = g.push(ops::max(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn min() {
    let (a0, b0) = (sample(6, 35), sample(6, 36));
    apart(&a0, &b0);
    check(&[a0, b0], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M32>();
        let (g, b) = g.input::<M32>();
        let (g, w) = g.input::<M32>();
        let (g, y) = g.push(ops::min(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn square() {
    check(&[sample(6, 37)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::square(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn sigmoid() {
    check(&[sample(6, 38)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::sigmoid(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Inputs of both signs, so both branches of the stable forward (`a > 0` and not) are checked;
/// none at `0`, where the branches meet.
#[test]
fn softplus() {
    let x = sample(6, 39);
    assert!(x.iter().any(|&v| v < 0.0) && x.iter().any(|&v| v > 0.0));
    check(&[x], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::softplus(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Inputs in `[0.7, 1.5]`, away from `log`'s singularity at `0`.
#[test]
fn log() {
    check(&[positive(6, 40)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::log(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Inputs in `[0.7, 1.5]`, away from `0`, where `sqrt` is not differentiable.
#[test]
fn sqrt() {
    check(&[positive(6, 41)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::sqrt(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// The tanh approximation's own derivative (not the exact GELU's): inputs of both signs and up to
/// `±3`, where the cubic term matters.
#[test]
fn gelu() {
    check(&[sample(6, 42).iter().map(|v| 3.0 * v).collect()], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::gelu(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// SiLU: inputs of both signs and up to `±4`, where `sigmoid` bends.
#[test]
fn silu() {
    check(&[sample(6, 43).iter().map(|v| 4.0 * v).collect()], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::silu(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}
