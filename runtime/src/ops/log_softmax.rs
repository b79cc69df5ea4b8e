//! `log_softmax(x)` over the last axis, numerically stable.
//!
//! For each row `x[0..n]` (the last axis, `n ≥ 1`), in exactly this order:
//! 1. `m = max(x)` and `s = ((0 + exp(x[0] − m)) + exp(x[1] − m)) + …`, as in
//!    [`softmax`](super::softmax);
//! 2. `l = ln(s)`;
//! 3. `y[j] = (x[j] − m) − l`.
//!
//! VJP, with the saved output `y` and per row `t = ((0 + δ[0]) + δ[1]) + …` (ascending):
//! `single(x, r)` with `r[j] = δ[j] − t * exp(y[j])` (`exp(y)` is the softmax; the δ-side factor
//! `t` is left). `exp` is [`math::exp`](crate::math::exp) in both directions (applied to a row at
//! a time by its slice form).

use crate::reference::{FloatKit, RefOp};
use num_traits::Float;

use super::softmax::{exp_rows, rows_dims, ROW_WORK};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Log-softmax over the last axis.
#[derive(Clone, Debug)]
pub struct LogSoftmax {
    parents: [usize; 1],
}

impl LogSoftmax {
    /// `log_softmax(x)` for the position `x`.
    #[must_use]
    pub fn new(x: usize) -> Self {
        LogSoftmax { parents: [x] }
    }
}

/// `log_softmax(x)`'s rows appended to `out`: the body `crate::compiled` instantiates for `f32`
/// and `f64` (a model's crate calls it through the table).
pub(crate) fn forward_body<A: Scalar + Float>(x: &RawTensor<A>, out: &mut Vec<A>) {
    // Steps 1–3 (`exp_rows`: the exponentials in `out`'s row, only for their sum), then
    // `(x − m) − ln s`.
    exp_rows(x, ROW_WORK, out, |_, o, row, m, s| {
        let l = s.ln();
        for (v, &xv) in o.iter_mut().zip(row) {
            *v = (xv - m) - l;
        }
    });
}

/// The contribution tensor of `x` from the output `y` and the cotangent `g` (its buffer from the
/// arena `c`): the body `crate::compiled` instantiates for `f32` and `f64`.
pub(crate) fn vjp_body<A: Scalar + Float>(
    y: &RawTensor<A>,
    g: &RawTensor<A>,
    c: &mut Contributions<A>,
) -> RawTensor<A> {
    let n = y.dims().as_slice().last().copied().unwrap_or(1);
    let mut r = c.buffer_for(y.numel());
    r.extend_from_slice(y.data());
    // Rows in blocks, on threads for large inputs (`parallel::rows`): each row alone.
    crate::parallel::rows(&mut r, n, ROW_WORK, |first, block| {
        for (row, gr) in block.chunks_exact_mut(n).zip(g.data()[first * n..].chunks_exact(n)) {
            let t = gr.iter().fold(<A as Scalar>::zero(), |acc, &v| A::pinned_add(acc, v));
            // exp(y[j]) for the row in place, then δ[j] − t * exp(y[j]).
            crate::math::exp_in_place(row);
            for (v, &gv) in row.iter_mut().zip(gr) {
                *v = gv - A::pinned_mul(t, *v);
            }
        }
    });
    RawTensor::from_parts(y.dims(), r)
}

impl<A: Scalar + Float, D> CompactOp<A, D> for LogSoftmax {
    fn name(&self) -> &'static str {
        "log_softmax"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        rows_dims("log_softmax", prefix, self.parents[0]).map(|(d, _)| d)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        crate::compiled::compiled_or_body!(A, log_softmax.0, forward_body, (&ctx[self.parents[0]], out));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let r = crate::compiled::compiled_or_body!(A, log_softmax.1, vjp_body, (saved.output, g, c));
        c.single(self.parents[0], r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::LogSoftmax { a: self.parents[0], k: FloatKit::new() })
    }
}

typed_op!(log_softmax(x: S) -> LogSoftmax: LastAxis, "`log_softmax(x)` over the last axis");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Softmax;

    #[test]
    fn matches_log_of_softmax_and_its_chain_rule() {
        let x = sample(&[3, 4], 70);
        let g = sample(&[3, 4], 71);
        let y = forward(LogSoftmax::new(0), std::slice::from_ref(&x));
        let p = forward(Softmax::new(0), std::slice::from_ref(&x));
        for (a, b) in y.data().iter().zip(p.data()) {
            assert!((a - b.ln()).abs() < 1e-14, "{a} vs ln {b}");
        }
        // Composite oracle: log(softmax(x)) has VJP softmax_vjp(δ / p).
        let gp = RawTensor::from_fn(g.dims(), |i| g.data()[i] / p.data()[i]);
        let composite = vjp(Softmax::new(0), std::slice::from_ref(&x), &gp);
        let direct = vjp(LogSoftmax::new(0), std::slice::from_ref(&x), &g);
        for (a, b) in direct[0].data().iter().zip(composite[0].data()) {
            assert!((a - b).abs() < 1e-13, "{a} vs {b}");
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(LogSoftmax::new(0), &[sample(&[2, 3], 72)], 1e-7);
        gradcheck(LogSoftmax::new(0), &[sample(&[4], 73)], 1e-7);
    }

    #[test]
    fn special_values() {
        // Huge logits stay finite; a -inf logit gives -inf; a single element gives +0.
        let x = RawTensor::from_vec(Dims::matrix(2, 2), vec![1000.0, 1000.0, f64::NEG_INFINITY, 5.0]).unwrap();
        let y = forward(LogSoftmax::new(0), &[x]);
        let ln2 = 2.0f64.ln();
        assert_eq!(bits(&y), [(-ln2).to_bits(), (-ln2).to_bits(), f64::NEG_INFINITY.to_bits(), 0]);
        let one = RawTensor::from_vec(Dims::vector(1), vec![-3.0]).unwrap();
        assert_eq!(bits(&forward(LogSoftmax::new(0), &[one])), [0]);
    }
}
