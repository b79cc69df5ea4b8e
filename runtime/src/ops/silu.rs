//! `silu(a)` (also called swish): `y[i] = a[i] · sigmoid(a[i])`, computed as one quotient
//!
//! ```text
//! y = x / (1 + exp(-x))
//! ```
//!
//! in exactly this order (`-x` is the sign flip, then `exp`, then `1 + ·`, then `x / ·`; one
//! rounding fewer than `x * sigmoid(x)`). `exp` is [`math::exp`](crate::math::exp).
//!
//! VJP: `single(a, δ * d)` (δ left) with the derivative recomputed from the saved input:
//!
//! ```text
//! s = 1 / (1 + exp(-x)),   d = s * (1 + x * (1 - s))
//! ```
//!
//! (`s` is the [`Sigmoid`](super::Sigmoid) op's kernel), except that when `1 - s` is exactly `0`
//! the term `x * (1 - s)` is taken as `+0`. That is its value whenever `x` is finite; it differs
//! only at `x = +∞`, where the literal formula would give `∞ · 0 = NaN` instead of the limit `1`.
//!
//! Special values follow the formula: `silu(+∞) = +∞`, `silu(-∞) = NaN` (`-∞ / ∞`, as in
//! PyTorch), a finite `x` below `exp`'s overflow gives `-0` (`x / ∞`), `silu(±0) = ±0`, NaN gives
//! NaN.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use super::sigmoid::logistic;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;

/// `silu` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct SiluFn;

impl<A: Scalar + Float> PointwiseFn<A> for SiluFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "silu";
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        *x / (A::one() + crate::math::exp(-*x))
    }
    #[inline]
    fn derivative((): &(), g: &A, x: &A, _: &A) -> A {
        let s = logistic(*x);
        let rest = A::one() - s;
        let zero = <A as Scalar>::zero();
        let t = if rest == zero { zero } else { A::pinned_mul(*x, rest) };
        A::pinned_mul(*g, A::pinned_mul(s, A::one() + t))
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Silu(FloatKit::new()))
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Silu;
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    #[test]
    fn values_are_x_times_sigmoid() {
        let x = RawTensor::from_vec(Dims::vector(4), vec![0.0, 2.0, -1.5, 7.25]).unwrap();
        let y = forward(Silu::new(0), std::slice::from_ref(&x));
        for (v, x) in y.data().iter().zip(x.data()) {
            let want = x / (1.0 + (-x).exp());
            assert!((v - want).abs() <= 1e-15 * want.abs().max(1e-300), "silu({x}) = {v}, want {want}");
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Silu::new(0), &[sample(&[3, 3], 31)], 1e-7);
        let wide = RawTensor::from_vec(Dims::vector(4), vec![-8.0, -3.0, 3.0, 8.0]).unwrap();
        gradcheck(Silu::new(0), &[wide], 1e-7);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(
            Dims::vector(6),
            vec![f64::INFINITY, f64::NEG_INFINITY, -1000.0, -0.0, 0.0, f64::from_bits(0x7ff8_0000_0000_0bad)],
        )
        .unwrap();
        let y = forward(Silu::new(0), std::slice::from_ref(&x));
        assert_eq!(bits(&y)[0], f64::INFINITY.to_bits());
        assert!(y.data()[1].is_nan());
        assert_eq!(bits(&y)[2..5], [(-0.0f64).to_bits(), (-0.0f64).to_bits(), 0]);
        assert_eq!(bits(&y)[5] & !(1 << 51), 0x7ff0_0000_0000_0bad, "the input's payload");
        // The slope's limit at +∞ is 1; below exp's overflow it is `0 · (1 + x) = -0`; at ±0 it
        // is 1/2; a NaN input's payload reaches the gradient (its sign flipped, as through
        // `sigmoid`'s `-x`).
        let g = RawTensor::from_vec(Dims::vector(6), vec![3.0, 1.0, 1.0, 2.0, 2.0, 1.0]).unwrap();
        let d = vjp(Silu::new(0), &[x], &g);
        assert_eq!(bits(&d[0])[0], 3.0f64.to_bits());
        assert!(d[0].data()[1].is_nan());
        assert_eq!(bits(&d[0])[2..5], [(-0.0f64).to_bits(), 1.0f64.to_bits(), 1.0f64.to_bits()]);
        assert_eq!(bits(&d[0])[5] & !(1 << 51), 0xfff0_0000_0000_0bad);
    }
}
