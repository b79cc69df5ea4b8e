//! The thin kernels and the fused `gemm_onto` epilogue against the definition, bit for bit
//! (`to_bits`, NaN payloads included), for every instruction set the CPU runs.
//!
//! Shapes have one thin side — `cols`, `rows` or `inner` in `0..=9` (9 is just past the thin
//! limit) — and the other two drawn from the edges `0, 1, 7, 8, 9, 63, 64, 65` or at random, with
//! row-major, transposed and strided views of adversarial values (`±0`, `±∞`, NaNs with payloads,
//! quiet and signalling, subnormals, random bit patterns). Each kernel's result, after the NaN
//! pinning of `gemm` (run only when the kernel reports it may have stored a NaN, as `gemm` does),
//! must equal the strict definition: `fma(l, r, … fma(l, r, +0))` with the fused step's NaN rule
//! (the accumulator's NaN, else the left factor's, else the right one's) at every step, then
//! `pinned_add(stored, element)` for `gemm_onto`.

use super::fast::{fast_gemm_on, pin_nans, Isa};
use super::gemm_tests::{layout, StridedMatrix};
use super::thin::thin_gemm_on;
use super::{gemm, gemm_onto, gemm_portable, MatrixView};
use crate::scalar::Storage;
use proptest::prelude::*;

/// A side that is not thin: the edges around the vector widths and tile sizes, or any size.
fn side() -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        2 => Just(1usize),
        2 => Just(7usize),
        2 => Just(8usize),
        2 => Just(9usize),
        2 => Just(63usize),
        2 => Just(64usize),
        2 => Just(65usize),
        6 => 0usize..70,
    ]
}

/// `(rows, inner, cols)` with `cols`, `rows` or `inner` thin.
fn shape() -> impl Strategy<Value = (usize, usize, usize)> {
    (0usize..3, 0usize..=9, side(), side()).prop_map(|(which, thin, x, y)| match which {
        0 => (x, y, thin),
        1 => (thin, x, y),
        _ => (x, thin, y),
    })
}

macro_rules! thin_tests {
    ($m:ident, $t:ty, $bits:ty, $quiet:expr) => {
        mod $m {
            use super::*;
            use crate::ops::matmul::gemm_tests::$m::{bits, matrix, strict, strict_gemm, value};

            type Case = (usize, usize, usize, StridedMatrix<$t>, StridedMatrix<$t>, Vec<$t>);

            fn case(shape: impl Strategy<Value = (usize, usize, usize)>) -> impl Strategy<Value = Case> {
                shape.prop_flat_map(|(m, k, n)| {
                    (Just(m), Just(k), Just(n), matrix(m, k), matrix(k, n), prop::collection::vec(value(), 0..3))
                })
            }

            /// Mostly finite values of every magnitude (so that long sums round differently in
            /// any other order and rarely end in a NaN, whose pinning would recompute them), with
            /// a few signed zeros, subnormals, infinities and NaNs.
            fn finite(adversarial: u32) -> impl Strategy<Value = $t> {
                // Any sign and mantissa, exponents within ±40 of 1 (no overflow in long sums).
                let bias = <$t>::MAX_EXP as i64 - 1;
                let mant = <$t>::MANTISSA_DIGITS - 1;
                let scaled = (any::<bool>(), -40i64..=40, any::<$bits>()).prop_map(move |(neg, e, m)| {
                    let bits = ((e + bias) as $bits) << mant | (m & ((1 as $bits) << mant) - 1);
                    <$t>::from_bits(bits | if neg { 1 << (<$bits>::BITS - 1) } else { 0 })
                });
                prop_oneof![
                    40 => (-1.0e3 as $t..1.0e3 as $t),
                    20 => (-1.0 as $t..1.0 as $t),
                    10 => scaled,
                    4 => Just(-0.0 as $t),
                    2 => Just(0.0 as $t),
                    2 => prop::num::$m::SUBNORMAL,
                    adversarial => value(),
                ]
            }

            /// A case on [`finite`] values (`adversarial` the weight of [`value`]'s, out of ~80).
            fn finite_case(shape: impl Strategy<Value = (usize, usize, usize)>, adversarial: u32) -> impl Strategy<Value = Case> {
                let matrix = move |rows: usize, cols: usize| {
                    layout(rows, cols).prop_flat_map(move |(rs, cs, len)| {
                        prop::collection::vec(finite(adversarial), len).prop_map(move |data| StridedMatrix { data, rs, cs })
                    })
                };
                shape.prop_flat_map(move |(m, k, n)| {
                    (Just(m), Just(k), Just(n), matrix(m, k), matrix(k, n), prop::collection::vec(finite(adversarial), 0..3))
                })
            }

            /// The uniforms of the brief: `+0`, `-0`, NaNs with payloads (quiet, signalling,
            /// negative), `±∞`, `1.5`, and any adversarial value.
            fn uniform() -> impl Strategy<Value = $t> {
                let nan = <$t>::NAN.to_bits();
                prop_oneof![
                    Just(0.0 as $t),
                    Just(-0.0 as $t),
                    Just(<$t>::from_bits(nan | 0x15)),
                    Just(<$t>::from_bits((nan & !$quiet) | 0x2b)),
                    Just(-<$t>::from_bits(nan | 0x7)),
                    Just(<$t>::INFINITY),
                    Just(<$t>::NEG_INFINITY),
                    Just(1.5 as $t),
                    value(),
                ]
            }

            /// The definition: the strict product, then `pinned_add(stored, element)` (the left
            /// operand's NaN winning, as `Storage::pinned_add` does).
            fn definition<const RHS_LEFT: bool>(c: &Case, onto: Option<$t>) -> Vec<$bits> {
                let (m, k, n, a, b, prefix) = c;
                let mut v = strict_gemm::<RHS_LEFT>(*m, *k, *n, a, b, prefix);
                if let Some(stored) = onto {
                    for x in &mut v[prefix.len()..] {
                        let want = strict(stored, *x, |p, q| p + q);
                        prop_assert_eq_bits(want, <$t as Storage>::pinned_add(stored, *x));
                        *x = want;
                    }
                }
                bits(&v)
            }

            /// `strict` (the tests' own NaN rule) and `Storage::pinned_add` agree.
            fn prop_assert_eq_bits(x: $t, y: $t) {
                assert_eq!(x.to_bits(), y.to_bits(), "strict and pinned_add disagree");
            }

            /// A kernel's output, checked: a NaN it stored was reported, and after `gemm`'s
            /// pinning (when reported) the bits are the definition's.
            fn checked<const RHS_LEFT: bool>(
                c: &Case,
                onto: Option<$t>,
                mut out: Vec<$t>,
                nan: bool,
                want: &[$bits],
                what: &str,
            ) -> Result<(), TestCaseError> {
                let (m, k, n, a, b, prefix) = c;
                prop_assert!(nan || !out[prefix.len()..].iter().any(|x| x.is_nan()), "{}: a NaN stored unreported", what);
                if nan {
                    pin_nans::<$t, RHS_LEFT>(*m, *k, *n, a.view(), b.view(), &mut out, prefix.len(), onto.as_ref());
                }
                prop_assert_eq!(bits(&out), want.to_vec(), "{}", what);
                Ok(())
            }

            fn check<const RHS_LEFT: bool>(c: &Case, onto: Option<$t>) -> Result<(), TestCaseError> {
                let (m, k, n, a, b, prefix) = c;
                let (av, bv) = (a.view(), b.view());
                let want = definition::<RHS_LEFT>(c, onto);
                for isa in Isa::available() {
                    // The thin kernels (when the shape and layout have one).
                    let mut out = prefix.clone();
                    match thin_gemm_on::<$t, RHS_LEFT>(isa, *m, *k, *n, av, bv, onto.as_ref(), &mut out) {
                        Some(nan) => checked::<RHS_LEFT>(c, onto, out, nan, &want, &format!("thin {isa:?}"))?,
                        None => prop_assert_eq!(bits(&out), bits(prefix), "untouched when not thin"),
                    }
                    // The packed kernel with the same epilogue.
                    let mut out = prefix.clone();
                    let nan = fast_gemm_on::<$t, RHS_LEFT>(isa, *m, *k, *n, av, bv, onto.as_ref(), &mut out);
                    prop_assert!(nan.is_some());
                    checked::<RHS_LEFT>(c, onto, out, nan == Some(true), &want, &format!("packed {isa:?}"))?;
                }
                // The public functions; `gemm_onto` is `gemm` then `pinned_add`.
                let mut public = prefix.clone();
                match onto {
                    Some(stored) => gemm_onto::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &stored, &mut public),
                    None => gemm::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &mut public),
                }
                prop_assert_eq!(bits(&public), want.clone(), "public");
                if let Some(stored) = onto {
                    let mut pass = prefix.clone();
                    gemm::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &mut pass);
                    for x in &mut pass[prefix.len()..] {
                        *x = <$t as Storage>::pinned_add(stored, *x);
                    }
                    prop_assert_eq!(bits(&pass), want, "gemm + pinned_add");
                }
                Ok(())
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(256))]

                #[test]
                fn thin_shapes_are_bit_identical(c in case(shape())) {
                    check::<false>(&c, None)?;
                    check::<true>(&c, None)?;
                }

                /// Long finite sums: every rounding of the definition, in its order.
                #[test]
                fn thin_shapes_on_finite_values(c in finite_case(shape(), 1), stored in uniform()) {
                    check::<false>(&c, None)?;
                    check::<true>(&c, Some(stored))?;
                }

                #[test]
                fn onto_is_gemm_then_pinned_add(c in case(shape()), stored in uniform()) {
                    check::<false>(&c, Some(stored))?;
                    check::<true>(&c, Some(stored))?;
                }

                /// Any shape (the packed kernel's epilogue, too).
                #[test]
                fn onto_small_shapes(c in case((0usize..20, 0usize..20, 0usize..40)), stored in uniform()) {
                    check::<false>(&c, Some(stored))?;
                    check::<true>(&c, Some(stored))?;
                }
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(16))]

                /// Long sums past the packed kernel's inner chunk, through the thin kernels.
                #[test]
                fn thin_long_inner(
                    c in finite_case((0usize..2, 250usize..700, 1usize..70, 0usize..=9).prop_map(|(w, k, x, t)| if w == 0 { (x, k, t) } else { (t, k, x) }), 0),
                    stored in uniform(),
                ) {
                    check::<false>(&c, Some(stored))?;
                    check::<true>(&c, None)?;
                }
            }

            /// The W4 head products (finite values with signed zeros, then with a NaN): the thin
            /// route is taken for each (all instruction sets) and matches the definition.
            #[test]
            fn head_products_take_the_thin_kernels() {
                let w: Vec<$t> = (0..64 * 64).map(|i| ((i * 7919) % 2003) as $t / 1001.3 - 1.0).collect();
                let mut x: Vec<$t> = (0..64).map(|i| ((i * 31) % 17) as $t / 7.1 - 1.0).collect();
                x[5] = -0.0;
                head_products(&w, &x);
                x[9] = <$t>::from_bits(<$t>::NAN.to_bits() | 0x3);
                head_products(&w, &x);
            }

            fn head_products(w: &Vec<$t>, x: &Vec<$t>) {
                let stored = |rs, cs, data: &Vec<$t>| StridedMatrix { data: data.clone(), rs, cs };
                let cases: [(usize, usize, usize, StridedMatrix<$t>, StridedMatrix<$t>, bool); 5] = [
                    // W · x, W row-major (transposing kernel).
                    (64, 64, 1, stored(64, 1, w), stored(1, 1, x), false),
                    // Wᵀ · δ, RHS_LEFT (direct kernel).
                    (64, 64, 1, stored(1, 64, w), stored(1, 1, x), true),
                    // δ · xᵀ (inner 1).
                    (64, 1, 64, stored(1, 1, x), stored(1, 1, x), false),
                    // xᵀ · W (rows 1) and xᵀ · Wᵀ.
                    (1, 64, 64, stored(64, 1, x), stored(64, 1, w), false),
                    (1, 64, 64, stored(64, 1, x), stored(1, 64, w), true),
                ];
                for (m, k, n, a, b, rhs_left) in cases {
                    for isa in Isa::available() {
                        let mut out = Vec::new();
                        let c: Case = (m, k, n, a.clone(), b.clone(), Vec::new());
                        let nan = if rhs_left {
                            thin_gemm_on::<$t, true>(isa, m, k, n, a.view(), b.view(), None, &mut out)
                        } else {
                            thin_gemm_on::<$t, false>(isa, m, k, n, a.view(), b.view(), None, &mut out)
                        };
                        let nan = nan.expect("a thin route");
                        let result = if rhs_left {
                            checked::<true>(&c, None, out, nan, &definition::<true>(&c, None), "head")
                        } else {
                            checked::<false>(&c, None, out, nan, &definition::<false>(&c, None), "head")
                        };
                        result.expect("bit-identical");
                    }
                }
            }
        }
    };
}

thin_tests!(f32, f32, u32, 1u32 << 22);
thin_tests!(f64, f64, u64, 1u64 << 51);

/// `gemm_onto` for scalars without a fast kernel: the portable loop, then `stored + element`.
#[test]
fn onto_for_other_scalars() {
    let a = [1i64, 2, 3, 4, 5, 6];
    let (l, r) = (MatrixView::row_major(&a, 3), MatrixView::row_major(&a, 2));
    let mut plain = Vec::new();
    gemm_portable::<i64, false>(2, 3, 2, l, r, &mut plain);
    let mut onto = vec![7];
    gemm_onto::<i64, false>(2, 3, 2, l, r, &100, &mut onto);
    assert_eq!(onto, [7, 100 + plain[0], 100 + plain[1], 100 + plain[2], 100 + plain[3]]);
}
