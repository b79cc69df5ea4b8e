//! The attention ops: batched `matmul` (`[b, m, k] · [b, k, n]`, a shared right matrix
//! `[b, m, k] · [k, n]`, and one batch as both operands), `gather_rows` as `embedding` with a
//! batch of ids (`[b, t]` → `[b, t, d]`), `masked_fill` (a mask of the trailing axes repeated
//! over the batch) and `causal_mask`. The masks' fill values are constants, so their entries have
//! a zero derivative, which the checks see.

use exactgrad::typenum::{U2, U3, U4, U5};
use exactgrad::{ops, GraphData, Pack};

use super::{check, run, sample, t, weighted_sum, weights};

type B234 = (U2, U3, U4);
type B245 = (U2, U4, U5);
type B235 = (U2, U3, U5);
type B233 = (U2, U3, U3);
type M45 = (U4, U5);

/// `[2, 3, 4] · [2, 4, 5]`, one product per batch item: both operands' gradients.
#[test]
fn batched_matmul() {
    check(&[sample(24, 80), sample(40, 81)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<B234>();
        let (g, b) = g.input::<B245>();
        let (g, w) = g.input::<B235>();
        let (g, y) = g.push(ops::matmul(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

/// `[2, 3, 4] · [4, 5]`: the matrix shared by both batch items gets the sum over every row.
#[test]
fn batched_matmul_with_a_shared_matrix() {
    check(&[sample(24, 82), sample(20, 83)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<B234>();
        let (g, b) = g.input::<M45>();
        let (g, w) = g.input::<B235>();
        let (g, y) = g.push(ops::matmul(a, b));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

/// `matmul(x, x)` for a batch of square matrices: the two VJP terms reach one gradient.
#[test]
fn batched_matmul_of_one_batch_with_itself() {
    check(&[sample(18, 84)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<B233>();
        let (g, w) = g.input::<B233>();
        let (g, y) = g.push(ops::matmul(a, a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// The graph's data: token ids and a mask.
struct Tokens {
    ids: Vec<usize>,
    mask: Vec<bool>,
}

/// Ids `[[3, 0, 3], [1, 3, 0]]` into a `(4, 5)` table as `embedding`: row 3 gathered three times,
/// row 2 never.
#[test]
fn embedding() {
    check(&[sample(20, 85)], |x| {
        let (g, table) = GraphData::<f64, Tokens>::new().input::<M45>();
        let (g, w) = g.input::<B235>();
        let (g, y) = g.push(ops::gather_rows::<_, _, _, (U2, U3), _, _>(table, |d: &Tokens| &d.ids));
        let (g, l) = weighted_sum(g, y, w);
        let data = Tokens { ids: vec![3, 0, 3, 1, 3, 0], mask: Vec::new() };
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), data).unwrap();
        run(&saved, l, &[table.index()])
    });
}

/// A `[3, 4]` mask repeated over a `[2, 3, 4]` batch, filled with `-5`.
#[test]
fn masked_fill() {
    check(&[sample(24, 86)], |x| {
        let (g, a) = GraphData::<f64, Tokens>::new().input::<B234>();
        let (g, w) = g.input::<B234>();
        let (g, y) = g.push(ops::masked_fill(a, |d: &Tokens| &d.mask, -5.0));
        let (g, l) = weighted_sum(g, y, w);
        let mask = (0..12).map(|i| i % 3 == 1 || i == 4).collect();
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), Tokens { ids: Vec::new(), mask }).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Scores `[2, 3, 3]` with the columns past each row filled with `0.75`.
#[test]
fn causal_mask() {
    check(&[sample(18, 87)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<B233>();
        let (g, w) = g.input::<B233>();
        let (g, y) = g.push(ops::causal_mask(a, 0.75));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}
