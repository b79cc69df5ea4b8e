//! The one place this crate uses `unsafe`: calling GEMM kernels and the pointwise ops' loops
//! ([`elementwise`]) compiled for AVX2 or AVX-512F after checking at run time that the CPU has it.
//!
//! [`run_avx2`] and [`run_avx512`] run any [`Kernel`] — the packed kernel of
//! [`fast`](super::fast), the thin kernels of [`thin`] — whose `run` is inlined into a
//! body built with the feature: the same Rust code as the baseline build, only LLVM's vector width
//! changes. [`transposing_f32`] and [`transposing_f64`] call the thin kernels written with AVX2
//! intrinsics (in-register transposes, `thin.rs`), and [`pack_transposed`] the small-product
//! kernel's packing of a transposed right operand (the same transposes, a copy), which are safe
//! functions apart from needing the feature. The kernels' products are `mul_add` (and
//! `_mm256_fmadd_*` in the intrinsic kernels): with `fma` enabled beside `avx2` (AVX-512F
//! implies it) each is one `vfmadd` instruction, one rounding, as the portable loop's
//! `Storage::pinned_mul_add` is; Rust never lets LLVM contract a written `a * b + c`, so every
//! other operation keeps its own rounding. The results are bit-identical to the portable loop's
//! (`gemm_tests.rs` and `thin_tests.rs` compare every path bit for bit).
//!
//! Measured (`cargo bench --bench gemm`): see the crate README's benchmark table.

use super::fast::Kernel;
use super::thin::{self, Thin};

/// Defines, for one instruction set: `$has()` (run-time detection, cached by the standard
/// library), `$entry` (runs a kernel built for it, or the baseline build when the CPU lacks it)
/// and the `#[target_feature]` body it calls.
macro_rules! isa_entry {
    ($has:ident, $entry:ident, $body:ident, $feature:tt, $second:tt) => {
        #[doc = concat!("`true` when the running CPU supports `", $feature, "` and `", $second, "`.")]
        pub(super) fn $has() -> bool {
            std::is_x86_feature_detected!($feature) && std::is_x86_feature_detected!($second)
        }

        #[doc = concat!("Runs `k` compiled with `", $feature, "`; the baseline build when the CPU lacks it.")]
        pub(super) fn $entry<K: Kernel>(k: K) -> bool {
            if $has() {
                // SAFETY: the body is a safe function whose only extra requirement is that the
                // CPU supports the feature it is compiled with (`#[target_feature]`), which was
                // checked just above.
                unsafe { $body(k) }
            } else {
                k.run()
            }
        }

        #[target_feature(enable = $feature)]
        #[target_feature(enable = $second)]
        fn $body<K: Kernel>(k: K) -> bool {
            k.run()
        }
    };
}

isa_entry!(has_avx2, run_avx2, run_avx2_body, "avx2", "fma");
isa_entry!(has_avx512, run_avx512, run_avx512_body, "avx512f", "fma");

/// Runs `f` compiled with AVX-512F or AVX2 (and FMA) when the CPU has them, else as built: for the
/// element-wise loops of the pointwise ops (`ops::pointwise`, whose scalar functions — `math`'s
/// `tanh` kernels among them — inline into `f`), which LLVM then vectorises wider (the `tanh` op's
/// forward over 4 096 `f32`: 16.2 µs as built, 8.9 µs with AVX2, 4.6 µs with AVX-512F,
/// `cargo bench --bench math -- op_forward`). The same Rust code and so the same IEEE operations
/// per element (these loops call no `mul_add`, and Rust never contracts `a * b + c`, `fma`
/// enabled or not): the bits do not depend on the path
/// (`elementwise_paths_agree` below compares every path with the baseline build).
///
/// `f` is a closure or any other [`WideLoop`]: LLVM inlines a closure into the wide body only when
/// it is short, so a long loop (GELU's derivative) is a `WideLoop` whose `run` is
/// `#[inline(always)]`.
#[inline(always)]
pub(crate) fn elementwise<L: WideLoop>(f: L) -> L::Output {
    if has_avx512() {
        // SAFETY: as in `isa_entry!`: a safe function built with `avx512f`, checked just above.
        unsafe { elementwise_avx512(f) }
    } else if has_avx2() {
        // SAFETY: as in `isa_entry!`: a safe function built with `avx2`, checked just above.
        unsafe { elementwise_avx2(f) }
    } else {
        f.run()
    }
}

/// A loop [`elementwise`] runs; implementations mark `run` `#[inline(always)]`, so that it is
/// compiled inside the wide body.
pub(crate) trait WideLoop {
    /// What the loop returns.
    type Output;
    /// Runs the loop.
    fn run(self) -> Self::Output;
}

impl<R, F: FnOnce() -> R> WideLoop for F {
    type Output = R;
    #[inline(always)]
    fn run(self) -> R {
        self()
    }
}

#[target_feature(enable = "avx512f,fma")]
fn elementwise_avx512<L: WideLoop>(f: L) -> L::Output {
    f.run()
}

#[target_feature(enable = "avx2,fma")]
fn elementwise_avx2<L: WideLoop>(f: L) -> L::Output {
    f.run()
}

/// Defines `$entry`: the AVX2 thin kernel `$kernel` for `$t` when the CPU has AVX2 (whether it may
/// have stored a NaN), else `None` with `out` untouched.
macro_rules! transposing_entry {
    ($entry:ident, $kernel:ident, $t:ty) => {
        #[doc = concat!("The AVX2 transposing thin kernel for `", stringify!($t), "`; `false` when the CPU lacks AVX2.")]
        pub(super) fn $entry<A: 'static, const B_LEFT: bool>(
            p: &Thin<'_, A>,
            onto: Option<$t>,
            out: &mut [$t],
        ) -> Option<bool> {
            if !has_avx2() {
                return None;
            }
            // SAFETY: as in `isa_entry!`: a safe function built with `avx2`, checked just above.
            Some(unsafe { thin::$kernel::<A, B_LEFT>(p, onto, out) })
        }
    };
}

transposing_entry!(transposing_f32, transposing_f32_avx2, f32);
transposing_entry!(transposing_f64, transposing_f64_avx2, f64);

/// `pack[t · w + j0 + j] = columns[j][t]` for every column (their count a multiple of `L`: 8
/// `f32`, 4 `f64`) and the whole blocks of `L` values of `t`, transposed in AVX2 registers
/// (`thin::pack_transposed_*`); how many `t` it packed — 0 when the CPU lacks AVX2, `A` is
/// neither float or the columns are not whole vectors (the caller copies what is left element by
/// element).
pub(super) fn pack_transposed<A: 'static>(
    columns: &[&[A]],
    inner: usize,
    pack: &mut [A],
    w: usize,
    j0: usize,
) -> usize {
    use core::any::TypeId;
    if !has_avx2() {
        return 0;
    }
    let id = TypeId::of::<A>();
    if id == TypeId::of::<f32>() {
        // SAFETY: as in `isa_entry!`: a safe function built with `avx2`, checked just above.
        unsafe { thin::pack_transposed_f32_avx2(columns, inner, pack, w, j0) }
    } else if id == TypeId::of::<f64>() {
        // SAFETY: as in `isa_entry!`: a safe function built with `avx2`, checked just above.
        unsafe { thin::pack_transposed_f64_avx2(columns, inner, pack, w, j0) }
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::matmul::fast::{Geometry, Isa, Packed};

    /// The `tanh` and `exp` kernels give the same bits inside [`super::elementwise`] (AVX2 when the CPU
    /// has it) as element by element in the baseline build, on specials and a spread of values.
    #[test]
    fn elementwise_paths_agree() {
        let mut xs: Vec<f32> = (0..20_000).map(|i| f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9))).collect();
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, 1e-40, 9.4, -9.6]);
        xs.push(f32::from_bits(0x7fa0_0001));
        let ys: Vec<f64> = xs.iter().map(|&x| f64::from(x) * 1.7).collect();
        let run = |out32: &mut Vec<u32>, out64: &mut Vec<u64>| {
            for (o, &x) in out32.iter_mut().zip(&xs) {
                *o = crate::math::tanh_f32(x).to_bits() ^ crate::math::exp_f32(x).to_bits().rotate_left(7);
            }
            for (o, &y) in out64.iter_mut().zip(&ys) {
                *o = crate::math::tanh_f64(y).to_bits() ^ crate::math::exp_f64(y).to_bits().rotate_left(7);
            }
        };
        let (mut plain32, mut plain64) = (vec![0u32; xs.len()], vec![0u64; ys.len()]);
        run(&mut plain32, &mut plain64);
        let mut paths = 0;
        let mut check = |wide: &dyn Fn(&mut Vec<u32>, &mut Vec<u64>)| {
            let (mut w32, mut w64) = (vec![0u32; xs.len()], vec![0u64; ys.len()]);
            wide(&mut w32, &mut w64);
            assert_eq!(w32, plain32);
            assert_eq!(w64, plain64);
            paths += 1;
        };
        check(&|a, b| super::elementwise(|| run(a, b)));
        if super::has_avx2() {
            // SAFETY: the CPU supports AVX2 (checked).
            check(&|a, b| unsafe { super::elementwise_avx2(|| run(a, b)) });
        }
        if super::has_avx512() {
            // SAFETY: the CPU supports AVX-512F (checked).
            check(&|a, b| unsafe { super::elementwise_avx512(|| run(a, b)) });
        }
        assert!(paths >= 1);
        // The pointwise ops' own loops and the slice kernels (the widest path this CPU has)
        // against element by element.
        let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (mut t32, mut e32) = (Vec::new(), Vec::new());
        crate::ops::pointwise::forward_into::<f32, crate::ops::TanhFn>(&xs, &mut t32);
        crate::ops::pointwise::forward_into::<f32, crate::ops::ExpFn>(&xs, &mut e32);
        assert_eq!(bits32(&t32), xs.iter().map(|&x| crate::math::tanh_f32(x).to_bits()).collect::<Vec<_>>());
        assert_eq!(bits32(&e32), xs.iter().map(|&x| crate::math::exp_f32(x).to_bits()).collect::<Vec<_>>());
        let mut in_place = xs.clone();
        crate::math::exp_in_place(&mut in_place);
        assert_eq!(bits32(&in_place), bits32(&e32));
        let (mut t64, mut e64) = (Vec::new(), Vec::new());
        crate::ops::pointwise::forward_into::<f64, crate::ops::TanhFn>(&ys, &mut t64);
        crate::ops::pointwise::forward_into::<f64, crate::ops::ExpFn>(&ys, &mut e64);
        assert_eq!(bits64(&t64), ys.iter().map(|&y| crate::math::tanh_f64(y).to_bits()).collect::<Vec<_>>());
        assert_eq!(bits64(&e64), ys.iter().map(|&y| crate::math::exp_f64(y).to_bits()).collect::<Vec<_>>());
        // GELU's loops (`WideLoop`s, the longest) against its functions called one element at a
        // time here, in the baseline build.
        use crate::ops::pointwise::PointwiseFn;
        use crate::ops::GeluFn;
        let gs: Vec<f32> = xs.iter().rev().copied().collect();
        let (mut y32, mut d32) = (Vec::new(), Vec::new());
        crate::ops::pointwise::forward_into::<f32, GeluFn>(&xs, &mut y32);
        crate::ops::pointwise::derivative_into::<f32, GeluFn>(&gs, &xs, &y32, &mut d32);
        let k = <GeluFn as PointwiseFn<f32>>::consts();
        let one_by_one: Vec<u32> = xs.iter().map(|x| <GeluFn as PointwiseFn<f32>>::forward(&k, x).to_bits()).collect();
        assert_eq!(bits32(&y32), one_by_one);
        let one_by_one: Vec<u32> = (0..xs.len())
            .map(|i| <GeluFn as PointwiseFn<f32>>::derivative(&k, &gs[i], &xs[i], &y32[i]).to_bits())
            .collect();
        assert_eq!(bits32(&d32), one_by_one);
        let (mut y64, mut d64) = (Vec::new(), Vec::new());
        crate::ops::pointwise::forward_into::<f64, GeluFn>(&ys, &mut y64);
        crate::ops::pointwise::derivative_into::<f64, GeluFn>(&ys, &ys, &y64, &mut d64);
        let k = <GeluFn as PointwiseFn<f64>>::consts();
        let one_by_one: Vec<u64> = ys.iter().map(|y| <GeluFn as PointwiseFn<f64>>::forward(&k, y).to_bits()).collect();
        assert_eq!(bits64(&y64), one_by_one);
        let one_by_one: Vec<u64> =
            ys.iter().zip(&y64).map(|(x, y)| <GeluFn as PointwiseFn<f64>>::derivative(&k, x, x, y).to_bits()).collect();
        assert_eq!(bits64(&d64), one_by_one);
    }

    /// The AVX2 packing of transposed columns copies every value where the element-by-element
    /// copy puts it, bits and NaN payloads included, for `f32` and `f64`, for every `inner`
    /// (whole blocks and a rest) and at an offset inside a wider panel; it packs nothing for
    /// other scalars, a CPU without AVX2, or columns that are not whole vectors.
    #[test]
    fn transposed_packing_is_the_element_copy() {
        fn check<A: Copy + 'static + PartialEq + core::fmt::Debug>(
            value: impl Fn(usize) -> A,
            bits: impl Fn(A) -> u64,
        ) {
            for inner in [0, 1, 7, 8, 9, 16, 23, 64] {
                for (cols, w, j0) in [(8, 8, 0), (8, 32, 8), (8, 16, 8)] {
                    let data: Vec<A> = (0..cols * inner).map(&value).collect();
                    let columns: Vec<&[A]> = (0..cols).map(|j| &data[j * inner..][..inner]).collect();
                    let mut pack = vec![value(usize::MAX); inner * w];
                    let done = super::pack_transposed(&columns, inner, &mut pack, w, j0);
                    if super::has_avx2() {
                        assert_eq!(done, inner - inner % (32 / core::mem::size_of::<A>()), "inner {inner}");
                    } else {
                        assert_eq!(done, 0);
                    }
                    for t in 0..done {
                        for (j, column) in columns.iter().enumerate() {
                            assert_eq!(bits(pack[t * w + j0 + j]), bits(column[t]), "t {t}, column {j}");
                        }
                    }
                    // Nothing outside the group's lanes and the packed rows is written.
                    for (k, &x) in pack.iter().enumerate() {
                        let (t, j) = (k / w, k % w);
                        if t >= done || j < j0 || j >= j0 + cols {
                            assert_eq!(bits(x), bits(value(usize::MAX)), "k {k}");
                        }
                    }
                }
            }
        }
        let f = |i: usize| {
            f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9) | (0x7f80_0001 * u32::from(i.is_multiple_of(5))))
        };
        check(f, |x: f32| u64::from(x.to_bits()));
        let d = |i: usize| f64::from_bits((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        check(d, f64::to_bits);
        // Not a float, or not whole vectors: nothing packed.
        let ints = [1i64, 2, 3, 4, 5, 6, 7, 8];
        let columns: Vec<&[i64]> = (0..8).map(|_| &ints[..]).collect();
        assert_eq!(super::pack_transposed(&columns, 8, &mut [0i64; 64], 8, 0), 0);
        let data = [0.5f32; 64];
        let five: Vec<&[f32]> = (0..5).map(|_| &data[..8]).collect();
        assert_eq!(super::pack_transposed(&five, 8, &mut [0.0f32; 64], 8, 0), 0);
    }

    fn packed<const MR: usize, const NR: usize, const HALF: usize>(
        isa: Isa,
        g: Geometry,
        pa: &[f32],
        pb: &[f32],
        out: &mut [f32],
    ) {
        isa.run(Packed::<f32, MR, NR, HALF, false> { g, pa, pb, out, onto: None });
    }

    /// The AVX2 and AVX-512 builds give the baseline kernel's bits (whichever path they take on
    /// the running CPU); `gemm_tests.rs` checks them against the definition on adversarial values.
    #[test]
    fn vector_entries_match_the_baseline_kernel() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let inner = 5;
        // A 6 × 16 tile (AVX2) and a 4 × 32 one (AVX-512).
        for (rows, cols, isa) in [(6, 16, Isa::Avx2), (4, 32, Isa::Avx512)] {
            let g = Geometry { rows, inner, cols };
            let pa: Vec<f32> = (0..rows * inner).map(|i| (i as f32 * 0.37).sin()).collect();
            let pb: Vec<f32> = (0..inner * cols).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
            let mut base = vec![0.5f32; rows * cols];
            let mut wide = base.clone();
            if rows == 6 {
                packed::<6, 16, 8>(Isa::Baseline, g, &pa, &pb, &mut base);
                packed::<6, 16, 8>(isa, g, &pa, &pb, &mut wide);
            } else {
                packed::<4, 32, 16>(Isa::Baseline, g, &pa, &pb, &mut base);
                packed::<4, 32, 16>(isa, g, &pa, &pb, &mut wide);
            }
            assert_eq!(bits(&base), bits(&wide));
        }
    }
}
