//! Matrix products and structural ops: `matmul`, `transpose`, `add_row`, `reshape`, `permute`,
//! `slice`, `concat` (two parts and many), `dropout`.

use exactgrad::typenum::{U0, U1, U2, U3, U4, U7};
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

/// Rank 3 to rank 2: `(2, 3, 2) → (4, 3)`.
#[test]
fn reshape() {
    check(&[sample(12, 60)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U3, U2)>();
        let (g, w) = g.input::<(U4, U3)>();
        let (g, y) = g.push(ops::reshape::<(U4, U3), _, _, _, _>(a));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// A cyclic permutation of three distinct axes, `(2, 3, 4) → (4, 2, 3)`: more than a transpose,
/// and its inverse is not itself.
#[test]
fn permute() {
    check(&[sample(24, 61)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U3, U4)>();
        let (g, w) = g.input::<(U4, U2, U3)>();
        let (g, y) = g.push(ops::permute(a, (U2::new(), U0::new(), U1::new())));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// A window of the middle axis, `(2, 4, 2)[:, 1..3, :]`: elements outside it get a zero gradient.
#[test]
fn slice() {
    check(&[sample(16, 62)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U4, U2)>();
        let (g, w) = g.input::<(U2, U2, U2)>();
        let (g, y) = g.push(ops::slice(a, U1::new(), 1, U2::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// Along the last axis, operands of different widths: `(2, 3) ++ (2, 1) → (2, 4)`.
#[test]
fn concat() {
    check(&[sample(6, 63), sample(2, 64)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<(U2, U1)>();
        let (g, w) = g.input::<(U2, U4)>();
        let (g, y) = g.push(ops::concat(a, b, U1::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

/// `concat(x, x, 0)`: both halves of the cotangent reach `x`.
#[test]
fn concat_same_operand() {
    check(&[sample(6, 65)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, w) = g.input::<(U4, U3)>();
        let (g, y) = g.push(ops::concat(a, a, U0::new()));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index()])
    });
}

/// `concat([a, b, a], 1)`: one node of three parts, `a` twice (its two slices of the cotangent
/// added left to right), `(2, 3) ++ (2, 1) ++ (2, 3) → (2, 7)`.
#[test]
fn concat_many_parts() {
    check(&[sample(6, 66), sample(2, 67)], |x| {
        let (g, a) = GraphData::<f64, ()>::new().input::<M23>();
        let (g, b) = g.input::<(U2, U1)>();
        let (g, w) = g.input::<(U2, U7)>();
        let (g, y) = g.push(ops::concat_parts(a, U1::new()).then(b).then(a).node());
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(t(&x[1])).push(weights()), ()).unwrap();
        run(&saved, l, &[a.index(), b.index()])
    });
}

fn seed_of(d: &u64) -> u64 {
    *d
}

/// `dropout(x, 0.5, seed)` with a fixed seed: kept elements doubled, dropped ones with a zero
/// gradient (a fixed mask, so the finite differences see a linear map).
#[test]
fn dropout() {
    check(&[sample(12, 68)], |x| {
        let (g, a) = GraphData::<f64, u64>::new().input::<(U3, U4)>();
        let (g, w) = g.input::<(U3, U4)>();
        let (g, y) = g.push(ops::dropout(a, 0.5, seed_of));
        let (g, l) = weighted_sum(g, y, w);
        let saved = g.compile(Pack::new().push(t(&x[0])).push(weights()), 0xD0_0D).unwrap();
        run(&saved, l, &[a.index()])
    });
}
