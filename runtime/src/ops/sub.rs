//! `sub(a, b)`: elementwise `y[i] = a[i] - b[i]`.
//!
//! VJP: `add(single(a, δ), single(b, 0 - δ))` (negation as `0 - δ`, SEMANTICS §4).

use crate::reference::RefOp;
use core::ops::Sub as SubOp;

use super::elementwise_vjp::{binary, binary_uniform, same_len, ElementwiseVjp, Onto};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Elementwise difference of two positions of the same shape.
#[derive(Clone, Debug)]
pub struct Sub {
    parents: [usize; 2],
}

impl Sub {
    /// `a - b` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        Sub { parents: [a, b] }
    }
}

impl<A: Scalar + SubOp<Output = A>, D> CompactOp<A, D> for Sub {
    fn name(&self) -> &'static str {
        "sub"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::same_dims("sub", prefix, self.parents[0], self.parents[1])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        out.extend(a.iter().zip(b).map(|(x, y)| x.clone() - y.clone()));
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let l = c.single_cotangent(self.parents[0]);
        let neg = c.tensor_from_iter(g.dims(), negated(g.data()));
        let r = c.single(self.parents[1], neg);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::sub(self.parents[0], self.parents[1]))
    }
    fn as_elementwise(&self) -> Option<&dyn ElementwiseVjp<A>> {
        Some(self)
    }
}

/// The VJP's term at `b`: `0 - δ`.
fn negated<A: Scalar + SubOp<Output = A>>(g: &[A]) -> impl ExactSizeIterator<Item = A> + '_ {
    g.iter().map(|v| A::zero() - v.clone())
}

impl<A: Scalar + SubOp<Output = A>> ElementwiseVjp<A> for Sub {
    fn elementwise_uniform(&self) -> A {
        binary_uniform()
    }
    /// The term at `a` is the cotangent's elements (the `single_cotangent` leaf).
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
        crate::compiled::compiled_or_body!(A, binary_reads.1, read_body, ([&[], &[]], gd, q, self.parents, onto))
    }
}

/// [`Sub`]'s read at `q` from the cotangent (the operands' values unread; compiled in this crate
/// for `f32` and `f64`: `crate::compiled`).
pub(crate) fn read_body<A: Scalar + SubOp<Output = A>>(
    _: [&[A]; 2],
    gd: &[A],
    q: usize,
    parents: [usize; 2],
    onto: Onto<'_, A>,
) -> Result<(), String> {
    binary(onto, q, parents, gd.iter().cloned(), negated(gd))
}

typed_op!(sub(a: L, b: R) -> Sub: Elementwise, "`a - b` (elementwise), both operands of one shape");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, gradcheck, sample, vjp};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Sub::new(0, 1), &[sample(&[3, 2], 3), sample(&[3, 2], 4)], 1e-7);
    }

    #[test]
    fn x_minus_x_adds_delta_and_zero_minus_delta() {
        let x = RawTensor::from_vec(Dims::vector(1), vec![1.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(1), vec![-0.0]).unwrap();
        // -0.0 + (0 - -0.0) = -0.0 + 0.0 = +0.0
        assert_eq!(bits(&vjp(Sub::new(0, 0), &[x], &g)[0]), [0]);
    }
}
