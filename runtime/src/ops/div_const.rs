//! `div_const(a, c)`: `y[i] = a[i] / c` for a constant `c` (the DSL's `x / c`): one division per
//! element, not a product with a rounded reciprocal.
//!
//! VJP: `single(a, δ / c)` (one division per element, δ left).
//!
//! For a scalar whose `/` can panic ([`Storage::division_panics`](crate::Storage::division_panics):
//! integers dividing by zero or overflowing, rationals dividing by zero) the validation refuses
//! the constant before the forward runs: `compile` and the generated programs return
//! [`Error::Node`](crate::Error::Node) naming the node and the op.

use crate::reference::RefOp;
use core::ops::Div as DivOp;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Division by a constant.
#[derive(Clone, Debug)]
pub struct DivConst<A> {
    parents: [usize; 1],
    divisor: A,
}

impl<A> DivConst<A> {
    /// `a / divisor` for the position `a`.
    pub fn new(a: usize, divisor: A) -> Self {
        DivConst { parents: [a], divisor }
    }
}

impl<A: Scalar + DivOp<Output = A>, D> CompactOp<A, D> for DivConst<A> {
    fn name(&self) -> &'static str {
        "div_const"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("div_const", prefix, self.parents[0])
    }
    fn validate(&self, ctx: &[RawTensor<A>], _: &D) -> Result<(), String> {
        // The cotangent's elements are divided too: with a divisor that can panic for some
        // dividend (zero), every division is refused.
        let a = ctx[self.parents[0]].data();
        match a.iter().chain([&A::zero()]).position(|x| A::division_panics(x, &self.divisor)) {
            None => Ok(()),
            Some(_) => Err("div_const cannot divide by this constant in this scalar type (a zero divisor, or an integer division that overflows)".to_owned()),
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.extend(ctx[self.parents[0]].data().iter().map(|x| x.clone() / self.divisor.clone()));
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let gd = g.data();
        let t = c.tensor(g.dims(), |i| gd[i].clone() / self.divisor.clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::div_const(self.parents[0], self.divisor.clone()))
    }
}

typed_op!(div_const(a: S; divisor: A) -> DivConst<A>: Unary, "`a / divisor`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    #[test]
    fn a_division_per_element_not_a_reciprocal_product() {
        let a = RawTensor::from_vec(Dims::vector(2), vec![3.0, -0.7]).unwrap();
        let y = forward(DivConst::new(0, 10.0), core::slice::from_ref(&a));
        assert_eq!(bits(&y), [(3.0f64 / 10.0).to_bits(), (-0.7f64 / 10.0).to_bits()]);
        // Not the product with the rounded reciprocal.
        assert_ne!(bits(&y)[0], (3.0f64 * (1.0 / 10.0)).to_bits());
        let g = RawTensor::from_vec(Dims::vector(2), vec![0.9, -0.0]).unwrap();
        let d = vjp(DivConst::new(0, 10.0), &[a], &g);
        assert_eq!(bits(&d[0]), [(0.9f64 / 10.0).to_bits(), (-0.0f64 / 10.0).to_bits()]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(DivConst::new(0, -2.5), &[sample(&[2, 3], 9)], 1e-7);
    }
}
