//! `log(a)`: the natural logarithm, `y[i] = ln(a[i])`.
//!
//! VJP: `single(a, δ / a)` — one division of the cotangent by the saved input (not `δ * (1 / a)`,
//! which would round twice).
//!
//! IEEE special values follow `ln` and `/`: `log(+0) = log(-0) = -∞` with gradient `δ / ±0 = ±∞`
//! (NaN when `δ` is zero), `log(+∞) = +∞` with gradient `δ / ∞ = ±0`. A negative input gives a
//! NaN value but still the gradient `δ / a` of the formula (finite); a NaN input gives NaN for both.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// `log` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct LogFn;

impl<A: Scalar + Float> PointwiseFn<A> for LogFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "log";
    const FORWARD_WORK: usize = 48;
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        x.ln()
    }
    #[inline]
    fn derivative((): &(), g: &A, x: &A, _: &A) -> A {
        *g / *x
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Log(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Log;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn values() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![1.0, core::f64::consts::E, 0.25]).unwrap();
        let y = forward(Log::new(0), std::slice::from_ref(&x));
        assert_eq!(bits(&y), bits(&x.map(|v| v.ln())));
        assert_eq!(y.data()[0].to_bits(), 0);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        // Positive inputs only: 1.5 + sample in (0.5, 2.5).
        gradcheck(Log::new(0), &[sample(&[3, 3], 23).map(|v| v + 1.5)], 1e-7);
    }

    #[test]
    fn gradient_is_delta_over_x() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![3.0, 0.1]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![1.0, 0.7]).unwrap();
        let d = vjp(Log::new(0), &[x], &g);
        assert_eq!(bits(&d[0]), [(1.0f64 / 3.0).to_bits(), (0.7f64 / 0.1).to_bits()]);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(Dims::vector(6), vec![0.0, -0.0, f64::INFINITY, -1.0, f64::NAN, 0.0]).unwrap();
        let y = forward(Log::new(0), std::slice::from_ref(&x));
        assert_eq!(y.data()[..3], [f64::NEG_INFINITY, f64::NEG_INFINITY, f64::INFINITY]);
        assert!(y.data()[3].is_nan() && y.data()[4].is_nan());
        let g = RawTensor::from_vec(Dims::vector(6), vec![1.0, 1.0, -2.0, 1.0, 1.0, 0.0]).unwrap();
        let d = vjp(Log::new(0), &[x], &g);
        assert_eq!(bits(&d[0])[..3], [f64::INFINITY.to_bits(), f64::NEG_INFINITY.to_bits(), (-0.0f64).to_bits()]);
        // Negative input: NaN value, but the formula's gradient 1 / -1.
        assert_eq!(d[0].data()[3], -1.0);
        assert!(d[0].data()[4].is_nan() && d[0].data()[5].is_nan());
    }
}
