//! `exp(a)`: `y[i] = exp(a[i])`.
//!
//! VJP: `single(a, δ * y)` with the saved output `y` (δ left).

use num_traits::Float;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, Node, SavedValues};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Elementwise exponential.
#[derive(Clone, Debug)]
pub struct Exp {
    parents: [usize; 1],
}

impl Exp {
    /// `exp(a)` for the position `a`.
    pub fn new(a: usize) -> Self {
        Exp { parents: [a] }
    }
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Exp {
    fn name(&self) -> &str {
        "exp"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("exp", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.parents[0]].map(|x| x.exp())
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let (y, gd) = (saved.output.data(), g.data());
        let t = c.tensor(g.dims(), |i| gd[i] * y[i]);
        c.single(self.parents[0], t)
    }
}

/// Typed `exp(a)`.
pub fn exp<A: Scalar + Float, D: 'static, S: Shape, Br>(a: Position<S, Br>) -> Node<A, D, S> {
    Node::compact(Exp::new(a.index()), &[&a])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{gradcheck, sample};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Exp::new(0), &[sample(&[2, 4], 11)], 1e-6);
    }
}
