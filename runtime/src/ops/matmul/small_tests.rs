//! The small-product kernel (`small.rs`) against the definition, bit for bit (`to_bits`, NaN
//! payloads included), for every instruction set the CPU runs, `f32` and `f64`.
//!
//! Shapes sweep the tile edges (rows around `MR` = 4, columns around the tile widths, so that the
//! last row and column panels overlap the previous ones) and the attention block's products with
//! their transposed views; values are adversarial (`±0`, `±∞`, NaNs with payloads, subnormals,
//! random bit patterns) or mostly finite over many magnitudes (so that a sum taken in any other
//! order rounds differently: the attention test checks that a reversed order is caught). Each
//! result, after `gemm`'s NaN pinning when the kernel reports a NaN, must equal the strict
//! definition, then `pinned_add(stored, element)` for `gemm_onto`.

use super::fast::{pin_nans, Isa};
use super::gemm_tests::{layout, StridedMatrix};
use super::small::{small_gemm_on, SMALL};
use super::{gemm, gemm_onto, MatrixView};
use proptest::prelude::*;

/// The narrowest tile width of the small kernel for `isa` and a lane of `bytes` bytes.
fn half(isa: Isa, bytes: usize) -> usize {
    let nr = match isa {
        Isa::Baseline => 32,
        Isa::Avx2 => 64,
        Isa::Avx512 => 128,
    } / bytes;
    nr / 2
}

/// Whether the small kernel must take this product.
fn taken<T>(isa: Isa, m: usize, k: usize, n: usize, a: &StridedMatrix<T>, b: &StridedMatrix<T>) -> bool {
    let unit = |s: &StridedMatrix<T>| s.rs == 1 || s.cs == 1;
    m >= 4 && n >= half(isa, core::mem::size_of::<T>()) && k > 0 && unit(a) && unit(b) && m * k + k * n <= SMALL
}

/// Edges of a side: around the row tile (4) and the tile widths (4, 8, 16, 32 lanes), or any.
fn side() -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        1 => Just(1usize),
        3 => 3usize..=9,
        3 => 15usize..=17,
        3 => 31usize..=33,
        2 => Just(64usize),
        4 => 0usize..70,
    ]
}

macro_rules! small_tests {
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

            /// Mostly finite values of every magnitude, a few signed zeros and subnormals, and
            /// adversarial values with weight `adversarial` (out of ~80).
            fn finite(adversarial: u32) -> impl Strategy<Value = $t> {
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

            /// `+0`, `-0`, NaNs with payloads, `±∞`, `1.5` or any adversarial value.
            fn uniform() -> impl Strategy<Value = $t> {
                let nan = <$t>::NAN.to_bits();
                prop_oneof![
                    Just(0.0 as $t),
                    Just(-0.0 as $t),
                    Just(<$t>::from_bits(nan | 0x15)),
                    Just(<$t>::from_bits((nan & !$quiet) | 0x2b)),
                    Just(<$t>::INFINITY),
                    Just(<$t>::NEG_INFINITY),
                    Just(1.5 as $t),
                    value(),
                ]
            }

            /// The strict product, then `stored + element` with the left operand's NaN winning.
            fn definition<const RHS_LEFT: bool>(c: &Case, onto: Option<$t>) -> Vec<$bits> {
                let (m, k, n, a, b, prefix) = c;
                let mut v = strict_gemm::<RHS_LEFT>(*m, *k, *n, a, b, prefix);
                if let Some(stored) = onto {
                    for x in &mut v[prefix.len()..] {
                        *x = strict(stored, *x, |p, q| p + q);
                    }
                }
                bits(&v)
            }

            /// The small kernel on every instruction set (taken exactly when it should be), then
            /// the public functions.
            fn check<const RHS_LEFT: bool>(c: &Case, onto: Option<$t>) -> Result<(), TestCaseError> {
                let (m, k, n, a, b, prefix) = c;
                let (av, bv) = (a.view(), b.view());
                let want = definition::<RHS_LEFT>(c, onto);
                for isa in Isa::available() {
                    let mut out = prefix.clone();
                    match small_gemm_on::<$t, RHS_LEFT>(isa, *m, *k, *n, av, bv, onto.as_ref(), &mut out) {
                        Some(nan) => {
                            prop_assert!(taken(isa, *m, *k, *n, a, b), "{:?}: taken when it should not be", isa);
                            let stored_nan = out[prefix.len()..].iter().any(|x| x.is_nan());
                            prop_assert!(nan || !stored_nan, "{:?}: a NaN stored unreported", isa);
                            if nan {
                                pin_nans::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &mut out, prefix.len(), onto.as_ref());
                            }
                            prop_assert_eq!(bits(&out), want.clone(), "small {:?}", isa);
                        }
                        None => {
                            prop_assert!(!taken(isa, *m, *k, *n, a, b), "{:?}: not taken", isa);
                            prop_assert_eq!(bits(&out), bits(prefix), "untouched when not taken");
                        }
                    }
                }
                let mut public = prefix.clone();
                match onto {
                    Some(stored) => gemm_onto::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &stored, &mut public),
                    None => gemm::<$t, RHS_LEFT>(*m, *k, *n, av, bv, &mut public),
                }
                prop_assert_eq!(bits(&public), want, "public");
                Ok(())
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(256))]

                #[test]
                fn small_shapes_are_bit_identical(c in case((side(), side(), side()))) {
                    check::<false>(&c, None)?;
                    check::<true>(&c, None)?;
                }

                /// Mostly finite sums: every rounding of the definition, in its order.
                #[test]
                fn small_shapes_on_finite_values(c in finite_case((side(), side(), side()), 1), stored in uniform()) {
                    check::<false>(&c, None)?;
                    check::<true>(&c, Some(stored))?;
                }

                #[test]
                fn small_onto(c in case((side(), side(), side())), stored in uniform()) {
                    check::<false>(&c, Some(stored))?;
                    check::<true>(&c, Some(stored))?;
                }
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(16))]

                /// Long sums (up to the size limit), finite values.
                #[test]
                fn small_long_inner(c in finite_case((4usize..40, 200usize..400, 8usize..70), 0), stored in uniform()) {
                    check::<false>(&c, None)?;
                    check::<true>(&c, Some(stored))?;
                }
            }

            /// Values of many magnitudes: `i`-th of `seed`'s sequence, exponents in ±20, some
            /// signed zeros.
            fn spread(n: usize, seed: u64) -> Vec<$t> {
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                (0..n)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if i % 97 == 5 {
                            return -0.0;
                        }
                        let unit = (x >> 11) as $t / (1u64 << 53) as $t - 0.5;
                        unit * (2.0 as $t).powi((x % 41) as i32 - 20)
                    })
                    .collect()
            }

            /// The attention block's products (forward `a · b`, `δ · bᵀ` with a transposed `rhs`,
            /// `aᵀ · δ` with a transposed `lhs` and δ left), on finite values and with a NaN,
            /// `±∞` and `-0` planted: the small kernel takes each on every instruction set and
            /// gives the definition's bits; summing in reverse order is caught.
            #[test]
            fn attention_products() {
                let shapes = [(32, 64, 192), (32, 16, 32), (32, 32, 16), (32, 64, 64), (32, 64, 256), (32, 256, 64)];
                for (s, &(m, k, n)) in shapes.iter().enumerate() {
                    let seed = 10 * s as u64;
                    let (a, b, g) = (spread(m * k, seed + 1), spread(k * n, seed + 2), spread(m * n, seed + 3));
                    for special in [false, true] {
                        let (mut a, mut b, g) = (a.clone(), b.clone(), g.clone());
                        if special {
                            a[3] = <$t>::from_bits(<$t>::NAN.to_bits() | 0x5);
                            b[k * n / 2] = <$t>::INFINITY;
                            a[m * k - 1] = -0.0;
                        }
                        let row_major = |data: &Vec<$t>, cols: usize| StridedMatrix { data: data.clone(), rs: cols, cs: 1 };
                        let transposed = |data: &Vec<$t>, cols: usize| StridedMatrix { data: data.clone(), rs: 1, cs: cols };
                        // (rows, inner, cols, lhs, rhs, RHS_LEFT)
                        let products = [
                            (m, k, n, row_major(&a, k), row_major(&b, n), false),
                            (m, n, k, row_major(&g, n), transposed(&b, n), false),
                            (k, m, n, transposed(&a, k), row_major(&g, n), true),
                        ];
                        for (rows, inner, cols, l, r, rhs_left) in products {
                            let c: Case = (rows, inner, cols, l, r, Vec::new());
                            if rhs_left {
                                attention_product::<true>(&c, special);
                            } else {
                                attention_product::<false>(&c, special);
                            }
                        }
                    }
                }
            }

            fn attention_product<const RHS_LEFT: bool>(c: &Case, special: bool) {
                let (m, k, n, a, b, _) = c;
                for isa in Isa::available() {
                    let mut out: Vec<$t> = Vec::new();
                    let nan = small_gemm_on::<$t, RHS_LEFT>(isa, *m, *k, *n, a.view(), b.view(), None, &mut out);
                    assert!(nan.is_some(), "{m}x{k}x{n} {isa:?}: small path not taken");
                }
                check::<RHS_LEFT>(c, None).expect("bit-identical");
                check::<RHS_LEFT>(c, Some(-0.0)).expect("bit-identical onto");
                if !special {
                    // The test can tell orders apart: the same products fused from the last
                    // inner index down differ somewhere.
                    let reversed: Vec<$bits> = (0..*m)
                        .flat_map(|r| (0..*n).map(move |col| (r, col)))
                        .map(|(r, col)| {
                            let mut acc: $t = 0.0;
                            for t in (0..*k).rev() {
                                let (l, x) = (a.data[r * a.rs + t * a.cs], b.data[t * b.rs + col * b.cs]);
                                acc = if RHS_LEFT { x.mul_add(l, acc) } else { l.mul_add(x, acc) };
                            }
                            acc.to_bits()
                        })
                        .collect();
                    assert_ne!(reversed, definition::<RHS_LEFT>(c, None), "{m}x{k}x{n}: orders indistinguishable");
                }
            }

            /// `MatrixView`s of the attention shapes reach the small kernel through `gemm`.
            #[test]
            fn gemm_routes_attention_shapes() {
                let (m, k, n) = (32, 16, 32);
                let (a, b) = (spread(m * k, 7), spread(k * n, 8));
                let mut out = Vec::new();
                gemm::<$t, false>(m, k, n, MatrixView::row_major(&a, k), MatrixView::row_major(&b, n), &mut out);
                let c: Case = (m, k, n, StridedMatrix { data: a, rs: k, cs: 1 }, StridedMatrix { data: b, rs: n, cs: 1 }, Vec::new());
                assert_eq!(bits(&out), definition::<false>(&c, None));
            }
        }
    };
}

small_tests!(f32, f32, u32, 1u32 << 22);
small_tests!(f64, f64, u64, 1u64 << 51);
