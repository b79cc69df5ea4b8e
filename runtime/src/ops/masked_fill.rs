//! `masked_fill(x, mask, value)`: `y[i] = if mask[i mod L] { value } else { x[i] }`, where
//! `mask` is a slice of `L` booleans read from the graph's data through a [`MaskAccessor`]
//! (`fn(&D) -> &[bool]`) and `value` a constant of the scalar type (an infinity allowed: the
//! `-inf` of attention masks).
//!
//! The mask covers `x`'s trailing axes and repeats over the leading ones: `L` is the element count
//! of a suffix of `x`'s dims (all of them, `[t, t]` of `[b, t, t]`, …, or `1` for a single flag),
//! which `validate` checks (an error from `compile`, never a panic). A scores tensor `[b, t, t]`
//! takes a `[t, t]` mask shared by every batch item.
//!
//! VJP: `single(x, gx)` with `gx[i] = if mask[i mod L] { 0 } else { δ[i] }` — a select, not a
//! product: a masked element's gradient is the scalar's `+0` whatever the cotangent (a NaN or an
//! infinity in `δ` does not leak through), and an unmasked one is `δ[i]` bit for bit.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Reads a mask out of the graph's data: one `bool` per element of `x`'s trailing axes.
pub type MaskAccessor<D> = fn(&D) -> &[bool];

/// Fill with a constant where a mask from the data holds.
pub struct MaskedFill<A, D> {
    parents: [usize; 1],
    mask: MaskAccessor<D>,
    value: A,
}

impl<A: Clone, D> Clone for MaskedFill<A, D> {
    fn clone(&self) -> Self {
        MaskedFill { parents: self.parents, mask: self.mask, value: self.value.clone() }
    }
}

impl<A: core::fmt::Debug, D> core::fmt::Debug for MaskedFill<A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MaskedFill").field("parents", &self.parents).field("value", &self.value).finish_non_exhaustive()
    }
}

impl<A, D> MaskedFill<A, D> {
    /// `masked_fill(x, mask(data), value)` for the position `x`.
    pub fn new(x: usize, mask: MaskAccessor<D>, value: A) -> Self {
        MaskedFill { parents: [x], mask, value }
    }
}

/// `Ok` when a mask of `len` entries covers a suffix of `dims` (see the module docs).
pub(crate) fn check_mask(dims: Dims, len: usize) -> Result<(), String> {
    let d = dims.as_slice();
    if (0..=d.len()).any(|r| d[r..].iter().product::<usize>() == len) {
        Ok(())
    } else {
        Err(format!(
            "masked_fill needs a mask with one entry per element of trailing axes of shape {dims} (e.g. {} entries), got {len}",
            d.iter().product::<usize>()
        ))
    }
}

impl<A: Scalar, D: 'static> CompactOp<A, D> for MaskedFill<A, D> {
    fn name(&self) -> &'static str {
        "masked_fill"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        super::dims_at("masked_fill", prefix, self.parents[0])
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        check_mask(ctx[self.parents[0]].dims(), (self.mask)(data).len())
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        let mask = (self.mask)(data);
        let x = ctx[self.parents[0]].data();
        // `validate` made the mask's length divide the element count; `cycle` repeats it over the
        // leading axes (and yields nothing for an empty mask of an empty tensor).
        out.extend(x.iter().zip(mask.iter().cycle()).map(|(v, &m)| if m { self.value.clone() } else { v.clone() }));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let mask = (self.mask)(saved.data);
        let gd = g.data();
        let n = mask.len().max(1);
        let t = c.tensor(g.dims(), |i| if mask.get(i % n) == Some(&true) { A::zero() } else { gd[i].clone() });
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::MaskedFill { a: self.parents[0], mask: self.mask, value: self.value.clone() })
    }
}

typed_op!(masked_fill(x: S; mask: MaskAccessor<D>, value: A) -> MaskedFill<A, D>: Unary, "`masked_fill(x, mask, value)`, the shape kept; the mask's length is checked by `compile`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::saved::RawSavedGraph;

    fn diagonal(_: &()) -> &[bool] {
        &[false, true, true, false]
    }

    #[test]
    fn value_repeats_the_mask_over_leading_axes() {
        let x = sample(&[3, 2, 2], 400);
        let y = forward(MaskedFill::new(0, diagonal, f64::NEG_INFINITY), std::slice::from_ref(&x));
        for i in 0..12 {
            let want = if diagonal(&())[i % 4] { f64::NEG_INFINITY.to_bits() } else { bits(&x)[i] };
            assert_eq!(bits(&y)[i], want, "element {i}");
        }
    }

    #[test]
    fn gradient() {
        gradcheck(MaskedFill::new(0, diagonal, -3.0), &[sample(&[2, 2], 401)], 1e-7);
        gradcheck(MaskedFill::new(0, diagonal, 7.0), &[sample(&[3, 4], 402)], 1e-7);
    }

    #[test]
    fn masked_entries_get_plus_zero_whatever_the_cotangent() {
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let g = RawTensor::from_vec(Dims::matrix(2, 2), vec![-0.0, nan, f64::INFINITY, nan]).unwrap();
        let t = vjp(MaskedFill::new(0, diagonal, 1.0), &[sample(&[2, 2], 403)], &g);
        assert_eq!(bits(&t[0]), [(-0.0f64).to_bits(), 0, 0, nan.to_bits()]);
    }

    fn owned(d: &Vec<bool>) -> &[bool] {
        d
    }

    #[test]
    fn a_mask_of_no_suffix_length_is_a_compile_error() {
        let mut graph = RawGraph::<f64, Vec<bool>>::new(vec![Dims::new(&[2, 3, 4]).unwrap()]);
        graph.push(RawNode::compact(MaskedFill::new(0, owned, 0.0))).unwrap();
        for ok in [1, 4, 12, 24] {
            assert!(RawSavedGraph::compile(&graph, vec![sample(&[2, 3, 4], 404)], vec![true; ok]).is_ok(), "{ok}");
        }
        match RawSavedGraph::compile(&graph, vec![sample(&[2, 3, 4], 404)], vec![true; 6]) {
            Err(Error::Node { node, op, message, .. }) => {
                assert_eq!((node, op.as_str()), (0, "masked_fill"));
                assert_eq!(
                    message,
                    "masked_fill needs a mask with one entry per element of trailing axes of shape [2, 3, 4] (e.g. 24 entries), got 6"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("compile accepted a mask of 6 entries"),
        }
    }
}
