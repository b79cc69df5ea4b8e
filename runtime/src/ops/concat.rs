//! `concat(a, b, axis)`: joins `a` and `b` along `axis`. Their shapes must be equal except along
//! `axis`; the output has `a.dims[axis] + b.dims[axis]` there.
//!
//! With both operands split around the axis as `outer × n × inner` (row-major),
//! `y[o, j, i] = a[o, j, i]` for `j < n_a` and `y[o, n_a + j, i] = b[o, j, i]` for `j < n_b`.
//!
//! VJP: `add(single(a, δa), single(b, δb))` where `δa` and `δb` are the two slices of `δ` along
//! the axis (`δa[o, j, i] = δ[o, j, i]`, `δb[o, j, i] = δ[o, n_a + j, i]`). When `a == b` the two
//! slices are added first (`δa + δb`, left first) and reach the gradient once (SEMANTICS §4).

use typenum::Unsigned;

use super::sum_axis::split;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::ConcatShape;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Concatenation of two tensors along one axis.
#[derive(Clone, Debug)]
pub struct Concat {
    parents: [usize; 2],
    axis: usize,
}

impl Concat {
    /// `concat(a, b, axis)` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize, axis: usize) -> Self {
        Concat { parents: [a, b], axis }
    }
}

/// The output dims of joining `da` and `db` along `axis`, or a message.
fn joined(da: Dims, db: Dims, axis: usize) -> Result<Dims, String> {
    super::ruled(exactgrad_spec::rules::concat(da.as_slice(), db.as_slice(), axis))
}

impl<A: Scalar, D> CompactOp<A, D> for Concat {
    fn name(&self) -> &'static str {
        "concat"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let da = super::dims_at("concat", prefix, self.parents[0])?;
        let db = super::dims_at("concat", prefix, self.parents[1])?;
        joined(da, db, self.axis)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let (a, b) = (&ctx[self.parents[0]], &ctx[self.parents[1]]);
        let out = joined(a.dims(), b.dims(), self.axis).expect("output_dims accepted these dims");
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let (a, b) = (&ctx[self.parents[0]], &ctx[self.parents[1]]);
        let (outer, na, inner) = split(a.dims(), self.axis);
        let nb = split(b.dims(), self.axis).1;
        let (ca, cb) = (na * inner, nb * inner);
        if ca + cb == 0 {
            return; // no element, however many (empty) rows
        }
        for o in 0..outer {
            y.extend_from_slice(&a.data()[o * ca..(o + 1) * ca]);
            y.extend_from_slice(&b.data()[o * cb..(o + 1) * cb]);
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [a, b] = self.parents;
        let (da, db) = (saved.prefix[a].dims(), saved.prefix[b].dims());
        let (_, na, inner) = split(da, self.axis);
        let nb = split(db, self.axis).1;
        let (ca, cb) = (na * inner, nb * inner);
        let gd = g.data();
        // Row `o` of the cotangent is `ca` elements of `δa` followed by `cb` elements of `δb`.
        let ta = c.tensor(da, |k| gd[(k / ca) * (ca + cb) + k % ca].clone());
        let tb = c.tensor(db, |k| gd[(k / cb) * (ca + cb) + ca + k % cb].clone());
        let (l, r) = (c.single(a, ta), c.single(b, tb));
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Concat { a: self.parents[0], b: self.parents[1], axis: self.axis })
    }
}

/// Typed `concat(a, b, axis)` with the axis a typenum value (`U1::new()`): the shapes agree off
/// the axis and the sizes along it add ([`ConcatShape`]).
pub fn concat<A: Scalar, D: 'static, L: ConcatShape<R, Ax, Output = O>, R, Ax: Unsigned, O: Shape, Br>(
    a: Position<L, Br>,
    b: Position<R, Br>,
    _axis: Ax,
) -> Compact<Concat, A, D, O> {
    Compact::new(Concat::new(a.index(), b.index(), Ax::USIZE), &[&a, &b])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    fn dims(d: &[usize]) -> Dims {
        Dims::new(d).unwrap()
    }

    fn tensor(d: &[usize], v: &[f64]) -> RawTensor<f64> {
        RawTensor::from_vec(dims(d), v.to_vec()).unwrap()
    }

    #[test]
    fn value() {
        let a = tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let b = tensor(&[2, 1], &[5.0, 6.0]);
        let y = forward(Concat::new(0, 1, 1), &[a.clone(), b]);
        assert_eq!((y.dims(), y.data()), (dims(&[2, 3]), &[1.0, 2.0, 5.0, 3.0, 4.0, 6.0][..]));
        let c = tensor(&[1, 2], &[7.0, 8.0]);
        let y = forward(Concat::new(0, 1, 0), &[a, c]);
        assert_eq!((y.dims(), y.data()), (dims(&[3, 2]), &[1.0, 2.0, 3.0, 4.0, 7.0, 8.0][..]));
        let v = forward(Concat::new(0, 1, 0), &[tensor(&[1], &[1.0]), tensor(&[2], &[2.0, 3.0])]);
        assert_eq!((v.dims(), v.data()), (dims(&[3]), &[1.0, 2.0, 3.0][..]));
    }

    #[test]
    fn gradient() {
        for axis in 0..3 {
            let mut db = [2, 3, 2];
            db[axis] = 1;
            gradcheck(Concat::new(0, 1, axis), &[sample(&[2, 3, 2], 310 + axis as u64), sample(&db, 320)], 1e-7);
        }
        gradcheck(Concat::new(0, 1, 1), &[sample(&[2, 1, 2, 2], 330), sample(&[2, 3, 2, 2], 331)], 1e-7);
        // Repeated parent: concat(x, x) sends both slices to x.
        gradcheck(Concat::new(0, 0, 1), &[sample(&[2, 3], 332)], 1e-7);
    }

    #[test]
    fn repeated_parent_adds_the_two_slices_first() {
        // concat(x, x, 0) with x = [2^-53]: its VJP at x is δ[0] + δ[1], added before it reaches x.
        let x = tensor(&[1], &[1.0]);
        let g = tensor(&[2], &[1.0, f64::powi(2.0, -53)]);
        let t = vjp(Concat::new(0, 0, 0), std::slice::from_ref(&x), &g);
        assert_eq!(bits(&t[0]), [(1.0 + f64::powi(2.0, -53)).to_bits()]);
    }

    #[test]
    fn special_values() {
        // Forward copies bits (NaN payloads, -0.0). In the dense VJP each slice is added to the
        // other side's zeros (`δa + 0`), so a -0.0 becomes +0.0 — the reference semantics of
        // `add(single(a, δa), single(b, δb))` (SEMANTICS §4).
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let a = tensor(&[2], &[-0.0, nan]);
        let b = tensor(&[1], &[f64::NEG_INFINITY]);
        let y = forward(Concat::new(0, 1, 0), &[a.clone(), b.clone()]);
        assert_eq!(bits(&y), [(-0.0f64).to_bits(), nan.to_bits(), f64::NEG_INFINITY.to_bits()]);
        let g = tensor(&[3], &[-0.0, nan, -0.0]);
        let t = vjp(Concat::new(0, 1, 0), &[a, b], &g);
        assert_eq!(bits(&t[0]), [0, nan.to_bits()]);
        assert_eq!(bits(&t[1]), [0]);
    }

    #[test]
    fn shape_errors_name_both_shapes() {
        let rule = |a: &[usize], b: &[usize], axis| {
            <Concat as CompactOp<f64, ()>>::output_dims(&Concat::new(0, 1, axis), &[dims(a), dims(b)]).unwrap_err()
        };
        assert_eq!(rule(&[2, 3], &[2, 4], 0), "concat along axis 0 needs the other dims equal, got [2, 3] and [2, 4]");
        assert_eq!(
            rule(&[2, 3], &[2, 3], 2),
            "concat along axis 2 needs two shapes of one rank with that axis, got [2, 3] and [2, 3]"
        );
        assert_eq!(
            rule(&[2, 3], &[6], 0),
            "concat along axis 0 needs two shapes of one rank with that axis, got [2, 3] and [6]"
        );
        assert_eq!(rule(&[], &[], 0), "concat along axis 0 needs two shapes of one rank with that axis, got [] and []");
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U0, U1, U2, U3};
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U3)>();
        let (g, b) = g.input::<(U2, U1)>();
        let (g, c) = g.input::<(U1, U3)>();
        let (g, ab) = g.push(concat(a, b, U1::new()));
        let (g, ac) = g.push(concat(a, c, U0::new()));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[ab.index()], Dims::matrix(2, 4));
        assert_eq!(g.raw().dims()[ac.index()], Dims::matrix(3, 3));
    }
}
