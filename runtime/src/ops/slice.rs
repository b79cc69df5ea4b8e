//! `slice(x, axis, start, len)`: the `len` consecutive entries of `x` along `axis` starting at
//! `start` (requires `start + len ≤ x.dims[axis]`); the output has `len` there.
//!
//! With `x` split around the axis as `outer × n × inner` (row-major),
//! `y[o, j, i] = x[o, start + j, i]` for `j < len`.
//!
//! VJP: `single(x, t)` where `t` is `δ` scattered into `zeros(x.dims)`: `t[o, start + j, i] =
//! δ[o, j, i]` and `t = 0` elsewhere (no arithmetic: a `-0.0` in `δ` stays `-0.0`).

use super::sum_axis::split;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// A contiguous range along one axis.
#[derive(Clone, Debug)]
pub struct Slice {
    parents: [usize; 1],
    axis: usize,
    start: usize,
    len: usize,
}

impl Slice {
    /// `slice(x, axis, start, len)` for the position `x`.
    #[must_use]
    pub fn new(x: usize, axis: usize, start: usize, len: usize) -> Self {
        Slice { parents: [x], axis, start, len }
    }

    /// The axis it slices.
    pub(crate) fn axis(&self) -> usize {
        self.axis
    }

    /// `(start, len)`.
    pub(crate) fn range(&self) -> (usize, usize) {
        (self.start, self.len)
    }

    /// The output dims for an input of dims `d`, or a message.
    fn sliced(&self, d: Dims) -> Result<Dims, String> {
        super::ruled(super::spec_rules::slice(d.as_slice(), self.axis, self.start, self.len))
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Slice {
    fn name(&self) -> &'static str {
        "slice"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        self.sliced(super::dims_at("slice", prefix, self.parents[0])?)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let out = self.sliced(ctx[self.parents[0]].dims()).expect("output_dims accepted these dims");
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let (outer, n, inner) = split(x.dims(), self.axis);
        let (from, count) = (self.start * inner, self.len * inner);
        if count == 0 {
            return; // no element, however many (empty) rows
        }
        for o in 0..outer {
            let row = o * n * inner + from;
            y.extend_from_slice(&x.data()[row..row + count]);
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let (_, n, inner) = split(d, self.axis);
        let (from, count, row) = (self.start * inner, self.len * inner, n * inner);
        // Row by row: zeros, the cotangent's window, zeros (no index arithmetic per element).
        let mut t = c.buffer_for(d.numel());
        for window in g.data().chunks_exact(count.max(1)).take(d.numel() / row.max(1)) {
            t.extend((0..from).map(|_| A::zero()));
            t.extend_from_slice(window);
            t.extend((from + count..row).map(|_| A::zero()));
        }
        t.resize(d.numel(), A::zero()); // only for an empty window (`count == 0`)
        c.single(self.parents[0], RawTensor::from_parts(d, t))
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Slice { a: self.parents[0], axis: self.axis, start: self.start, len: self.len })
    }
    fn as_window(&self) -> Option<&dyn super::WindowVjp<A, D>> {
        Some(self)
    }
}

typed_op!(slice(x: S; axis: @Ax as usize, start: usize, len: @Len as usize) -> Slice: Slice, "`S` with `len` entries along `axis` (both typenum values, `U1::new()`), from `start`; the range `start..start + len` is checked when the node is pushed (reported by `compile`)");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Concat;

    fn dims(d: &[usize]) -> Dims {
        Dims::new(d).unwrap()
    }

    #[test]
    fn value() {
        let x = RawTensor::from_vec(dims(&[2, 3]), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let y = forward(Slice::new(0, 1, 1, 2), std::slice::from_ref(&x));
        assert_eq!((y.dims(), y.data()), (dims(&[2, 2]), &[2.0, 3.0, 5.0, 6.0][..]));
        let y = forward(Slice::new(0, 0, 1, 1), std::slice::from_ref(&x));
        assert_eq!((y.dims(), y.data()), (dims(&[1, 3]), &[4.0, 5.0, 6.0][..]));
        let e = forward(Slice::new(0, 1, 3, 0), std::slice::from_ref(&x));
        assert_eq!(e.dims(), dims(&[2, 0]));
    }

    #[test]
    fn slices_undo_concat() {
        let (a, b) = (sample(&[2, 1, 3], 340), sample(&[2, 2, 3], 341));
        let y = forward(Concat::new(0, 1, 1), &[a.clone(), b.clone()]);
        assert_eq!(bits(&forward(Slice::new(0, 1, 0, 1), std::slice::from_ref(&y))), bits(&a));
        assert_eq!(bits(&forward(Slice::new(0, 1, 1, 2), std::slice::from_ref(&y))), bits(&b));
    }

    #[test]
    fn gradient() {
        for axis in 0..3 {
            gradcheck(Slice::new(0, axis, 1, 2), &[sample(&[3, 4, 3], 350 + axis as u64)], 1e-7);
        }
        gradcheck(Slice::new(0, 3, 0, 1), &[sample(&[2, 1, 2, 3], 354)], 1e-7);
        gradcheck(Slice::new(0, 0, 2, 2), &[sample(&[4], 355)], 1e-7);
    }

    #[test]
    fn vjp_scatters_into_plus_zeros_and_keeps_bits() {
        let x = sample(&[2, 3], 356);
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let g = RawTensor::from_vec(dims(&[2, 1]), vec![-0.0, nan]).unwrap();
        let t = vjp(Slice::new(0, 1, 2, 1), &[x], &g);
        assert_eq!(bits(&t[0]), [0, 0, (-0.0f64).to_bits(), 0, 0, nan.to_bits()]);
    }

    #[test]
    fn range_errors_are_named() {
        let rule = |op: Slice, d: &[usize]| <Slice as CompactOp<f64, ()>>::output_dims(&op, &[dims(d)]).unwrap_err();
        assert_eq!(
            rule(Slice::new(0, 1, 2, 2), &[2, 3]),
            "slice of 2 entries from 2 is out of range for axis 1 of shape [2, 3] (3 entries)"
        );
        assert_eq!(
            rule(Slice::new(0, 0, usize::MAX, 1), &[2]),
            format!("slice of 1 entries from {} is out of range for axis 0 of shape [2] (2 entries)", usize::MAX)
        );
        assert_eq!(rule(Slice::new(0, 2, 0, 1), &[2, 3]), "slice cannot take axis 2 of shape [2, 3] (rank 2)");
        assert_eq!(rule(Slice::new(0, 0, 0, 1), &[]), "slice cannot take axis 0 of shape [] (rank 0)");
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U1, U2, U3};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3)>();
        let (g, y) = g.push(slice(x, U1::new(), 1, U2::new()));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[y.index()], Dims::matrix(2, 2));
        // The range is a value: checked at push, reported by `compile`.
        let (g, _) = g.push(slice(x, U1::new(), 2, U2::new()));
        let errors = g.build_errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].1, "slice of 2 entries from 2 is out of range for axis 1 of shape [2, 3] (3 entries)");
    }
}
