//! Reductions: `sum`, `mean`.

use exactgrad::{ops, GraphData, Pack};

use super::{check, run, sample, t, weighted_sum, M23, M32};

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
