//! `gelu(a)`: the GELU activation in its **tanh approximation** (not the exact `x·Φ(x)` form):
//!
//! ```text
//! y = 0.5·x·(1 + tanh(c·(x + k·x³))),   c = √(2/π) = 0.7978845608028654,  k = 0.044715
//! ```
//!
//! evaluated in exactly this order: `x3 = (x * x) * x`, `u = c * (x + k * x3)`, `t = tanh(u)`,
//! `y = (0.5 * x) * (1 + t)`, where `tanh` is the `tanh` op's kernel (`math::tanh`: deterministic
//! and within 1 ulp for `f32`/`f64`). The constants are the `f64` literals above converted to the
//! scalar type (`NumCast`, rounded to nearest).
//!
//! VJP: `single(a, δ * d)` (δ left) with the exact derivative of that formula, recomputing `t`
//! from the saved input:
//!
//! ```text
//! d = 0.5·(1 + t) + (0.5·x)·((1 - t·t)·(c·(1 + k3·x²))),   k3 = 3k = 0.134145
//! ```
//!
//! evaluated as `s = 1 - t * t`, `du = c * (1 + k3 * (x * x))`,
//! `d = (0.5 * (1 + t)) + ((0.5 * x) * (s * du))`, except that when `s` is exactly `0` the second
//! term is taken as `+0`. That is
//! its value whenever it is finite (a zero times a finite number; `0.5 * (1 + t)` is then `1` or
//! `+0`, so adding `±0` or `+0` gives the same bits); it only differs where `x * x` overflows
//! (`|x| > 1.34e154`) or `x = ±∞`, where the literal formula would give `0 · ∞ = NaN` instead of
//! the limits `1` (`x → +∞`) and `0` (`x → -∞`).
//!
//! Special values of the forward follow the formula literally: `gelu(+∞) = +∞`, `gelu(-∞) = NaN`
//! (`(0.5 · -∞) · 0`), very negative finite `x` give `-0` (`(0.5 · x) · (1 + -1)`), NaN gives NaN.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// `√(2/π)`.
const C: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient.
const K: f64 = 0.044_715;
/// `3 · K`, the coefficient of `x²` in the derivative of the tanh argument.
const K3: f64 = 0.134_145;

/// The scalar constants `(0.5, c, k, k3)` in `A`.
fn constants<A: Float>() -> (A, A, A, A) {
    let cast = |v: f64| A::from(v).unwrap_or_else(A::nan);
    (cast(0.5), cast(C), cast(K), cast(K3))
}

/// `tanh(c * (x + k * ((x * x) * x)))`, with [`math::tanh`](crate::math::tanh) (the kernel of
/// the `tanh` op).
#[inline]
fn inner_tanh<A: Float + 'static>(x: A, c: A, k: A) -> A {
    crate::math::tanh(c * (x + k * ((x * x) * x)))
}

/// `gelu` as a [`PointwiseFn`]: the forward and the derivative of the module docs, with the
/// constants `(0.5, c, k, k3)` converted to the scalar type once per loop.
#[derive(Clone, Copy, Debug)]
pub struct GeluFn;

impl<A: Scalar + Float> PointwiseFn<A> for GeluFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "gelu";
    type Consts = (A, A, A, A);
    fn consts() -> (A, A, A, A) {
        constants::<A>()
    }
    #[inline]
    fn forward(&(half, c, k, _): &(A, A, A, A), x: &A) -> A {
        let x = *x;
        (half * x) * (A::one() + inner_tanh(x, c, k))
    }
    #[inline]
    fn derivative(&(half, cc, k, k3): &(A, A, A, A), g: &A, x: &A, _: &A) -> A {
        let x = *x;
        let t = inner_tanh(x, cc, k);
        let s = A::one() - t * t;
        let zero = <A as Scalar>::zero();
        let tail = if s == zero { zero } else { (half * x) * (s * (cc * (A::one() + k3 * (x * x)))) };
        A::pinned_mul(*g, (half * (A::one() + t)) + tail)
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Gelu(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Gelu;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    fn reference(x: f64) -> f64 {
        0.5 * x * (1.0 + ((2.0 / core::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
    }

    #[test]
    fn values() {
        let xs = [0.0, 1.0, -1.0, 2.5, -3.0, 0.1];
        let y = forward(Gelu::new(0), &[RawTensor::from_vec(Dims::vector(6), xs.to_vec()).unwrap()]);
        for (v, x) in y.data().iter().zip(xs) {
            assert!((v - reference(x)).abs() <= 1e-14, "{v} vs {} at {x}", reference(x));
        }
        // Known value of the tanh form: gelu(1) ≈ 0.8411919906.
        assert!((y.data()[1] - 0.841_191_990_6).abs() < 1e-9);
        assert!((C - (2.0 / core::f64::consts::PI).sqrt()).abs() < 1e-16);
        assert_eq!(K3, 3.0 * K);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Gelu::new(0), &[sample(&[3, 3], 25).map(|v| v * 3.0)], 1e-7);
        let wide = RawTensor::from_vec(Dims::vector(4), vec![-6.0, -2.0, 2.0, 6.0]).unwrap();
        gradcheck(Gelu::new(0), &[wide], 1e-7);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(
            Dims::vector(7),
            vec![f64::INFINITY, f64::NEG_INFINITY, 1e200, -1e200, -30.0, -0.0, f64::NAN],
        )
        .unwrap();
        let y = forward(Gelu::new(0), std::slice::from_ref(&x));
        assert_eq!(y.data()[0], f64::INFINITY);
        assert!(y.data()[1].is_nan());
        assert_eq!(bits(&y)[2..6], [1e200f64.to_bits(), (-0.0f64).to_bits(), (-0.0f64).to_bits(), (-0.0f64).to_bits()]);
        assert!(y.data()[6].is_nan());
        let g = RawTensor::from_vec(Dims::vector(7), vec![2.0; 7]).unwrap();
        let d = vjp(Gelu::new(0), &[x], &g);
        // Saturated: 2 * 1 and 2 * 0, not 0 * ∞ = NaN.
        assert_eq!(bits(&d[0])[..5], [2.0f64.to_bits(), 0, 2.0f64.to_bits(), 0, 0]);
        assert_eq!(d[0].data()[5], 1.0); // 2 * 0.5
        assert!(d[0].data()[6].is_nan());
    }
}
