//! The transposing kernels (AVX2): `a` contiguous along the inner index, blocks transposed in
//! registers.

use super::*;

/// AVX2 vectors of `f32`: eight lanes, an 8 × 8 transpose.
#[cfg(target_arch = "x86_64")]
mod f32x8 {
    use core::arch::x86_64::*;

    pub(super) type T = f32;
    pub(super) type V = __m256;
    pub(super) const L: usize = 8;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn zero() -> V {
        _mm256_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn splat(x: T) -> V {
        _mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add(a: V, b: V) -> V {
        _mm256_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    /// `a · b + c` fused (one rounding).
    pub(super) fn fma(a: V, b: V, c: V) -> V {
        _mm256_fmadd_ps(a, b, c)
    }
    /// The vector of `x` (from consecutive elements, one vector load).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn set(x: [T; L]) -> V {
        _mm256_setr_ps(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7])
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
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
    #[target_feature(enable = "avx2,fma")]
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
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn zero() -> V {
        _mm256_setzero_pd()
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn splat(x: T) -> V {
        _mm256_set1_pd(x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add(a: V, b: V) -> V {
        _mm256_add_pd(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    /// `a · b + c` fused (one rounding).
    pub(super) fn fma(a: V, b: V, c: V) -> V {
        _mm256_fmadd_pd(a, b, c)
    }
    /// The vector of `x` (from consecutive elements, one vector load).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn set(x: [T; L]) -> V {
        _mm256_setr_pd(x[0], x[1], x[2], x[3])
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
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
    #[target_feature(enable = "avx2,fma")]
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
            use super::$lanes::{add, fma, set, splat, to_array, transpose, zero, L, T, V};
            use super::{tail_rows, Thin, GROUP};
            use crate::ops::matmul::fast::lane;

            /// The transposing kernel (`a` contiguous along `t`; see the [module docs](super));
            /// whether it may have stored a NaN.
            #[target_feature(enable = "avx2,fma")]
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
                            nan |= grouped::<A, $grouped, GROUP, B_LEFT>(p, m0, j, onto, out);
                            m0 += $grouped * L;
                        }
                        while m0 < whole {
                            nan |= grouped::<A, 1, GROUP, B_LEFT>(p, m0, j, onto, out);
                            m0 += L;
                        }
                    } else {
                        while m0 + $single * L <= whole {
                            nan |= grouped::<A, $single, 1, B_LEFT>(p, m0, j, onto, out);
                            m0 += $single * L;
                        }
                        while m0 < whole {
                            nan |= grouped::<A, 1, 1, B_LEFT>(p, m0, j, onto, out);
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

            /// `a[m..m + L, t]`, gathered (the inner indices after whole chunks).
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            fn column<A: 'static>(p: &Thin<'_, A>, m: usize, t: usize) -> V {
                set(core::array::from_fn(|i| lane(p.a.at(m + i, t))))
            }

            /// Stores outputs `m..m + L` of columns `j0..j0 + acc.len()` (`stored + acc` for
            /// `gemm_onto`); whether one is a NaN.
            #[inline]
            #[target_feature(enable = "avx2,fma")]
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
                    nan |= crate::ops::matmul::fast::any_nan(&v);
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

            /// `NJ` columns from `j0`, `NB` blocks of `L` rows from `m0`: each `L × L` block of `a`
            /// is transposed once in registers (vector `t` holds `a[m..m + L, t]`) and fused with
            /// the broadcast `b[t, j]` of every column, `t` ascending.
            #[inline(never)] // one copy per shape of the loops, not one per call site
            #[target_feature(enable = "avx2,fma")]
            fn grouped<A: 'static, const NB: usize, const NJ: usize, const B_LEFT: bool>(
                p: &Thin<'_, A>,
                m0: usize,
                j0: usize,
                onto: Option<T>,
                out: &mut [T],
            ) -> bool {
                let fused = |x: V, b: V, s: V| if B_LEFT { fma(b, x, s) } else { fma(x, b, s) };
                let mut acc = [[zero(); NJ]; NB];
                for c in 0..p.k / L {
                    let mut bs = [[zero(); L]; NJ];
                    for (g, bg) in bs.iter_mut().enumerate() {
                        for (x, v) in bg.iter_mut().zip(b_chunk(p, c, j0 + g)) {
                            *x = splat(v);
                        }
                    }
                    for (blk, sb) in acc.iter_mut().enumerate() {
                        // `a[m + i, c · L .. c · L + L]` for `i < L`, one vector per row, written
                        // out here rather than called: as an `#[inline]` function LLVM stopped
                        // inlining it (which halved the matrix–vector speed), and
                        // `#[inline(always)]` cannot go with `#[target_feature]`. Addresses are
                        // computed, not loaded: a table of row slices in memory made the loads wait
                        // on the stores of the accumulators.
                        let (rs, t, m) = (p.a.row_stride, c * L, m0 + blk * L);
                        let mut rows = [zero(); L];
                        for (i, v) in rows.iter_mut().enumerate() {
                            let chunk = &p.a.data[(m + i) * rs + t..][..L];
                            *v = set(core::array::from_fn(|q| lane(&chunk[q])));
                        }
                        let cols = transpose(rows);
                        for (s, bg) in sb.iter_mut().zip(&bs) {
                            for (&ct, &bt) in cols.iter().zip(bg) {
                                *s = fused(ct, bt, *s);
                            }
                        }
                    }
                }
                for t in p.k - p.k % L..p.k {
                    for (blk, sb) in acc.iter_mut().enumerate() {
                        let c = column(p, m0 + blk * L, t);
                        for (g, s) in sb.iter_mut().enumerate() {
                            *s = fused(c, splat(lane(p.b.at(t, j0 + g))), *s);
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
pub(in crate::ops::matmul) use {avx2_f32::kernel as transposing_f32_avx2, avx2_f64::kernel as transposing_f64_avx2};

/// Defines `$name`: `pack[t · w + j0 + j] = columns[j][t]` for every column (their count a
/// multiple of `L`) and every `t` of the whole blocks of `L` in `0..inner`, each `L × L` block
/// read as `L` vector loads, transposed in registers and written as `L` runs — the small-product
/// kernel's packing of a transposed right operand (`small.rs`, `pack_columns`), which copies
/// element by element otherwise. Returns how many `t` it packed (the caller copies the rest; 0
/// when the columns are not whole vectors). A copy: every value keeps its bits.
#[cfg(target_arch = "x86_64")]
macro_rules! pack_transposed_avx2 {
    ($name:ident, $lanes:ident) => {
        #[target_feature(enable = "avx2,fma")]
        pub(in crate::ops::matmul) fn $name<A: 'static>(
            columns: &[&[A]],
            inner: usize,
            pack: &mut [A],
            w: usize,
            j0: usize,
        ) -> usize {
            use crate::ops::matmul::fast::lane;
            use $lanes::{set, to_array, transpose, zero, L, T, V};
            let fits = j0.checked_add(columns.len()).is_some_and(|end| end <= w)
                && inner.checked_mul(w).is_some_and(|n| n <= pack.len());
            if columns.is_empty() || columns.len() % L != 0 || !fits || columns.iter().any(|c| c.len() < inner) {
                return 0;
            }
            let blocks = inner / L;
            for (g, group) in columns.chunks_exact(L).enumerate() {
                let j = j0 + g * L;
                for b in 0..blocks {
                    let t0 = b * L;
                    let mut rows: [V; L] = [zero(); L];
                    for (row, column) in rows.iter_mut().zip(group) {
                        let run = &column[t0..t0 + L];
                        let mut x = [0.0 as T; L];
                        for (x, v) in x.iter_mut().zip(run) {
                            *x = lane(v);
                        }
                        *row = set(x);
                    }
                    for (i, col) in transpose(rows).into_iter().enumerate() {
                        let dst = &mut pack[(t0 + i) * w + j..][..L];
                        for (d, v) in dst.iter_mut().zip(to_array(col)) {
                            if let Some(d) = (d as &mut dyn core::any::Any).downcast_mut::<T>() {
                                *d = v;
                            }
                        }
                    }
                }
            }
            blocks * L
        }
    };
}

#[cfg(target_arch = "x86_64")]
pack_transposed_avx2!(pack_transposed_f32_avx2, f32x8);
#[cfg(target_arch = "x86_64")]
pack_transposed_avx2!(pack_transposed_f64_avx2, f64x4);
