//! `sum(a)`: `y = ((0 + a[0]) + a[1]) + …` in ascending index order; a rank-0 output.
//!
//! VJP: `single(a, full(δ))` — every element receives the scalar cotangent.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Sum of all elements.
#[derive(Clone, Debug)]
pub struct Sum {
    parents: [usize; 1],
}

impl Sum {
    /// `sum(a)` for the position `a`.
    #[must_use]
    pub fn new(a: usize) -> Self {
        Sum { parents: [a] }
    }
}

/// `((0 + x[0]) + x[1]) + …` with the engine's pinned additions.
pub(crate) fn sum_in_order<A: Scalar>(x: &[A]) -> A {
    pinned_sum(x.iter().cloned())
}

/// `((0 + x₀) + x₁) + …` with [`pinned_add`](crate::Storage::pinned_add): summed with plain `+`
/// first (one add per element on the dependency chain, not an add and two selects), and again
/// pinned only when that gives a NaN — before the first NaN the two sums are the same, and a sum
/// without a NaN along the way ends without one.
pub(crate) fn pinned_sum<A: Scalar>(xs: impl Iterator<Item = A> + Clone) -> A {
    let plain = xs.clone().fold(A::zero(), |acc, v| acc + v);
    if plain.is_nan() {
        xs.fold(A::zero(), A::pinned_add)
    } else {
        plain
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Sum {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("sum", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::reduce("sum", d.as_slice(), false))
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

typed_op!(sum(a: S) -> Sum: Reduce, "`sum(a)`, any shape → `()`");

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

    fn special() -> impl proptest::strategy::Strategy<Value = f32> {
        use proptest::prelude::*;
        prop_oneof![
            Just(0.0f32),
            Just(-0.0),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            Just(f32::MAX),
            Just(f32::from_bits(0x7fa0_0001)),
            Just(f32::from_bits(0xffc0_0002)),
            Just(f32::from_bits(0x7fc0_0003)),
            Just(f32::from_bits(1)),
            (-4.0f32..4.0),
        ]
    }

    proptest::proptest! {
        /// The plain-then-pinned sum is the pinned sum, bit for bit (NaN payloads, `inf - inf`).
        #[test]
        fn pinned_sum_is_the_pinned_fold(xs in proptest::collection::vec(special(), 0..12)) {
            let pinned = xs.iter().fold(0.0f32, |acc, &v| <f32 as crate::Storage>::pinned_add(acc, v));
            proptest::prop_assert_eq!(pinned_sum(xs.iter().copied()).to_bits(), pinned.to_bits());
        }
    }
}
