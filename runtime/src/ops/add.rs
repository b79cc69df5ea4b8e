//! `add(a, b)`: elementwise `y[i] = a[i] + b[i]` (`a` left).
//!
//! VJP: `add(single(a, δ), single(b, δ))` — both terms are the cotangent itself, no copy.
//! At `a` the reader gives `δ + 0`; when `a == b` it gives `δ + δ`.

use super::elementwise_vjp::{binary, binary_uniform, same_len, ElementwiseVjp, Onto};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Elementwise sum of two positions of the same shape.
#[derive(Clone, Debug)]
pub struct Add {
    parents: [usize; 2],
}

impl Add {
    /// `a + b` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        Add { parents: [a, b] }
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Add {
    fn name(&self) -> &'static str {
        "add"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::same_dims("add", prefix, self.parents[0], self.parents[1])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        out.extend(a.iter().zip(b).map(|(x, y)| A::pinned_add(x.clone(), y.clone())));
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, _: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let l = c.single_cotangent(self.parents[0]);
        let r = c.single_cotangent(self.parents[1]);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Add { a: self.parents[0], b: self.parents[1] })
    }
    fn as_elementwise(&self) -> Option<&dyn ElementwiseVjp<A>> {
        Some(self)
    }
}

impl<A: Scalar> ElementwiseVjp<A> for Add {
    fn elementwise_uniform(&self) -> A {
        binary_uniform()
    }
    /// Both terms are the cotangent's elements (the `single_cotangent` leaves).
    fn read_onto(
        &self,
        _: &[RawTensor<A>],
        _: &RawTensor<A>,
        g: &RawTensor<A>,
        q: usize,
        onto: Onto<'_, A>,
    ) -> Result<(), String> {
        let gd = g.data();
        same_len(&onto, gd.len(), &[])?;
        crate::compiled::compiled_or_body!(A, binary_reads.0, read_body, ([&[], &[]], gd, q, self.parents, onto))
    }
}

/// [`Add`]'s read at `q` from the cotangent (the operands' values unread; compiled in this crate
/// for `f32` and `f64`: `crate::compiled`).
pub(crate) fn read_body<A: Scalar>(
    _: [&[A]; 2],
    gd: &[A],
    q: usize,
    parents: [usize; 2],
    onto: Onto<'_, A>,
) -> Result<(), String> {
    binary(onto, q, parents, gd.iter().cloned(), gd.iter().cloned())
}

typed_op!(add(a: L, b: R) -> Add: Elementwise, "`a + b` (elementwise), both operands of one shape");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, gradcheck, sample, vjp};

    #[test]
    fn value_and_gradient() {
        let (a, b) = (sample(&[2, 3], 1), sample(&[2, 3], 2));
        gradcheck(Add::new(0, 1), &[a.clone(), b.clone()], 1e-7);
        let y = crate::ops::testing::forward(Add::new(0, 1), &[a.clone(), b.clone()]);
        assert_eq!(y.data()[4], a.data()[4] + b.data()[4]);
    }

    #[test]
    fn repeated_parent_adds_both_terms_first() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![1.0, 2.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![-0.0, 3.0]).unwrap();
        let v = vjp(Add::new(0, 0), &[x], &g);
        assert_eq!(bits(&v[0]), [(-0.0f64).to_bits(), 6.0f64.to_bits()]);
    }

    #[test]
    fn distinct_parents_read_delta_plus_zero() {
        let x = RawTensor::from_vec(Dims::vector(1), vec![1.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(1), vec![-0.0]).unwrap();
        let v = vjp(Add::new(0, 1), &[x.clone(), x], &g);
        // -0.0 + 0 = +0.0 at `a`; 0 + -0.0 = +0.0 at `b`.
        assert_eq!(bits(&v[0]), [0]);
        assert_eq!(bits(&v[1]), [0]);
    }

    #[test]
    fn shape_mismatch_is_reported() {
        let e = <Add as CompactOp<f32, ()>>::output_dims(&Add::new(0, 1), &[Dims::vector(2), Dims::vector(3)]);
        assert_eq!(e.unwrap_err(), "add needs both operands to have the same shape, got [2] and [3]");
    }
}
