//! `sigmoid(a)`: `y[i] = 1 / (1 + exp(-a[i]))`, evaluated in exactly this order (`-a` is the sign
//! flip, then `exp`, then `1 + ·`, then `1 / ·`). `exp` is [`math::exp`](crate::math::exp) (for
//! `f32`/`f64` a deterministic, vectorising kernel within 1 ulp; `Float::exp` for other scalars).
//!
//! VJP: `single(a, δ * (y * (1 - y)))` with the saved output `y` (δ left).
//!
//! The formula never produces a NaN from a non-NaN input: for `a → -∞`, `exp(-a)` overflows to
//! `+∞` and `y = 1 / ∞ = +0` (in `f64` this happens below about `-709.8`, where the exact value
//! would still be a tiny normal or subnormal number); for `a → +∞`, `y = 1`. A NaN input gives a
//! NaN.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// The logistic function `1 / (1 + exp(-x))` of one scalar, in the order documented on the
/// module (shared with [`Softplus`](super::Softplus), whose derivative it is).
#[inline]
pub(crate) fn logistic<A: Float + 'static>(x: A) -> A {
    A::one() / (A::one() + crate::math::exp(-x))
}

/// `sigmoid` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct SigmoidFn;

impl<A: Scalar + Float> PointwiseFn<A> for SigmoidFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "sigmoid";
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        logistic(*x)
    }
    #[inline]
    fn derivative((): &(), g: &A, _: &A, y: &A) -> A {
        A::pinned_mul(*g, *y * (A::one() - *y))
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Sigmoid(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Sigmoid;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn values() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![0.0, 2.0, -1.5]).unwrap();
        let y = forward(Sigmoid::new(0), &[x]);
        assert_eq!(y.data()[0], 0.5);
        for (v, x) in y.data()[1..].iter().zip([2.0f64, -1.5]) {
            assert!((v - 1.0 / (1.0 + (-x).exp())).abs() < 1e-16);
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Sigmoid::new(0), &[sample(&[3, 3], 21)], 1e-7);
        let wide = RawTensor::from_vec(Dims::vector(4), vec![-8.0, -3.0, 3.0, 8.0]).unwrap();
        gradcheck(Sigmoid::new(0), &[wide], 1e-7);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(Dims::vector(5), vec![f64::INFINITY, f64::NEG_INFINITY, -1000.0, -0.0, f64::NAN])
            .unwrap();
        let y = forward(Sigmoid::new(0), std::slice::from_ref(&x));
        assert_eq!(bits(&y)[..4], [1.0f64.to_bits(), 0, 0, 0.5f64.to_bits()]);
        assert!(y.data()[4].is_nan());
        // Saturated units pass `δ * (1 * 0)` and `δ * (0 * 1)`: zeros, NaN only from a NaN δ.
        let g = RawTensor::from_vec(Dims::vector(5), vec![2.0, -2.0, f64::NAN, 4.0, 1.0]).unwrap();
        let d = vjp(Sigmoid::new(0), &[x], &g);
        assert_eq!(bits(&d[0])[..2], [0, (-0.0f64).to_bits()]);
        assert!(d[0].data()[2].is_nan());
        assert_eq!(d[0].data()[3], 1.0);
        assert!(d[0].data()[4].is_nan());
    }
}
