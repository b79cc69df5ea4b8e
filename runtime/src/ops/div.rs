//! `div(a, b)`: elementwise `y[i] = a[i] / b[i]`.
//!
//! VJP: `add(single(a, δ / b), single(b, 0 - ((δ * y) / b)))` with the saved output `y` (δ left,
//! negation as `0 - v`). Both terms round once per operation in the order written: `δ / b`;
//! then `δ * y`, `/ b`, `0 - ·`.
//!
//! With `a == b` (same position, `y = 1` for finite non-zero `b`) the local gradient is
//! `(δ / b) + (0 - ((δ * 1) / b))`, which is `+0` whenever `δ / b` is finite.
//!
//! IEEE special values follow `/`: a zero divisor gives `±∞` or NaN in the value and in both
//! gradients. The op is generic over any scalar with `/`, `*` and `-`. For a scalar whose `/` can
//! panic ([`Storage::division_panics`](crate::Storage::division_panics): integers and `Wrapping`
//! integers dividing by zero, `i64::MIN / -1`, rationals dividing by zero) the validation refuses
//! the division before the forward runs: `compile` and the generated programs return
//! [`Error::Node`](crate::Error::Node) naming the node, the op and the element.

use crate::reference::RefOp;
use core::ops::{Div as DivOp, Mul as MulOp, Sub as SubOp};

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Elementwise quotient of two positions of the same shape.
#[derive(Clone, Debug)]
pub struct Div {
    parents: [usize; 2],
}

impl Div {
    /// `a / b` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        Div { parents: [a, b] }
    }
}

impl<A: Scalar + DivOp<Output = A> + MulOp<Output = A> + SubOp<Output = A>, D> CompactOp<A, D> for Div {
    fn name(&self) -> &'static str {
        "div"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::same_dims("div", prefix, self.parents[0], self.parents[1])
    }
    fn validate(&self, ctx: &[RawTensor<A>], _: &D) -> Result<(), String> {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        match a.iter().zip(b).position(|(x, y)| A::division_panics(x, y)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "div cannot divide element {i} in this scalar type (a zero divisor, or an integer division that overflows)"
            )),
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        out.extend(a.iter().zip(b).map(|(x, y)| x.clone() / y.clone()));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [a, b] = self.parents;
        let (bv, y, gd) = (saved.prefix[b].data(), saved.output.data(), g.data());
        let ga = c.tensor(g.dims(), |i| gd[i].clone() / bv[i].clone());
        let gb = c.tensor(g.dims(), |i| A::zero() - A::pinned_mul(gd[i].clone(), y[i].clone()) / bv[i].clone());
        let l = c.single(a, ga);
        let r = c.single(b, gb);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::div(self.parents[0], self.parents[1]))
    }
}

typed_op!(div(a: L, b: R) -> Div: Elementwise, "`a / b` (elementwise), both operands of one shape");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    fn v(x: &[f64]) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::vector(x.len()), x.to_vec()).unwrap()
    }

    #[test]
    fn values_and_exact_gradient() {
        let (a, b) = (v(&[1.0, -3.0, 0.7]), v(&[4.0, 2.0, 0.3]));
        let y = forward(Div::new(0, 1), &[a.clone(), b.clone()]);
        assert_eq!(bits(&y), [0.25f64.to_bits(), (-1.5f64).to_bits(), (0.7f64 / 0.3).to_bits()]);
        let g = v(&[2.0, 1.0, 0.9]);
        let d = vjp(Div::new(0, 1), &[a, b], &g);
        assert_eq!(bits(&d[0]), [0.5f64.to_bits(), 0.5f64.to_bits(), (0.9f64 / 0.3).to_bits()]);
        let y2 = 0.7f64 / 0.3;
        assert_eq!(bits(&d[1]), [(-0.125f64).to_bits(), 0.75f64.to_bits(), (0.0 - (0.9 * y2) / 0.3).to_bits()]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let b = sample(&[3, 2], 28).map(|x| if *x < 0.0 { x - 0.5 } else { x + 0.5 });
        gradcheck(Div::new(0, 1), &[sample(&[3, 2], 27), b], 1e-7);
        gradcheck(Div::new(0, 0), &[sample(&[4], 29).map(|x| x + 2.0)], 1e-7);
    }

    #[test]
    fn x_over_x_has_zero_gradient() {
        let x = v(&[3.0, -0.1, 1e-300]);
        let g = v(&[1.0, -0.0, 5.0]);
        assert_eq!(bits(&forward(Div::new(0, 0), std::slice::from_ref(&x))), [1.0f64.to_bits(); 3]);
        assert_eq!(bits(&vjp(Div::new(0, 0), &[x], &g)[0]), [0, 0, 0]);
    }

    #[test]
    fn an_integer_division_by_zero_is_refused_by_validation() {
        use core::num::Wrapping as W;
        let t = |x: &[i64]| RawTensor::from_vec(Dims::vector(x.len()), x.iter().map(|&v| W(v)).collect()).unwrap();
        let (a, b) = (t(&[6, 1, i64::MIN]), t(&[3, 0, -1]));
        let op = Div::new(0, 1);
        let m = <Div as CompactOp<W<i64>, ()>>::validate(&op, &[a.clone(), b], &()).unwrap_err();
        assert!(m.contains("element 1"), "{m}");
        // `Wrapping` wraps `MIN / -1`: only zero divisors are refused.
        assert_eq!(<Div as CompactOp<W<i64>, ()>>::validate(&op, &[a, t(&[3, 1, -1])], &()), Ok(()));
        let (a, b) = (v(&[1.0]), v(&[0.0]));
        assert_eq!(<Div as CompactOp<f64, ()>>::validate(&op, &[a, b], &()), Ok(()));
    }

    #[test]
    fn special_values() {
        let (a, b) = (v(&[1.0, 0.0, f64::INFINITY, 1.0, f64::NAN]), v(&[0.0, 0.0, 2.0, f64::INFINITY, 1.0]));
        let y = forward(Div::new(0, 1), &[a.clone(), b.clone()]);
        assert_eq!(y.data()[0], f64::INFINITY);
        assert!(y.data()[1].is_nan());
        assert_eq!(bits(&y)[2..4], [f64::INFINITY.to_bits(), 0]);
        assert!(y.data()[4].is_nan());
        let d = vjp(Div::new(0, 1), &[a, b], &v(&[1.0; 5]));
        // δ / 0 = ∞; 0 - (1 * ∞) / 0 = -∞.
        assert_eq!(bits(&d[0])[0], f64::INFINITY.to_bits());
        assert_eq!(bits(&d[1])[0], f64::NEG_INFINITY.to_bits());
        // 1 / ∞ = 0 and 0 - (1 * 0) / ∞ = +0.
        assert_eq!([bits(&d[0])[3], bits(&d[1])[3]], [0, 0]);
        // y = ∞ / 2 = ∞: 1 / 2 and 0 - (1 * ∞) / 2 = -∞.
        assert_eq!([bits(&d[0])[2], bits(&d[1])[2]], [0.5f64.to_bits(), f64::NEG_INFINITY.to_bits()]);
        // A NaN numerator: δ / 1 = 1 at a, NaN at b.
        assert_eq!(d[0].data()[4], 1.0);
        assert!(d[1].data()[4].is_nan());
    }
}
