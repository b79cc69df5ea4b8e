//! `layer_norm(x, gain, bias)` over the last axis, with a constant `eps`; `x: [m, n]`,
//! `gain, bias: [n]` (`n ≥ 1`).
//!
//! For each row `x[0..n]`, in exactly this order:
//! 1. `μ = (((0 + x[0]) + x[1]) + …) / n`;
//! 2. `d[j] = x[j] − μ`;
//! 3. `v = (((0 + d[0] * d[0]) + d[1] * d[1]) + …) / n`;
//! 4. `r = 1 / sqrt(v + eps)`;
//! 5. `h[j] = d[j] * r`;
//! 6. `y[j] = h[j] * gain[j] + bias[j]` (product first, no `mul_add`).
//!
//! VJP (with `h` and `r` recomputed by the same kernel): per row, `q[j] = δ[j] * gain[j]`,
//! `a = (((0 + q[0]) + q[1]) + …) / n`, `b = (((0 + q[0] * h[0]) + q[1] * h[1]) + …) / n`, and
//! `gx[j] = ((q[j] − a) − b * h[j]) * r`. Over the rows `i` in ascending order from `0`:
//! `gbias[j] = ((0 + δ[0, j]) + δ[1, j]) + …` and `ggain[j] = ((0 + δ[0, j] * h[0, j]) + …)`.
//! The contributions are `add(add(single(x, gx), single(gain, ggain)), single(bias, gbias))`.
//!
//! Threads: the forward's rows and, for large inputs, the VJP's `gx` (with every `h`, kept for
//! the sums over rows) are computed in blocks of whole rows (`parallel::rows`, `rows_pair`);
//! `ggain` and `gbias` after them, on the calling thread, in the row order above. A VJP that is
//! not split runs in one pass with one row's scratch (no buffer of every `h`: a program's runs
//! after its first allocate nothing).

use crate::reference::{FloatKit, RefOp};
use num_traits::{Float, FromPrimitive};

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::{Scalar, Storage};
use crate::shape::Dims;
use crate::tensor::RawTensor;

use super::softmax::{grouped_sums, ROW_GROUP};

/// Layer normalisation over the last axis with a gain and a bias.
#[derive(Clone, Debug)]
pub struct LayerNorm<A> {
    parents: [usize; 3],
    eps: A,
}

impl<A> LayerNorm<A> {
    /// `layer_norm(x, gain, bias)` with the constant `eps`.
    pub fn new(x: usize, gain: usize, bias: usize, eps: A) -> Self {
        LayerNorm { parents: [x, gain, bias], eps }
    }
}

/// `a + b`: the engine's pinned addition when `P`, plain `+` otherwise (see [`pinned_if_nan`]).
#[inline(always)]
fn add<A: Scalar + Float, const P: bool>(a: A, b: A) -> A {
    if P {
        A::pinned_add(a, b)
    } else {
        a + b
    }
}

/// `a * b` of two data values: pinned when `P`, plain otherwise.
#[inline(always)]
fn mul<A: Scalar + Float, const P: bool>(a: A, b: A) -> A {
    if P {
        A::pinned_mul(a, b)
    } else {
        a * b
    }
}

/// Runs `f(out, false)` (plain `+` and `*`, which vectorise and keep one add on each sum's
/// dependency chain), and again as `f(out, true)` (every `+`/`*` of two data values pinned) when
/// its results hold a NaN; `f` overwrites all of `out`. Every operation here carries a NaN operand
/// into its result (no select, no comparison), so a result element that is not a NaN had no NaN
/// along the way, where pinned and plain operations agree: each element has the same bits whichever
/// run it is kept from, so the choice may be made per block of rows (the thread split) as well as
/// for the whole op.
fn pinned_if_nan<A: Scalar>(out: &mut [A], mut f: impl FnMut(&mut [A], bool)) {
    f(out, false);
    if out.iter().any(Storage::is_nan) {
        f(out, true);
    }
}

/// The work per element of the forward's rows for the thread split (`parallel::rows`; units of
/// `PointwiseFn::FORWARD_WORK`, about 16 per nanosecond on one thread): two sums on one
/// dependency chain each plus four cheap operations, measured at about 2.2 ns per element (`f32`,
/// 64 × 256 and 512 × 512, `cargo bench --bench math -- threads_rows`; two threads 1.35–1.55×
/// faster).
const FORWARD_ROW_WORK: usize = 32;

/// The work per element of the VJP's rows (`gx` and the normalised rows; `parallel::rows_pair`):
/// `normalise` and two more sums, measured at about 4.7 ns per element (as the forward; two threads
/// 1.4–1.5× faster, the sums over rows after them included).
const VJP_ROW_WORK: usize = 64;

/// Steps 1–5 for the `R` rows of length `n` in `rows`, side by side (`softmax::ROW_GROUP`: each
/// row's sums in its own order, one element of every row per step): the normalised rows into `h`
/// (as long as `rows`); returns each row's `r`.
#[inline(always)]
fn normalise<A: Scalar + Float, const P: bool, const R: usize>(
    rows: &[A],
    n: usize,
    nf: A,
    eps: A,
    h: &mut [A],
) -> [A; R] {
    let zero = <A as Scalar>::zero();
    let mu = grouped_sums::<A, R>(n, zero, add::<A, P>, |r, j| rows[r * n + j]).map(|s| s / nf);
    for ((hr, row), &mu) in h.chunks_exact_mut(n).zip(rows.chunks_exact(n)).zip(&mu) {
        for (d, &v) in hr.iter_mut().zip(row) {
            *d = v - mu;
        }
    }
    let var = grouped_sums::<A, R>(n, zero, add::<A, P>, |r, j| h[r * n + j] * h[r * n + j]).map(|s| s / nf);
    // `var + eps` pinned too: both may be NaNs, and a plain `+` commutes (LLVM may swap its
    // operands, so the NaN kept would depend on how the rows were compiled).
    let r = var.map(|v| A::one() / add::<A, P>(v, eps).sqrt());
    for (hr, &r) in h.chunks_exact_mut(n).zip(&r) {
        for d in hr.iter_mut() {
            *d = mul::<A, P>(*d, r);
        }
    }
    r
}

/// The elements of the leading whole groups of [`ROW_GROUP`] rows of length `n` in `len`
/// elements (the rows after them go one at a time).
fn grouped_len(len: usize, n: usize) -> usize {
    let group = ROW_GROUP * n.max(1);
    len - len % group
}

/// The forward of the rows of `x` written into `out` (as long as `x`): `normalise` into the
/// rows, then `h * g + b` in place; `R` rows at a time (`x` holds a multiple of `R` rows).
#[inline(always)]
fn forward_groups<A: Scalar + Float, const P: bool, const R: usize>(
    x: &[A],
    gain: &[A],
    bias: &[A],
    nf: A,
    eps: A,
    out: &mut [A],
) {
    let n = gain.len().max(1);
    for (rows, h) in x.chunks_exact(R * n).zip(out.chunks_exact_mut(R * n)) {
        normalise::<A, P, R>(rows, n, nf, eps, h);
        for hr in h.chunks_exact_mut(n) {
            for ((d, &g), &b) in hr.iter_mut().zip(gain).zip(bias) {
                *d = add::<A, P>(mul::<A, P>(*d, g), b);
            }
        }
    }
}

/// The VJP of the `R` rows `rows` at cotangents `dr`: their normalised rows written into `h` and
/// their `gx` into `q` (each as long as `rows`; `q` holds `δ * g` until `gx` overwrites it).
#[inline(always)]
fn vjp_group<A: Scalar + Float, const P: bool, const R: usize>(
    (rows, dr, gain): (&[A], &[A], &[A]),
    nf: A,
    eps: A,
    q: &mut [A],
    h: &mut [A],
) {
    let (n, zero) = (gain.len().max(1), <A as Scalar>::zero());
    let r = normalise::<A, P, R>(rows, n, nf, eps, h);
    for (qr, drr) in q.chunks_exact_mut(n).zip(dr.chunks_exact(n)) {
        for ((qv, &dv), &gv) in qr.iter_mut().zip(drr).zip(gain) {
            *qv = mul::<A, P>(dv, gv);
        }
    }
    let a = grouped_sums::<A, R>(n, zero, add::<A, P>, |r, j| q[r * n + j]).map(|s| s / nf);
    let b = grouped_sums::<A, R>(n, zero, add::<A, P>, |r, j| mul::<A, P>(q[r * n + j], h[r * n + j])).map(|s| s / nf);
    for (k, (qr, hr)) in q.chunks_exact_mut(n).zip(h.chunks_exact(n)).enumerate() {
        for (qv, &hv) in qr.iter_mut().zip(hr) {
            *qv = mul::<A, P>((*qv - a[k]) - mul::<A, P>(b[k], hv), r[k]);
        }
    }
}

/// One row's terms of `ggain` and `gbias`, added onto them: `ggain[j] + δ[j] * h[j]` and
/// `gbias[j] + δ[j]`.
#[inline(always)]
fn param_row<A: Scalar + Float, const P: bool>(dr: &[A], h: &[A], ggain: &mut [A], gbias: &mut [A]) {
    for (((gg, gb), &dv), &hv) in ggain.iter_mut().zip(gbias.iter_mut()).zip(dr).zip(h) {
        *gg = add::<A, P>(*gg, mul::<A, P>(dv, hv));
        *gb = add::<A, P>(*gb, dv);
    }
}

/// The VJP's rows: `gx` and the normalised rows `h` written (each as long as `x`), `R` rows at a
/// time (`x` holds a multiple of `R` rows).
#[inline(always)]
fn vjp_groups<A: Scalar + Float, const P: bool, const R: usize>(
    (x, g, gain): (&[A], &[A], &[A]),
    nf: A,
    eps: A,
    gx: &mut [A],
    h: &mut [A],
) {
    let n = gain.len().max(1) * R;
    let rows = x.chunks_exact(n).zip(g.chunks_exact(n)).zip(gx.chunks_exact_mut(n).zip(h.chunks_exact_mut(n)));
    for ((rows, dr), (q, h)) in rows {
        vjp_group::<A, P, R>((rows, dr, gain), nf, eps, q, h);
    }
}

/// The VJP's rows: `gx` and the normalised rows `h` written (each as long as `x`),
/// [`vjp_groups`] on the leading whole groups of [`ROW_GROUP`] rows, then row by row.
#[inline(always)]
fn vjp_rows<A: Scalar + Float, const P: bool>(
    (x, g, gain): (&[A], &[A], &[A]),
    nf: A,
    eps: A,
    gx: &mut [A],
    h: &mut [A],
) {
    let k = grouped_len(x.len(), gain.len());
    let ((gx, gx_tail), (h, h_tail)) = (gx.split_at_mut(k), h.split_at_mut(k));
    vjp_groups::<A, P, ROW_GROUP>((&x[..k], &g[..k], gain), nf, eps, gx, h);
    vjp_groups::<A, P, 1>((&x[k..], &g[k..], gain), nf, eps, gx_tail, h_tail);
}

/// The forward of the rows of `x` into `out`: [`forward_groups`] on the leading whole groups of
/// [`ROW_GROUP`] rows, then row by row.
#[inline(always)]
fn forward_rows<A: Scalar + Float, const P: bool>(x: &[A], gain: &[A], bias: &[A], nf: A, eps: A, out: &mut [A]) {
    let k = grouped_len(x.len(), gain.len());
    let (head, tail) = out.split_at_mut(k);
    forward_groups::<A, P, ROW_GROUP>(&x[..k], gain, bias, nf, eps, head);
    forward_groups::<A, P, 1>(&x[k..], gain, bias, nf, eps, tail);
}

/// The VJP of every row in one pass on this thread: [`vjp_groups_fused`] on the leading whole
/// groups of [`ROW_GROUP`] rows, then row by row (`h` and `q`: scratch for `ROW_GROUP` rows).
#[allow(clippy::type_complexity)]
#[inline(always)]
fn vjp_rows_fused<A: Scalar + Float, const P: bool>(
    (x, g, gain): (&[A], &[A], &[A]),
    nf: A,
    eps: A,
    (h, q): (&mut [A], &mut [A]),
    (gx, ggain, gbias): (&mut Vec<A>, &mut [A], &mut [A]),
) {
    let k = grouped_len(x.len(), gain.len());
    vjp_groups_fused::<A, P, ROW_GROUP>(
        (&x[..k], &g[..k], gain),
        nf,
        eps,
        (&mut *h, &mut *q),
        (&mut *gx, &mut *ggain, &mut *gbias),
    );
    vjp_groups_fused::<A, P, 1>((&x[k..], &g[k..], gain), nf, eps, (h, q), (gx, ggain, gbias));
}

/// The VJP of every row in one pass on this thread (when the rows are not split), `R` rows at a
/// time (`x` holds a multiple of `R` rows): `gx` appended, `ggain` and `gbias` accumulated row
/// after row, `h` and `q` scratch for `R` rows at least. The same operations in the same order as
/// [`vjp_rows`] then [`param_sums`], without keeping every normalised row.
#[allow(clippy::type_complexity)]
#[inline(always)]
fn vjp_groups_fused<A: Scalar + Float, const P: bool, const R: usize>(
    (x, g, gain): (&[A], &[A], &[A]),
    nf: A,
    eps: A,
    (h, q): (&mut [A], &mut [A]),
    (gx, ggain, gbias): (&mut Vec<A>, &mut [A], &mut [A]),
) {
    let n = gain.len().max(1);
    let (h, q) = (&mut h[..R * n], &mut q[..R * n]);
    for (rows, dr) in x.chunks_exact(R * n).zip(g.chunks_exact(R * n)) {
        vjp_group::<A, P, R>((rows, dr, gain), nf, eps, q, h);
        gx.extend_from_slice(q);
        for (drr, hr) in dr.chunks_exact(n).zip(h.chunks_exact(n)) {
            param_row::<A, P>(drr, hr, ggain, gbias);
        }
    }
}

/// `ggain` and `gbias` (zeros, `n` each) accumulated over the rows of `g` and of the normalised
/// rows `h`, in ascending row order.
#[inline(always)]
fn param_sums<A: Scalar + Float, const P: bool>(g: &[A], h: &[A], ggain: &mut [A], gbias: &mut [A]) {
    let n = ggain.len().max(1);
    for (dr, hr) in g.chunks_exact(n).zip(h.chunks_exact(n)) {
        param_row::<A, P>(dr, hr, ggain, gbias);
    }
}

/// One of the row loops, run in the wide build `elementwise` runs ([`Rows`]).
#[allow(clippy::type_complexity)]
enum Job<'a, A> {
    /// [`forward_rows`]: `x`, `gain`, `bias` into `out`.
    Forward { x: &'a [A], gain: &'a [A], bias: &'a [A], out: &'a mut [A] },
    /// [`vjp_rows`]: `(x, g, gain)` into `gx` and `h`.
    Vjp { rows: (&'a [A], &'a [A], &'a [A]), gx: &'a mut [A], h: &'a mut [A] },
    /// [`vjp_rows_fused`]: `(x, g, gain)` with its scratch into `(gx, ggain, gbias)`.
    Fused {
        rows: (&'a [A], &'a [A], &'a [A]),
        scratch: (&'a mut [A], &'a mut [A]),
        out: (&'a mut Vec<A>, &'a mut [A], &'a mut [A]),
    },
    /// [`param_sums`]: `g` and `h` onto `ggain` and `gbias`.
    Params { g: &'a [A], h: &'a [A], ggain: &'a mut [A], gbias: &'a mut [A] },
}

/// A row loop ([`Job`]) with the pinning `P` of [`pinned_if_nan`]'s run.
impl<A: Scalar + Float> Job<'_, A> {
    #[inline(always)]
    fn run<const P: bool>(self, nf: A, eps: A) {
        match self {
            Job::Forward { x, gain, bias, out } => forward_rows::<A, P>(x, gain, bias, nf, eps, out),
            Job::Vjp { rows, gx, h } => vjp_rows::<A, P>(rows, nf, eps, gx, h),
            Job::Fused { rows, scratch, out } => vjp_rows_fused::<A, P>(rows, nf, eps, scratch, out),
            Job::Params { g, h, ggain, gbias } => param_sums::<A, P>(g, h, ggain, gbias),
        }
    }
}

/// A [`Job`] as a `WideLoop` whose `run` is forced inline, so that the rows are compiled in the
/// wide build (as the pointwise loops: a closure holding the inlined rows stayed out of line, in
/// the baseline build); `pinned` chooses the variant of [`pinned_if_nan`].
struct Rows<'a, A> {
    job: Job<'a, A>,
    nf: A,
    eps: A,
    pinned: bool,
}

impl<A: Scalar + Float> super::WideLoop for Rows<'_, A> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        if self.pinned {
            self.job.run::<true>(self.nf, self.eps);
        } else {
            self.job.run::<false>(self.nf, self.eps);
        }
    }
}

/// `forward_into`'s rows for `x` with `gain`, `bias` and `eps` appended to `out`: the body
/// `crate::compiled` instantiates for `f32` and `f64` (a model's crate calls it through the table).
pub(crate) fn forward_body<A: Scalar + Float + FromPrimitive>(
    x: &RawTensor<A>,
    gain: &[A],
    bias: &[A],
    eps: A,
    out: &mut Vec<A>,
) {
    let n = gain.len();
    let nf = A::from_usize(n).expect("output_dims checked that the element count is a scalar of A");
    let start = out.len();
    out.resize(start + x.numel(), <A as Scalar>::zero());
    let xd = x.data();
    // Blocks of whole rows, on threads for large inputs (`parallel::rows`): each row alone.
    crate::parallel::rows(&mut out[start..], n, FORWARD_ROW_WORK, |first, block| {
        let x = &xd[first * n..][..block.len()];
        pinned_if_nan(block, |out, pinned| {
            super::elementwise(Rows { job: Job::Forward { x, gain, bias, out }, nf, eps, pinned });
        });
    });
}

/// The contribution tensors of `x`, `gain` and `bias` for the cotangent `g` (their buffers from
/// the arena `c`): the body `crate::compiled` instantiates for `f32` and `f64`.
pub(crate) fn vjp_body<A: Scalar + Float + FromPrimitive>(
    [x, tg, tb]: [&RawTensor<A>; 3],
    g: &RawTensor<A>,
    eps: A,
    c: &mut Contributions<A>,
) -> [RawTensor<A>; 3] {
    let gain = tg.data();
    let n = gain.len();
    let nf = A::from_usize(n).expect("output_dims checked that the element count is a scalar of A");
    let zero = <A as Scalar>::zero();
    let (xd, gd) = (x.data(), g.data());
    let rows = x.numel() / n.max(1);
    let (gx, ggain, gbias) = if crate::parallel::element_parts(rows, n.saturating_mul(VJP_ROW_WORK)) < 2 {
        // One pass on this thread, with one row's scratch (buffers from the arena's recycled
        // ones, given back below: no allocation once warm).
        let (mut h, mut q) = (c.buffer_for(ROW_GROUP * n), c.buffer_for(ROW_GROUP * n));
        h.resize(ROW_GROUP * n, zero);
        q.resize(ROW_GROUP * n, zero);
        let mut gx = c.buffer_for(x.numel());
        let mut ggain = c.buffer_for(n);
        ggain.resize(n, zero);
        let mut gbias = c.buffer_for(n);
        gbias.resize(n, zero);
        let mut pass = |pinned: bool, gx: &mut Vec<A>, ggain: &mut [A], gbias: &mut [A]| {
            let scratch = (&mut h[..], &mut q[..]);
            let rows = (xd, gd, gain);
            super::elementwise(Rows { job: Job::Fused { rows, scratch, out: (gx, ggain, gbias) }, nf, eps, pinned });
        };
        // As `pinned_if_nan`, over the three results.
        pass(false, &mut gx, &mut ggain, &mut gbias);
        if gx.iter().chain(&ggain).chain(&gbias).any(Storage::is_nan) {
            gx.clear();
            ggain.fill(zero);
            gbias.fill(zero);
            pass(true, &mut gx, &mut ggain, &mut gbias);
        }
        c.recycle(h);
        c.recycle(q);
        (gx, ggain, gbias)
    } else {
        // `gx` and the normalised rows `h` (a buffer from the arena's recycled ones, given back
        // below): blocks of whole rows, on threads for large inputs (`parallel::rows_pair`).
        let mut gx = c.buffer_for(x.numel());
        gx.resize(x.numel(), zero);
        let mut h = c.buffer_for(x.numel());
        h.resize(x.numel(), zero);
        crate::parallel::rows_pair(&mut gx, &mut h, n, VJP_ROW_WORK, |first, gx, h| {
            let rows = (&xd[first * n..][..gx.len()], &gd[first * n..][..gx.len()], gain);
            super::elementwise(Rows { job: Job::Vjp { rows, gx: &mut *gx, h: &mut *h }, nf, eps, pinned: false });
            // As `pinned_if_nan`, over the block's two results.
            if gx.iter().chain(h.iter()).any(Storage::is_nan) {
                super::elementwise(Rows { job: Job::Vjp { rows, gx, h }, nf, eps, pinned: true });
            }
        });
        // The sums over rows, in row order on this thread (never split: a reduction).
        let mut ggain = c.buffer_for(n);
        ggain.resize(n, zero);
        let mut gbias = c.buffer_for(n);
        gbias.resize(n, zero);
        let job = Job::Params { g: gd, h: &h, ggain: &mut ggain, gbias: &mut gbias };
        super::elementwise(Rows { job, nf, eps, pinned: false });
        if ggain.iter().chain(&gbias).any(Storage::is_nan) {
            ggain.fill(zero);
            gbias.fill(zero);
            let job = Job::Params { g: gd, h: &h, ggain: &mut ggain, gbias: &mut gbias };
            super::elementwise(Rows { job, nf, eps, pinned: true });
        }
        c.recycle(h);
        (gx, ggain, gbias)
    };
    [
        RawTensor::from_parts(x.dims(), gx),
        RawTensor::from_parts(tg.dims(), ggain),
        RawTensor::from_parts(tb.dims(), gbias),
    ]
}

impl<A: Scalar + Float + FromPrimitive, D> CompactOp<A, D> for LayerNorm<A> {
    fn name(&self) -> &'static str {
        "layer_norm"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let dx = super::dims_at("layer_norm", prefix, self.parents[0])?;
        let dg = super::dims_at("layer_norm", prefix, self.parents[1])?;
        let db = super::dims_at("layer_norm", prefix, self.parents[2])?;
        let out =
            super::ruled(super::spec_rules::row_params("layer_norm", dx.as_slice(), dg.as_slice(), db.as_slice()))?;
        let n = dg.numel();
        A::from_usize(n)
            .map(|_: A| out)
            .ok_or_else(|| format!("layer_norm cannot represent the row length {n} in its scalar type"))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let (x, gain, bias) = (&ctx[self.parents[0]], ctx[self.parents[1]].data(), ctx[self.parents[2]].data());
        crate::compiled::compiled_or_body!(A, layer_norm.0, forward_body, (x, gain, bias, self.eps, out));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [x, tg, tb] = self.parents.map(|q| &saved.prefix[q]);
        let [gx, ggain, gbias] =
            crate::compiled::compiled_or_body!(A, layer_norm.1, vjp_body, ([x, tg, tb], g, self.eps, c));
        let sx = c.single(self.parents[0], gx);
        let sg = c.single(self.parents[1], ggain);
        let l = c.add(sx, sg);
        let sb = c.single(self.parents[2], gbias);
        c.add(l, sb)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        let [x, gain, bias] = self.parents;
        Some(RefOp::LayerNorm { x, gain, bias, eps: self.eps, k: FloatKit::counting() })
    }
}

typed_op!(layer_norm(x: S, gain: G, bias: B; eps: A) -> LayerNorm<A>: RowParams, "`layer_norm(x, gain, bias)` with the constant `eps`, `(M, N)`, `(N,)`, `(N,)` → `(M, N)`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};
    use proptest::prelude::*;

    /// Adversarial values (signed zeros, infinities, NaN payloads, a subnormal) and numbers in ±3.0.
    fn special() -> impl Strategy<Value = f64> {
        crate::ops::testing::special_f64(3.0)
    }

    proptest! {
        /// The rows taken `ROW_GROUP` at a time (each row's sums side by side with the others')
        /// give the bits of the rows taken one at a time, forward and VJP (`gx`, `ggain`, `gbias`),
        /// on both VJP paths (one pass on this thread, and the split path's blocks).
        #[test]
        fn grouped_rows_are_the_rows_one_by_one(
            (rows, n, x, g, gain, bias) in (1usize..20, 1usize..8).prop_flat_map(|(rows, n)| {
                let v = |k| proptest::collection::vec(special(), k);
                (Just(rows), Just(n), v(rows * n), v(rows * n), v(n), v(n))
            })
        ) {
            let eps = 1e-5;
            let nf = n as f64;
            let b = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            let xt = RawTensor::from_vec(Dims::matrix(rows, n), x.clone()).unwrap();
            let mut y = Vec::new();
            forward_body(&xt, &gain, &bias, eps, &mut y);
            let mut want = vec![0.0; rows * n];
            pinned_if_nan(&mut want, |o, p| if p {
                forward_groups::<f64, true, 1>(&x, &gain, &bias, nf, eps, o)
            } else {
                forward_groups::<f64, false, 1>(&x, &gain, &bias, nf, eps, o)
            });
            prop_assert_eq!(b(&y), b(&want));
            // The VJP against rows one at a time, then the sums over rows.
            let (mut gx, mut h) = (vec![0.0; rows * n], vec![0.0; rows * n]);
            vjp_groups::<f64, false, 1>((&x, &g, &gain), nf, eps, &mut gx, &mut h);
            if gx.iter().chain(&h).any(|v| v.is_nan()) {
                vjp_groups::<f64, true, 1>((&x, &g, &gain), nf, eps, &mut gx, &mut h);
            }
            let (mut gg, mut gb) = (vec![0.0; n], vec![0.0; n]);
            param_sums::<f64, false>(&g, &h, &mut gg, &mut gb);
            if gg.iter().chain(&gb).any(|v| v.is_nan()) {
                gg.fill(0.0);
                gb.fill(0.0);
                param_sums::<f64, true>(&g, &h, &mut gg, &mut gb);
            }
            let tensors = [xt.clone(), RawTensor::from_vec(Dims::vector(n), gain.clone()).unwrap(), RawTensor::from_vec(Dims::vector(n), bias.clone()).unwrap()];
            let gt = RawTensor::from_vec(Dims::matrix(rows, n), g.clone()).unwrap();
            for split in [false, true] {
                let got = if split {
                    let pool = crate::parallel::pool(2).unwrap();
                    let before = crate::parallel::min_pointwise_work();
                    crate::parallel::set_min_pointwise_work(0);
                    let got = pool.install(|| vjp_body([&tensors[0], &tensors[1], &tensors[2]], &gt, eps, &mut Contributions::new()));
                    crate::parallel::set_min_pointwise_work(before);
                    got
                } else {
                    crate::parallel::sequential(|| vjp_body([&tensors[0], &tensors[1], &tensors[2]], &gt, eps, &mut Contributions::new()))
                };
                prop_assert_eq!(b(got[0].data()), b(&gx), "gx, split {}", split);
                prop_assert_eq!(b(got[1].data()), b(&gg), "ggain, split {}", split);
                prop_assert_eq!(b(got[2].data()), b(&gb), "gbias, split {}", split);
            }
        }
    }

    #[test]
    fn value() {
        let x = RawTensor::from_vec(Dims::matrix(1, 4), vec![1.0, 2.0, 3.0, 6.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(4), vec![1.0, 2.0, 1.0, 1.0]).unwrap();
        let b = RawTensor::from_vec(Dims::vector(4), vec![0.0, 0.0, 0.5, 0.0]).unwrap();
        let y = forward(LayerNorm::new(0, 1, 2, 0.0), &[x, g, b]);
        // μ = 3, d = [-2, -1, 0, 3], v = 14 / 4.
        let r = 1.0 / 3.5f64.sqrt();
        assert_eq!(y.data(), &[-2.0 * r, -r * 2.0, 0.5, 3.0 * r]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let inputs = [sample(&[3, 4], 100), sample(&[4], 101), sample(&[4], 102)];
        gradcheck(LayerNorm::new(0, 1, 2, 1e-5), &inputs, 1e-6);
        // Gain and bias at one position: their terms are added first.
        gradcheck(LayerNorm::new(0, 1, 1, 1e-5), &inputs[..2], 1e-6);
    }

    #[test]
    fn constant_row_is_finite_with_eps() {
        let x = RawTensor::full(Dims::matrix(2, 3), 7.0);
        let y = forward(LayerNorm::new(0, 1, 2, 1e-5), &[x, sample(&[3], 103), RawTensor::full(Dims::vector(3), 0.25)]);
        assert!(y.data().iter().all(|&v| v == 0.25));
    }

    #[test]
    fn shape_errors_name_the_shapes() {
        let op = LayerNorm::new(0, 1, 2, 1e-5);
        let e = <LayerNorm<f64> as CompactOp<f64, ()>>::output_dims(
            &op,
            &[Dims::matrix(2, 3), Dims::vector(3), Dims::vector(2)],
        );
        assert_eq!(e.unwrap_err(), "layer_norm needs the bias's length (2) to equal the rows' length (3)");
    }
}
