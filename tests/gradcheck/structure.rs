//! Matrix products and structural ops: `matmul`, `transpose`, `add_row`.

use exactgrad::{ops, GraphData, Pack};

use super::{check, run, sample, t, weighted_sum, weights, M22, M23, M32, M33, V3};

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
