//! Thin products for `f32` and `f64`: the shapes on which the packed kernel's register tile
//! (`6 × 16`, `4 × 32`) is mostly padding — one side of the output at most [`THIN`] (a
//! matrix–vector product `cols == 1`, a vector–matrix product `rows == 1`, up to 8 columns or
//! rows) or a short inner dimension (an outer product, `inner == 1`).
//!
//! Every output element is computed exactly as the portable loop computes it: one accumulator,
//! starting from `+0`, updated by the fused multiply-adds of `t = 0, 1, …` in ascending inner
//! index, each with the portable loop's factor order. The vector lanes hold *independent
//! outputs* of the long side; a sum is never split.
//!
//! A thin product is seen from the side it vectorises ([`Thin`]):
//! `out[m, j] = mul_add(a[m, k-1], b[k-1, j], … mul_add(a[m, 0], b[0, j], +0))` for `m < M` (the
//! long side, across the lanes) and `j < N`, the factors `b[t, j], a[m, t]` when `B_LEFT`:
//!
//! * **across rows** (`cols ≤ 8`): `a = lhs`, `b = rhs`, `out[m, j]` is `out[m · cols + j]`;
//! * **across columns** (`rows ≤ 8`, or `inner ≤ 8`): `a = rhsᵀ`, `b = lhsᵀ`, `out[m, j]` is
//!   `out[j · cols + m]` — the same sums, read from the other side (`B_LEFT` flips so that every
//!   product keeps its operand order).
//!
//! Two kernels, chosen by the layout of `a`:
//!
//! * **direct** — `a` is contiguous along `m` (a column of a transposed view, a row of a row-major
//!   `rhs`): for each `t`, one vector load of `a[m.., t]` and a fused multiply-add with the
//!   broadcast `b[t, j]` into accumulators held in registers (several vectors, so that the
//!   latency of each chain overlaps with the others');
//! * **transposing** — `a` is contiguous along `t` (a row-major `lhs` in `W · x`): the lanes need
//!   `a[m.., t]`, a column of what memory holds as rows. With AVX2, blocks of 8 rows × 8 inner
//!   indices (`f32`; 4 × 4 for `f64`) are transposed in registers, and each transposed vector
//!   `a[m..m+8, t]` is fused with the broadcast `b[t, j]` in ascending `t` (a fused step cannot
//!   be split into a product formed before the transpose and an addition after it). The baseline
//!   build packs `a` transposed (into a reused per-thread buffer) and runs the direct kernel on
//!   it; so does an `a` with no unit stride, for a short inner dimension.
//!   This is the one thin case bound by shuffles: ~0.45 µs for 64 × 64 × 1 on Zen 4 (~18 GFLOP/s;
//!   a transpose with 512-bit vectors or 128-bit loads merged into 256-bit ones measured no
//!   faster), against ~0.19 µs for the direct kernel on the same sizes.
//!
//! With few inner indices (an outer product) and contiguous output rows, the direct kernel writes
//! each output row in passes over it (`mul_add(…, +0)` appended, then one fused pass per `t` in
//! place, in L1).
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

mod direct;
mod transposing;

use direct::{direct_on, tail_rows};
#[cfg(target_arch = "x86_64")]
pub(super) use transposing::{
    pack_transposed_f32_avx2, pack_transposed_f64_avx2, transposing_f32_avx2, transposing_f64_avx2,
};

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
            let packed = pack_direct(&p, pack);
            let q = Thin { a: MatrixView { data: packed, row_stride: 1, col_stride: p.m }, ..p };
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
/// along eight rows, the writes are runs of eight); returns the packed `m · k` values.
fn pack_direct<'p, A: Scalar>(p: &Thin<'_, A>, pack: &'p mut Vec<A>) -> &'p [A] {
    // Grown, never shortened nor zero-filled again: every element of the first `m · k` is written.
    let n = p.m * p.k;
    if pack.len() < n {
        pack.resize(n, A::zero());
    }
    let pack = &mut pack[..n];
    for i0 in (0..p.m).step_by(8) {
        let live = 8.min(p.m - i0);
        for t in 0..p.k {
            for i in 0..live {
                pack[t * p.m + i0 + i] = p.a.at(i0 + i, t).clone();
            }
        }
    }
    pack
}

/// The direct kernel (`a` contiguous along `m`), built for `isa`; whether it may have stored a NaN.
fn direct<A: 'static, T: Lane>(isa: Isa, p: Thin<'_, A>, b_left: bool, onto: Option<T>, out: Out<'_, T>) -> bool {
    if b_left {
        direct_on::<A, T, true>(isa, p, onto, out)
    } else {
        direct_on::<A, T, false>(isa, p, onto, out)
    }
}
