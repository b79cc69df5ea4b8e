//! `sum_axis(x, axis)`: sum over one axis, keeping the others (the output has rank `rank − 1`).
//!
//! With `x` split around the axis as `outer × n × inner` (row-major),
//! `y[o, i] = ((0 + x[o, 0, i]) + x[o, 1, i]) + … + x[o, n − 1, i]`: ascending along the axis,
//! starting from `0` (so an empty axis gives `0`).
//!
//! VJP: `single(x, t)` with `t[o, j, i] = δ[o, i]` (the cotangent broadcast back along the axis).

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Sum over one axis.
#[derive(Clone, Debug)]
pub struct SumAxis {
    parents: [usize; 1],
    axis: usize,
}

impl SumAxis {
    /// `sum_axis(x, axis)` for the position `x`.
    #[must_use]
    pub fn new(x: usize, axis: usize) -> Self {
        SumAxis { parents: [x], axis }
    }
}

/// `(outer, n, inner)`: the sizes before, at and after `axis` (which must be `< rank`).
pub(crate) fn split(d: Dims, axis: usize) -> (usize, usize, usize) {
    let s = d.as_slice();
    (s[..axis].iter().product(), s[axis], s[axis + 1..].iter().product())
}

/// The dims of `d` without `axis`, or a message naming `op`.
pub(crate) fn reduced_dims(op: &str, d: Dims, axis: usize) -> Result<Dims, String> {
    super::ruled(super::spec_rules::axis_reduce(op, d.as_slice(), axis, op == "mean_axis"))
}

/// The work per summed element of [`sums_along`] for the thread split (`parallel::rows`, units
/// of `PointwiseFn::FORWARD_WORK`, about 16 per nanosecond): one add on the sum's dependency chain
/// and a load, about 1 ns (an estimate from the add's latency, not measured).
const SUM_WORK: usize = 16;

/// Sums along `axis` of `x` (dims `d`) in ascending order from `0`: `outer * inner` values. The
/// output elements are computed in contiguous blocks, on threads for large inputs
/// (`parallel::rows`, one element per "row"): each element's sum whole, in its order.
pub(crate) fn sums_along<A: Scalar>(x: &[A], d: Dims, axis: usize) -> Vec<A> {
    let (outer, n, inner) = split(d, axis);
    if outer == 0 || inner == 0 {
        // No output element; `outer` alone may be 2^32 (`[2^32, 3, 0]` along axis 1).
        return Vec::new();
    }
    let mut out = vec![A::zero(); outer * inner];
    crate::parallel::rows(&mut out, 1, n.saturating_mul(SUM_WORK), |first, block| {
        for (e, o) in (first..).zip(block) {
            let (oi, i) = (e / inner, e % inner);
            *o = super::sum::pinned_sum((0..n).map(|j| x[(oi * n + j) * inner + i].clone()));
        }
    });
    out
}

/// The VJP's broadcast back along the axis: a tensor of dims `d` with `t[o, j, i] = f(δ[o, i])`,
/// written once (a loop bound by memory: never split over threads, as the pointwise ops of work
/// 0 are not by default).
pub(crate) fn broadcast_along<A: Scalar>(
    d: Dims,
    axis: usize,
    gd: &[A],
    c: &mut Contributions<A>,
    f: impl Fn(&A) -> A,
) -> RawTensor<A> {
    let (_, n, inner) = split(d, axis);
    c.tensor(d, |k| f(&gd[(k / (n * inner)) * inner + k % inner]))
}

impl<A: Scalar, D> CompactOp<A, D> for SumAxis {
    fn name(&self) -> &'static str {
        "sum_axis"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        reduced_dims("sum_axis", super::dims_at("sum_axis", prefix, self.parents[0])?, self.axis)
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.parents[0]];
        let out = reduced_dims("sum_axis", x.dims(), self.axis).expect("output_dims accepted these dims");
        RawTensor::from_parts(out, sums_along(x.data(), x.dims(), self.axis))
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let t = broadcast_along(d, self.axis, g.data(), c, A::clone);
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::SumAxis { a: self.parents[0], axis: self.axis })
    }
}

typed_op!(sum_axis(x: S; axis: @Ax as usize) -> SumAxis: AxisReduce, "`S` without the axis `axis` (a typenum value, `U1::new()`), summed over it");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = RawTensor::from_vec(Dims::new(&[2, 3]).unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let y0 = forward(SumAxis::new(0, 0), std::slice::from_ref(&x));
        assert_eq!((y0.dims(), y0.data()), (Dims::vector(3), &[5.0, 7.0, 9.0][..]));
        let y1 = forward(SumAxis::new(0, 1), std::slice::from_ref(&x));
        assert_eq!((y1.dims(), y1.data()), (Dims::vector(2), &[6.0, 15.0][..]));
        for axis in 0..3 {
            gradcheck(SumAxis::new(0, axis), &[sample(&[2, 3, 2], 40 + axis as u64)], 1e-7);
        }
        gradcheck(SumAxis::new(0, 0), &[sample(&[4], 44)], 1e-7);
    }

    #[test]
    fn order_is_ascending_from_plus_zero() {
        // ((0 + 1e16) + 1) + -1e16 = 0, and -0 alone sums to +0 (0 + -0).
        let x = RawTensor::from_vec(Dims::matrix(3, 2), vec![1e16, -0.0, 1.0, -0.0, -1e16, -0.0]).unwrap();
        let y = forward(SumAxis::new(0, 0), &[x]);
        assert_eq!(bits(&y), [0, 0]);
    }

    #[test]
    fn bad_axis_is_reported() {
        let e = <SumAxis as CompactOp<f64, ()>>::output_dims(&SumAxis::new(0, 2), &[Dims::matrix(2, 3)]);
        assert_eq!(e.unwrap_err(), "sum_axis cannot reduce axis 2 of shape [2, 3] (rank 2)");
    }
}
