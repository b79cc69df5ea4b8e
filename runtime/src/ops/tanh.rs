//! `tanh(a)`: `y[i] = tanh(a[i])`.
//!
//! VJP: `single(a, δ * (1 - y * y))` with the saved output `y` (δ left).

use num_traits::Float;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, Node, SavedValues};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Hyperbolic tangent.
#[derive(Clone, Debug)]
pub struct Tanh {
    parents: [usize; 1],
}

impl Tanh {
    /// `tanh(a)` for the position `a`.
    pub fn new(a: usize) -> Self {
        Tanh { parents: [a] }
    }
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Tanh {
    fn name(&self) -> &str {
        "tanh"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("tanh", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.parents[0]].map(|x| x.tanh())
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let (y, gd) = (saved.output.data(), g.data());
        let t = c.tensor(g.dims(), |i| gd[i] * (A::one() - y[i] * y[i]));
        c.single(self.parents[0], t)
    }
}

/// Typed `tanh(a)`.
pub fn tanh<A: Scalar + Float, D: 'static, S: Shape, Br>(a: Position<S, Br>) -> Node<A, D, S> {
    Node::compact(Tanh::new(a.index()), &[&a])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{gradcheck, sample};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Tanh::new(0), &[sample(&[3, 3], 10)], 1e-6);
    }
}
