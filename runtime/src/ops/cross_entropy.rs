//! `cross_entropy(logits, labels)`: mean softmax cross-entropy of a `[m, c]` matrix of logits
//! against `m` integer labels read from the graph's data through an accessor `fn(&D) -> &[usize]`.
//!
//! For each row `i` with label `k = labels[i]`, in exactly this order:
//! 1. `mx = max(x[i])` and `s = ((0 + exp(x[i, 0] − mx)) + …) + exp(x[i, c − 1] − mx)`, as in
//!    [`softmax`](super::softmax);
//! 2. `loss_i = ln(s) − (x[i, k] − mx)` (that is `logsumexp(row) − row[k]`, shifted by `mx`);
//!
//! then `y = (((0 + loss_0) + loss_1) + …) / m` (ascending rows).
//!
//! VJP: `single(logits, t)` with `w = δ / m` and `t[i, j] = w * (p[i, j] − onehot[i, j])`, where
//! `p[i, j] = exp(x[i, j] − mx) / s` is recomputed with the softmax kernel and `onehot` is `1` at
//! the label and `0` elsewhere (δ-side factor left).
//!
//! `exp` is [`math::exp`](crate::math::exp) in the forward and in the VJP's recomputation.
//!
//! Labels are data, not differentiable. `validate` rejects a label count other than `m` and a
//! label `≥ c`, naming the row and the label (an error from `compile`, never a panic).

use crate::reference::{FloatKit, RefOp};
use num_traits::{Float, FromPrimitive};

use super::softmax::{exp_rows, row_max};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Reads the labels out of the graph's data.
pub type LabelAccessor<D> = fn(&D) -> &[usize];

/// Mean softmax cross-entropy against integer labels from the data.
pub struct CrossEntropy<D> {
    parents: [usize; 1],
    labels: LabelAccessor<D>,
}

impl<D> Clone for CrossEntropy<D> {
    fn clone(&self) -> Self {
        CrossEntropy { parents: self.parents, labels: self.labels }
    }
}

impl<D> core::fmt::Debug for CrossEntropy<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CrossEntropy").field("parents", &self.parents).finish_non_exhaustive()
    }
}

impl<D> CrossEntropy<D> {
    /// `cross_entropy(logits, labels(data))` for the position `logits`.
    pub fn new(logits: usize, labels: LabelAccessor<D>) -> Self {
        CrossEntropy { parents: [logits], labels }
    }
}

/// The work per element of the forward's and the VJP's rows for the thread split
/// (`parallel::rows`; units of `PointwiseFn::FORWARD_WORK`, about 16 per nanosecond on one thread):
/// measured at about 4.5 ns per element for the forward and 5 ns for the VJP (`f32`, 64 × 256 and
/// 512 × 512, `cargo bench --bench math -- threads_rows`), where two threads ran 1.4–1.9× faster.
const ROW_WORK: usize = 64;

/// How many exponentials the forward computes at a time (on the stack).
const EXP_CHUNK: usize = 64;

/// Step 2 for one row with label `k`: `ln(s) − (x[k] − mx)`, the exponentials of step 1 computed
/// a chunk at a time by the slice kernel and not kept (softmax's steps 1–3: the same sum in the
/// same order).
fn row_loss<A: Scalar + Float>(row: &[A], k: usize) -> A {
    let mx = row_max(row);
    let mut s = <A as Scalar>::zero();
    let mut chunk = [<A as Scalar>::zero(); EXP_CHUNK];
    for part in row.chunks(EXP_CHUNK) {
        let e = &mut chunk[..part.len()];
        for (ev, &v) in e.iter_mut().zip(part) {
            *ev = v - mx;
        }
        crate::math::exp_in_place(e);
        s = e.iter().fold(s, |acc, &v| A::pinned_add(acc, v));
    }
    s.ln() - (row[k] - mx)
}

/// `m` as a scalar (checked representable by `output_dims`).
fn rows<A: FromPrimitive>(m: usize) -> A {
    A::from_usize(m).expect("output_dims checked that the element count is a scalar of A")
}

/// The mean loss of the logits `x` against `labels` appended to `out` (its spare capacity the
/// rows' scratch): the body `crate::compiled` instantiates for `f32` and `f64` (a model's crate
/// calls it through the table).
pub(crate) fn forward_body<A: Scalar + Float + FromPrimitive>(x: &RawTensor<A>, labels: &[usize], out: &mut Vec<A>) {
    let c = x.dims().as_slice()[1];
    let m = labels.len();
    // The per-row losses in `out` past `start` (scratch: `out`'s spare capacity, kept between
    // runs), computed in blocks of rows, on threads for large inputs (`parallel::rows`, one
    // element per row); then summed here in row order (the sum is never split).
    let start = out.len();
    out.resize(start + m, <A as Scalar>::zero());
    let xd = x.data();
    crate::parallel::rows(&mut out[start..], 1, c.saturating_mul(ROW_WORK), |first, losses| {
        for ((row, &k), loss) in xd
            .get(first * c..)
            .unwrap_or_default()
            .chunks_exact(c)
            .zip(labels.get(first..).unwrap_or_default())
            .zip(losses)
        {
            *loss = row_loss(row, k);
        }
    });
    let total = out[start..].iter().fold(<A as Scalar>::zero(), |acc, &l| A::pinned_add(acc, l));
    out.truncate(start);
    out.push(total / rows::<A>(m));
}

/// The contribution tensor of the logits `x` for `labels` and the cotangent `g` (its buffer from
/// the arena `c`): the body `crate::compiled` instantiates for `f32` and `f64`.
pub(crate) fn vjp_body<A: Scalar + Float + FromPrimitive>(
    x: &RawTensor<A>,
    labels: &[usize],
    g: &RawTensor<A>,
    c: &mut Contributions<A>,
) -> RawTensor<A> {
    let w = g.data()[0] / rows::<A>(labels.len());
    let mut t = c.buffer_for(x.numel());
    // Softmax's steps 1–3 with its exponentials written straight into `t` (`exp_rows`: blocks
    // of whole rows, on threads for large inputs), then `w · (e / s − onehot)`.
    exp_rows(x, ROW_WORK, &mut t, |i, o, _, _, s| {
        let k = labels.get(i).copied();
        for (j, v) in o.iter_mut().enumerate() {
            let onehot = if Some(j) == k { A::one() } else { <A as Scalar>::zero() };
            *v = A::pinned_mul(w, *v / s - onehot);
        }
    });
    RawTensor::from_parts(x.dims(), t)
}

impl<A: Scalar + Float + FromPrimitive, D: 'static> CompactOp<A, D> for CrossEntropy<D> {
    fn name(&self) -> &'static str {
        "cross_entropy"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("cross_entropy", prefix, self.parents[0])?;
        let out = super::ruled(super::spec_rules::logits("cross_entropy", d.as_slice()))?;
        let m = d.as_slice()[0];
        A::from_usize(m)
            .map(|_: A| out)
            .ok_or_else(|| format!("cross_entropy cannot represent the row count {m} in its scalar type"))
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        let d = ctx[self.parents[0]].dims();
        let (m, c) = (d.as_slice()[0], d.as_slice()[1]);
        let labels = (self.labels)(data);
        if labels.len() != m {
            return Err(format!("cross_entropy needs one label per row: {} labels for {m} rows", labels.len()));
        }
        match labels.iter().enumerate().find(|(_, &k)| k >= c) {
            Some((i, k)) => Err(format!("cross_entropy label {k} at row {i} is out of range for {c} classes")),
            None => Ok(()),
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let mut out = Vec::with_capacity(1);
        self.forward_into(ctx, data, &mut out);
        RawTensor::from_parts(Dims::scalar(), out)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        let labels = (self.labels)(data);
        crate::compiled::compiled_or_body!(A, cross_entropy.0, forward_body, (&ctx[self.parents[0]], labels, out));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let (x, labels) = (&saved.prefix[self.parents[0]], (self.labels)(saved.data));
        let t = crate::compiled::compiled_or_body!(A, cross_entropy.1, vjp_body, (x, labels, g, c));
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::CrossEntropy { logits: self.parents[0], labels: self.labels, k: FloatKit::counting() })
    }
}

typed_op!(cross_entropy(logits: S; labels: LabelAccessor<D>) -> CrossEntropy<D>: Logits, "`cross_entropy(logits, labels)`, `(M, C)` logits → `()`, labels read from the data by `labels` (checked by `compile`: `M` labels, each `< C`)");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::{LogSoftmax, Softmax};
    use crate::saved::RawSavedGraph;

    fn fixed(_: &()) -> &[usize] {
        &[2, 0, 1]
    }

    #[test]
    fn matches_the_composite_oracle() {
        // Oracle: mean over rows of −log_softmax(x)[label]; VJP (softmax − onehot)·δ/m.
        let x = sample(&[3, 4], 80);
        let ls = forward(LogSoftmax::new(0), std::slice::from_ref(&x));
        let p = forward(Softmax::new(0), std::slice::from_ref(&x));
        let labels = fixed(&());
        let expected = labels.iter().enumerate().map(|(i, &k)| -ls.data()[i * 4 + k]).sum::<f64>() / 3.0;
        let y = forward(CrossEntropy::new(0, fixed), std::slice::from_ref(&x));
        assert!((y.data()[0] - expected).abs() < 1e-15);
        let g = RawTensor::full(Dims::scalar(), 1.5);
        let d = vjp(CrossEntropy::new(0, fixed), std::slice::from_ref(&x), &g);
        for (i, (a, pv)) in d[0].data().iter().zip(p.data()).enumerate() {
            let onehot = if labels[i / 4] == i % 4 { 1.0 } else { 0.0 };
            assert!((a - 0.5 * (pv - onehot)).abs() < 1e-15, "{i}: {a}");
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(CrossEntropy::new(0, fixed), &[sample(&[3, 3], 81)], 1e-7);
        gradcheck(CrossEntropy::new(0, fixed), &[sample(&[3, 5], 82)], 1e-7);
    }

    #[test]
    fn special_values() {
        // Huge logits: no overflow; a confident correct prediction has loss exactly 0.
        let x =
            RawTensor::from_vec(Dims::matrix(3, 3), vec![0.0, 0.0, 1000.0, 500.0, -500.0, 0.0, 7.0, 7.0, 7.0]).unwrap();
        let y = forward(CrossEntropy::new(0, fixed), &[x]);
        let expected = ((0.0 + 0.0) + 3.0f64.ln()) / 3.0;
        assert_eq!(bits(&y), [expected.to_bits()]);
    }

    fn owned(d: &Vec<usize>) -> &[usize] {
        d
    }

    fn compile_error(labels: Vec<usize>) -> Error {
        let mut graph = RawGraph::<f64, Vec<usize>>::new(vec![Dims::matrix(2, 3)]);
        graph.push(RawNode::compact(CrossEntropy::new(0, owned))).unwrap();
        match RawSavedGraph::compile(&graph, vec![sample(&[2, 3], 83)], labels) {
            Err(e) => e,
            Ok(_) => panic!("compile accepted bad labels"),
        }
    }

    #[test]
    fn bad_labels_are_compile_errors() {
        let mut graph = RawGraph::<f64, Vec<usize>>::new(vec![Dims::matrix(2, 3)]);
        graph.push(RawNode::compact(CrossEntropy::new(0, owned))).unwrap();
        assert!(RawSavedGraph::compile(&graph, vec![sample(&[2, 3], 83)], vec![2, 0]).is_ok());
        match compile_error(vec![1, 3]) {
            Error::Node { node, op, message, .. } => {
                assert_eq!((node, op.as_str()), (0, "cross_entropy"));
                assert_eq!(message, "cross_entropy label 3 at row 1 is out of range for 3 classes");
            }
            e => panic!("unexpected error {e}"),
        }
        match compile_error(vec![0, 1, 2]) {
            Error::Node { message, .. } => {
                assert_eq!(message, "cross_entropy needs one label per row: 3 labels for 2 rows");
            }
            e => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn non_matrix_is_rejected() {
        let op = CrossEntropy::<()>::new(0, fixed);
        let e = <CrossEntropy<()> as CompactOp<f64, ()>>::output_dims(&op, &[Dims::vector(3)]);
        assert_eq!(e.unwrap_err(), "cross_entropy needs a non-empty matrix of logits (rows × classes), got shape [3]");
    }
}
