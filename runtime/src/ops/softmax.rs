//! `softmax(x)` over the last axis, numerically stable.
//!
//! For each row `x[0..n]` (the last axis, `n ≥ 1`), in exactly this order:
//! 1. `m = max(x)`: `m = x[0]`, then for `j = 1, 2, …` `m = x[j]` when `x[j] > m` (so a NaN is
//!    never picked up unless it is `x[0]`, and of `-0`/`+0` the first wins);
//! 2. `e[j] = exp(x[j] − m)`, with `exp` = [`math::exp`](crate::math::exp) (for `f32`/`f64` a
//!    deterministic, vectorising kernel, within 1 ulp; `Float::exp` for other scalars);
//! 3. `s = ((0 + e[0]) + e[1]) + … + e[n − 1]` (ascending);
//! 4. `y[j] = e[j] / s`.
//!
//! A NaN anywhere in a row makes the whole row NaN (through `s`); a `+∞` does too (`∞ − ∞`), which
//! is the IEEE answer of the unshifted formula as well.
//!
//! VJP, with the saved output `y` and per row `d = ((0 + δ[0] * y[0]) + δ[1] * y[1]) + …`
//! (ascending, δ left): `single(x, t)` with `t[j] = (δ[j] − d) * y[j]` (δ-side factor left).

use crate::reference::{FloatKit, RefOp};
use num_traits::Float;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Softmax over the last axis.
#[derive(Clone, Debug)]
pub struct Softmax {
    parents: [usize; 1],
}

impl Softmax {
    /// `softmax(x)` for the position `x`.
    #[must_use]
    pub fn new(x: usize) -> Self {
        Softmax { parents: [x] }
    }
}

/// Shape rule shared by the row-wise ops: rank at least 1 and a non-empty last axis. Returns the
/// dims and the row length.
pub(crate) fn rows_dims(op: &str, prefix: &[Dims], p: usize) -> Result<(Dims, usize), String> {
    let d = super::dims_at(op, prefix, p)?;
    let out = super::ruled(super::spec_rules::last_axis(op, d.as_slice()))?;
    Ok((out, d.as_slice().last().copied().unwrap_or(1)))
}

/// Step 1 of the module docs: the row maximum, first element first, `x[j] > m` replaces.
pub(crate) fn row_max<A: Float>(row: &[A]) -> A {
    row[1..].iter().fold(row[0], |m, &v| if v > m { v } else { m })
}

/// Step 2 into `out` (a row's length): `exp(x[j] − m)`, the differences written first and
/// exponentiated in place by the slice kernel (so the loop vectorises).
#[inline(always)]
pub(crate) fn shifted_exps_into<A: Float + 'static>(row: &[A], m: A, out: &mut [A]) {
    for (o, &v) in out.iter_mut().zip(row) {
        *o = v - m;
    }
    crate::math::exp_in_place(out);
}

/// How many rows the row-wise loops take at a time: each of a row's sums (its maximum, its sum
/// of exponentials, the VJP's dot product) is one chain of dependent operations, and the chains
/// of `ROW_GROUP` rows advance side by side, one element of each row per step (every row's own
/// order kept), so they overlap instead of each waiting for its previous addition.
pub(crate) const ROW_GROUP: usize = 8;

/// Step 1 for the `R` rows of length `n` in `rows`, side by side ([`ROW_GROUP`]): each row's
/// [`row_max`].
#[inline(always)]
fn row_maxes<A: Float, const R: usize>(rows: &[A], n: usize) -> [A; R] {
    let mut m: [A; R] = core::array::from_fn(|r| rows[r * n]);
    for j in 1..n {
        for (r, m) in m.iter_mut().enumerate() {
            let v = rows[r * n + j];
            if v > *m {
                *m = v;
            }
        }
    }
    m
}

/// `((0 + f(r, 0)) + f(r, 1)) + … + f(r, n − 1)` (pinned) for each of `R` rows, side by side.
#[inline(always)]
pub(crate) fn row_sums<A: Scalar + Float, const R: usize>(n: usize, f: impl Fn(usize, usize) -> A) -> [A; R] {
    grouped_sums(n, <A as Scalar>::zero(), A::pinned_add, f)
}

/// `add(…add(add(zero, f(r, 0)), f(r, 1))…, f(r, n − 1))` for each of `R` rows, the rows side by
/// side ([`ROW_GROUP`]): each row's sum in its own order, one element of every row per step.
#[inline(always)]
pub(crate) fn grouped_sums<A: Copy, const R: usize>(
    n: usize,
    zero: A,
    add: impl Fn(A, A) -> A,
    f: impl Fn(usize, usize) -> A,
) -> [A; R] {
    let mut s = [zero; R];
    for j in 0..n {
        for (r, s) in s.iter_mut().enumerate() {
            *s = add(*s, f(r, j));
        }
    }
    s
}

/// Steps 1–3 of the module docs for every row of `x` (its last axis), appended to `out`: each
/// row's exponentials `exp(x[j] − m)` written into its output row, summed first to last (pinned),
/// then `finish(i, out_row, x_row, m, s)` for row `i`. Rows in blocks, on threads when their work
/// (`work_per_element` per element, `parallel::rows`) is large: each row alone, so the bits do not
/// depend on the threads; within a block, [`ROW_GROUP`] rows' maxima and sums side by side.
pub(crate) fn exp_rows<A: Scalar + Float>(
    x: &RawTensor<A>,
    work_per_element: usize,
    out: &mut Vec<A>,
    finish: impl Fn(usize, &mut [A], &[A], A, A) + Sync,
) {
    let n = x.dims().as_slice().last().copied().unwrap_or(1);
    let start = out.len();
    out.resize(start + x.numel(), <A as Scalar>::zero());
    crate::parallel::rows(&mut out[start..], n, work_per_element, |first, block| {
        let xs = &x.data()[first * n..][..block.len()];
        super::elementwise(ExpRows { xs, block, n, first, finish: &finish });
    });
}

/// A block of [`exp_rows`]' rows (row `first` first): its whole groups of [`ROW_GROUP`] rows,
/// then the rows after them one at a time, as a `WideLoop` so that the rows' loops (the sums,
/// `finish`) are compiled in the wide build `elementwise` runs.
struct ExpRows<'a, A, F> {
    xs: &'a [A],
    block: &'a mut [A],
    n: usize,
    first: usize,
    finish: &'a F,
}

impl<A: Scalar + Float, F: Fn(usize, &mut [A], &[A], A, A)> super::WideLoop for ExpRows<'_, A, F> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let ExpRows { xs, block, n, first, finish } = self;
        let done = exp_groups::<A, ROW_GROUP>(xs, block, n, first, finish);
        exp_groups::<A, 1>(&xs[done * n..], &mut block[done * n..], n, first + done, finish);
    }
}

/// [`exp_rows`]' steps for the whole groups of `R` rows of length `n` in `xs` (row `first`
/// first), their exponentials into `block` (as long as `xs`), the groups' maxima and sums side by
/// side; returns how many rows it did (the rows after the last whole group are left).
#[inline(always)]
fn exp_groups<A: Scalar + Float, const R: usize>(
    xs: &[A],
    block: &mut [A],
    n: usize,
    first: usize,
    finish: &impl Fn(usize, &mut [A], &[A], A, A),
) -> usize {
    let mut i = first;
    for (xr, or) in xs.chunks_exact(R * n).zip(block.chunks_exact_mut(R * n)) {
        let m = row_maxes::<A, R>(xr, n);
        for (r, (row, o)) in xr.chunks_exact(n).zip(or.chunks_exact_mut(n)).enumerate() {
            shifted_exps_into(row, m[r], o);
        }
        let s = row_sums::<A, R>(n, |r, j| or[r * n + j]);
        for (r, (row, o)) in xr.chunks_exact(n).zip(or.chunks_exact_mut(n)).enumerate() {
            finish(i + r, o, row, m[r], s[r]);
        }
        i += R;
    }
    i - first
}

/// The work per element of a row-wise loop around `exp` (`parallel::rows`): `exp`'s own.
pub(crate) const ROW_WORK: usize = <super::ExpFn as super::PointwiseFn<f32>>::FORWARD_WORK;

/// The work per element of the VJP's rows (`parallel::rows`): a sum on one dependency chain and
/// a subtraction and a product, no `exp` — about 1 ns, as a vectorised transcendental loop.
const VJP_ROW_WORK: usize = 16;

/// `softmax(x)`'s rows appended to `out`: the body `crate::compiled` instantiates for `f32` and
/// `f64` (a model's crate calls it through the table).
pub(crate) fn forward_body<A: Scalar + Float>(x: &RawTensor<A>, out: &mut Vec<A>) {
    // Steps 1–3 (`exp_rows`), then `e / s`.
    exp_rows(x, ROW_WORK, out, |_, o, _, _, s| {
        for v in o.iter_mut() {
            *v = *v / s;
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
    let mut t = c.buffer_for(y.numel());
    t.resize(y.numel(), <A as Scalar>::zero());
    let (yd, gd) = (y.data(), g.data());
    // Rows in blocks, on threads for large inputs (`parallel::rows`): each row alone.
    crate::parallel::rows(&mut t, n, VJP_ROW_WORK, |first, block| {
        let (ys, gs) = (&yd[first * n..][..block.len()], &gd[first * n..][..block.len()]);
        super::elementwise(VjpRows { ys, gs, block, n });
    });
    RawTensor::from_parts(y.dims(), t)
}

/// A block of the VJP's rows: its whole groups of [`ROW_GROUP`] rows, then the rows after them
/// one at a time, in the wide build (as [`ExpRows`]).
struct VjpRows<'a, A> {
    ys: &'a [A],
    gs: &'a [A],
    block: &'a mut [A],
    n: usize,
}

impl<A: Scalar + Float> super::WideLoop for VjpRows<'_, A> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let VjpRows { ys, gs, block, n } = self;
        let done = vjp_groups::<A, ROW_GROUP>(ys, gs, block, n);
        vjp_groups::<A, 1>(&ys[done..], &gs[done..], &mut block[done..], n);
    }
}

/// The VJP's rows for the whole groups of `R` rows of length `n` in `ys` and `gs` (into `block`,
/// as long), the groups' dot products side by side; returns how many elements it did (the rows
/// after the last whole group are left).
#[inline(always)]
fn vjp_groups<A: Scalar + Float, const R: usize>(ys: &[A], gs: &[A], block: &mut [A], n: usize) -> usize {
    let mut done = 0;
    let groups = ys.chunks_exact(R * n).zip(gs.chunks_exact(R * n)).zip(block.chunks_exact_mut(R * n));
    for ((yg, gg), og) in groups {
        let d = row_sums::<A, R>(n, |r, j| A::pinned_mul(gg[r * n + j], yg[r * n + j]));
        for (r, ((yr, gr), o)) in yg.chunks_exact(n).zip(gg.chunks_exact(n)).zip(og.chunks_exact_mut(n)).enumerate() {
            for ((v, &gv), &yv) in o.iter_mut().zip(gr).zip(yr) {
                *v = A::pinned_mul(gv - d[r], yv);
            }
        }
        done += R * n;
    }
    done
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        rows_dims("softmax", prefix, self.parents[0]).map(|(d, _)| d)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        crate::compiled::compiled_or_body!(A, softmax.0, forward_body, (&ctx[self.parents[0]], out));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let t = crate::compiled::compiled_or_body!(A, softmax.1, vjp_body, (saved.output, g, c));
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Softmax { a: self.parents[0], k: FloatKit::new() })
    }
}

typed_op!(softmax(x: S) -> Softmax: LastAxis, "`softmax(x)` over the last axis");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    /// The composite of primitives: `exp(x − max) / sum(exp(x − max))`, one row at a time, and
    /// its Jacobian-transpose product `Σ_k δ[k] (y[k] (1[k = j] − y[j]))`.
    fn oracle(x: &[f64], n: usize, g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (mut y, mut dx) = (Vec::new(), Vec::new());
        for (row, gr) in x.chunks(n).zip(g.chunks(n)) {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            let yr: Vec<f64> = e.iter().map(|v| v / s).collect();
            for j in 0..n {
                dx.push((0..n).map(|k| gr[k] * yr[k] * (f64::from(u8::from(k == j)) - yr[j])).sum());
            }
            y.extend(yr);
        }
        (y, dx)
    }

    #[test]
    fn matches_the_composite_oracle() {
        let x = sample(&[3, 4], 60);
        let g = sample(&[3, 4], 61);
        let (y, dx) = oracle(x.data(), 4, g.data());
        let fy = forward(Softmax::new(0), std::slice::from_ref(&x));
        let fdx = vjp(Softmax::new(0), std::slice::from_ref(&x), &g);
        for (a, b) in fy.data().iter().zip(&y).chain(fdx[0].data().iter().zip(&dx)) {
            assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        }
        for row in fy.data().chunks(4) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradcheck(Softmax::new(0), &[sample(&[2, 3], 62)], 1e-7);
        gradcheck(Softmax::new(0), &[sample(&[5], 63)], 1e-7);
        gradcheck(Softmax::new(0), &[sample(&[2, 1, 3], 64)], 1e-7);
    }

    #[test]
    fn special_values() {
        // Large logits do not overflow; a -inf logit gets exactly +0; a single element gives 1.
        let x = RawTensor::from_vec(Dims::matrix(2, 2), vec![1000.0, 1000.0, f64::NEG_INFINITY, 5.0]).unwrap();
        let y = forward(Softmax::new(0), &[x]);
        assert_eq!(bits(&y), [0.5f64.to_bits(), 0.5f64.to_bits(), 0, 1.0f64.to_bits()]);
        let nan_row = RawTensor::from_vec(Dims::vector(3), vec![1.0, f64::NAN, 2.0]).unwrap();
        assert!(forward(Softmax::new(0), &[nan_row]).data().iter().all(|v| v.is_nan()));
        let inf_row = RawTensor::from_vec(Dims::vector(2), vec![f64::INFINITY, 2.0]).unwrap();
        assert!(forward(Softmax::new(0), &[inf_row]).data().iter().all(|v| v.is_nan()));
    }

    use crate::scalar::Storage;
    use proptest::prelude::*;

    /// Adversarial values (signed zeros, infinities, NaN payloads, a subnormal) and numbers in ±30.0.
    fn special() -> impl Strategy<Value = f64> {
        crate::ops::testing::special_f64(30.0)
    }

    proptest::proptest! {
        /// The rows taken `ROW_GROUP` at a time (maxima, sums and the VJP's dot products side by
        /// side) give each row's one-at-a-time bits: the module docs' steps, row after row.
        #[test]
        fn grouped_rows_are_the_rows_one_by_one(
            (rows, n, x, g) in (1usize..20, 1usize..10).prop_flat_map(|(rows, n)| {
                (Just(rows), Just(n), proptest::collection::vec(special(), rows * n), proptest::collection::vec(special(), rows * n))
            })
        ) {
            let d = Dims::matrix(rows, n);
            let (xt, gt) = (RawTensor::from_vec(d, x.clone()).unwrap(), RawTensor::from_vec(d, g.clone()).unwrap());
            let (mut want_y, mut want_t) = (Vec::new(), Vec::new());
            for row in x.chunks(n) {
                let mut e = vec![0.0; n];
                shifted_exps_into(row, row_max(row), &mut e);
                let s = e.iter().fold(0.0, |acc, &v| f64::pinned_add(acc, v));
                want_y.extend(e.iter().map(|&v| v / s));
            }
            for (yr, gr) in want_y.chunks(n).zip(g.chunks(n)) {
                let dot = gr.iter().zip(yr).fold(0.0, |acc, (&gv, &yv)| f64::pinned_add(acc, f64::pinned_mul(gv, yv)));
                want_t.extend(gr.iter().zip(yr).map(|(&gv, &yv)| f64::pinned_mul(gv - dot, yv)));
            }
            let mut y = Vec::new();
            forward_body(&xt, &mut y);
            let yt = RawTensor::from_vec(d, want_y.clone()).unwrap();
            let t = vjp_body(&yt, &gt, &mut Contributions::new());
            let b = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(b(&y), b(&want_y));
            proptest::prop_assert_eq!(b(t.data()), b(&want_t));
        }
    }

    #[test]
    fn scalar_input_is_rejected() {
        let e = <Softmax as CompactOp<f64, ()>>::output_dims(&Softmax::new(0), &[Dims::scalar()]);
        assert_eq!(e.unwrap_err(), "softmax needs a non-empty last axis, got shape []");
    }
}
