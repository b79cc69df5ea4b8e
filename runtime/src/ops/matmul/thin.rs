//! Thin products for `f32` and `f64`: the shapes on which the packed kernel's register tile
//! (`6 × 16`, `4 × 32`) is mostly padding — one side of the output at most [`THIN`] (a
//! matrix–vector product `cols == 1`, a vector–matrix product `rows == 1`, up to 8 columns or
//! rows) or a short inner dimension (an outer product, `inner == 1`).
//!
//! Every output element is computed exactly as the portable loop computes it: one accumulator,
//! starting from `+0`, to which the products `p(0)`, `p(1)`, … are added in ascending inner index,
//! each product with the portable loop's operand order. The vector lanes hold *independent
//! outputs* of the long side; a sum is never split.
//!
//! A thin product is seen from the side it vectorises ([`Thin`]):
//! `out[m, j] = ((0 + p(m, 0, j)) + p(m, 1, j)) + …` for `m < M` (the long side, across the lanes)
//! and `j < N`, with `p(m, t, j) = a[m, t] · b[t, j]`, or `b[t, j] · a[m, t]` when `B_LEFT`:
//!
//! * **across rows** (`cols ≤ 8`): `a = lhs`, `b = rhs`, `out[m, j]` is `out[m · cols + j]`;
//! * **across columns** (`rows ≤ 8`, or `inner ≤ 8`): `a = rhsᵀ`, `b = lhsᵀ`, `out[m, j]` is
//!   `out[j · cols + m]` — the same sums, read from the other side (`B_LEFT` flips so that every
//!   product keeps its operand order).
//!
//! Two kernels, chosen by the layout of `a`:
//!
//! * **direct** — `a` is contiguous along `m` (a column of a transposed view, a row of a row-major
//!   `rhs`): for each `t`, one vector load of `a[m.., t]`, a multiplication by the broadcast
//!   `b[t, j]` and an addition into accumulators held in registers (several vectors, so that the
//!   latency of each sum's additions overlaps with the others');
//! * **transposing** — `a` is contiguous along `t` (a row-major `lhs` in `W · x`): the lanes need
//!   `a[m.., t]`, a column of what memory holds as rows. With AVX2, blocks of 8 rows × 8 inner
//!   indices (`f32`; 4 × 4 for `f64`) are transposed in registers; for one column of `b` the
//!   products are formed before the transpose (`a[m, t..t+8] · b[t..t+8, j]`: each is one IEEE
//!   multiplication, whatever lane it is in) and the transposed products are added in ascending
//!   `t`. The baseline build packs `a` transposed (into a reused per-thread buffer) and runs the
//!   direct kernel on it; so does an `a` with no unit stride, for a short inner dimension.
//!   This is the one thin case bound by shuffles: ~0.45 µs for 64 × 64 × 1 on Zen 4 (~18 GFLOP/s;
//!   a transpose with 512-bit vectors or 128-bit loads merged into 256-bit ones measured no
//!   faster), against ~0.19 µs for the direct kernel on the same sizes.
//!
//! With few inner indices (an outer product) and contiguous output rows, the direct kernel writes
//! each output row in passes over it (`0 + p(0)` appended, then `+ p(t)` in place, in L1).
//!
//! AVX-512 CPUs run the AVX2 builds (measured faster on the one we have, which splits 64-byte
//! vectors in two). With [`gemm_onto`](super::gemm_onto) the final store writes `stored + sum`.
//! Every kernel reports whether it stored a NaN; NaN payloads are then pinned by
//! `fast::pin_nans`, as for every path.

use core::any::{Any, TypeId};
use core::ops::Mul;

use super::fast::{any_nan, cast, lane, with_packs, Isa, Kernel, Lane};
use super::MatrixView;
use crate::scalar::Scalar;

/// The largest thin side: at most this many output columns or rows, or inner indices.
pub(super) const THIN: usize = 8;

/// Below this many multiply-adds the portable loop runs (same results either way).
pub(super) const MIN_WORK: usize = 256;

/// Output columns `b[.., j]` a direct kernel handles per pass over `a`.
const GROUP: usize = 4;

/// A thin product seen from the side it vectorises; see the [module docs](self).
pub(super) struct Thin<'a, A> {
    /// The long side (across the vector lanes).
    pub(super) m: usize,
    /// The inner dimension.
    pub(super) k: usize,
    /// The short side.
    pub(super) n: usize,
    /// `m × k`.
    pub(super) a: MatrixView<'a, A>,
    /// `k × n`.
    pub(super) b: MatrixView<'a, A>,
    /// `out[m, j]` is `out[m · o_m + j · o_j]`.
    pub(super) o_m: usize,
    pub(super) o_j: usize,
}

impl<A> Clone for Thin<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Thin<'_, A> {}

impl<'a, A> Thin<'a, A> {
    fn across_rows(rows: usize, inner: usize, cols: usize, lhs: MatrixView<'a, A>, rhs: MatrixView<'a, A>) -> Self {
        Thin { m: rows, k: inner, n: cols, a: lhs, b: rhs, o_m: cols, o_j: 1 }
    }

    fn across_cols(rows: usize, inner: usize, cols: usize, lhs: MatrixView<'a, A>, rhs: MatrixView<'a, A>) -> Self {
        Thin { m: cols, k: inner, n: rows, a: transposed(rhs), b: transposed(lhs), o_m: 1, o_j: cols }
    }
}

fn transposed<A>(v: MatrixView<'_, A>) -> MatrixView<'_, A> {
    MatrixView { data: v.data, row_stride: v.col_stride, col_stride: v.row_stride }
}

/// How a kernel reads `a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Contiguous along `m`: read in place.
    Direct,
    /// Contiguous along `t`: transposed in registers (AVX2) or packed.
    Transposing,
    /// Neither: packed (only for a short inner dimension, where the pack is small).
    Packed,
}

fn layout<A>(a: &MatrixView<'_, A>) -> Option<Layout> {
    if a.row_stride == 1 {
        Some(Layout::Direct)
    } else if a.col_stride == 1 {
        Some(Layout::Transposing)
    } else {
        None
    }
}

/// The thin view of a product and how to read its `a`, with `true` when it runs across columns;
/// `None` when no side is thin (or the thin side's operand has no unit stride).
fn route<'a, A>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'a, A>,
    rhs: MatrixView<'a, A>,
) -> Option<(Thin<'a, A>, bool, Layout)> {
    let by_rows = Thin::across_rows(rows, inner, cols, lhs, rhs);
    let by_cols = Thin::across_cols(rows, inner, cols, lhs, rhs);
    // The longer output side goes across the lanes.
    let candidates =
        [(cols <= THIN && cols <= rows, by_rows, false), (rows <= THIN, by_cols, true), (cols <= THIN, by_rows, false)];
    for (thin, p, across_cols) in candidates {
        if let Some(l) = layout(&p.a).filter(|_| thin) {
            return Some((p, across_cols, l));
        }
    }
    // An outer product or a short inner dimension: output rows are vectorised across columns.
    (inner <= THIN).then(|| {
        let l = if by_cols.a.row_stride == 1 { Layout::Direct } else { Layout::Packed };
        (by_cols, true, l)
    })
}

/// Runs a thin kernel built for `isa` when `A` is `f32` or `f64` and the product is thin (any
/// size; [`MIN_WORK`] is the caller's business), appending the `rows × cols` result to `out`
/// (`stored + element` with `onto = Some(stored)`; NaN payloads not yet pinned), and returns
/// whether it may have stored a NaN. `None`, with `out` untouched, otherwise.
#[allow(clippy::too_many_arguments)] // the product's geometry, the output and its epilogue
pub(super) fn thin_gemm_on<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    isa: Isa,
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut dyn Any,
) -> Option<bool> {
    if let Some(v) = cast::<f32>(out) {
        on::<A, f32, RHS_LEFT>(isa, rows, inner, cols, lhs, rhs, onto, v, transposing_f32::<A>)
    } else if let Some(v) = cast::<f64>(out) {
        on::<A, f64, RHS_LEFT>(isa, rows, inner, cols, lhs, rhs, onto, v, transposing_f64::<A>)
    } else {
        None
    }
}

/// The AVX2 transposing kernel for one lane type (whether it may have stored a NaN): `None` (and
/// `out` untouched) when it cannot run.
type Transposing<A, T> = fn(&Thin<'_, A>, bool, Option<T>, &mut [T]) -> Option<bool>;

#[allow(clippy::too_many_arguments)] // as `thin_gemm_on`, and the lane type's transposing kernel
fn on<A: Scalar, T: Lane, const RHS_LEFT: bool>(
    isa: Isa,
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    v: &mut Vec<T>,
    transposing: Transposing<A, T>,
) -> Option<bool> {
    if TypeId::of::<A>() != TypeId::of::<T>() {
        return None;
    }
    let (p, across_cols, layout) = route(rows, inner, cols, lhs, rhs)?;
    let onto: Option<T> = onto.map(lane);
    // Seen across columns, `lhs · rhs` is `b · a`.
    let b_left = across_cols != RHS_LEFT;
    let start = v.len();
    if start == 0 && v.capacity() < rows * cols {
        // A fresh buffer rather than growing a recycled one (growing copies its old capacity).
        *v = Vec::with_capacity(rows * cols);
    }
    v.reserve(rows * cols);
    // The direct kernel stores the outputs in order when they are the rows of `out` one column
    // `j` at a time (no `GROUP`s): it then appends them, and `out` is not zero-filled first.
    let append = layout != Layout::Transposing && p.o_m == 1 && (p.n == 1 || p.k <= THIN);
    if !append {
        v.resize(start + rows * cols, T::ZERO);
    }
    if layout == Layout::Transposing && isa != Isa::Baseline {
        if let Some(nan) = transposing(&p, b_left, onto, &mut v[start..]) {
            return Some(nan);
        }
    }
    let out = if append { Out::Append(v) } else { Out::Slice(&mut v[start..]) };
    Some(if layout == Layout::Direct {
        direct::<A, T>(isa, p, b_left, onto, out)
    } else {
        // Pack `a` with `m` contiguous (the direct layout) into this thread's reused buffer.
        with_packs::<T, _>(|pack, _| {
            let Some(pack) = cast::<A>(pack) else { unreachable!("A is T") };
            pack_direct(&p, pack);
            let q = Thin { a: MatrixView { data: pack, row_stride: 1, col_stride: p.m }, ..p };
            direct::<A, T>(isa, q, b_left, onto, out)
        })
    })
}

/// Where the direct kernel stores: into `out[m · o_m + j · o_j]`, or appended in order.
enum Out<'o, T> {
    Slice(&'o mut [T]),
    Append(&'o mut Vec<T>),
}

/// Defines `$name`, the [`Transposing`] kernel for `$t`: the AVX2 build on x86-64 (when the CPU
/// has it), nothing elsewhere.
macro_rules! transposing_for {
    ($name:ident, $t:ty, $entry:ident) => {
        fn $name<A: 'static>(p: &Thin<'_, A>, b_left: bool, onto: Option<$t>, out: &mut [$t]) -> Option<bool> {
            #[cfg(target_arch = "x86_64")]
            {
                use super::simd::$entry;
                if b_left {
                    $entry::<A, true>(p, onto, out)
                } else {
                    $entry::<A, false>(p, onto, out)
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = (p, b_left, onto, out);
                None
            }
        }
    };
}
transposing_for!(transposing_f32, f32, transposing_f32);
transposing_for!(transposing_f64, f64, transposing_f64);

/// `pack[t · m + i] = a[i, t]`: `a` with `m` contiguous, eight rows at a time (the reads stream
/// along eight rows, the writes are runs of eight).
fn pack_direct<A: Scalar>(p: &Thin<'_, A>, pack: &mut Vec<A>) {
    pack.clear();
    pack.resize(p.m * p.k, A::zero());
    for i0 in (0..p.m).step_by(8) {
        let live = 8.min(p.m - i0);
        for t in 0..p.k {
            for i in 0..live {
                pack[t * p.m + i0 + i] = p.a.at(i0 + i, t).clone();
            }
        }
    }
}

/// The direct kernel (`a` contiguous along `m`), built for `isa`; whether it may have stored a NaN.
fn direct<A: 'static, T: Lane>(isa: Isa, p: Thin<'_, A>, b_left: bool, onto: Option<T>, out: Out<'_, T>) -> bool {
    if b_left {
        direct_on::<A, T, true>(isa, p, onto, out)
    } else {
        direct_on::<A, T, false>(isa, p, onto, out)
    }
}

/// Lanes per accumulator block: one column at a time (`W1`: eight vectors of the instruction set,
/// eight independent chains of additions), [`GROUP`] columns at a time (`WG`: two vectors per
/// column), and one vector (`V`, for what is left of the long side).
///
/// An AVX-512 CPU runs the AVX2 build, as the transposing kernel does: these sums are chains of
/// dependent additions, and 64-byte vectors measured slower on the AVX-512 machine we have (AMD
/// Zen 4, which splits them in two): `Wᵀ · δ` at 64 × 64 took ~250 ns against ~185 ns.
fn direct_on<A: 'static, T: Lane, const B_LEFT: bool>(
    isa: Isa,
    p: Thin<'_, A>,
    onto: Option<T>,
    out: Out<'_, T>,
) -> bool {
    let single = core::mem::size_of::<T>() == 4;
    match (isa, single) {
        (Isa::Baseline, true) => isa.run(Direct::<A, T, 32, 8, 4, B_LEFT> { p, onto, out }),
        (Isa::Baseline, false) => isa.run(Direct::<A, T, 16, 4, 2, B_LEFT> { p, onto, out }),
        (_, true) => Isa::Avx2.run(Direct::<A, T, 64, 16, 8, B_LEFT> { p, onto, out }),
        (_, false) => Isa::Avx2.run(Direct::<A, T, 32, 8, 4, B_LEFT> { p, onto, out }),
    }
}

/// The direct kernel as a [`Kernel`]: columns in groups of [`GROUP`] (`WG` lanes per block), the
/// rest one at a time (`W1` lanes); the long side's last outputs `V` lanes at a time.
struct Direct<'k, A, T, const W1: usize, const WG: usize, const V: usize, const B_LEFT: bool> {
    p: Thin<'k, A>,
    onto: Option<T>,
    out: Out<'k, T>,
}

impl<A: 'static, T: Lane, const W1: usize, const WG: usize, const V: usize, const B_LEFT: bool> Kernel
    for Direct<'_, A, T, W1, WG, V, B_LEFT>
{
    #[inline(always)]
    fn run(self) -> bool {
        let Direct { p, onto, mut out } = self;
        debug_assert!(p.a.row_stride == 1, "the direct kernel reads `a` along unit-stride rows");
        let (mut j, mut nan) = (0, false);
        if let Out::Append(v) = &mut out {
            if p.k <= THIN {
                // A short inner dimension (an outer product): each output row is a few passes
                // over a row in L1, the first one appending.
                for j in 0..p.n {
                    nan |= short_row::<A, T, B_LEFT>(&p, j, onto, v);
                }
                return nan;
            }
        }
        if let Out::Slice(_) = out {
            while j + GROUP <= p.n {
                nan |= columns::<A, T, WG, V, GROUP, B_LEFT>(&p, j, onto, &mut out);
                j += GROUP;
            }
        }
        while j < p.n {
            nan |= columns::<A, T, W1, V, 1, B_LEFT>(&p, j, onto, &mut out);
            j += 1;
        }
        nan
    }
}

/// Appends output row `j` (`out[.., j]`, `m` contiguous) of a product with few inner indices:
/// `0 + p(0)` appended for the whole row, then `+ p(t)` for each further `t` in place (all in L1),
/// then `stored +` for `gemm_onto`; whether a NaN was stored.
#[inline(always)]
fn short_row<A: 'static, T: Lane, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    j: usize,
    onto: Option<T>,
    v: &mut Vec<T>,
) -> bool {
    if p.m == 0 {
        return false;
    }
    let start = v.len();
    let product = |x: T, bt: T| if B_LEFT { bt * x } else { x * bt };
    if p.k == 0 {
        v.resize(start + p.m, T::ZERO);
    } else {
        let b0: T = lane(p.b.at(0, j));
        v.extend(p.a.data[..p.m].iter().map(|x| T::ZERO + product(lane(x), b0)));
    }
    let row = &mut v[start..];
    for t in 1..p.k {
        let bt: T = lane(p.b.at(t, j));
        let column = &p.a.data[t * p.a.col_stride..][..p.m];
        for (o, x) in row.iter_mut().zip(column) {
            *o = *o + product(lane(x), bt);
        }
    }
    if let Some(stored) = onto {
        for o in row.iter_mut() {
            *o = stored + *o;
        }
    }
    any_nan(row)
}

/// Columns `j0..j0 + NJ` of the output: `W` outputs `m` at a time, then `V` at a time, then the
/// last (fewer than `V`) in a `V`-lane block whose missing lanes are computed on zeros and
/// dropped.
#[inline(always)]
fn columns<A: 'static, T: Lane, const W: usize, const V: usize, const NJ: usize, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    j0: usize,
    onto: Option<T>,
    out: &mut Out<'_, T>,
) -> bool {
    let (mut m0, mut nan) = (0, false);
    while m0 + W <= p.m {
        nan |= block::<A, T, W, NJ, B_LEFT>(p, m0, W, j0, onto, out);
        m0 += W;
    }
    while m0 + V <= p.m {
        nan |= block::<A, T, V, NJ, B_LEFT>(p, m0, V, j0, onto, out);
        m0 += V;
    }
    if m0 < p.m {
        nan |= block::<A, T, V, NJ, B_LEFT>(p, m0, p.m - m0, j0, onto, out);
    }
    nan
}

/// Outputs `m0..m0 + live` (`live ≤ W`) of columns `j0..j0 + NJ`: `acc = acc + a[m, t] · b[t, j]`
/// for `t` ascending, then stored (`stored + acc` for `gemm_onto`); whether a NaN may have been
/// stored (dropped lanes included).
#[inline(always)]
fn block<A: 'static, T: Lane, const W: usize, const NJ: usize, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    m0: usize,
    live: usize,
    j0: usize,
    onto: Option<T>,
    out: &mut Out<'_, T>,
) -> bool {
    let mut acc = [[T::ZERO; W]; NJ];
    for t in 0..p.k {
        let base = m0 + t * p.a.col_stride;
        let av: [T; W] = if live == W {
            let src: &[A; W] = (&p.a.data[base..base + W]).try_into().expect("a slice of exactly the array length");
            core::array::from_fn(|i| lane(&src[i]))
        } else {
            let src = &p.a.data[base..base + live];
            core::array::from_fn(|i| src.get(i).map_or(T::ZERO, lane))
        };
        for (g, row) in acc.iter_mut().enumerate() {
            let bj: T = lane(p.b.at(t, j0 + g));
            for (s, &x) in row.iter_mut().zip(&av) {
                let product = if B_LEFT { bj * x } else { x * bj };
                *s = *s + product;
            }
        }
    }
    if let Some(stored) = onto {
        for s in acc.iter_mut().flatten() {
            *s = stored + *s;
        }
    }
    for (g, row) in acc.iter().enumerate() {
        let o = m0 * p.o_m + (j0 + g) * p.o_j;
        match out {
            Out::Append(v) => v.extend_from_slice(&row[..live]),
            Out::Slice(out) if p.o_m == 1 => out[o..o + live].copy_from_slice(&row[..live]),
            Out::Slice(out) => {
                for (i, &x) in row[..live].iter().enumerate() {
                    out[o + i * p.o_m] = x;
                }
            }
        }
    }
    any_nan(acc.as_flattened())
}

/// Outputs `m0..p.m` of columns `j0..j0 + nj`, one sum at a time (the rows the transposing
/// kernel leaves over after whole vectors); whether a NaN was stored.
fn tail_rows<A: 'static, T: Lane, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    m0: usize,
    j0: usize,
    nj: usize,
    onto: Option<T>,
    out: &mut [T],
) -> bool {
    let mut nan = false;
    for m in m0..p.m {
        for j in j0..j0 + nj {
            let mut s = T::ZERO;
            for t in 0..p.k {
                let (x, y): (T, T) = (lane(p.a.at(m, t)), lane(p.b.at(t, j)));
                let product = if B_LEFT { y * x } else { x * y };
                s = s + product;
            }
            let s = match onto {
                Some(stored) => stored + s,
                None => s,
            };
            nan |= s.is_nan();
            out[m * p.o_m + j * p.o_j] = s;
        }
    }
    nan
}

/// AVX2 vectors of `f32`: eight lanes, an 8 × 8 transpose.
#[cfg(target_arch = "x86_64")]
mod f32x8 {
    use core::arch::x86_64::*;

    pub(super) type T = f32;
    pub(super) type V = __m256;
    pub(super) const L: usize = 8;

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn zero() -> V {
        _mm256_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn splat(x: T) -> V {
        _mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn add(a: V, b: V) -> V {
        _mm256_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn mul(a: V, b: V) -> V {
        _mm256_mul_ps(a, b)
    }
    /// The vector of `x` (from consecutive elements, one vector load).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn set(x: [T; L]) -> V {
        _mm256_setr_ps(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7])
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn to_array(v: V) -> [T; L] {
        let (lo, hi) = (_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        [
            _mm_cvtss_f32(lo),
            _mm_cvtss_f32(_mm_shuffle_ps::<0x55>(lo, lo)),
            _mm_cvtss_f32(_mm_shuffle_ps::<0xAA>(lo, lo)),
            _mm_cvtss_f32(_mm_shuffle_ps::<0xFF>(lo, lo)),
            _mm_cvtss_f32(hi),
            _mm_cvtss_f32(_mm_shuffle_ps::<0x55>(hi, hi)),
            _mm_cvtss_f32(_mm_shuffle_ps::<0xAA>(hi, hi)),
            _mm_cvtss_f32(_mm_shuffle_ps::<0xFF>(hi, hi)),
        ]
    }
    /// Lane `i` of result `t` is lane `t` of `r[i]`: pairs interleaved, then quadruples, then
    /// 128-bit halves.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn transpose(r: [V; L]) -> [V; L] {
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(u0, u4),
            _mm256_permute2f128_ps::<0x20>(u1, u5),
            _mm256_permute2f128_ps::<0x20>(u2, u6),
            _mm256_permute2f128_ps::<0x20>(u3, u7),
            _mm256_permute2f128_ps::<0x31>(u0, u4),
            _mm256_permute2f128_ps::<0x31>(u1, u5),
            _mm256_permute2f128_ps::<0x31>(u2, u6),
            _mm256_permute2f128_ps::<0x31>(u3, u7),
        ]
    }
}

/// AVX2 vectors of `f64`: four lanes, a 4 × 4 transpose.
#[cfg(target_arch = "x86_64")]
mod f64x4 {
    use core::arch::x86_64::*;

    pub(super) type T = f64;
    pub(super) type V = __m256d;
    pub(super) const L: usize = 4;

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn zero() -> V {
        _mm256_setzero_pd()
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn splat(x: T) -> V {
        _mm256_set1_pd(x)
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn add(a: V, b: V) -> V {
        _mm256_add_pd(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn mul(a: V, b: V) -> V {
        _mm256_mul_pd(a, b)
    }
    /// The vector of `x` (from consecutive elements, one vector load).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn set(x: [T; L]) -> V {
        _mm256_setr_pd(x[0], x[1], x[2], x[3])
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn to_array(v: V) -> [T; L] {
        let (lo, hi) = (_mm256_castpd256_pd128(v), _mm256_extractf128_pd::<1>(v));
        [
            _mm_cvtsd_f64(lo),
            _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo)),
            _mm_cvtsd_f64(hi),
            _mm_cvtsd_f64(_mm_unpackhi_pd(hi, hi)),
        ]
    }
    /// Lane `i` of result `t` is lane `t` of `r[i]`: pairs interleaved, then 128-bit halves.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn transpose(r: [V; L]) -> [V; L] {
        let t0 = _mm256_unpacklo_pd(r[0], r[1]);
        let t1 = _mm256_unpackhi_pd(r[0], r[1]);
        let t2 = _mm256_unpacklo_pd(r[2], r[3]);
        let t3 = _mm256_unpackhi_pd(r[2], r[3]);
        [
            _mm256_permute2f128_pd::<0x20>(t0, t2),
            _mm256_permute2f128_pd::<0x20>(t1, t3),
            _mm256_permute2f128_pd::<0x31>(t0, t2),
            _mm256_permute2f128_pd::<0x31>(t1, t3),
        ]
    }
}

/// Defines module `$module`, the AVX2 transposing kernel on the vectors of `$lanes` (`kernel`),
/// with `$single` row blocks per group for one column and `$grouped` for [`GROUP`] columns.
#[cfg(target_arch = "x86_64")]
macro_rules! transposing_avx2 {
    ($module:ident, $lanes:ident, $single:literal, $grouped:literal) => {
        mod $module {
            use super::super::fast::lane;
            use super::$lanes::{add, mul, set, splat, to_array, transpose, zero, L, T, V};
            use super::{tail_rows, Thin, GROUP};

            /// The transposing kernel (`a` contiguous along `t`; see the [module docs](super));
            /// whether it may have stored a NaN.
            #[target_feature(enable = "avx2")]
            pub(in crate::ops::matmul) fn kernel<A: 'static, const B_LEFT: bool>(
                p: &Thin<'_, A>,
                onto: Option<T>,
                out: &mut [T],
            ) -> bool {
                let whole = p.m - p.m % L;
                let (mut j, mut nan) = (0, false);
                while j < p.n {
                    let nj = if p.n - j >= GROUP { GROUP } else { 1 };
                    let mut m0 = 0;
                    if nj == GROUP {
                        while m0 + $grouped * L <= whole {
                            nan |= grouped::<A, $grouped, B_LEFT>(p, m0, j, onto, out);
                            m0 += $grouped * L;
                        }
                        while m0 < whole {
                            nan |= grouped::<A, 1, B_LEFT>(p, m0, j, onto, out);
                            m0 += L;
                        }
                    } else {
                        while m0 + $single * L <= whole {
                            nan |= single::<A, $single, B_LEFT>(p, m0, j, onto, out);
                            m0 += $single * L;
                        }
                        while m0 < whole {
                            nan |= single::<A, 1, B_LEFT>(p, m0, j, onto, out);
                            m0 += L;
                        }
                    }
                    nan |= tail_rows::<A, T, B_LEFT>(p, m0, j, nj, onto, out);
                    j += nj;
                }
                nan
            }

            /// `b[c · L .. c · L + L, j]`.
            #[inline(always)]
            fn b_chunk<A: 'static>(p: &Thin<'_, A>, c: usize, j: usize) -> [T; L] {
                if p.b.row_stride == 1 {
                    let s = &p.b.data[c * L + j * p.b.col_stride..][..L];
                    core::array::from_fn(|i| lane(&s[i]))
                } else {
                    core::array::from_fn(|i| lane(p.b.at(c * L + i, j)))
                }
            }

            /// The products `a[m + i, c · L + t] · x[t]` (`x · a` when `B_LEFT`), transposed: vector
            /// `t` holds them for the rows `m..m + L`.
            #[inline]
            #[target_feature(enable = "avx2")]
            fn products<A: 'static, const B_LEFT: bool>(p: &Thin<'_, A>, m: usize, c: usize, x: V) -> [V; L] {
                // `a[m + i, c · L .. c · L + L]` for `i < L`, one vector per row, written out here
                // rather than called: as an `#[inline]` function LLVM stopped inlining it (which
                // halved the matrix–vector speed), and `#[inline(always)]` cannot go with
                // `#[target_feature]`. Addresses are computed, not loaded: a table of row slices in
                // memory made the loads wait on the stores of the accumulators.
                let (rs, t) = (p.a.row_stride, c * L);
                let mut r = [zero(); L];
                for (i, v) in r.iter_mut().enumerate() {
                    let chunk = &p.a.data[(m + i) * rs + t..][..L];
                    let row = set(core::array::from_fn(|q| lane(&chunk[q])));
                    *v = if B_LEFT { mul(x, row) } else { mul(row, x) };
                }
                transpose(r)
            }

            /// `a[m..m + L, t]`, gathered (the inner indices after whole chunks).
            #[inline]
            #[target_feature(enable = "avx2")]
            fn column<A: 'static>(p: &Thin<'_, A>, m: usize, t: usize) -> V {
                set(core::array::from_fn(|i| lane(p.a.at(m + i, t))))
            }

            /// Stores outputs `m..m + L` of columns `j0..j0 + acc.len()` (`stored + acc` for
            /// `gemm_onto`); whether one is a NaN.
            #[inline]
            #[target_feature(enable = "avx2")]
            fn store<A: 'static>(
                p: &Thin<'_, A>,
                acc: &[V],
                m: usize,
                j0: usize,
                onto: Option<T>,
                out: &mut [T],
            ) -> bool {
                let mut nan = false;
                for (g, &s) in acc.iter().enumerate() {
                    let s = match onto {
                        Some(stored) => add(splat(stored), s),
                        None => s,
                    };
                    let o = m * p.o_m + (j0 + g) * p.o_j;
                    let v = to_array(s);
                    nan |= super::super::fast::any_nan(&v);
                    if p.o_m == 1 {
                        out[o..o + L].copy_from_slice(&v);
                    } else {
                        for (i, x) in v.into_iter().enumerate() {
                            out[o + i * p.o_m] = x;
                        }
                    }
                }
                nan
            }

            /// One column `j`, `NB` blocks of `L` rows from `m0`: the products
            /// `a[m, t..t + L] · b[t..t + L, j]` are formed along each row, transposed, and
            /// added in ascending `t`.
            #[inline(never)] // one copy per shape of the loops, not one per call site
            #[target_feature(enable = "avx2")]
            fn single<A: 'static, const NB: usize, const B_LEFT: bool>(
                p: &Thin<'_, A>,
                m0: usize,
                j: usize,
                onto: Option<T>,
                out: &mut [T],
            ) -> bool {
                let mut acc = [zero(); NB];
                for c in 0..p.k / L {
                    let x = set(b_chunk(p, c, j));
                    for (blk, s) in acc.iter_mut().enumerate() {
                        for col in products::<A, B_LEFT>(p, m0 + blk * L, c, x) {
                            *s = add(*s, col);
                        }
                    }
                }
                for t in p.k - p.k % L..p.k {
                    let x = splat(lane(p.b.at(t, j)));
                    for (blk, s) in acc.iter_mut().enumerate() {
                        let col = column(p, m0 + blk * L, t);
                        *s = add(*s, if B_LEFT { mul(x, col) } else { mul(col, x) });
                    }
                }
                let mut nan = false;
                for (blk, s) in acc.iter().enumerate() {
                    nan |= store(p, core::slice::from_ref(s), m0 + blk * L, j, onto, out);
                }
                nan
            }

            /// [`GROUP`] columns from `j0`, `NB` blocks of `L` rows from `m0`: each block of `a`
            /// is transposed once and multiplied by the broadcast `b[t, j]` of every column.
            #[inline(never)] // one copy per shape of the loops, not one per call site
            #[target_feature(enable = "avx2")]
            fn grouped<A: 'static, const NB: usize, const B_LEFT: bool>(
                p: &Thin<'_, A>,
                m0: usize,
                j0: usize,
                onto: Option<T>,
                out: &mut [T],
            ) -> bool {
                let mut acc = [[zero(); GROUP]; NB];
                for c in 0..p.k / L {
                    let mut bs = [[zero(); L]; GROUP];
                    for (g, bg) in bs.iter_mut().enumerate() {
                        for (x, v) in bg.iter_mut().zip(b_chunk(p, c, j0 + g)) {
                            *x = splat(v);
                        }
                    }
                    for (blk, sb) in acc.iter_mut().enumerate() {
                        // The rows, as in `products` (written out for the same reason).
                        let (rs, t, m) = (p.a.row_stride, c * L, m0 + blk * L);
                        let mut rows = [zero(); L];
                        for (i, v) in rows.iter_mut().enumerate() {
                            let chunk = &p.a.data[(m + i) * rs + t..][..L];
                            *v = set(core::array::from_fn(|q| lane(&chunk[q])));
                        }
                        let cols = transpose(rows);
                        for (s, bg) in sb.iter_mut().zip(&bs) {
                            for (&ct, &bt) in cols.iter().zip(bg) {
                                *s = add(*s, if B_LEFT { mul(bt, ct) } else { mul(ct, bt) });
                            }
                        }
                    }
                }
                for t in p.k - p.k % L..p.k {
                    for (blk, sb) in acc.iter_mut().enumerate() {
                        let c = column(p, m0 + blk * L, t);
                        for (g, s) in sb.iter_mut().enumerate() {
                            let x = splat(lane(p.b.at(t, j0 + g)));
                            *s = add(*s, if B_LEFT { mul(x, c) } else { mul(c, x) });
                        }
                    }
                }
                let mut nan = false;
                for (blk, sb) in acc.iter().enumerate() {
                    nan |= store(p, sb, m0 + blk * L, j0, onto, out);
                }
                nan
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
transposing_avx2!(avx2_f32, f32x8, 8, 2);
#[cfg(target_arch = "x86_64")]
transposing_avx2!(avx2_f64, f64x4, 8, 2);

#[cfg(target_arch = "x86_64")]
pub(super) use {avx2_f32::kernel as transposing_f32_avx2, avx2_f64::kernel as transposing_f64_avx2};
