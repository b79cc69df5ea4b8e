//! The one place this crate uses `unsafe`: calling the GEMM kernel compiled for AVX2 or AVX-512F
//! after checking at run time that the CPU has it.
//!
//! The kernel is the same Rust code as the baseline one ([`fast::kernel`](super::fast)); only
//! LLVM's vector width changes (32- or 64-byte registers, so the register tile is wider). Only
//! `avx2` or `avx512f` is enabled — not `fma` — and Rust never lets LLVM contract `a * b + c`, so
//! each lane performs exactly the IEEE multiplications and additions of the portable loop, in the
//! same order: the results are bit-identical (`gemm_tests.rs` compares every path bit for bit).
//!
//! Measured (`cargo bench --bench gemm`, the W1 shapes): see the crate README's benchmark table.

use super::fast::{kernel, Lane};

/// Defines, for one instruction set: `$has()` (run-time detection, cached by the standard
/// library), `$entry` (the kernel built for it, or the baseline build when the CPU lacks it) and
/// the `#[target_feature]` body they call.
macro_rules! isa_entry {
    ($has:ident, $entry:ident, $body:ident, $feature:tt) => {
        #[doc = concat!("`true` when the running CPU supports `", $feature, "`.")]
        pub(super) fn $has() -> bool {
            std::is_x86_feature_detected!($feature)
        }

        #[doc = concat!("The kernel compiled with `", $feature, "`; the baseline build when the CPU lacks it.")]
        pub(super) fn $entry<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool>(
            rows: usize,
            inner: usize,
            cols: usize,
            pa: &[T],
            pb: &[T],
            out: &mut [T],
        ) {
            if $has() {
                // SAFETY: the body is a safe function whose only extra requirement is that the
                // CPU supports the feature it is compiled with (`#[target_feature]`), which was
                // checked just above.
                unsafe { $body::<T, MR, NR, HALF, RHS_LEFT>(rows, inner, cols, pa, pb, out) }
            } else {
                kernel::<T, MR, NR, HALF, RHS_LEFT>(rows, inner, cols, pa, pb, out);
            }
        }

        #[target_feature(enable = $feature)]
        fn $body<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool>(
            rows: usize,
            inner: usize,
            cols: usize,
            pa: &[T],
            pb: &[T],
            out: &mut [T],
        ) {
            kernel::<T, MR, NR, HALF, RHS_LEFT>(rows, inner, cols, pa, pb, out);
        }
    };
}

isa_entry!(has_avx2, kernel_avx2, kernel_avx2_body, "avx2");
isa_entry!(has_avx512, kernel_avx512, kernel_avx512_body, "avx512f");

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 and AVX-512 entry points give the baseline kernel's bits (whichever path they
    /// take on the running CPU); `gemm_tests.rs` checks them against the definition on
    /// adversarial values.
    #[test]
    fn vector_entries_match_the_baseline_kernel() {
        let (rows, inner, cols) = (6, 5, 16);
        let pa: Vec<f32> = (0..rows * inner).map(|i| (i as f32 * 0.37).sin()).collect();
        let pb: Vec<f32> = (0..inner * cols).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
        let mut base = vec![0.5f32; rows * cols];
        let mut avx = base.clone();
        kernel::<f32, 6, 16, 8, false>(rows, inner, cols, &pa, &pb, &mut base);
        kernel_avx2::<f32, 6, 16, 8, false>(rows, inner, cols, &pa, &pb, &mut avx);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&base), bits(&avx));
        // A 4 × 32 tile, the AVX-512 shape.
        let (rows, cols) = (4, 32);
        let pa: Vec<f32> = (0..rows * inner).map(|i| (i as f32 * 0.37).sin()).collect();
        let pb: Vec<f32> = (0..inner * cols).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
        let mut base = vec![-0.0f32; rows * cols];
        let mut wide = base.clone();
        kernel::<f32, 4, 32, 16, false>(rows, inner, cols, &pa, &pb, &mut base);
        kernel_avx512::<f32, 4, 32, 16, false>(rows, inner, cols, &pa, &pb, &mut wide);
        assert_eq!(bits(&base), bits(&wide));
    }
}
