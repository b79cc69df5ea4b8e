//! `tanh(a)`: `y[i] = tanh(a[i])`.
//!
//! VJP: `single(a, δ * (1 - y * y))` with the saved output `y` (δ left).
//!
//! `tanh` is [`math::tanh`](crate::math::tanh): for `f32` and `f64` a deterministic, vectorising
//! kernel (within 1 ulp), for other scalars `Float::tanh`.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// `tanh` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct TanhFn;

impl<A: Scalar + Float> PointwiseFn<A> for TanhFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "tanh";
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        crate::math::tanh(*x)
    }
    #[inline]
    fn derivative((): &(), g: &A, _: &A, y: &A) -> A {
        A::pinned_mul(*g, A::one() - *y * *y)
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Tanh(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Tanh;
    use crate::ops::testing::{gradcheck, sample};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Tanh::new(0), &[sample(&[3, 3], 10)], 1e-6);
    }
}
