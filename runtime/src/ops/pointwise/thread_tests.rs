//! The pointwise loops split over threads (`parallel::element_parts`): for 1, 2, 3 and 4
//! threads, every pointwise op's forward and derivative give the one-thread bits on any `f32` and
//! `f64` bits (NaN payloads, signed zeros, infinities, subnormals) and any length, including
//! lengths that do not divide evenly. The split is forced on these short loops with
//! `parallel::set_min_pointwise_work(0)` (it moves work only).

use proptest::prelude::*;

use super::{derivative_into, forward_into, PointwiseFn};
use crate::ops::builtin::{each, Visit};
use crate::parallel;
use crate::scalar::Scalar;

fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

/// Forward and derivative of `F` on every pool; `bits` reads a result's encodings.
fn runs<A: Scalar, F: PointwiseFn<A>>(x: &[A], g: &[A], bits: fn(&A) -> u64) -> Vec<Vec<u64>> {
    pools()
        .iter()
        .map(|pool| {
            pool.install(|| {
                let mut y = Vec::new();
                forward_into::<A, F>(x, &mut y);
                let mut t = vec![A::zero()]; // appended after what is there
                derivative_into::<A, F>(g, x, &y, &mut t);
                y.iter().chain(&t).map(bits).collect()
            })
        })
        .collect()
}

/// Every built-in function's runs on `x32`/`g32` then on `x64`/`g64`.
struct AllOps<'a> {
    x32: &'a [f32],
    g32: &'a [f32],
    x64: &'a [f64],
    g64: &'a [f64],
    runs: Vec<Vec<Vec<u64>>>,
}

impl Visit for AllOps<'_> {
    fn visit<F: PointwiseFn<f32> + PointwiseFn<f64>>(&mut self) {
        self.runs.push(runs::<f32, F>(self.x32, self.g32, |v| u64::from(v.to_bits())));
        self.runs.push(runs::<f64, F>(self.x64, self.g64, |v| v.to_bits()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn pointwise_loops_are_the_same_on_1_to_4_threads(
        (x, g) in (0usize..200).prop_flat_map(|n| (
            prop::collection::vec(any::<u64>(), n),
            prop::collection::vec(any::<u64>(), n),
        )),
    ) {
        parallel::set_min_pointwise_work(0);
        prop_assert_eq!(pools()[1].install(|| parallel::element_parts(2, 0)), 2);
        let (x32, g32): (Vec<f32>, Vec<f32>) =
            (x.iter().map(|&b| f32::from_bits(b as u32)).collect(), g.iter().map(|&b| f32::from_bits(b as u32)).collect());
        let (x64, g64): (Vec<f64>, Vec<f64>) =
            (x.iter().map(|&b| f64::from_bits(b)).collect(), g.iter().map(|&b| f64::from_bits(b)).collect());
        let mut all = AllOps { x32: &x32, g32: &g32, x64: &x64, g64: &g64, runs: Vec::new() };
        each(&mut all);
        for (k, per_pool) in all.runs.into_iter().enumerate()
        {
            for (threads, got) in per_pool.iter().enumerate().skip(1) {
                prop_assert!(got == &per_pool[0], "op {}: {} threads differ from one", k, threads + 1);
            }
        }
    }
}
