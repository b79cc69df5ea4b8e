//! The shared machinery of `max` and `min`: an elementwise select of one operand, whose VJP sends
//! the whole cotangent to the chosen operand and `+0` to the other (see `max.rs` and `min.rs` for
//! the rules on ties and NaNs).

use core::cmp::Ordering;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// `max` (`MAX = true`) or `min` (`MAX = false`) of two positions of the same shape.
#[derive(Clone, Debug)]
pub struct Select<const MAX: bool> {
    parents: [usize; 2],
}

impl<const MAX: bool> Select<MAX> {
    /// The op on the positions `a` and `b`.
    pub fn new(a: usize, b: usize) -> Self {
        Select { parents: [a, b] }
    }

    fn op_name() -> &'static str {
        if MAX {
            "max"
        } else {
            "min"
        }
    }

    /// Whether the left operand is chosen: it is unless it loses the comparison (`a < b` for max,
    /// `a > b` for min); when unordered, a NaN operand wins (the left one if it is NaN).
    #[inline]
    fn left<A: PartialOrd>(a: &A, b: &A) -> bool {
        let loses = if MAX { Ordering::Less } else { Ordering::Greater };
        match a.partial_cmp(b) {
            Some(o) => o != loses,
            None => a.partial_cmp(a).is_none(),
        }
    }
}

impl<A: Scalar + PartialOrd, D, const MAX: bool> CompactOp<A, D> for Select<MAX> {
    fn name(&self) -> &str {
        Self::op_name()
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::same_dims(Self::op_name(), prefix, self.parents[0], self.parents[1])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (a, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        out.extend(a.iter().zip(b).map(|(x, y)| if Self::left(x, y) { x.clone() } else { y.clone() }));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [a, b] = self.parents;
        let (av, bv, gd) = (saved.prefix[a].data(), saved.prefix[b].data(), g.data());
        let ga = c.tensor(g.dims(), |i| if Self::left(&av[i], &bv[i]) { gd[i].clone() } else { A::zero() });
        let gb = c.tensor(g.dims(), |i| if Self::left(&av[i], &bv[i]) { A::zero() } else { gd[i].clone() });
        let l = c.single(a, ga);
        let r = c.single(b, gb);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::select(self.parents[0], self.parents[1], MAX))
    }
}
