//! `softplus(a)`: `y[i] = ln(1 + exp(a[i]))`, computed stably as
//!
//! ```text
//! y = if a > 0 { a + ln_1p(exp(-a)) } else { ln_1p(exp(a)) }
//! ```
//!
//! (`max(a, 0) + ln_1p(exp(-|a|))` written as two branches; `ln_1p` is `Float::ln_1p`, `exp` is
//! [`math::exp`](crate::math::exp)). `exp`
//! only ever sees a non-positive argument, so it never overflows: `softplus(+∞) = +∞`,
//! `softplus(-∞) = +0`, large `a` give `a` exactly (`a + 0`), very negative `a` give `exp(a)`
//! to within rounding (subnormals included), and a NaN input falls into the second branch and
//! gives a NaN.
//!
//! VJP: `single(a, δ * sigmoid(a))` (δ left), where `sigmoid(a) = 1 / (1 + exp(-a))` is computed
//! from the saved input by the same kernel as the [`Sigmoid`](super::Sigmoid) op, so
//! `softplus`'s gradient equals `δ * sigmoid(a)` bit for bit.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use super::sigmoid::logistic;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


#[inline]
fn softplus_scalar<A: Float + 'static>(x: A) -> A {
    if x > A::zero() {
        x + crate::math::exp(-x).ln_1p()
    } else {
        crate::math::exp(x).ln_1p()
    }
}

/// `softplus` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct SoftplusFn;

impl<A: Scalar + Float> PointwiseFn<A> for SoftplusFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "softplus";
    const FORWARD_WORK: usize = 128;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        softplus_scalar(*x)
    }
    #[inline]
    fn derivative((): &(), g: &A, x: &A, _: &A) -> A {
        A::pinned_mul(*g, logistic(*x))
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Softplus(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Softplus;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Sigmoid;
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn values() {
        let x = RawTensor::from_vec(Dims::vector(4), vec![0.0, 1.5, -2.0, 30.0]).unwrap();
        let y = forward(Softplus::new(0), &[x]);
        assert!((y.data()[0] - core::f64::consts::LN_2).abs() < 1e-16);
        for (v, x) in y.data()[1..3].iter().zip([1.5f64, -2.0]) {
            assert!((v - (1.0 + x.exp()).ln()).abs() < 1e-15, "{v} at {x}");
        }
        // 30 + ln_1p(e^-30) = 30 + 9.4e-14: still above 30 (a naive `if x > 20 { x }` would drop it).
        assert!(y.data()[3] > 30.0 && y.data()[3] - 30.0 < 1e-13);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Softplus::new(0), &[sample(&[3, 3], 22)], 1e-7);
        let wide = RawTensor::from_vec(Dims::vector(4), vec![-12.0, -3.0, 3.0, 12.0]).unwrap();
        gradcheck(Softplus::new(0), &[wide], 1e-7);
    }

    #[test]
    fn gradient_is_delta_times_sigmoid_bitwise() {
        let x = RawTensor::from_vec(Dims::vector(6), vec![-0.0, 0.7, -40.0, 800.0, -800.0, f64::NAN]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(6), vec![-0.0, 3.0, f64::NAN, 1.0, -1.0, 2.0]).unwrap();
        let s = forward(Sigmoid::new(0), std::slice::from_ref(&x));
        let expected = RawTensor::from_fn(x.dims(), |i| g.data()[i] * s.data()[i]);
        assert_eq!(bits(&vjp(Softplus::new(0), &[x], &g)[0]), bits(&expected));
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(
            Dims::vector(6),
            vec![f64::INFINITY, f64::NEG_INFINITY, 1e300, -1000.0, -700.0, f64::NAN],
        )
        .unwrap();
        let y = forward(Softplus::new(0), &[x]);
        assert_eq!(y.data()[0], f64::INFINITY);
        assert_eq!(bits(&y)[1..4], [0, 1e300f64.to_bits(), 0]);
        // exp(-700) ≈ 9.86e-305, and ln_1p of it is itself.
        assert_eq!(y.data()[4], crate::math::exp(-700.0f64));
        assert!(y.data()[5].is_nan());
    }
}
