//! The order-preserving fast GEMM for `f32` and `f64`.
//!
//! Every output element is computed exactly as the portable kernel computes it: one accumulator,
//! starting from `+0`, updated by the fused multiply-adds `acc ← mul_add(lhs[r, t], rhs[t, c],
//! acc)` in ascending inner index `t` (SEMANTICS §8; the factors swapped when `RHS_LEFT`, which
//! changes only the NaN precedence, and NaNs are pinned afterwards). Speed comes only from doing
//! *independent* elements at the same time:
//!
//! * both operands are packed into contiguous panels (`MR` rows of `lhs` interleaved per inner
//!   index, `NR` columns of `rhs` per inner index), padded with zeros whose lanes are discarded;
//! * a register tile of `MR × NR` accumulators walks the inner index innermost, so LLVM
//!   vectorises across the `NR` output columns: one vector FMA per row and inner index (`mul_add`
//!   lowers to `vfmadd` in the AVX2+FMA and AVX-512F builds, to `fmla` on AArch64; the x86-64
//!   baseline build, for CPUs without FMA, calls the correctly rounded library `fma`);
//! * the inner index is split into chunks of `KC` for cache reuse; between chunks the accumulators
//!   are stored to `out` and loaded back, which is exact, so each element still sees the same
//!   sequence of roundings.
//!
//! No threads, no reassociation, no reduction trees: the result is bit-identical to the portable
//! kernel for every input, including `-0`, infinities, NaNs and subnormals.
//!
//! [`gemm_onto`](super::gemm_onto)'s `stored + element` is added in the last inner chunk's store
//! (the accumulators are still in registers), not in a pass of its own. Thin shapes (one side of
//! the output, or the inner dimension, at most 8) run the kernels of [`thin`] instead; small
//! products (operands within L2, such as an attention block's) run [`small`], which packs nothing
//! it can read in place.

use core::any::{Any, TypeId};
use core::cell::RefCell;
use core::ops::{Add, Mul};
use std::thread::LocalKey;

use super::{small, thin, MatrixView};
use crate::scalar::Scalar;

/// Below this many multiply-adds the packing does not pay off; the portable loop runs instead,
/// built for the CPU's instruction set ([`Portable`]; same results either way).
const MIN_WORK: usize = 4 * 1024;

/// Inner-index chunk: an `NR`-column panel chunk (`KC · NR` lanes) stays in L1 while the row
/// panels stream past it.
const KC: usize = 256;

/// The two lane types of the fast path.
pub(super) trait Lane: Copy + Send + Sync + Add<Output = Self> + Mul<Output = Self> + 'static {
    const ZERO: Self;
    fn is_nan(self) -> bool;
    /// IEEE fusedMultiplyAdd `self · b + acc`, rounded once (`mul_add`; the payload of a NaN
    /// result is whichever the hardware picks: [`strict_fma`] pins it).
    fn fma(self, b: Self, acc: Self) -> Self;
    /// The NaN `self` with its quiet bit set (what IEEE operations return for a NaN operand).
    fn quiet(self) -> Self;
    /// This thread's two packing buffers for this lane type ([`with_packs`]).
    fn packs() -> &'static LocalKey<RefCell<(Vec<Self>, Vec<Self>)>>;
    /// This thread's buffers for the parts of a product split by columns
    /// ([`split::columns`](super::split::columns)).
    fn column_parts() -> &'static LocalKey<RefCell<Vec<Vec<Self>>>>;
    /// Whether any of `xs` is a NaN: the largest magnitude encoding above infinity's, an integer
    /// maximum that stays in vector registers (a fold of `is_nan` flags was packed to bytes and
    /// reduced with shuffles, block after block).
    fn any_nan(xs: &[Self]) -> bool;
}
/// `Lane` for a float type whose quiet-NaN bit is `$quiet`, with its own thread's pack buffers.
macro_rules! lane {
    ($t:ty, $quiet:expr, $magnitude:expr) => {
        impl Lane for $t {
            const ZERO: Self = 0.0;
            #[inline]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn fma(self, b: Self, acc: Self) -> Self {
                self.mul_add(b, acc)
            }
            #[inline]
            fn quiet(self) -> Self {
                <$t>::from_bits(self.to_bits() | $quiet)
            }
            fn packs() -> &'static LocalKey<RefCell<(Vec<Self>, Vec<Self>)>> {
                thread_local!(static PACKS: RefCell<(Vec<$t>, Vec<$t>)> = const { RefCell::new((Vec::new(), Vec::new())) });
                &PACKS
            }
            fn column_parts() -> &'static LocalKey<RefCell<Vec<Vec<Self>>>> {
                thread_local!(static PARTS: RefCell<Vec<Vec<$t>>> = const { RefCell::new(Vec::new()) });
                &PARTS
            }
            #[inline(always)]
            fn any_nan(xs: &[Self]) -> bool {
                xs.iter().fold(0, |m, x| m.max(x.to_bits() & $magnitude)) > <$t>::INFINITY.to_bits()
            }
        }
    };
}
lane!(f32, 1 << 22, !(1 << 31));
lane!(f64, 1 << 51, !(1 << 63));

/// `a + b` or `a * b` with the NaN payload fixed: `a`'s if `a` is a NaN, else `b`'s (quieted);
/// otherwise the hardware operation (which yields the platform's default NaN for `∞ - ∞`, `0 · ∞`).
#[inline]
pub(super) fn strict<T: Lane>(a: T, b: T, op: impl Fn(T, T) -> T) -> T {
    if a.is_nan() {
        a.quiet()
    } else if b.is_nan() {
        b.quiet()
    } else {
        op(a, b)
    }
}

/// `a · b + acc` fused ([`Lane::fma`]) with the NaN payload fixed as
/// [`Storage::pinned_mul_add`](crate::Storage::pinned_mul_add) fixes it: `acc`'s if `acc` is a
/// NaN, else `a`'s, else `b`'s (quieted); otherwise the hardware's (its default NaN for `0 · ∞`
/// and `∞ - ∞`).
#[inline]
pub(super) fn strict_fma<T: Lane>(a: T, b: T, acc: T) -> T {
    if acc.is_nan() {
        acc.quiet()
    } else if a.is_nan() {
        a.quiet()
    } else if b.is_nan() {
        b.quiet()
    } else {
        a.fma(b, acc)
    }
}

/// The value of `v` as a `T` when `A` is `T`.
#[inline(always)]
pub(super) fn lane<A: 'static, T: Lane>(v: &A) -> T {
    (v as &dyn Any).downcast_ref::<T>().copied().unwrap_or(T::ZERO)
}

/// Pins the NaN payloads of an `f32`/`f64` product (no-op for other scalars).
///
/// Rust (RFC 3514) and LLVM do not fix which input NaN an operation returns when both operands
/// are NaNs: LLVM treats `fadd`/`fmul` as commutative, so the payload depends on register
/// allocation (the portable loop returned different payloads in debug and release builds). An
/// output element that is not a NaN never met a NaN, so it is fully determined by IEEE rounding.
/// Every NaN element of `out[start..]` (`rows × cols`) is recomputed here with the same sequence
/// of fused multiply-adds, each with the NaN precedence of `pinned_mul_add` ([`strict_fma`]:
/// the accumulator, then `lhs`, then `rhs` — `rhs` first when `RHS_LEFT`).
///
/// With `onto = Some(stored)` the elements hold `stored + element` (the fused epilogue of
/// [`gemm_onto`](super::gemm_onto)): a NaN there is rewritten as `pinned_add(stored, element)` with
/// the element recomputed strictly. Such a NaN came from a NaN `stored`, a NaN element, or
/// `stored + element` itself (`∞ - ∞`); an element that is not a NaN met no NaN, so its bits and
/// the hardware sum are already the pinned ones.
#[allow(clippy::too_many_arguments)] // the product's geometry, the output and its epilogue
pub(super) fn pin_nans<A: Scalar, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    out: &mut dyn Any,
    start: usize,
    onto: Option<&A>,
) {
    let id = TypeId::of::<A>();
    if id == TypeId::of::<f32>() {
        pin::<A, f32, RHS_LEFT>(rows, inner, cols, lhs, rhs, out, start, onto.map(lane));
    } else if id == TypeId::of::<f64>() {
        pin::<A, f64, RHS_LEFT>(rows, inner, cols, lhs, rhs, out, start, onto.map(lane));
    }
}

#[allow(clippy::too_many_arguments)] // as `pin_nans`
fn pin<A: Scalar, T: Lane, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    out: &mut dyn Any,
    start: usize,
    onto: Option<T>,
) {
    let Some(out) = cast::<T>(out) else { return };
    let out = &mut out[start..start + rows * cols];
    // Chunks of branch-free scans (vectorised), stopping at the first chunk with a NaN.
    if !out.chunks(256).any(|c| c.iter().fold(false, |seen, x| seen | x.is_nan())) {
        return;
    }
    if let Some(stored) = onto.filter(|s| s.is_nan()) {
        // `pinned_add(stored, anything)` is `stored`, quieted: no element needs recomputing.
        out.fill(stored.quiet());
        return;
    }
    for r in 0..rows {
        for c in 0..cols {
            if out[r * cols + c].is_nan() {
                let mut acc = T::ZERO;
                for t in 0..inner {
                    let l: T = lane(&lhs.data[r * lhs.row_stride + t * lhs.col_stride]);
                    let x: T = lane(&rhs.data[t * rhs.row_stride + c * rhs.col_stride]);
                    acc = if RHS_LEFT { strict_fma(x, l, acc) } else { strict_fma(l, x, acc) };
                }
                out[r * cols + c] = match onto {
                    Some(stored) => strict(stored, acc, |a, b| a + b),
                    None => acc,
                };
            }
        }
    }
}

/// Runs a fast kernel when `A` is `f32` or `f64` and the product is big enough — the thin kernels
/// ([`thin`]) when one side is thin, else the small-product kernel ([`small`]) when the operands
/// are small and have unit strides, else the packed one — and returns whether it may have stored
/// a NaN (`Some(false)`: none, [`pin_nans`] can be skipped); `None` (leaving `out` untouched)
/// otherwise. With `onto = Some(stored)` each element is stored as `stored + element` (NaNs left
/// for [`pin_nans`] with the same `onto`).
pub(super) fn try_gemm<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut dyn Any,
) -> Option<bool> {
    let work = rows.saturating_mul(inner).saturating_mul(cols);
    let isa = Isa::detect();
    let thin = || thin::thin_gemm_on::<A, RHS_LEFT>(isa, rows, inner, cols, lhs, rhs, onto, out);
    match (work >= thin::MIN_WORK).then(thin).flatten() {
        Some(nan) => Some(nan),
        None if work >= MIN_WORK => small::small_gemm_on::<A, RHS_LEFT>(isa, rows, inner, cols, lhs, rhs, onto, out)
            .or_else(|| fast_gemm_on::<A, RHS_LEFT>(isa, rows, inner, cols, lhs, rhs, onto, out)),
        None => portable_on::<A, RHS_LEFT>(isa, Geometry { rows, inner, cols }, lhs, rhs, onto, out),
    }
}

/// The portable loop for `f32` and `f64` built for `isa` ([`Portable`]): whether it may have
/// stored a NaN; `None` (and `out` untouched) for other scalars.
fn portable_on<A: Scalar, const RHS_LEFT: bool>(
    isa: Isa,
    g: Geometry,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut dyn Any,
) -> Option<bool> {
    fn on<A: Scalar, T: Lane, const RHS_LEFT: bool>(
        isa: Isa,
        g: Geometry,
        lhs: MatrixView<'_, A>,
        rhs: MatrixView<'_, A>,
        onto: Option<T>,
        v: &mut Vec<T>,
    ) -> bool {
        let start = v.len();
        v.resize(start + g.rows * g.cols, T::ZERO);
        isa.run(Portable::<A, T, RHS_LEFT> { g, lhs, rhs, onto, out: &mut v[start..] })
    }
    if let Some(v) = cast::<f32>(out) {
        Some(on::<A, f32, RHS_LEFT>(isa, g, lhs, rhs, onto.map(lane), v))
    } else {
        cast::<f64>(out).map(|v| on::<A, f64, RHS_LEFT>(isa, g, lhs, rhs, onto.map(lane), v))
    }
}

/// The portable loop on lanes of `T` as a [`Kernel`], for products below [`MIN_WORK`]: compiled
/// into the instruction set's entry, so each `mul_add` is an instruction rather than a library
/// call. Row by row, each inner index's products fused onto the row's running sums (`out`
/// starts at `+0`); with `onto = Some(stored)`, `stored + sum` stored at the end.
struct Portable<'k, A, T, const RHS_LEFT: bool> {
    g: Geometry,
    lhs: MatrixView<'k, A>,
    rhs: MatrixView<'k, A>,
    onto: Option<T>,
    out: &'k mut [T],
}

impl<A: 'static, T: Lane, const RHS_LEFT: bool> Kernel for Portable<'_, A, T, RHS_LEFT> {
    #[inline(always)]
    fn run(self) -> bool {
        let Portable { g: Geometry { inner, cols, .. }, lhs, rhs, onto, out } = self;
        for (r, row) in out.chunks_exact_mut(cols.max(1)).enumerate() {
            for t in 0..inner {
                let l: T = lane(lhs.at(r, t));
                for (c, acc) in row.iter_mut().enumerate() {
                    let x: T = lane(rhs.at(t, c));
                    *acc = if RHS_LEFT { x.fma(l, *acc) } else { l.fma(x, *acc) };
                }
            }
            if let Some(stored) = onto {
                for x in row.iter_mut() {
                    *x = stored + *x;
                }
            }
        }
        any_nan(out)
    }
}

/// The packed fast kernel for any size when `A` is `f32` or `f64`, built for the best instruction
/// set of the running CPU (whether it may have stored a NaN); `None` (and `out` untouched) for
/// other scalars.
#[cfg(test)]
pub(super) fn fast_gemm<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    out: &mut dyn Any,
) -> Option<bool> {
    fast_gemm_on::<A, RHS_LEFT>(Isa::detect(), rows, inner, cols, lhs, rhs, None, out)
}

/// The packed kernel built for `isa` (which must be one of [`Isa::available`]), for any size;
/// returns as [`try_gemm`].
#[allow(clippy::too_many_arguments)] // the product's geometry, the output and its epilogue
pub(super) fn fast_gemm_on<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    isa: Isa,
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut dyn Any,
) -> Option<bool> {
    let id = TypeId::of::<A>();
    let g = Geometry { rows, inner, cols };
    if id == TypeId::of::<f32>() {
        let onto = onto.map(lane::<A, f32>);
        match isa {
            Isa::Baseline => run::<A, f32, 6, 8, 4, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
            Isa::Avx2 => run::<A, f32, 6, 16, 8, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
            Isa::Avx512 => run::<A, f32, 4, 32, 16, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
        }
    } else if id == TypeId::of::<f64>() {
        let onto = onto.map(lane::<A, f64>);
        match isa {
            Isa::Baseline => run::<A, f64, 6, 4, 2, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
            Isa::Avx2 => run::<A, f64, 6, 8, 4, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
            Isa::Avx512 => run::<A, f64, 4, 16, 8, RHS_LEFT>(g, lhs, rhs, onto, out, isa),
        }
    } else {
        None
    }
}

/// The sizes of a product: `rows × inner` times `inner × cols`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) rows: usize,
    pub(super) inner: usize,
    pub(super) cols: usize,
}

/// Code run by [`Isa::run`]: `run` is `#[inline(always)]`, so its body is compiled into an entry
/// built for one instruction set.
pub(super) trait Kernel {
    /// Runs the kernel; `false` guarantees that no element it stored is a NaN (so
    /// [`pin_nans`] has nothing to do), `true` that some may be.
    fn run(self) -> bool;
}

/// Whether any of `xs` is a NaN ([`Lane::any_nan`]).
#[inline(always)]
pub(super) fn any_nan<T: Lane>(xs: &[T]) -> bool {
    T::any_nan(xs)
}

/// The instruction set the kernel is compiled for. Only the vector width and how `mul_add` is
/// reached differ: the same Rust code runs, each lane performs the same IEEE operations (fused
/// multiply-adds are one rounding however they are computed), so every choice gives the same
/// bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// The target's baseline (SSE2 on x86-64): `NR` = one 16-byte vector pair.
    Baseline,
    /// AVX2 and FMA, detected at run time: 32-byte vectors, twice the columns per register tile.
    Avx2,
    /// AVX-512F, detected at run time: 64-byte vectors, a 4 × 32 `f32` tile. (2026-12-08, rustc
    /// 1.95, an Intel Xeon of family 6 model 207: a 6 × 32 tile stays in registers and is faster
    /// on one thread — 1024³ 17.7 against 19.7 ms — but the steps got slower on two threads, the
    /// MLP step 575 → 673 µs and `gpt_step` 16.9 → 21.6 ms in one run, so 4 × 32 stays; 7 × 32
    /// and 8 × 32 spill to memory, 30× slower.)
    Avx512,
}

impl Isa {
    /// Every instruction set the running CPU can run, baseline first (the tests compare them all).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Baseline];
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx2() {
            v.push(Isa::Avx2);
        }
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx512() {
            v.push(Isa::Avx512);
        }
        v
    }

    /// Runs `k` compiled for this instruction set (the baseline build when the CPU lacks it);
    /// returns what [`Kernel::run`] returns.
    pub(super) fn run<K: Kernel>(self, k: K) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => super::simd::run_avx2(k),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => super::simd::run_avx512(k),
            _ => run_baseline(k),
        }
    }

    pub(super) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx512() {
            return Isa::Avx512;
        }
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx2() {
            return Isa::Avx2;
        }
        Isa::Baseline
    }
}

/// [`Kernel::run`] compiled for the target's baseline instruction set.
#[inline(never)]
fn run_baseline<K: Kernel>(k: K) -> bool {
    k.run()
}

/// A `Vec<A>` as a `Vec<T>` when `A` is `T` (a type-checked, zero-cost view).
pub(super) fn cast<T: 'static>(v: &mut dyn Any) -> Option<&mut Vec<T>> {
    v.downcast_mut::<Vec<T>>()
}

/// Packs `lhs` (`rows × inner`) into the first elements of `v` as panels of `MR` rows: panel `p`
/// holds, for each inner index `t`, the `MR` values `lhs[p·MR + i, t]` (zero past the last row);
/// returns how many elements the panels take. Reads follow the view's unit stride. The reused
/// buffer is not zero-filled first, nor shortened (a product of another size grows it only past its
/// longest pack so far): every lane is written, the padding lanes of the last panel with zeros.
/// With `split`, the panels are filled on the current thread pool (each panel is its own copy: the
/// same buffer either way).
fn pack_lhs<A: Scalar, const MR: usize>(
    rows: usize,
    inner: usize,
    lhs: MatrixView<'_, A>,
    v: &mut Vec<A>,
    split: bool,
) -> usize {
    use rayon::prelude::*;
    let panel_len = MR * inner;
    let len = rows.div_ceil(MR) * panel_len;
    if v.len() < len {
        v.resize(len, A::zero());
    }
    let v = &mut v[..len];
    let fill = |(p, panel): (usize, &mut [A])| pack_panel::<A, MR>(rows, lhs, p, panel);
    if split && len > panel_len {
        crate::parallel::split(|| {
            v.par_chunks_exact_mut(panel_len.max(1)).enumerate().for_each(|p| crate::parallel::part(|| fill(p)));
        });
    } else {
        v.chunks_exact_mut(panel_len.max(1)).enumerate().for_each(fill);
    }
    len
}

/// Panel `p` of [`pack_lhs`].
#[inline]
fn pack_panel<A: Scalar, const MR: usize>(rows: usize, lhs: MatrixView<'_, A>, p: usize, panel: &mut [A]) {
    let (rs, cs) = (lhs.row_stride, lhs.col_stride);
    let inner = panel.len() / MR;
    let r0 = p * MR;
    let live = MR.min(rows - r0);
    if live < MR {
        for lanes in panel.chunks_exact_mut(MR) {
            lanes[live..].fill(A::zero());
        }
    }
    if rs == 1 && live == MR {
        // A transposed view: the panel's `MR` values at each `t` are contiguous, copied as one
        // array of constant length (a slice copy of `MR` values was a `memmove` call each).
        for (t, lanes) in panel.as_chunks_mut::<MR>().0.iter_mut().enumerate() {
            let base = r0 + t * cs;
            let src: &[A; MR] = lhs.data[base..base + MR].try_into().expect("MR contiguous values");
            lanes.clone_from(src);
        }
    } else if rs == 1 {
        // The same for the last panel's `live < MR` rows.
        for (t, lanes) in panel.chunks_exact_mut(MR).enumerate() {
            let base = r0 + t * cs;
            lanes[..live].clone_from_slice(&lhs.data[base..base + live]);
        }
    } else {
        for i in 0..live {
            let base = (r0 + i) * rs;
            for (t, x) in (0..inner).map(|t| &lhs.data[base + t * cs]).enumerate() {
                panel[t * MR + i] = x.clone();
            }
        }
    }
}

/// Packs `rhs` (`inner × cols`) into `v` as panels of `NR` columns: panel `q` holds, for each
/// inner index `t`, the `NR` values `rhs[t, q·NR + j]` (zero past the last column) — exactly the
/// row panels of `rhsᵀ`.
fn pack_rhs<A: Scalar, const NR: usize>(
    inner: usize,
    cols: usize,
    rhs: MatrixView<'_, A>,
    v: &mut Vec<A>,
    split: bool,
) -> usize {
    let transposed = MatrixView { data: rhs.data, row_stride: rhs.col_stride, col_stride: rhs.row_stride };
    pack_lhs::<A, NR>(cols, inner, transposed, v, split)
}

/// The packing buffers of the running thread, reused from product to product (a W1 step packs
/// 800 KB of weights; allocating and faulting that in on every call cost more than the copy). They
/// keep the largest packs seen so far.
pub(super) fn with_packs<T: Lane, R>(f: impl FnOnce(&mut Vec<T>, &mut Vec<T>) -> R) -> R {
    T::packs().with(|cell| match cell.try_borrow_mut() {
        Ok(mut packs) => {
            let (pa, pb) = &mut *packs;
            f(pa, pb)
        }
        // Another product of this thread holds them (this thread, waiting for a split product,
        // took a product of other work — inter-op or data-parallel — off the pool): fresh buffers.
        Err(_) => f(&mut Vec::new(), &mut Vec::new()),
    })
}

/// `MR × NR` register tile; `HALF = NR / 2` columns for a last panel that narrow.
fn run<
    A: Scalar + Mul<Output = A>,
    T: Lane,
    const MR: usize,
    const NR: usize,
    const HALF: usize,
    const RHS_LEFT: bool,
>(
    g: Geometry,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<T>,
    out: &mut dyn Any,
    isa: Isa,
) -> Option<bool> {
    if TypeId::of::<A>() != TypeId::of::<T>() {
        return None;
    }
    let out = cast::<T>(out)?;
    let Geometry { rows, inner, cols } = g;
    // Split by columns when the right operand is the larger (each part then reads only its own
    // columns of it), else by rows.
    let by_columns = cols > rows;
    let panels = if by_columns { cols.div_ceil(NR) } else { rows.div_ceil(MR) };
    let parts = crate::parallel::parts(rows.saturating_mul(inner).saturating_mul(cols), panels);
    let nan = with_packs::<T, _>(|pa, pb| {
        // `A` is `T` (checked above), so the buffers are `Vec<A>` too: pack with `A`'s own clone.
        // A product split over threads packs on them too (the packing is copies only).
        let (Some(pa_a), Some(pb_a)) = (cast::<A>(pa), cast::<A>(pb)) else { unreachable!("A is T") };
        let la = pack_lhs::<A, MR>(rows, inner, lhs, pa_a, parts > 1);
        let lb = pack_rhs::<A, NR>(inner, cols, rhs, pb_a, parts > 1);
        let (pa, pb) = (&pa[..la], &pb[..lb]);
        let start = out.len();
        if start == 0 && out.capacity() < rows * cols {
            // A fresh buffer rather than growing a recycled one (growing copies its old capacity).
            *out = Vec::with_capacity(rows * cols);
        }
        out.resize(start + rows * cols, T::ZERO);
        let out = &mut out[start..];
        match parts {
            // `parts` is 1 for no work: the splits have `inner > 0` and `cols > 0`.
            1 => isa.run(Packed::<T, MR, NR, HALF, RHS_LEFT> { g, pa, pb, out, onto }),
            parts if by_columns => {
                super::split::columns::<T, MR, NR, HALF, RHS_LEFT>(g, pa, pb, out, onto, isa, panels.div_ceil(parts))
            }
            parts => super::split::rows::<T, MR, NR, HALF, RHS_LEFT>(g, pa, pb, out, onto, isa, panels.div_ceil(parts)),
        }
    });
    Some(nan)
}

/// [`kernel`] on packed panels, as a [`Kernel`].
pub(super) struct Packed<'k, T, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool> {
    pub(super) g: Geometry,
    pub(super) pa: &'k [T],
    pub(super) pb: &'k [T],
    pub(super) out: &'k mut [T],
    pub(super) onto: Option<T>,
}

impl<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool> Kernel
    for Packed<'_, T, MR, NR, HALF, RHS_LEFT>
{
    #[inline(always)]
    fn run(self) -> bool {
        let Geometry { rows, inner, cols } = self.g;
        kernel::<T, MR, NR, HALF, RHS_LEFT>(rows, inner, cols, self.pa, self.pb, self.out, self.onto)
    }
}

/// `out` (`rows × cols`, row-major, holding the running sums) gets the products of the packed
/// panels added, inner index ascending; with `onto = Some(stored)` the last inner chunk stores
/// `stored + sum`. Returns whether a NaN may have been stored. Always inlined into an entry point
/// compiled for one instruction set ([`Isa::run`]).
#[inline(always)]
fn kernel<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    pa: &[T],
    pb: &[T],
    out: &mut [T],
    onto: Option<T>,
) -> bool {
    if inner == 0 {
        // Every element is the empty sum `+0`.
        return match onto {
            Some(stored) => {
                out[..rows * cols].fill(stored + T::ZERO);
                rows * cols > 0 && stored.is_nan()
            }
            None => false,
        };
    }
    let mut nan = false;
    let (pa, _) = pa.as_chunks::<MR>();
    let (pb, _) = pb.as_chunks::<NR>();
    let mut k0 = 0;
    while k0 < inner {
        let k1 = inner.min(k0 + KC);
        for (q, b_panel) in pb.chunks_exact(inner).enumerate() {
            let b = &b_panel[k0..k1];
            let c0 = q * NR;
            let nc = NR.min(cols - c0);
            for (p, a_panel) in pa.chunks_exact(inner).enumerate() {
                let a = &a_panel[k0..k1];
                let r0 = p * MR;
                let nr = MR.min(rows - r0);
                let o = r0 * cols + c0;
                let (first, last) = (k0 == 0, k1 == inner);
                nan |= if nc <= HALF {
                    block::<T, MR, NR, HALF, RHS_LEFT>(a, b, &mut out[o..], cols, nr, nc, first, last, onto)
                } else {
                    block::<T, MR, NR, NR, RHS_LEFT>(a, b, &mut out[o..], cols, nr, nc, first, last, onto)
                };
            }
        }
        k0 = k1;
    }
    nan
}

/// One register tile over the first `W ≤ NR` columns of a panel: loads the `nr × nc` running
/// sums at `out` (row step `cols`), adds the products ([`tile`]) and stores them back. On the
/// `first` inner chunk the sums start from `+0` without being loaded (`out` holds `+0` there).
/// On the `last` chunk the tile stores `stored + sum` for a [`gemm_onto`](super::gemm_onto)
/// (`onto = Some(stored)`: the epilogue, in the store) and reports whether a NaN is among what it
/// stored. Full-width rows are copied with a constant length, so the copies compile to vector
/// moves.
#[allow(clippy::too_many_arguments)] // the tile's geometry, all needed by the copies
#[inline(always)]
fn block<T: Lane, const MR: usize, const NR: usize, const W: usize, const RHS_LEFT: bool>(
    a: &[[T; MR]],
    b: &[[T; NR]],
    out: &mut [T],
    cols: usize,
    nr: usize,
    nc: usize,
    first: bool,
    last: bool,
    onto: Option<T>,
) -> bool {
    let mut acc = [[T::ZERO; W]; MR];
    if !first {
        for (i, row) in acc.iter_mut().enumerate().take(nr) {
            let src = &out[i * cols..];
            if nc == W {
                row.copy_from_slice(&src[..W]);
            } else {
                row[..nc].copy_from_slice(&src[..nc]);
            }
        }
    }
    tile::<T, MR, NR, W, RHS_LEFT>(a, b, &mut acc);
    let onto = if last { onto } else { None };
    for (i, row) in acc.iter().enumerate().take(nr) {
        let dst = &mut out[i * cols..];
        match onto {
            Some(stored) => {
                let n = if nc == W { W } else { nc };
                for (d, &x) in dst[..n].iter_mut().zip(&row[..n]) {
                    *d = stored + x;
                }
            }
            None if nc == W => dst[..W].copy_from_slice(row),
            None => dst[..nc].copy_from_slice(&row[..nc]),
        }
    }
    // Whether a NaN was stored: the rows just stored, read back from L1 (checking the tile
    // itself kept it in memory, and the epilogue on it measured slower than this).
    last && (0..nr).any(|i| any_nan(&out[i * cols..][..nc]))
}

/// The register tile: `acc[i][j] = mul_add(a[t][i], b[t][j], acc[i][j])` for `t` ascending
/// (factors swapped when `RHS_LEFT`), on a by-value copy the optimiser keeps in registers.
#[inline(always)]
fn tile<T: Lane, const MR: usize, const NR: usize, const W: usize, const RHS_LEFT: bool>(
    a: &[[T; MR]],
    b: &[[T; NR]],
    acc: &mut [[T; W]; MR],
) {
    let mut c = *acc;
    for (av, bv) in a.iter().zip(b) {
        for (ci, &ai) in c.iter_mut().zip(av) {
            for (cij, &bj) in ci.iter_mut().zip(bv) {
                *cij = if RHS_LEFT { bj.fma(ai, *cij) } else { ai.fma(bj, *cij) };
            }
        }
    }
    *acc = c;
}
