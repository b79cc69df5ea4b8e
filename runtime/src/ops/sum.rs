//! `sum(a)`: `y = ((0 + a[0]) + a[1]) + …` in ascending index order; a rank-0 output.
//!
//! VJP: `single(a, full(δ))` — every element receives the scalar cotangent.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::ReduceShape;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Sum of all elements.
#[derive(Clone, Debug)]
pub struct Sum {
    parents: [usize; 1],
}

impl Sum {
    /// `sum(a)` for the position `a`.
    pub fn new(a: usize) -> Self {
        Sum { parents: [a] }
    }
}

/// `((0 + x[0]) + x[1]) + …`.
pub(crate) fn sum_in_order<A: Scalar>(x: &[A]) -> A {
    x.iter().fold(A::zero(), |acc, v| A::pinned_add(acc, v.clone()))
}

impl<A: Scalar, D> CompactOp<A, D> for Sum {
    fn name(&self) -> &str {
        "sum"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("sum", prefix, self.parents[0])?;
        super::ruled(exactgrad_spec::rules::reduce("sum", d.as_slice(), false))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        RawTensor::full(Dims::scalar(), sum_in_order(ctx[self.parents[0]].data()))
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.push(sum_in_order(ctx[self.parents[0]].data()));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let v = &g.data()[0];
        let t = c.tensor(d, |_| v.clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Sum { a: self.parents[0] })
    }
}

/// Typed `sum(a)`: any shape → `()` ([`ReduceShape`]).
pub fn sum<A: Scalar, D: 'static, S: ReduceShape<Output = O>, O: Shape, Br>(
    a: Position<S, Br>,
) -> Compact<Sum, A, D, O> {
    Compact::new(Sum::new(a.index()), &[&a])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = RawTensor::from_vec(Dims::vector(3), vec![1e16, 1.0, -1e16]).unwrap();
        // ((0 + 1e16) + 1) + -1e16 = 0 in f64: the order is fixed, not "exact".
        assert_eq!(forward(Sum::new(0), &[x]).data(), &[0.0]);
        gradcheck(Sum::new(0), &[sample(&[2, 2, 2], 13)], 1e-7);
    }
}
