//! The one place this crate uses `unsafe`: calling GEMM kernels compiled for AVX2 or AVX-512F
//! after checking at run time that the CPU has it.
//!
//! [`run_avx2`] and [`run_avx512`] run any [`Kernel`] — the packed kernel of
//! [`fast`](super::fast), the thin kernels of [`thin`] — whose `run` is inlined into a
//! body built with the feature: the same Rust code as the baseline build, only LLVM's vector width
//! changes. [`transposing_f32`] and [`transposing_f64`] call the thin kernels written with AVX2
//! intrinsics (in-register transposes, `thin.rs`), which are safe functions apart from needing
//! the feature. Only `avx2` or `avx512f` is enabled — not `fma` — and Rust never lets LLVM
//! contract `a * b + c`, so each lane performs exactly the IEEE multiplications and additions of
//! the portable loop, in the same order: the results are bit-identical (`gemm_tests.rs` and
//! `thin_tests.rs` compare every path bit for bit).
//!
//! Measured (`cargo bench --bench gemm`): see the crate README's benchmark table.

use super::fast::Kernel;
use super::thin::{self, Thin};

/// Defines, for one instruction set: `$has()` (run-time detection, cached by the standard
/// library), `$entry` (runs a kernel built for it, or the baseline build when the CPU lacks it)
/// and the `#[target_feature]` body it calls.
macro_rules! isa_entry {
    ($has:ident, $entry:ident, $body:ident, $feature:tt) => {
        #[doc = concat!("`true` when the running CPU supports `", $feature, "`.")]
        pub(super) fn $has() -> bool {
            std::is_x86_feature_detected!($feature)
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
        fn $body<K: Kernel>(k: K) -> bool {
            k.run()
        }
    };
}

isa_entry!(has_avx2, run_avx2, run_avx2_body, "avx2");
isa_entry!(has_avx512, run_avx512, run_avx512_body, "avx512f");

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

#[cfg(test)]
mod tests {
    use crate::ops::matmul::fast::{Geometry, Isa, Packed};

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
