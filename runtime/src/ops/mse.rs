//! `mse(a, b)`: mean squared error, `y = s / n` with `d[i] = a[i] − b[i]` and
//! `s = ((0 + d[0] * d[0]) + d[1] * d[1]) + …` (ascending), `n` the element count (at least 1).
//!
//! VJP: `add(single(a, ga), single(b, gb))` with `ga[i] = δ * ((d[i] + d[i]) / n)` (δ left) and
//! `gb[i] = 0 − ga[i]`; when `a == b` the two terms are added first (`ga + gb`).

use crate::reference::{FloatKit, RefOp};
use num_traits::{Float, FromPrimitive};

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Mean squared error of two tensors of one shape.
#[derive(Clone, Debug)]
pub struct Mse {
    parents: [usize; 2],
}

impl Mse {
    /// `mse(a, b)` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        Mse { parents: [a, b] }
    }
}

fn count<A: FromPrimitive>(n: usize) -> A {
    A::from_usize(n).expect("output_dims checked that the element count is a scalar of A")
}

impl<A: Scalar + Float + FromPrimitive, D> CompactOp<A, D> for Mse {
    fn name(&self) -> &'static str {
        "mse"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let (da, db) =
            (super::dims_at("mse", prefix, self.parents[0])?, super::dims_at("mse", prefix, self.parents[1])?);
        let out = super::ruled(super::spec_rules::same_shape_to_scalar("mse", da.as_slice(), db.as_slice()))?;
        let d = da;
        A::from_usize(d.numel())
            .map(|_: A| out)
            .ok_or_else(|| format!("mse cannot represent the element count {} in its scalar type", d.numel()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        let s = a.iter().zip(b).fold(<A as Scalar>::zero(), |acc, (&x, &y)| {
            let d = x - y;
            A::pinned_add(acc, d * d)
        });
        RawTensor::full(Dims::scalar(), s / count::<A>(a.len()))
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let (ta, b) = (&saved.prefix[self.parents[0]], saved.prefix[self.parents[1]].data());
        let a = ta.data();
        let n: A = count(a.len());
        let dl = g.data()[0];
        let ga = c.tensor(ta.dims(), |i| {
            let d = a[i] - b[i];
            A::pinned_mul(dl, (d + d) / n)
        });
        let gb = c.tensor(ta.dims(), |i| <A as Scalar>::zero() - ga.data()[i]);
        let l = c.single(self.parents[0], ga);
        let r = c.single(self.parents[1], gb);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Mse { a: self.parents[0], b: self.parents[1], k: FloatKit::counting() })
    }
}

typed_op!(mse(a: L, b: R) -> Mse: ElementwiseToScalar, "`mse(a, b)`, two tensors of one shape → `()`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    #[test]
    fn value_and_gradient() {
        let a = RawTensor::from_vec(Dims::vector(3), vec![1.0, 2.0, 3.0]).unwrap();
        let b = RawTensor::from_vec(Dims::vector(3), vec![1.0, 0.0, 6.0]).unwrap();
        assert_eq!(forward(Mse::new(0, 1), &[a, b]).data(), &[13.0 / 3.0]);
        gradcheck(Mse::new(0, 1), &[sample(&[2, 3], 90), sample(&[2, 3], 91)], 1e-7);
    }

    #[test]
    fn repeated_parent_adds_both_terms_first() {
        // mse(x, x) = 0 with VJP ga + gb = δ·0 + (0 − δ·0) = +0 (and -0 would need a separate update).
        let x = sample(&[3], 92);
        let d = vjp(Mse::new(0, 0), std::slice::from_ref(&x), &RawTensor::full(Dims::scalar(), -2.0));
        assert_eq!(forward(Mse::new(0, 0), &[x]).data(), &[0.0]);
        assert_eq!(bits(&d[0]), [0, 0, 0]);
    }

    #[test]
    fn special_values() {
        let a = RawTensor::from_vec(Dims::vector(2), vec![f64::INFINITY, 1.0]).unwrap();
        let b = RawTensor::from_vec(Dims::vector(2), vec![f64::INFINITY, 1.0]).unwrap();
        assert!(forward(Mse::new(0, 1), &[a, b]).data()[0].is_nan());
    }
}
