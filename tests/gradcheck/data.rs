//! Ops that read the graph's data: `gather_rows` and `cross_entropy` (ids and labels),
//! `matmul_data` and `data_tensor` (a data tensor). The data is not differentiable: only the
//! gradients of the graph inputs are checked, plus, for `data_tensor`, the cotangent the pass
//! leaves at the leaf's own position.

use exactgrad::typenum::{U3, U4, U5};
use exactgrad::{ops, GraphData, Pack, RawTensor};

use super::{check, run, sample, t, weighted_sum, weights, M22, M23, M32};

/// Row indices (ids or labels) as the graph's data.
struct Rows(Vec<usize>);

fn rows_of(d: &Rows) -> &[usize] {
    &d.0
}

fn tensor_of(d: &RawTensor<f64>) -> &RawTensor<f64> {
    d
}

/// Ids `[3, 0, 3, 1, 3]` into a `(4, 3)` table: row 3 is gathered three times (its gradient adds
/// three cotangent rows), row 2 never (a zero gradient). Only the table has a gradient.
#[test]
fn gather_rows() {
    check(&[sample(12, 70)], |x| {
        let (g, table) = GraphData::<f64, Rows>::new().input::<(U4, U3)>();
        let (g, w) = g.input::<(U5, U3)>();
        let (g, y) = g.push(ops::gather_rows::<_, _, _, (U5,), _, _>(table, rows_of));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), Rows(vec![3, 0, 3, 1, 3])).unwrap();
        run(&saved, l, &[table.index()])
    });
}

/// Three rows of four logits with labels `[2, 0, 2]`; only the logits have a gradient.
#[test]
fn cross_entropy() {
    check(&[sample(12, 71).iter().map(|v| 2.0 * v).collect()], |x| {
        let (g, logits) = GraphData::<f64, Rows>::new().input::<(U3, U4)>();
        let (g, w) = g.input::<()>();
        let (g, y) = g.push(ops::cross_entropy(logits, rows_of));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&[-1.3])), Rows(vec![2, 0, 2])).unwrap();
        run(&saved, l, &[logits.index()])
    });
}

/// `x · w` with `x` a fixed `(2, 3)` data tensor: only `w` has a gradient.
#[test]
fn matmul_data() {
    let x_data = sample(6, 72);
    check(&[sample(6, 73)], |x| {
        let (g, wm) = GraphData::<f64, RawTensor<f64>>::new().input::<M32>();
        let (g, w) = g.input::<M22>();
        let (g, y) = g.push(ops::matmul_data::<_, _, M23, _, _, _>(tensor_of, wm));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), t::<M23>(&x_data).into_raw()).unwrap();
        run(&saved, l, &[wm.index()])
    });
}

/// `y = tanh(x * a) + x * x` with `x = data_tensor(…)` a leaf read from the data and `a` an input.
/// The leaf has no differentiable parent, so the check is of the graph through it: the gradient
/// of `a` (which a leak from the leaf's VJP would also reach), and the cotangent `backprop_from`
/// leaves at the leaf's position (SEMANTICS §7: `result[p] = g`) against central differences in the
/// data tensor itself.
#[test]
fn data_tensor() {
    check(&[sample(6, 74), sample(6, 75)], |x| {
        let (g, a) = GraphData::<f64, RawTensor<f64>>::new().input::<M23>();
        let (g, w) = g.input::<M23>();
        let (g, xd) = g.push(ops::data_tensor::<_, _, M23>(tensor_of));
        let (g, xa) = g.push(ops::mul(xd, a));
        let (g, th) = g.push(ops::tanh(xa));
        let (g, xx) = g.push(ops::mul(xd, xd));
        let (g, y) = g.push(ops::add(th, xx));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), t::<M23>(&x[1]).into_raw()).unwrap();
        run(&saved, l, &[a.index(), xd.index()])
    });
}
