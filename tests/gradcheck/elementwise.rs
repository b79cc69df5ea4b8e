//! Elementwise ops: binary (`add`, `sub`, `mul`) and pointwise (`neg`, `scale`, `relu`, `tanh`,
//! `exp`).

use exactgrad::{ops, GraphData, Pack};

use super::{check, run, sample, t, weighted_sum, weights, M23, M32, V3};

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
