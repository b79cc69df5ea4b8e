//! `square(a)`: `y[i] = a[i] * a[i]`, with exactly the semantics of `mul(a, a)`.
//!
//! VJP: `add(single(a, δ * a), single(a, δ * a))` — the contributions of [`Mul`](super::Mul) with
//! both operands at `a` (δ left). So the local gradient is `(δ * a) + (δ * a)`, added to the
//! global gradient once, and every pass gives the same bits as for `mul(a, a)` (signs of zero and
//! NaN payloads included). It is *not* `δ * (a + a)` or `(2 * δ) * a`, which can round
//! differently (and overflow differently).

use crate::reference::RefOp;
use core::ops::Mul as MulOp;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Elementwise square, bit-identical to `mul(a, a)`.
#[derive(Clone, Debug)]
pub struct Square {
    parents: [usize; 1],
}

impl Square {
    /// `a * a` for the position `a`.
    #[must_use]
    pub fn new(a: usize) -> Self {
        Square { parents: [a] }
    }
}

impl<A: Scalar + MulOp<Output = A>, D> CompactOp<A, D> for Square {
    fn name(&self) -> &'static str {
        "square"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("square", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.extend(ctx[self.parents[0]].data().iter().map(|x| x.clone() * x.clone()));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let a = self.parents[0];
        let (av, gd) = (saved.prefix[a].data(), g.data());
        let ga = c.tensor(g.dims(), |i| A::pinned_mul(gd[i].clone(), av[i].clone()));
        let gb = c.tensor(g.dims(), |i| A::pinned_mul(gd[i].clone(), av[i].clone()));
        let l = c.single(a, ga);
        let r = c.single(a, gb);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::square(self.parents[0]))
    }
}

typed_op!(square(a: S) -> Square: Unary, "`a * a` (elementwise), the same as `mul(a, a)`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Mul;

    #[test]
    fn values_and_gradient() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![3.0, -2.0, 0.5]).unwrap();
        assert_eq!(forward(Square::new(0), std::slice::from_ref(&x)).data(), &[9.0, 4.0, 0.25]);
        let g = RawTensor::from_vec(Dims::vector(3), vec![1.0, 0.5, 2.0]).unwrap();
        assert_eq!(vjp(Square::new(0), &[x], &g)[0].data(), &[6.0, -2.0, 2.0]);
        gradcheck(Square::new(0), &[sample(&[2, 3], 26)], 1e-7);
    }

    /// Forward and VJP bits equal `mul(x, x)` for every pair of adversarial input and cotangent.
    #[test]
    fn bit_identical_to_mul_x_x() {
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            f64::powi(2.0, -537),
            f64::from_bits(1),
            -f64::from_bits(0x000f_ffff_ffff_ffff),
            1e200,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff8_0000_0000_0001),
            f64::from_bits(0xfff8_0000_dead_beef),
            f64::from_bits(0x7ff0_0000_0000_0002),
        ];
        let n = specials.len();
        let dims = Dims::vector(n * n);
        let x = RawTensor::from_fn(dims, |i| specials[i / n]);
        let g = RawTensor::from_fn(dims, |i| specials[i % n]);
        let (sq, mul) = (Square::new(0), Mul::new(0, 0));
        let inputs = std::slice::from_ref(&x);
        assert_eq!(bits(&forward(sq.clone(), inputs)), bits(&forward(mul.clone(), inputs)));
        assert_eq!(bits(&vjp(sq, inputs, &g)[0]), bits(&vjp(mul, inputs, &g)[0]));
    }

    /// In a graph with another reader of `x`, every pass gives the bits of the `mul(x, x)` graph.
    #[test]
    fn every_pass_matches_the_mul_graph() {
        use crate::graph::{RawGraph, RawNode};
        use crate::saved::RawSavedGraph;
        let x = RawTensor::from_vec(Dims::vector(4), vec![-0.0, f64::powi(2.0, -53), f64::NAN, -3.0]).unwrap();
        let build = |sq: bool| {
            let mut graph = RawGraph::<f64, ()>::new(vec![Dims::vector(4)]);
            let p = if sq {
                graph.push(RawNode::compact(Square::new(0))).unwrap()
            } else {
                graph.push(RawNode::compact(Mul::new(0, 0))).unwrap()
            };
            graph.push(RawNode::compact(crate::ops::Add::new(p.index(), 0))).unwrap();
            graph
        };
        let (gs, gm) = (build(true), build(false));
        let s = RawSavedGraph::compile(&gs, vec![x.clone()], ()).unwrap();
        let m = RawSavedGraph::compile(&gm, vec![x], ()).unwrap();
        let seed = RawTensor::from_vec(Dims::vector(4), vec![1.0, 1.0, -0.0, f64::INFINITY]).unwrap();
        let seeds = vec![RawTensor::full(Dims::vector(4), -0.0), RawTensor::zeros(Dims::vector(4)), seed.clone()];
        let all = |v: Vec<RawTensor<f64>>| v.iter().map(bits).collect::<Vec<_>>();
        assert_eq!(
            all(s.backprop_all_dense(seeds.clone()).unwrap()),
            all(m.backprop_all_dense(seeds.clone()).unwrap())
        );
        assert_eq!(all(s.backprop_all_array(seeds.clone()).unwrap()), all(m.backprop_all_array(seeds).unwrap()));
        assert_eq!(
            all(s.backprop_from(gs.position(2).unwrap(), seed.clone()).unwrap().into_vec()),
            all(m.backprop_from(gm.position(2).unwrap(), seed).unwrap().into_vec())
        );
    }
}
