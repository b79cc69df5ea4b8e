//! `exp(a)`: `y[i] = exp(a[i])`.
//!
//! VJP: `single(a, δ * y)` with the saved output `y` (δ left).
//!
//! `exp` is [`math::exp`](crate::math::exp): for `f32` and `f64` a deterministic, vectorising
//! kernel (within 1 ulp), for other scalars `Float::exp`.

use num_traits::Float;

use super::pointwise::PointwiseFn;
use crate::reference::{FloatKit, Unary};
use crate::scalar::Scalar;


/// `exp` as a [`PointwiseFn`]: the forward and the derivative of the module docs.
#[derive(Clone, Copy, Debug)]
pub struct ExpFn;

impl<A: Scalar + Float> PointwiseFn<A> for ExpFn {
    const COMPILED: bool = true;
    const NAME: &'static str = "exp";
    const DERIVATIVE_WORK: usize = 0;
    type Consts = ();
    fn consts() {}
    #[inline]
    fn forward((): &(), x: &A) -> A {
        crate::math::exp(*x)
    }
    #[inline]
    fn derivative((): &(), g: &A, _: &A, y: &A) -> A {
        A::pinned_mul(*g, *y)
    }
    fn reference() -> Option<Unary<A>> {
        Some(Unary::Exp(FloatKit::new()))
    }
}


#[cfg(test)]
mod tests {
    use crate::ops::Exp;
    use crate::ops::testing::{gradcheck, sample};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Exp::new(0), &[sample(&[2, 4], 11)], 1e-6);
    }
}
