//! Reverse passes on chains of 16-element tensors: the dense reference vs the array pass
//! (all seeds), the inputs-only array pass and the single-output pass.
//!
//! `cargo bench --bench chain`. The per-node cost of the array pass is its time divided by the
//! node count (criterion prints it as throughput: elements = nodes).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use exactgrad::RawSavedGraph;

mod common;
use common::{last_seed, tanh_chain};

fn passes(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain");
    group.sample_size(20);
    for &n in &[100usize, 1_000, 2_000, 10_000] {
        let (g, inputs) = tanh_chain(n);
        let saved = RawSavedGraph::compile(&g, inputs, ()).expect("chain compiles");
        let last = g.dims().len() - 1;
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("array", n), &n, |b, _| {
            b.iter_batched(|| last_seed(&g), |s| saved.backprop_all_array(s), BatchSize::LargeInput);
        });
        group.bench_with_input(BenchmarkId::new("inputs_array", n), &n, |b, _| {
            b.iter_batched(|| last_seed(&g), |s| saved.backprop_inputs_array(s), BatchSize::LargeInput);
        });
        group.bench_with_input(BenchmarkId::new("from", n), &n, |b, _| {
            b.iter_batched(
                || exactgrad::RawTensor::full(g.dims()[last], 1.0f32),
                |s| saved.backprop_from(g.position(last).expect("the output exists"), s),
                BatchSize::SmallInput,
            );
        });
        if n <= 2_000 {
            group.bench_with_input(BenchmarkId::new("dense", n), &n, |b, _| {
                b.iter_batched(|| last_seed(&g), |s| saved.backprop_all_dense(s), BatchSize::LargeInput);
            });
        }
    }
    group.finish();

    // 10 000 nodes: the dense pass is quadratic (every node adds a full-prefix pack), so it gets
    // few samples.
    let mut slow = c.benchmark_group("chain_dense_10k");
    slow.sample_size(10);
    let (g, inputs) = tanh_chain(10_000);
    let saved = RawSavedGraph::compile(&g, inputs, ()).expect("chain compiles");
    slow.bench_function("dense/10000", |b| {
        b.iter_batched(|| last_seed(&g), |s| saved.backprop_all_dense(s), BatchSize::LargeInput);
    });
    slow.finish();
}

fn forward(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_forward");
    for &n in &[1_000usize, 10_000] {
        let (g, inputs) = tanh_chain(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("compile", n), &n, |b, _| {
            b.iter_batched(|| inputs.clone(), |i| RawSavedGraph::compile(&g, i, ()), BatchSize::LargeInput);
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = passes, forward
}
criterion_main!(benches);
