//! `mean(a)`: `y = sum(a) / n` with `sum` in ascending order; a rank-0 output.
//!
//! VJP: `single(a, full(δ / n))`.

use crate::reference::RefOp;
use core::ops::Div;

use num_traits::FromPrimitive;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Mean of all elements.
#[derive(Clone, Debug)]
pub struct Mean {
    parents: [usize; 1],
}

impl Mean {
    /// `mean(a)` for the position `a`.
    #[must_use]
    pub fn new(a: usize) -> Self {
        Mean { parents: [a] }
    }
}

fn count<A: FromPrimitive>(n: usize) -> Result<A, String> {
    A::from_usize(n).ok_or_else(|| format!("mean cannot represent the element count {n} in its scalar type"))
}

impl<A: Scalar + Div<Output = A> + FromPrimitive, D> CompactOp<A, D> for Mean {
    fn name(&self) -> &'static str {
        "mean"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("mean", prefix, self.parents[0])?;
        let out = super::ruled(super::spec_rules::reduce("mean", d.as_slice(), true))?;
        count::<A>(d.numel()).map(|_| out)
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = ctx[self.parents[0]].data();
        let n = count::<A>(x.len()).expect("output_dims checked that the element count is a scalar of A");
        RawTensor::full(Dims::scalar(), super::sum::sum_in_order(x) / n)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let x = ctx[self.parents[0]].data();
        let n = count::<A>(x.len()).expect("output_dims checked that the element count is a scalar of A");
        out.push(super::sum::sum_in_order(x) / n);
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let n = count::<A>(d.numel()).expect("output_dims checked that the element count is a scalar of A");
        let v = g.data()[0].clone() / n;
        let t = c.tensor(d, |_| v.clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::mean(self.parents[0]))
    }
}

typed_op!(mean(a: S) -> Mean: Reduce, "`mean(a)`, any shape → `()`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = RawTensor::from_vec(Dims::vector(4), vec![1.0, 2.0, 3.0, 6.0]).unwrap();
        assert_eq!(forward(Mean::new(0), &[x]).data(), &[3.0]);
        gradcheck(Mean::new(0), &[sample(&[3, 2], 14)], 1e-7);
    }

    #[test]
    fn empty_input_is_rejected() {
        let e = <Mean as CompactOp<f64, ()>>::output_dims(&Mean::new(0), &[Dims::vector(0)]);
        assert_eq!(e.unwrap_err(), "mean needs at least one element, got shape [0]");
    }
}
