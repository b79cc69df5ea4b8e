//! The packed product split over threads (`parallel`): for 1, 2, 3 and 4 threads, every
//! instruction set, `gemm` and `gemm_onto`, strided views and adversarial values, the result is
//! bit for bit the one-thread result (and that is the strict definition, `gemm_tests`). The
//! split is forced on these small shapes with `parallel::set_min_work(0)` (it moves work only).

use super::fast::{fast_gemm_on, Isa};
use super::gemm_tests::{f32 as f, f64 as d};
use super::{gemm, gemm_onto};
use crate::parallel;
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
                (m, k, n, a, b) in (1usize..30, 0usize..300, 1usize..40)
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
