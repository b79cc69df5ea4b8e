//! Row-wise ops split over threads by rows (`parallel::rows`): `softmax`'s forward and
//! `log_softmax`'s VJP give the one-thread bits on 1, 2, 3 and 4 threads, on any `f64` bits and
//! any shape (rows that do not divide evenly among the threads included). The split is forced
//! with `parallel::set_min_pointwise_work(0)` (it moves work only).

use proptest::prelude::*;

use super::testing::{bits, forward, vjp};
use super::{LogSoftmax, Softmax};
use crate::parallel;
use crate::shape::Dims;
use crate::tensor::RawTensor;

fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn row_ops_are_the_same_on_1_to_4_threads(
        (rows, n, x, g) in (0usize..12, 1usize..20).prop_flat_map(|(r, n)| (
            Just(r),
            Just(n),
            prop::collection::vec(any::<u64>(), r * n),
            prop::collection::vec(any::<u64>(), r * n),
        )),
    ) {
        parallel::set_min_pointwise_work(0);
        let dims = Dims::new(&[rows, n]).unwrap();
        let x = RawTensor::from_vec(dims, x.into_iter().map(f64::from_bits).collect()).unwrap();
        let g = RawTensor::from_vec(dims, g.into_iter().map(f64::from_bits).collect()).unwrap();
        let runs: Vec<Vec<Vec<u64>>> = pools()
            .iter()
            .map(|pool| {
                pool.install(|| {
                    let mut out = vec![bits(&forward(Softmax::new(0), std::slice::from_ref(&x)))];
                    out.extend(vjp(LogSoftmax::new(0), std::slice::from_ref(&x), &g).iter().map(bits));
                    out
                })
            })
            .collect();
        for (threads, run) in runs.iter().enumerate().skip(1) {
            prop_assert!(run == &runs[0], "{} threads differ from one", threads + 1);
        }
    }
}
