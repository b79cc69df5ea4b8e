//! The fast `f32`/`f64` GEMM against the portable kernel, bit for bit (`to_bits`), on random
//! shapes (0, 1, odd, not multiples of the register tile or of the inner chunk), strided views and
//! adversarial values (`±0`, NaN payloads, `±inf`, subnormals, overflow, cancellation).
//!
//! Three results are compared with `to_bits`: the public `gemm`, the fast kernel and the portable
//! kernel (each followed by the NaN-payload pinning of `gemm`), and an independent strict loop
//! that applies the documented NaN rule at every operation. The raw kernels (without pinning) are
//! also compared: bit-identical on every element that is not a NaN, NaN on the same elements.

use super::fast::{fast_gemm, fast_gemm_on, pin_nans, Isa};
use super::{gemm, gemm_portable, MatrixView};
use proptest::prelude::*;

/// A logical `rows × cols` matrix stored with some layout: `data[r * rs + c * cs]`.
#[derive(Clone, Debug)]
pub(super) struct StridedMatrix<T> {
    pub(super) data: Vec<T>,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

impl<T> StridedMatrix<T> {
    pub(super) fn view(&self) -> MatrixView<'_, T> {
        MatrixView { data: &self.data, row_stride: self.rs, col_stride: self.cs }
    }
}

/// Strides for a `rows × cols` matrix: row-major, column-major (a transposed view) or both strides
/// above one, each with padding; returns `(row_stride, col_stride, data_len)`.
pub(super) fn layout(rows: usize, cols: usize) -> impl Strategy<Value = (usize, usize, usize)> {
    (0usize..3, 0usize..3, 2usize..4).prop_map(move |(kind, pad, step)| {
        let (rs, cs) = match kind {
            0 => (cols + pad, 1),
            1 => (1, rows + pad),
            _ => ((cols * step) + pad, step),
        };
        let len = if rows == 0 || cols == 0 { pad } else { (rows - 1) * rs + (cols - 1) * cs + 1 + pad };
        (rs, cs, len)
    })
}

macro_rules! float_tests {
    ($m:ident, $t:ty, $bits:ty, $mant:expr, $exp:expr) => {
        pub(super) mod $m {
            use super::*;

            /// Adversarial scalars: signed zeros, infinities, NaNs with random payloads (quiet and
            /// signalling, both signs), subnormals, random bit patterns (overflow/underflow),
            /// small integers (exact products, cancellation to `±0`) and ordinary values.
            pub(in crate::ops::matmul) fn value() -> impl Strategy<Value = $t> {
                let sign = 1 as $bits << ($mant + $exp);
                let inf = ((1 as $bits << $exp) - 1) << $mant;
                let mant_mask = (1 as $bits << $mant) - 1;
                prop_oneof![
                    2 => Just(0.0 as $t),
                    2 => Just(-0.0 as $t),
                    1 => Just(<$t>::INFINITY),
                    1 => Just(<$t>::NEG_INFINITY),
                    2 => (1 as $bits..=mant_mask, any::<bool>())
                        .prop_map(move |(m, s)| <$t>::from_bits(inf | m | if s { sign } else { 0 })),
                    2 => (1 as $bits..=mant_mask, any::<bool>())
                        .prop_map(move |(m, s)| <$t>::from_bits(m | if s { sign } else { 0 })),
                    3 => any::<$bits>().prop_map(<$t>::from_bits),
                    4 => (-4i8..=4).prop_map(|i| i as $t),
                    4 => (-1.0e3 as $t..1.0e3 as $t),
                    2 => prop::num::$m::ANY,
                ]
            }

            pub(in crate::ops::matmul) fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = StridedMatrix<$t>> {
                layout(rows, cols).prop_flat_map(|(rs, cs, len)| {
                    prop::collection::vec(value(), len).prop_map(move |data| StridedMatrix { data, rs, cs })
                })
            }

            /// `(rows, inner, cols, lhs, rhs, prefix of out)`.
            fn case(
                rows: impl Strategy<Value = usize>,
                inner: impl Strategy<Value = usize>,
                cols: impl Strategy<Value = usize>,
            ) -> impl Strategy<Value = (usize, usize, usize, StridedMatrix<$t>, StridedMatrix<$t>, Vec<$t>)> {
                (rows, inner, cols).prop_flat_map(|(m, k, n)| {
                    (Just(m), Just(k), Just(n), matrix(m, k), matrix(k, n), prop::collection::vec(value(), 0..3))
                })
            }

            pub(in crate::ops::matmul) fn bits(v: &[$t]) -> Vec<$bits> {
                v.iter().map(|x| x.to_bits()).collect()
            }

            /// IEEE operation with the NaN rule of `gemm`: left operand's NaN (quieted), else
            /// the right one's, else the hardware result.
            pub(in crate::ops::matmul) fn strict(x: $t, y: $t, op: fn($t, $t) -> $t) -> $t {
                let quiet = 1 as $bits << ($mant - 1);
                if x.is_nan() {
                    <$t>::from_bits(x.to_bits() | quiet)
                } else if y.is_nan() {
                    <$t>::from_bits(y.to_bits() | quiet)
                } else {
                    op(x, y)
                }
            }

            /// `x · y + acc` rounded once (the standard library's `mul_add`) with the NaN rule of
            /// `gemm`'s fused step: `acc`'s NaN (quieted), else `x`'s, else `y`'s, else the
            /// hardware result.
            pub(in crate::ops::matmul) fn strict_fma(x: $t, y: $t, acc: $t) -> $t {
                let quiet = 1 as $bits << ($mant - 1);
                if acc.is_nan() {
                    <$t>::from_bits(acc.to_bits() | quiet)
                } else if x.is_nan() {
                    <$t>::from_bits(x.to_bits() | quiet)
                } else if y.is_nan() {
                    <$t>::from_bits(y.to_bits() | quiet)
                } else {
                    x.mul_add(y, acc)
                }
            }

            /// The definition, element by element: `fma(l, r, … fma(l, r, +0))` over the inner
            /// index ascending, every step strict ([`strict_fma`]).
            pub(in crate::ops::matmul) fn strict_gemm<const RHS_LEFT: bool>(
                m: usize,
                k: usize,
                n: usize,
                a: &StridedMatrix<$t>,
                b: &StridedMatrix<$t>,
                prefix: &[$t],
            ) -> Vec<$t> {
                let mut v = prefix.to_vec();
                for r in 0..m {
                    for c in 0..n {
                        let mut acc: $t = 0.0;
                        for t in 0..k {
                            let l = a.data[r * a.rs + t * a.cs];
                            let x = b.data[t * b.rs + c * b.cs];
                            acc = if RHS_LEFT { strict_fma(x, l, acc) } else { strict_fma(l, x, acc) };
                        }
                        v.push(acc);
                    }
                }
                v
            }

            fn check<const RHS_LEFT: bool>(
                m: usize,
                k: usize,
                n: usize,
                a: &StridedMatrix<$t>,
                b: &StridedMatrix<$t>,
                prefix: &[$t],
            ) -> Result<(), TestCaseError> {
                let (av, bv) = (a.view(), b.view());
                let mut portable = prefix.to_vec();
                gemm_portable::<$t, RHS_LEFT>(m, k, n, av, bv, &mut portable);
                let want = bits(&strict_gemm::<RHS_LEFT>(m, k, n, a, b, prefix));
                // The kernel of every instruction set this CPU runs (baseline, AVX2).
                for isa in Isa::available() {
                    let mut fast = prefix.to_vec();
                    let nan = fast_gemm_on::<$t, RHS_LEFT>(isa, m, k, n, av, bv, None, &mut fast);
                    prop_assert!(nan.is_some());
                    prop_assert!(nan == Some(true) || !fast[prefix.len()..].iter().any(|x| x.is_nan()), "a NaN stored unreported");
                    // Raw kernels: identical except possibly the payload of NaN elements.
                    prop_assert_eq!(portable.len(), fast.len());
                    for (i, (x, y)) in portable.iter().zip(&fast).enumerate() {
                        prop_assert!(
                            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                            "{:?} element {}: portable {:#x}, fast {:#x}", isa, i, x.to_bits(), y.to_bits()
                        );
                    }
                    // Pinned: bit for bit, NaN payloads included.
                    pin_nans::<$t, RHS_LEFT>(m, k, n, av, bv, &mut fast, prefix.len(), None);
                    prop_assert_eq!(bits(&fast), want.clone(), "{:?}", isa);
                }
                pin_nans::<$t, RHS_LEFT>(m, k, n, av, bv, &mut portable, prefix.len(), None);
                prop_assert_eq!(bits(&portable), want.clone());
                let mut public = prefix.to_vec();
                gemm::<$t, RHS_LEFT>(m, k, n, av, bv, &mut public);
                prop_assert_eq!(bits(&public), want);
                Ok(())
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(384))]

                #[test]
                fn small_shapes_are_bit_identical((m, k, n, a, b, prefix) in case(0usize..20, 0usize..20, 0usize..40)) {
                    check::<false>(m, k, n, &a, &b, &prefix)?;
                    check::<true>(m, k, n, &a, &b, &prefix)?;
                }
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(24))]

                /// Inner sizes around and past the inner chunk (`KC`), so the accumulators are
                /// stored and reloaded between chunks.
                #[test]
                fn long_inner_is_bit_identical((m, k, n, a, b, prefix) in case(1usize..14, 250usize..700, 1usize..21)) {
                    check::<false>(m, k, n, &a, &b, &prefix)?;
                    check::<true>(m, k, n, &a, &b, &prefix)?;
                }
            }

            /// The MatMul forward and VJP views on an MLP-like shape (large enough for `gemm` to
            /// take the fast path by itself).
            #[test]
            fn matmul_views_are_bit_identical() {
                let (m, k, n) = (13, 300, 37);
                let a: Vec<$t> = (0..m * k).map(|i| ((i * 7919) % 1013) as $t / 97.0 - 5.0).collect();
                let b: Vec<$t> = (0..k * n).map(|i| ((i * 104_729) % 977) as $t / 89.0 - 5.5).collect();
                let g: Vec<$t> = (0..m * n).map(|i| ((i * 31) % 101) as $t / 7.0 - 7.0).collect();
                let run = |f: &dyn Fn(&mut Vec<$t>)| {
                    let mut v = Vec::new();
                    f(&mut v);
                    bits(&v)
                };
                let (ar, br, gr) =
                    (MatrixView::row_major(&a, k), MatrixView::row_major(&b, n), MatrixView::row_major(&g, n));
                let (bt, at) = (MatrixView::transposed(&b, n), MatrixView::transposed(&a, k));
                assert_eq!(
                    run(&|o| gemm::<$t, false>(m, k, n, ar, br, o)),
                    run(&|o| gemm_portable::<$t, false>(m, k, n, ar, br, o))
                );
                assert_eq!(
                    run(&|o| gemm::<$t, false>(m, n, k, gr, bt, o)),
                    run(&|o| gemm_portable::<$t, false>(m, n, k, gr, bt, o))
                );
                assert_eq!(
                    run(&|o| gemm::<$t, true>(k, m, n, at, gr, o)),
                    run(&|o| gemm_portable::<$t, true>(k, m, n, at, gr, o))
                );
            }

            /// Two NaNs meeting: the left factor's payload wins (quieted), then the accumulator's,
            /// in every build profile and on both paths.
            #[test]
            fn nan_payload_rule() {
                let quiet = 1 as $bits << ($mant - 1);
                let nan = |p: $bits, neg: bool| {
                    <$t>::from_bits((((1 as $bits << $exp) - 1) << $mant) | p | if neg { 1 as $bits << ($mant + $exp) } else { 0 })
                };
                let (n1, n2, n3) = (nan(1, false), nan(quiet | 2, false), nan(quiet | 3, true));
                for cols in [1usize, 3, 8, 9, 17, 40] {
                    for rows in [1usize, 7, 130] {
                        // out[r, c] = fma(1, n3, fma(a0, n2, +0)) with a0 = n1 (signalling) on every row:
                        // the first step's left factor wins, then the accumulator.
                        let a: Vec<$t> = (0..rows).flat_map(|_| [n1, 1.0]).collect();
                        let b: Vec<$t> = [vec![n2; cols], vec![n3; cols]].concat();
                        let (av, bv) = (MatrixView::row_major(&a, 2), MatrixView::row_major(&b, cols));
                        let mut o = Vec::new();
                        gemm::<$t, false>(rows, 2, cols, av, bv, &mut o);
                        assert!(o.iter().all(|x| x.to_bits() == n1.to_bits() | quiet), "{rows}x{cols}");
                        let mut o = Vec::new();
                        gemm::<$t, true>(rows, 2, cols, av, bv, &mut o);
                        assert!(o.iter().all(|x| x.to_bits() == n2.to_bits()), "{rows}x{cols}");
                    }
                }
            }
        }
    };
}

float_tests!(f32, f32, u32, 23, 8);
float_tests!(f64, f64, u64, 52, 11);

/// A sum that ends in `-0 + +0`-style cancellations starts from `+0`, as in the portable kernel.
#[test]
fn sums_start_from_positive_zero() {
    let a = [-0.0f64; 8];
    let b = [1.0f64; 8];
    let mut out: Vec<f64> = Vec::new();
    assert!(fast_gemm::<f64, false>(1, 8, 1, MatrixView::row_major(&a, 8), MatrixView::row_major(&b, 1), &mut out)
        .is_some());
    assert_eq!(out[0].to_bits(), 0);
}

/// Other scalars take the portable kernel.
#[test]
fn other_scalars_are_portable() {
    let a = [1i64, 2, 3, 4];
    let mut out = vec![9];
    assert!(fast_gemm::<i64, false>(2, 2, 2, MatrixView::row_major(&a, 2), MatrixView::row_major(&a, 2), &mut out)
        .is_none());
    assert_eq!(out, [9]);
    gemm::<i64, false>(2, 2, 2, MatrixView::row_major(&a, 2), MatrixView::row_major(&a, 2), &mut out);
    assert_eq!(out, [9, 7, 10, 15, 22]);
}
