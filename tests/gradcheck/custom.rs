//! An opaque node, a composite model, and a check that the checker catches a wrong VJP.

use exactgrad::{ops, GraphData, Pack, RawTensor};

use super::{check, run, sample, t, weighted_sum, weights, M23, M33, V3};

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
            move |ctx: &[RawTensor<f64>], _: &()| {
                let (p, q) = (ctx[ia].data(), ctx[ib].data());
                RawTensor::from_fn(ctx[ia].dims(), |i| p[i].sin() * q[i])
            },
            move |ctx: &[RawTensor<f64>], _: &(), g: &RawTensor<f64>| {
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
            move |ctx: &[RawTensor<f64>], _: &()| {
                let (p, q) = (ctx[ia].data(), ctx[ib].data());
                RawTensor::from_fn(ctx[ia].dims(), |i| p[i].sin() * q[i])
            },
            move |ctx: &[RawTensor<f64>], _: &(), g: &RawTensor<f64>| {
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
