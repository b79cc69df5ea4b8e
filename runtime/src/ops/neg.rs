//! `neg(a)`: `y[i] = -a[i]`.
//!
//! VJP: `single(a, 0 - δ)` (negation inside a VJP is `0 - δ`, SEMANTICS §4).

use core::ops::{Neg as NegOp, Sub as SubOp};

use super::pointwise::PointwiseFn;
use crate::reference::Unary;
use crate::scalar::Scalar;


/// `neg` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct NegFn;

impl<A: Scalar + NegOp<Output = A> + SubOp<Output = A>> PointwiseFn<A> for NegFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "neg";
    const FORWARD_WORK: usize = 0;
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        -x.clone()
    }
    #[inline]
    fn derivative((): &(), g: &A, _: &A, _: &A) -> A {
        A::zero() - g.clone()
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::neg())
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Neg;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn value_and_gradient() {
        gradcheck(Neg::new(0), &[sample(&[5], 8)], 1e-7);
        let x = RawTensor::from_vec(Dims::vector(1), vec![0.0]).unwrap();
        assert_eq!(bits(&forward(Neg::new(0), &[x])), [(-0.0f64).to_bits()]);
    }

    #[test]
    fn vjp_is_zero_minus_delta() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![1.0, 1.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![0.0, -0.0]).unwrap();
        // 0 - 0 = +0 (not -0 as `-δ` would give); 0 - (-0) = +0.
        assert_eq!(bits(&vjp(Neg::new(0), &[x], &g)[0]), [0, 0]);
    }
}
