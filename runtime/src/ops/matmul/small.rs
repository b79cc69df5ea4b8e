//! Small products for `f32` and `f64` (operands that fit in the first cache levels, such as the
//! products of an attention block: `32 × 64 · 64 × 192`, `32 × 16 · 16 × 32`, …): the register
//! tile of the packed kernel without its packing and setup.
//!
//! Every output element is computed exactly as the portable loop computes it: one accumulator,
//! starting from `+0`, updated by the fused multiply-adds `acc ← mul_add(lhs[r, t], rhs[t, c],
//! acc)` in ascending inner index (factors swapped when `RHS_LEFT`). The vector lanes hold
//! independent output columns; a sum is never split, the inner index is never chunked.
//!
//! What the packed kernel does and this path does not:
//!
//! * `lhs` is not packed: the tile broadcasts `lhs[r, t]` from where it is — `MR` row slices of a
//!   row-major `lhs`, or `MR` contiguous values per `t` of a transposed view;
//! * a row-major `rhs` is not packed: the tile loads `rhs[t, c0..c0 + W]` in place. A `rhs` whose
//!   columns are contiguous (a transposed view, `δ · Bᵀ`) is packed one column panel at a time
//!   into a reused `k × W` buffer that stays in L1, eight columns at a time, with no zero-fill
//!   (no padding lanes), in 8 × 8 blocks (`f64`: 4 × 4) transposed in AVX2 registers where the CPU
//!   has it (`simd::pack_transposed`: the attention block's `δ · Bᵀ` products take 8–20 % less
//!   time than with the element-by-element copy, `cargo bench --bench gemm -- attn_vjp_d`);
//! * no padding at all: the last row panel (and column panel) is moved back to end at the last
//!   row (column), overlapping the previous one. The overlapped elements are computed again with
//!   the same operations on the same operands, so they get the same bits (a NaN element's payload
//!   may differ, and every NaN is pinned afterwards by `fast::pin_nans`);
//! * one NaN scan of the output at the end instead of one per stored row.
//!
//! It runs when the shape has at least `MR` rows and `NR / 2` columns, both operands have a unit
//! stride and `lhs` and `rhs` together hold at most [`SMALL`] elements; other products take the
//! packed kernel. The row tile is 4 (`MR`) on every instruction set: an 8 × 32 `f32` tile (AVX-512)
//! and an 8 × 16 one for 16-column products were tried and spilled their accumulators (2–20×
//! slower).

use core::any::{Any, TypeId};
use core::ops::Mul;

use super::fast::{any_nan, cast, lane, with_packs, Geometry, Isa, Kernel, Lane};
use super::MatrixView;
use crate::scalar::Scalar;

/// The largest `rows · inner + inner · cols` this path takes (128 KB of `f32`): the operands stay
/// in L2 while the tiles sweep them, and one `rhs` column panel in L1.
pub(super) const SMALL: usize = 32 * 1024;

/// The small-product kernel for `isa`: `Some(whether it may have stored a NaN)`, or `None` (and
/// `out` untouched) when `A` is not `f32`/`f64` or the product is not one this path takes.
#[allow(clippy::too_many_arguments)] // the product's geometry, the output and its epilogue
pub(super) fn small_gemm_on<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    isa: Isa,
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut dyn Any,
) -> Option<bool> {
    let g = Geometry { rows, inner, cols };
    if let Some(v) = cast::<f32>(out) {
        let onto = onto.map(lane::<A, f32>);
        match isa {
            Isa::Baseline => on::<A, f32, 4, 8, 4, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
            Isa::Avx2 => on::<A, f32, 4, 16, 8, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
            Isa::Avx512 => on::<A, f32, 4, 32, 16, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
        }
    } else if let Some(v) = cast::<f64>(out) {
        let onto = onto.map(lane::<A, f64>);
        match isa {
            Isa::Baseline => on::<A, f64, 4, 4, 2, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
            Isa::Avx2 => on::<A, f64, 4, 8, 4, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
            Isa::Avx512 => on::<A, f64, 4, 16, 8, RHS_LEFT>(isa, g, lhs, rhs, onto, v),
        }
    } else {
        None
    }
}

/// Whether the small path takes a product of this shape and these layouts with an `MR`-row tile
/// whose narrowest width is `half` columns.
fn takes<A>(g: Geometry, lhs: &MatrixView<'_, A>, rhs: &MatrixView<'_, A>, mr: usize, half: usize) -> bool {
    let Geometry { rows, inner, cols } = g;
    let unit = |v: &MatrixView<'_, A>| v.row_stride == 1 || v.col_stride == 1;
    rows >= mr
        && cols >= half
        && inner > 0
        && unit(lhs)
        && unit(rhs)
        && rows.saturating_mul(inner).saturating_add(inner.saturating_mul(cols)) <= SMALL
}

fn on<A: Scalar, T: Lane, const MR: usize, const NR: usize, const H: usize, const RHS_LEFT: bool>(
    isa: Isa,
    g: Geometry,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<T>,
    v: &mut Vec<T>,
) -> Option<bool> {
    if TypeId::of::<A>() != TypeId::of::<T>() || !takes(g, &lhs, &rhs, MR, H) {
        return None;
    }
    let n = g.rows * g.cols;
    let start = v.len();
    if start == 0 && v.capacity() < n {
        // A fresh buffer rather than growing a recycled one (growing copies its old capacity).
        *v = Vec::with_capacity(n);
    }
    v.resize(start + n, T::ZERO);
    let out = &mut v[start..];
    let nan = with_packs::<T, _>(|_, pb| {
        let Some(pack) = cast::<A>(pb) else { unreachable!("A is T") };
        isa.run(Small::<A, T, MR, NR, H, RHS_LEFT> { g, lhs, rhs, pack, out, onto })
    });
    Some(nan)
}

/// The small-product kernel as a [`Kernel`]: `MR × NR` tiles, `MR × H` for what is left of the
/// columns.
struct Small<'k, A, T, const MR: usize, const NR: usize, const H: usize, const RHS_LEFT: bool> {
    g: Geometry,
    lhs: MatrixView<'k, A>,
    rhs: MatrixView<'k, A>,
    /// This thread's buffer for a column panel of a transposed `rhs`.
    pack: &'k mut Vec<A>,
    out: &'k mut [T],
    onto: Option<T>,
}

impl<A: Scalar, T: Lane, const MR: usize, const NR: usize, const H: usize, const RHS_LEFT: bool> Kernel
    for Small<'_, A, T, MR, NR, H, RHS_LEFT>
{
    #[inline(always)]
    fn run(self) -> bool {
        let Small { g, lhs, rhs, pack, out, onto } = self;
        let cols = g.cols;
        let mut c0 = 0;
        while c0 + NR <= cols {
            panel::<A, T, MR, NR, RHS_LEFT>(g, lhs, rhs, c0, pack, out, onto);
            c0 += NR;
        }
        if c0 < cols {
            // What is left (fewer than `NR` columns): panels moved back to end at the last column.
            if cols - c0 <= H {
                panel::<A, T, MR, H, RHS_LEFT>(g, lhs, rhs, cols - H, pack, out, onto);
            } else if cols >= NR {
                panel::<A, T, MR, NR, RHS_LEFT>(g, lhs, rhs, cols - NR, pack, out, onto);
            } else {
                panel::<A, T, MR, H, RHS_LEFT>(g, lhs, rhs, 0, pack, out, onto);
                panel::<A, T, MR, H, RHS_LEFT>(g, lhs, rhs, cols - H, pack, out, onto);
            }
        }
        any_nan(out)
    }
}

/// Output columns `c0..c0 + W` of every row: the `rhs` panel in place (row-major) or packed
/// (transposed), then one `MR × W` tile per `MR` rows, the last one moved back to end at the last
/// row.
#[inline(always)]
fn panel<A: Scalar, T: Lane, const MR: usize, const W: usize, const RHS_LEFT: bool>(
    g: Geometry,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    c0: usize,
    pack: &mut Vec<A>,
    out: &mut [T],
    onto: Option<T>,
) {
    let Geometry { rows, inner, cols } = g;
    let (b, b_step): (&[A], usize) = if rhs.col_stride == 1 {
        (&rhs.data[c0 * rhs.col_stride..], rhs.row_stride)
    } else {
        // Columns `c0..c0 + W` of a `rhs` with contiguous columns (`row_stride == 1`), as rows
        // of `W`: `pack[t · W + j] = rhs[t, c0 + j]`.
        if pack.len() < inner * W {
            pack.resize(inner * W, A::zero());
        }
        let pack = &mut pack[..inner * W];
        pack_columns::<A, W>(rhs, c0, inner, pack);
        (&pack[..], W)
    };
    let mut r0 = 0;
    while r0 < rows {
        let r = r0.min(rows - MR);
        let acc = if lhs.col_stride == 1 {
            let a: [&[A]; MR] = core::array::from_fn(|i| &lhs.data[(r + i) * lhs.row_stride..][..inner]);
            tile::<A, T, MR, W, RHS_LEFT>(inner, |t| core::array::from_fn(|i| lane(&a[i][t])), b, b_step)
        } else {
            let a = &lhs.data[r..];
            let step = lhs.col_stride;
            tile::<A, T, MR, W, RHS_LEFT>(
                inner,
                |t| {
                    let s: &[A; MR] = a[t * step..][..MR].try_into().expect("a slice of exactly the array length");
                    core::array::from_fn(|i| lane(&s[i]))
                },
                b,
                b_step,
            )
        };
        for (i, row) in acc.iter().enumerate() {
            let dst: &mut [T; W] =
                (&mut out[(r + i) * cols + c0..][..W]).try_into().expect("a slice of exactly the array length");
            match onto {
                Some(stored) => {
                    for (d, &x) in dst.iter_mut().zip(row) {
                        *d = stored + x;
                    }
                }
                None => *dst = *row,
            }
        }
        r0 += MR;
    }
}

/// `pack[t · W + j] = rhs[t, c0 + j]` for a `rhs` with contiguous columns, [`GROUP`] columns at
/// a time: a loop down each column was vectorised into scatters, and one across all `W` columns
/// per `t` spilled the column pointers (both slow on the AVX-512 CPU we have, Zen 4).
#[inline(always)]
fn pack_columns<A: Scalar, const W: usize>(rhs: MatrixView<'_, A>, c0: usize, inner: usize, pack: &mut [A]) {
    let mut j0 = 0;
    while j0 < W {
        let g = GROUP.min(W - j0);
        let columns: [&[A]; GROUP] =
            core::array::from_fn(|j| &rhs.data[(c0 + j0 + j.min(g - 1)) * rhs.col_stride..][..inner]);
        // A group of 8 columns: blocks transposed in registers where the CPU can (a copy: the
        // same bits), the rest of `inner` element by element.
        #[cfg(target_arch = "x86_64")]
        let done = if g == GROUP { super::simd::pack_transposed(&columns, inner, pack, W, j0) } else { 0 };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        for (t, lanes) in pack.chunks_exact_mut(W).enumerate().skip(done) {
            for (x, column) in lanes[j0..j0 + g].iter_mut().zip(&columns) {
                *x = column[t].clone();
            }
        }
        j0 += g;
    }
}

/// Columns of a transposed `rhs` packed together ([`pack_columns`]).
const GROUP: usize = 8;

/// The register tile: `acc[i][j] = mul_add(a(t)[i], b[t][j], acc[i][j])` for `t` ascending from
/// `acc = +0` (factors swapped when `RHS_LEFT`), `b[t]` being `b[t · b_step..][..W]`.
#[inline(always)]
fn tile<A: 'static, T: Lane, const MR: usize, const W: usize, const RHS_LEFT: bool>(
    inner: usize,
    a: impl Fn(usize) -> [T; MR],
    b: &[A],
    b_step: usize,
) -> [[T; W]; MR] {
    let mut c = [[T::ZERO; W]; MR];
    for t in 0..inner {
        let bt: &[A; W] = b[t * b_step..][..W].try_into().expect("a slice of exactly the array length");
        let bv: [T; W] = core::array::from_fn(|j| lane(&bt[j]));
        let av = a(t);
        for (ci, &ai) in c.iter_mut().zip(&av) {
            for (cij, &bj) in ci.iter_mut().zip(&bv) {
                *cij = if RHS_LEFT { bj.fma(ai, *cij) } else { ai.fma(bj, *cij) };
            }
        }
    }
    c
}
