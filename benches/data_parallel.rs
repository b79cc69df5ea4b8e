//! Data-parallel training step (issue 13): the MLP step 784-256-128-10 on a batch of 64, split
//! into 2 micro-batches of 32 rows, each micro-batch's gradients by the generated program, summed
//! in the fixed tree (`data_parallel::gradients`), `f32`. Run on 1 worker thread and on 2 (the
//! same bits, checked before timing); each step copies the parameters into every worker's copy, as
//! a training loop must. For context, the whole batch of 64 by one program on one thread
//! (`whole_batch`, other bits: another order of the batch sum).
//!
//! `cargo bench --bench data_parallel -- --warm-up-time 2 --measurement-time 5`
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

mod mlp_model;

use criterion::{criterion_group, criterion_main, Criterion};
use exactgrad::data_parallel::{self, Threads};
use exactgrad::typenum::{U32, U64, U784};
use exactgrad::{Pack, Tensor};
use mlp_model::{params_and_batch, Mlp, MlpData};

/// Copies `from`'s elements into `to` (same shapes), without allocating.
fn copy_into<L>(to: &mut Pack<f32, L>, from: &Pack<f32, L>) {
    for (k, t) in from.as_slice().iter().enumerate() {
        if let Some(d) = to.data_mut(k) {
            d.copy_from_slice(t.data());
        }
    }
}

fn bench(c: &mut Criterion) {
    let (params, x, labels) = params_and_batch();
    let micro_batches: Vec<MlpData<f32, U32>> = (0..2)
        .map(|m| MlpData {
            x: Tensor::<f32, (U32, U784)>::from_vec(x.data()[m * 32 * 784..(m + 1) * 32 * 784].to_vec())
                .expect("32 rows"),
            labels: labels[m * 32..(m + 1) * 32].to_vec(),
        })
        .collect();
    let seed = Tensor::full(0.5);
    let mut sets: Vec<(Threads, Vec<_>)> = [1, 2]
        .into_iter()
        .map(|n| {
            let states: Vec<_> = (0..n).map(|_| (Mlp::program::<f32, U32>(), params.clone())).collect();
            (Threads::new(n).expect("a pool"), states)
        })
        .collect();
    let mut step = |set: usize| {
        let (workers, states) = &mut sets[set];
        for (_, copy) in states.iter_mut() {
            copy_into(copy, &params);
        }
        data_parallel::gradients(workers, states, 2, |(program, copy), i| {
            program.gradients(copy, &micro_batches[i], &seed).cloned()
        })
        .expect("a step")
    };
    let (one, two) = (step(0), step(1));
    assert!(one.as_slice().iter().zip(two.as_slice()).all(|(a, b)| a.storage_eq(b)), "1 and 2 workers differ");
    let mut group = c.benchmark_group("data_parallel_mlp_step");
    group.sample_size(20);
    group.bench_function("1_worker", |b| b.iter(|| step(0)));
    group.bench_function("2_workers", |b| b.iter(|| step(1)));
    // The inputs do not mention the batch dim: the whole-batch graph takes the same pack.
    let mut whole_params = params.clone();
    let data = MlpData { x, labels };
    let mut program = Mlp::program::<f32, U64>();
    let one_seed = Tensor::full(1.0);
    let pool = exactgrad::parallel::pool(1).expect("a pool");
    group.bench_function("whole_batch", |b| {
        // The measuring loop runs on the pool: no iteration pays for waking a pool thread.
        pool.install(|| b.iter(|| program.gradients(&mut whole_params, &data, &one_seed).map(Pack::len)));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
