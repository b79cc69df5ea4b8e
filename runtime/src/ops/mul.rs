//! `mul(a, b)`: elementwise `y[i] = a[i] * b[i]`.
//!
//! VJP: `add(single(a, δ * b), single(b, δ * a))` (δ left in products).

use crate::reference::RefOp;
use core::ops::Mul as MulOp;

use super::elementwise_vjp::{binary, binary_uniform, same_len, ElementwiseVjp, Onto};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Elementwise product of two positions of the same shape.
#[derive(Clone, Debug)]
pub struct Mul {
    parents: [usize; 2],
}

impl Mul {
    /// `a * b` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        Mul { parents: [a, b] }
    }
}

impl<A: Scalar + MulOp<Output = A>, D> CompactOp<A, D> for Mul {
    fn name(&self) -> &'static str {
        "mul"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::same_dims("mul", prefix, self.parents[0], self.parents[1])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        out.extend(a.iter().zip(b).map(|(x, y)| A::pinned_mul(x.clone(), y.clone())));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [a, b] = self.parents;
        let (av, bv, gd) = (saved.prefix[a].data(), saved.prefix[b].data(), g.data());
        let ga = c.tensor_from_iter(g.dims(), term(gd, bv));
        let gb = c.tensor_from_iter(g.dims(), term(gd, av));
        let l = c.single(a, ga);
        let r = c.single(b, gb);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::mul(self.parents[0], self.parents[1]))
    }
    fn as_elementwise(&self) -> Option<&dyn ElementwiseVjp<A>> {
        Some(self)
    }
}

/// The VJP's term at one operand: `δ · v` for the other operand's value `v` (δ left).
fn term<'s, A: Scalar + MulOp<Output = A>>(g: &'s [A], v: &'s [A]) -> impl ExactSizeIterator<Item = A> + 's {
    g.iter().zip(v).map(|(g, v)| A::pinned_mul(g.clone(), v.clone()))
}

impl<A: Scalar + MulOp<Output = A>> ElementwiseVjp<A> for Mul {
    fn elementwise_uniform(&self) -> A {
        binary_uniform()
    }
    fn read_onto(
        &self,
        prefix: &[RawTensor<A>],
        _: &RawTensor<A>,
        g: &RawTensor<A>,
        q: usize,
        onto: Onto<'_, A>,
    ) -> Result<(), String> {
        let [a, b] = self.parents;
        let (av, bv, gd) = (prefix[a].data(), prefix[b].data(), g.data());
        same_len(&onto, gd.len(), &[av.len(), bv.len()])?;
        crate::compiled::compiled_or_body!(A, binary_reads.2, read_body, ([av, bv], gd, q, self.parents, onto))
    }
}

/// [`Mul`]'s read at `q` from the operands' values and the cotangent (compiled in this crate for
/// `f32` and `f64`: `crate::compiled`).
pub(crate) fn read_body<A: Scalar + MulOp<Output = A>>(
    [av, bv]: [&[A]; 2],
    gd: &[A],
    q: usize,
    parents: [usize; 2],
    onto: Onto<'_, A>,
) -> Result<(), String> {
    binary(onto, q, parents, term(gd, bv), term(gd, av))
}

typed_op!(mul(a: L, b: R) -> Mul: Elementwise, "`a * b` (elementwise), both operands of one shape");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{gradcheck, sample, vjp};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Mul::new(0, 1), &[sample(&[4], 5), sample(&[4], 6)], 1e-7);
        gradcheck(Mul::new(0, 0), &[sample(&[2, 2], 7)], 1e-7);
    }

    #[test]
    fn square_gradient_is_two_x_delta() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![3.0, -2.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![1.0, 0.5]).unwrap();
        assert_eq!(vjp(Mul::new(0, 0), &[x], &g)[0].data(), &[6.0, -2.0]);
    }
}
