//! The packed product split over threads (`parallel`): for 1, 2, 3 and 4 threads, every
//! instruction set, `gemm` and `gemm_onto`, strided views and adversarial values, the result is
//! bit for bit the one-thread result (and that is the strict definition, `gemm_tests`). The
//! split is forced on these small shapes with `parallel::set_min_work(0)` (it moves work only).
//!
//! Batched products (`[bt, m, k] · [bt, k, n]`) split over their batch items (`each_item`): the
//! forward, both gradients and both fused gradients (`product_onto`) give the one-thread bits on
//! 1 to 4 threads, batch counts that do not divide evenly among the threads included (and, with
//! fewer items than threads, the items' own row-panel split instead).

use super::fast::{fast_gemm_on, Isa};
use super::gemm_tests::{f32 as f, f64 as d};
use super::{gemm, gemm_onto, left_gradient, product_into, right_gradient, MatMul};
use crate::graph::SavedValues;
use crate::ops::ProductVjp;
use crate::parallel;
use crate::shape::Dims;
use crate::tensor::RawTensor;
use proptest::prelude::*;

/// The pools of 1 to 4 threads, built once.
fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

macro_rules! thread_case {
    ($name:ident, $m:ident, $t:ty) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn $name(
                (m, k, n, a, b) in (1usize..30, 0usize..300, 1usize..100)
                    .prop_flat_map(|(m, k, n)| (Just(m), Just(k), Just(n), $m::matrix(m, k), $m::matrix(k, n))),
                stored in $m::value(),
            ) {
                parallel::set_min_work(0);
                // The split is on: two threads take a two-panel product in two parts.
                prop_assert_eq!(pools()[1].install(|| parallel::parts(1, 2)), 2);
                let (av, bv) = (a.view(), b.view());
                let mut want = Vec::new();
                for (threads, pool) in pools().iter().enumerate() {
                    let run = || {
                        let mut runs = Vec::new();
                        for isa in Isa::available() {
                            let mut v = Vec::new();
                            fast_gemm_on::<$t, false>(isa, m, k, n, av, bv, Some(&stored), &mut v);
                            runs.push($m::bits(&v));
                            let mut v = Vec::new();
                            fast_gemm_on::<$t, true>(isa, m, k, n, av, bv, None, &mut v);
                            runs.push($m::bits(&v));
                        }
                        let mut v = Vec::new();
                        gemm::<$t, false>(m, k, n, av, bv, &mut v);
                        runs.push($m::bits(&v));
                        let mut v = Vec::new();
                        gemm_onto::<$t, true>(m, k, n, av, bv, &stored, &mut v);
                        runs.push($m::bits(&v));
                        runs
                    };
                    let got = pool.install(run);
                    if threads == 0 {
                        want = got;
                    } else {
                        prop_assert!(got == want, "{} threads differ from one", threads + 1);
                    }
                }
            }
        }
    };
}

thread_case!(f32_products_are_the_same_on_1_to_4_threads, f, f32);
thread_case!(f64_products_are_the_same_on_1_to_4_threads, d, f64);

macro_rules! batched_case {
    ($name:ident, $m:ident, $t:ty) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(32))]
            #[test]
            fn $name(
                (bt, m, k, n, a, b, g) in (1usize..8, 1usize..10, 0usize..24, 1usize..12).prop_flat_map(|(bt, m, k, n)| (
                    Just(bt),
                    Just(m),
                    Just(k),
                    Just(n),
                    prop::collection::vec($m::value(), bt * m * k),
                    prop::collection::vec($m::value(), bt * k * n),
                    prop::collection::vec($m::value(), bt * m * n),
                )),
                stored in $m::value(),
            ) {
                parallel::set_min_work(0);
                // The item split is on: two threads take two items in two blocks.
                prop_assert_eq!(pools()[1].install(|| parallel::item_parts(2, 1)), 2);
                let tensor = |d: &[usize], v: Vec<$t>| RawTensor::from_vec(Dims::new(d).unwrap(), v).unwrap();
                let (a, b, g) = (tensor(&[bt, m, k], a), tensor(&[bt, k, n], b), tensor(&[bt, m, n], g));
                let prefix = [a.clone(), b.clone()];
                let saved = SavedValues { prefix: &prefix, output: &g, data: &() };
                let op = MatMul::new(0, 1);
                let run = || {
                    let mut runs = Vec::new();
                    let mut v = Vec::new();
                    product_into(&a, &b, &mut v);
                    runs.push($m::bits(&v));
                    let mut v = Vec::new();
                    left_gradient(&a, &g, &b, &mut v);
                    runs.push($m::bits(&v));
                    let mut v = Vec::new();
                    right_gradient(&a, &g, b.dims(), &mut v);
                    runs.push($m::bits(&v));
                    for operand in [0, 1] {
                        let mut v = Vec::new();
                        ProductVjp::<$t, ()>::product_onto(&op, &saved, &g, operand, &stored, &mut v);
                        runs.push($m::bits(&v));
                    }
                    runs
                };
                let runs: Vec<_> = pools().iter().map(|pool| pool.install(run)).collect();
                for (threads, r) in runs.iter().enumerate().skip(1) {
                    prop_assert!(r == &runs[0], "{} threads differ from one", threads + 1);
                }
            }
        }
    };
}

batched_case!(f32_batched_products_are_the_same_on_1_to_4_threads, f, f32);
batched_case!(f64_batched_products_are_the_same_on_1_to_4_threads, d, f64);
