//! `neg(a)`: `y[i] = -a[i]`.
//!
//! VJP: `single(a, 0 - δ)` (negation inside a VJP is `0 - δ`, SEMANTICS §4).

use core::ops::{Neg as NegOp, Sub as SubOp};

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, Node, SavedValues};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Elementwise negation.
#[derive(Clone, Debug)]
pub struct Neg {
    parents: [usize; 1],
}

impl Neg {
    /// `-a` for the position `a`.
    pub fn new(a: usize) -> Self {
        Neg { parents: [a] }
    }
}

impl<A: Scalar + NegOp<Output = A> + SubOp<Output = A>, D> CompactOp<A, D> for Neg {
    fn name(&self) -> &str {
        "neg"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("neg", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.parents[0]].map(|x| -x.clone())
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let gd = g.data();
        let t = c.tensor(g.dims(), |i| A::zero() - gd[i].clone());
        c.single(self.parents[0], t)
    }
}

/// Typed `-a`.
pub fn neg<A: Scalar + NegOp<Output = A> + SubOp<Output = A>, D: 'static, S: Shape, Br>(
    a: Position<S, Br>,
) -> Node<A, D, S> {
    Node::compact(Neg::new(a.index()), &[&a])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    #[test]
    fn value_and_gradient() {
        gradcheck(Neg::new(0), &[sample(&[5], 8)], 1e-7);
        let x = RawTensor::from_vec(Dims::vector(1), vec![0.0]).unwrap();
        assert_eq!(bits(&forward(Neg::new(0), &[x])), [(-0.0f64).to_bits()]);
    }

    #[test]
    fn vjp_is_zero_minus_delta() {
        let x = RawTensor::from_vec(Dims::vector(2), vec![1.0, 1.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(2), vec![0.0, -0.0]).unwrap();
        // 0 - 0 = +0 (not -0 as `-δ` would give); 0 - (-0) = +0.
        assert_eq!(bits(&vjp(Neg::new(0), &[x], &g)[0]), [0, 0]);
    }
}
