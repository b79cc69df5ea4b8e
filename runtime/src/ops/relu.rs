//! `relu(a)`: `y[i] = if a[i] < 0 { 0 } else { a[i] }` (NaN and `-0.0` pass through).
//!
//! VJP: `single(a, m)` with `m[i] = if a[i] > 0 { δ[i] } else { 0 }` (a select, not a product, so
//! a NaN cotangent does not leak through inactive units).

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, Node, SavedValues};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Rectified linear unit.
#[derive(Clone, Debug)]
pub struct Relu {
    parents: [usize; 1],
}

impl Relu {
    /// `relu(a)` for the position `a`.
    pub fn new(a: usize) -> Self {
        Relu { parents: [a] }
    }
}

impl<A: Scalar + PartialOrd, D> CompactOp<A, D> for Relu {
    fn name(&self) -> &str {
        "relu"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("relu", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let zero = A::zero();
        ctx[self.parents[0]].map(|x| if *x < zero { zero.clone() } else { x.clone() })
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let zero = A::zero();
        let (x, gd) = (saved.prefix[self.parents[0]].data(), g.data());
        let mut t = c.buffer();
        t.extend(x.iter().zip(gd).map(|(x, g)| if *x > zero { g.clone() } else { zero.clone() }));
        let t = RawTensor::from_parts(g.dims(), t);
        c.single(self.parents[0], t)
    }
}

/// Typed `relu(a)`.
pub fn relu<A: Scalar + PartialOrd, D: 'static, S: Shape, Br>(a: Position<S, Br>) -> Node<A, D, S> {
    Node::compact(Relu::new(a.index()), &[&a])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, vjp};

    #[test]
    fn gradient_matches_finite_differences_away_from_zero() {
        let x = RawTensor::from_vec(Dims::vector(4), vec![-1.5, -0.2, 0.3, 2.0]).unwrap();
        gradcheck(Relu::new(0), &[x], 1e-7);
    }

    #[test]
    fn special_values() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![-0.0, f64::NAN, -3.0]).unwrap();
        let y = forward(Relu::new(0), std::slice::from_ref(&x));
        assert_eq!(y.data()[0].to_bits(), (-0.0f64).to_bits());
        assert!(y.data()[1].is_nan());
        assert_eq!(y.data()[2].to_bits(), 0);
        let g = RawTensor::from_vec(Dims::vector(3), vec![f64::NAN, 1.0, 1.0]).unwrap();
        assert_eq!(bits(&vjp(Relu::new(0), &[x], &g)[0]), [0, 0, 0]);
    }
}
