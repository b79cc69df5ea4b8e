//! `relu(a)`: `y[i] = if a[i] < 0 { 0 } else { a[i] }` (NaN and `-0.0` pass through).
//!
//! VJP: `single(a, m)` with `m[i] = if a[i] > 0 { δ[i] } else { 0 }` (a select, not a product, so
//! a NaN cotangent does not leak through inactive units).

use super::pointwise::PointwiseFn;
use crate::reference::Unary;
use crate::scalar::Scalar;


/// `relu` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct ReluFn;

impl<A: Scalar + PartialOrd> PointwiseFn<A> for ReluFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "relu";
    const FORWARD_WORK: usize = 0;
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        let zero = A::zero();
        if *x < zero {
            zero
        } else {
            x.clone()
        }
    }
    #[inline]
    fn derivative((): &(), g: &A, x: &A, _: &A) -> A {
        if *x > A::zero() {
            g.clone()
        } else {
            A::zero()
        }
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::relu())
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Relu;
    use crate::ops::testing::{bits, forward, gradcheck, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn gradient_matches_finite_differences_away_from_zero() {
        let x = RawTensor::from_vec(Dims::vector(4), vec![-1.5, -0.2, 0.3, 2.0]).unwrap();
        gradcheck(Relu::new(0), &[x], 1e-7);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![-0.0, f64::NAN, -3.0]).unwrap();
        let y = forward(Relu::new(0), std::slice::from_ref(&x));
        assert_eq!(y.data()[0].to_bits(), (-0.0f64).to_bits());
        assert!(y.data()[1].is_nan());
        assert_eq!(y.data()[2].to_bits(), 0);
        let g = RawTensor::from_vec(Dims::vector(3), vec![f64::NAN, 1.0, 1.0]).unwrap();
        assert_eq!(bits(&vjp(Relu::new(0), &[x], &g)[0]), [0, 0, 0]);
    }
}
