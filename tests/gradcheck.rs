//! Finite-difference gradient checks: the gradient `backprop_from` returns through the **typed**
//! API is the derivative of the forward, for the built-in ops add, sub, mul (including `x * x`),
//! neg, scale, matmul including a square `matmul(x, x)`, transpose, sum, mean, `add_row`, relu away
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

use exactgrad::typenum::{U2, U3};
use exactgrad::{ops, GraphData, Pack, Position, RawPackIter, RawTensor, SavedGraph, Shape, Snoc, Tensor};

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
fn matmul() {
    check(&[sample(6, 11), sample(6, 12)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M32>();
        let (g, w) = g.input::<M22>();
        let (g, y) = g.push(ops::matmul(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

#[test]
fn matmul_square_same_operand() {
    check(&[sample(9, 13)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M33>();
        let (g, w) = g.input::<M33>();
        let (g, y) = g.push(ops::matmul(a, a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

#[test]
fn transpose() {
    check(&[sample(6, 14)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<M32>();
        let (g, y) = g.push(ops::transpose(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

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

#[test]
fn add_row() {
    check(&[sample(6, 17), sample(3, 18)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<V3>();
        let (g, w) = g.input::<M23>();
        let (g, y) = g.push(ops::add_row(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
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

/// `y = sin(a) * b` as an opaque node with its dense VJP `a: δ·cos(a)·b`, `b: δ·sin(a)`, zeros at
/// every other earlier position.
#[test]
fn opaque_with_a_correct_vjp() {
    check(&[sample(6, 22), sample(6, 23)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<M23>();
        let (ia, ib) = (a.index(), b.index());
        let node = ops::opaque::<f64, (), M23>(
            "sin_mul",
            &[&a, &b],
            move |ctx: &[RawTensor<f64>], (): &()| {
                let (p, q) = (ctx[ia].data(), ctx[ib].data());
                RawTensor::from_fn(ctx[ia].dims(), |i| p[i].sin() * q[i])
            },
            move |ctx: &[RawTensor<f64>], (): &(), g: &RawTensor<f64>| {
                let (p, q, d) = (ctx[ia].data(), ctx[ib].data(), g.data());
                let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
                out[ia] = RawTensor::from_fn(g.dims(), |i| d[i] * p[i].cos() * q[i]);
                out[ib] = RawTensor::from_fn(g.dims(), |i| d[i] * p[i].sin());
                out
            },
        );
        let (g, y) = g.push(node);
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

/// A small model using several ops at once, with fan-out (`W` and `h` are read twice):
/// `h = tanh(x·W + b)`, `loss = mean(h * h) - exp(sum(W · relu(h)ᵀ))`.
#[test]
fn composite_model() {
    check(&[sample(6, 24), sample(9, 25), sample(3, 26)], |x| {
        let (g, xi) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, wm) = g.input::<M33>();
        let (g, b) = g.input::<V3>();
        let (g, one) = g.input::<()>();
        let (g, z) = g.push(ops::matmul(xi, wm));
        let (g, zb) = g.push(ops::add_row(z, b));
        let (g, h) = g.push(ops::tanh(zb));
        let (g, hh) = g.push(ops::mul(h, h));
        let (g, m) = g.push(ops::mean(hh));
        let (g, r) = g.push(ops::relu(h));
        let (g, rt) = g.push(ops::transpose(r));
        let (g, rw) = g.push(ops::matmul(wm, rt));
        let (g, s) = g.push(ops::sum(rw));
        let (g, e) = g.push(ops::exp(s));
        let (g, ms) = g.push(ops::sub(m, e));
        let (g, l) = weighted_sum(g, ms, one);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(t(&x[2])).push(t(&[1.0])), ()).unwrap();
        run(&saved, l, &[xi.index(), wm.index(), b.index()])
    });
}

/// The checker itself has teeth: an opaque node whose VJP forgets the factor `b` is caught.
#[test]
#[should_panic(expected = "numeric")]
fn checker_catches_a_wrong_vjp() {
    check(&[sample(6, 27), sample(6, 28)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<M23>();
        let (g, w) = g.input::<M23>();
        let (ia, ib) = (a.index(), b.index());
        let node = ops::opaque::<f64, (), M23>(
            "sin_mul_wrong",
            &[&a, &b],
            move |ctx: &[RawTensor<f64>], (): &()| {
                let (p, q) = (ctx[ia].data(), ctx[ib].data());
                RawTensor::from_fn(ctx[ia].dims(), |i| p[i].sin() * q[i])
            },
            move |ctx: &[RawTensor<f64>], (): &(), g: &RawTensor<f64>| {
                let (p, d) = (ctx[ia].data(), g.data());
                let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
                out[ia] = RawTensor::from_fn(g.dims(), |i| d[i] * p[i].cos());
                out[ib] = RawTensor::from_fn(g.dims(), |i| d[i] * p[i].sin());
                out
            },
        );
        let (g, y) = g.push(node);
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}
