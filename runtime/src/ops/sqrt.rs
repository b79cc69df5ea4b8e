//! `sqrt(a)`: `y[i] = sqrt(a[i])`.
//!
//! VJP: `single(a, δ / (y + y))` with the saved output `y`: `y + y` is exact (a doubling; it
//! cannot overflow since `y ≤ sqrt(MAX)`), so the gradient rounds once, in the division (the
//! alternative `δ * (0.5 / y)` would round twice).
//!
//! IEEE special values follow `sqrt` and `/`: `sqrt(±0) = ±0` with gradient `δ / ±0 = ±∞` (NaN
//! when `δ` is zero), `sqrt(+∞) = +∞` with gradient `δ / ∞ = ±0`, and a negative or NaN input gives
//! a NaN value and a NaN gradient.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// `sqrt` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct SqrtFn;

impl<A: Scalar + Float> PointwiseFn<A> for SqrtFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "sqrt";
    const FORWARD_WORK: usize = 0;
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        x.sqrt()
    }
    #[inline]
    fn derivative((): &(), g: &A, _: &A, y: &A) -> A {
        *g / (*y + *y)
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Sqrt(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Sqrt;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn values() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![4.0, 2.0, 0.25]).unwrap();
        let y = forward(Sqrt::new(0), &[x]);
        assert_eq!(y.data(), &[2.0, core::f64::consts::SQRT_2, 0.5]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Sqrt::new(0), &[sample(&[3, 3], 24).map(|v| v + 1.5)], 1e-7);
    }

    #[test]
    fn gradient_is_delta_over_two_y() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![4.0, 3.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![1.0, 0.3]).unwrap();
        let d = vjp(Sqrt::new(0), &[x], &g);
        let y3 = 3.0f64.sqrt();
        assert_eq!(bits(&d[0]), [0.25f64.to_bits(), (0.3 / (y3 + y3)).to_bits()]);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(Dims::vector(6), vec![0.0, -0.0, f64::INFINITY, -1.0, f64::NAN, 0.0]).unwrap();
        let y = forward(Sqrt::new(0), std::slice::from_ref(&x));
        assert_eq!(bits(&y)[..3], [0, (-0.0f64).to_bits(), f64::INFINITY.to_bits()]);
        assert!(y.data()[3].is_nan() && y.data()[4].is_nan());
        let g = RawTensor::from_vec(Dims::vector(6), vec![1.0, 1.0, -2.0, 1.0, 1.0, 0.0]).unwrap();
        let d = vjp(Sqrt::new(0), &[x], &g);
        assert_eq!(bits(&d[0])[..3], [f64::INFINITY.to_bits(), f64::NEG_INFINITY.to_bits(), (-0.0f64).to_bits()]);
        assert!(d[0].data()[3..].iter().all(|v| v.is_nan()));
    }
}
