//! `mean_axis(x, axis)`: mean over one axis, keeping the others (the output has rank `rank − 1`).
//!
//! `y[o, i] = s[o, i] / n` where `s` is [`sum_axis`](super::sum_axis) (ascending along the axis
//! from `0`) and `n` the axis length (which must be at least 1).
//!
//! VJP: `single(x, t)` with `t[o, j, i] = δ[o, i] / n`.

use crate::reference::RefOp;
use core::ops::Div;

use num_traits::FromPrimitive;

use super::sum_axis::{broadcast_along, reduced_dims, split, sums_along};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Mean over one axis.
#[derive(Clone, Debug)]
pub struct MeanAxis {
    parents: [usize; 1],
    axis: usize,
}

impl MeanAxis {
    /// `mean_axis(x, axis)` for the position `x`.
    #[must_use]
    pub fn new(x: usize, axis: usize) -> Self {
        MeanAxis { parents: [x], axis }
    }
}

fn count<A: FromPrimitive>(n: usize) -> A {
    A::from_usize(n).expect("output_dims checked that the element count is a scalar of A")
}

impl<A: Scalar + Div<Output = A> + FromPrimitive, D> CompactOp<A, D> for MeanAxis {
    fn name(&self) -> &'static str {
        "mean_axis"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("mean_axis", prefix, self.parents[0])?;
        let out = reduced_dims("mean_axis", d, self.axis)?;
        let n = d.as_slice()[self.axis];
        A::from_usize(n)
            .map(|_: A| out)
            .ok_or_else(|| format!("mean_axis cannot represent the axis length {n} in its scalar type"))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.parents[0]];
        let out = reduced_dims("mean_axis", x.dims(), self.axis).expect("output_dims accepted these dims");
        let n: A = count(x.dims().as_slice()[self.axis]);
        let s = sums_along(x.data(), x.dims(), self.axis);
        RawTensor::from_parts(out, s.into_iter().map(|v| v / n.clone()).collect())
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let count: A = count(split(d, self.axis).1);
        let t = broadcast_along(d, self.axis, g.data(), c, |v| v.clone() / count.clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::mean_axis(self.parents[0], self.axis))
    }
}

typed_op!(mean_axis(x: S; axis: @Ax as usize) -> MeanAxis: AxisReduce, "`S` without the axis `axis` (a typenum value, `U1::new()`), averaged over it");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = RawTensor::from_vec(Dims::new(&[2, 3]).unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 9.0]).unwrap();
        let y0 = forward(MeanAxis::new(0, 0), std::slice::from_ref(&x));
        assert_eq!(y0.data(), &[2.5, 3.5, 6.0]);
        let y1 = forward(MeanAxis::new(0, 1), std::slice::from_ref(&x));
        assert_eq!(y1.data(), &[2.0, 6.0]);
        for axis in 0..3 {
            gradcheck(MeanAxis::new(0, axis), &[sample(&[3, 2, 2], 50 + axis as u64)], 1e-7);
        }
    }

    #[test]
    fn empty_axis_is_rejected() {
        let op = MeanAxis::new(0, 1);
        let e = <MeanAxis as CompactOp<f64, ()>>::output_dims(&op, &[Dims::matrix(2, 0)]);
        assert_eq!(e.unwrap_err(), "mean_axis needs a non-empty axis, axis 1 of shape [2, 0] is empty");
    }
}
