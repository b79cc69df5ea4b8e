//! `offset(a, c)`: `y[i] = a[i] + c` for a constant `c` (the DSL's `x + c`, `c + x`, and `x - c`
//! as `x + (-c)`, which IEEE subtraction is by definition).
//!
//! VJP: `single(a, δ)` — the cotangent itself, as `add`'s for each operand. The sum is the
//! engine's (`pinned_add`: a NaN result keeps the left operand's payload, quieted).

use crate::reference::RefOp;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Addition of a constant.
#[derive(Clone, Debug)]
pub struct Offset<A> {
    parents: [usize; 1],
    constant: A,
}

impl<A> Offset<A> {
    /// `a + constant` for the position `a`.
    pub fn new(a: usize, constant: A) -> Self {
        Offset { parents: [a], constant }
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Offset<A> {
    fn name(&self) -> &'static str {
        "offset"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("offset", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.extend(ctx[self.parents[0]].data().iter().map(|x| A::pinned_add(x.clone(), self.constant.clone())));
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, _: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        c.single_cotangent(self.parents[0])
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::offset(self.parents[0], self.constant.clone()))
    }
}

typed_op!(offset(a: S; constant: A) -> Offset<A>: Unary, "`a + constant`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    #[test]
    fn values_and_exact_gradient() {
        let a = RawTensor::from_vec(Dims::vector(3), vec![1.0, -0.0, f64::INFINITY]).unwrap();
        let y = forward(Offset::new(0, -0.0), core::slice::from_ref(&a));
        // -0 + -0 is -0; 1 + -0 is 1.
        assert_eq!(bits(&y), [1.0f64.to_bits(), (-0.0f64).to_bits(), f64::INFINITY.to_bits()]);
        let g = RawTensor::from_vec(Dims::vector(3), vec![2.0, -0.0, f64::NAN]).unwrap();
        let d = vjp(Offset::new(0, 5.0), &[a], &g);
        assert_eq!(bits(&d[0]), bits(&g));
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Offset::new(0, -2.5), &[sample(&[2, 3], 9)], 1e-7);
    }
}
