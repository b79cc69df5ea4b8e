//! `causal_mask(scores, value)`: for attention scores `[…, t, t]` (rank 2 to 4, the last two axes
//! equal), `y[…, i, j] = if j > i { value } else { scores[…, i, j] }` — position `i` attends to
//! positions `0..=i` only. `value` is a constant of the scalar type (an infinity allowed: the
//! `-inf` that a following `softmax` turns into `0`). No data is read: the pattern follows from
//! the shape.
//!
//! VJP: `single(scores, gx)` with `gx[…, i, j] = if j > i { 0 } else { δ[…, i, j] }` — a select:
//! a masked element's gradient is the scalar's `+0` whatever the cotangent, an unmasked one
//! `δ[…, i, j]` bit for bit.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Fill with a constant above the diagonal of the last two axes.
#[derive(Clone, Debug)]
pub struct CausalMask<A> {
    parents: [usize; 1],
    value: A,
}

impl<A> CausalMask<A> {
    /// `causal_mask(scores, value)` for the position `scores`.
    pub fn new(scores: usize, value: A) -> Self {
        CausalMask { parents: [scores], value }
    }
}

/// Appends `src` (whose last two axes are `t × t`) with every element past the diagonal
/// replaced by `fill`: row `i` of each `t × t` block keeps its first `i + 1` elements (copied,
/// bit for bit) and gets `t - i - 1` copies of `fill`, row by row (no index arithmetic per
/// element).
fn masked_rows<A: Clone>(src: &[A], t: usize, fill: &A, out: &mut Vec<A>) {
    out.reserve(src.len());
    for (r, row) in src.chunks_exact(t.max(1)).enumerate() {
        let keep = (r % t) + 1;
        out.extend_from_slice(&row[..keep]);
        out.extend(core::iter::repeat_n(fill, t - keep).cloned());
    }
}

fn size(d: Dims) -> usize {
    d.as_slice().last().copied().unwrap_or(0)
}

impl<A: Scalar, D> CompactOp<A, D> for CausalMask<A> {
    fn name(&self) -> &'static str {
        "causal_mask"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("causal_mask", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::causal(d.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let t = size(x.dims());
        masked_rows(x.data(), t, &self.value, out);
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let mut v = c.buffer_for(g.dims().numel());
        masked_rows(g.data(), size(g.dims()), &A::zero(), &mut v);
        let gx = RawTensor::from_parts(g.dims(), v);
        c.single(self.parents[0], gx)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::CausalMask { a: self.parents[0], value: self.value.clone() })
    }
}

typed_op!(causal_mask(scores: S; value: A) -> CausalMask<A>: Causal, "`causal_mask(scores, value)`, `(T, T)`, `(B, T, T)` or `(B, H, T, T)` kept");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    #[test]
    fn value_fills_the_columns_past_each_row() {
        let x = sample(&[2, 3, 3], 410);
        let y = forward(CausalMask::new(0, f64::NEG_INFINITY), std::slice::from_ref(&x));
        for b in 0..2 {
            for i in 0..3 {
                for j in 0..3 {
                    let e = b * 9 + i * 3 + j;
                    let want = if j > i { f64::NEG_INFINITY.to_bits() } else { bits(&x)[e] };
                    assert_eq!(bits(&y)[e], want, "[{b}, {i}, {j}]");
                }
            }
        }
    }

    #[test]
    fn gradient() {
        gradcheck(CausalMask::new(0, -2.0), &[sample(&[3, 3], 411)], 1e-7);
        gradcheck(CausalMask::new(0, 5.0), &[sample(&[2, 1, 2, 2], 412)], 1e-7);
    }

    #[test]
    fn masked_entries_get_plus_zero_whatever_the_cotangent() {
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let g = RawTensor::from_vec(Dims::matrix(2, 2), vec![-0.0, nan, f64::INFINITY, nan]).unwrap();
        let t = vjp(CausalMask::new(0, 1.0), &[sample(&[2, 2], 413)], &g);
        assert_eq!(bits(&t[0]), [(-0.0f64).to_bits(), 0, f64::INFINITY.to_bits(), nan.to_bits()]);
    }

    #[test]
    fn non_square_scores_are_rejected() {
        let e = <CausalMask<f64> as CompactOp<f64, ()>>::output_dims(&CausalMask::new(0, 0.0), &[Dims::matrix(2, 3)]);
        assert_eq!(
            e.unwrap_err(),
            "causal_mask needs attention scores [.., t, t] whose last two axes are equal, got shape [2, 3]"
        );
        let e = <CausalMask<f64> as CompactOp<f64, ()>>::output_dims(&CausalMask::new(0, 0.0), &[Dims::vector(2)]);
        assert!(e.is_err());
    }
}
