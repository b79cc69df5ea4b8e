//! `scale(a, k)`: `y[i] = a[i] * k` for a constant `k`.
//!
//! VJP: `single(a, δ * k)` (δ left).

use crate::reference::RefOp;
use core::ops::Mul as MulOp;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Multiplication by a constant.
#[derive(Clone, Debug)]
pub struct Scale<A> {
    parents: [usize; 1],
    factor: A,
}

impl<A> Scale<A> {
    /// `a * factor` for the position `a`.
    pub fn new(a: usize, factor: A) -> Self {
        Scale { parents: [a], factor }
    }
}

impl<A: Scalar + MulOp<Output = A>, D> CompactOp<A, D> for Scale<A> {
    fn name(&self) -> &'static str {
        "scale"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("scale", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.extend(ctx[self.parents[0]].data().iter().map(|x| x.clone() * self.factor.clone()));
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let gd = g.data();
        let t = c.tensor(g.dims(), |i| gd[i].clone() * self.factor.clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::scale(self.parents[0], self.factor.clone()))
    }
}

typed_op!(scale(a: S; factor: A) -> Scale<A>: Unary, "`a * factor`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{gradcheck, sample};

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Scale::new(0, -2.5), &[sample(&[2, 3], 9)], 1e-7);
    }
}
