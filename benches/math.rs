//! `tanh` over 4096 elements (the W4 workload's per-step count): libm's `tanh` per element vs the
//! deterministic slice kernels of `exactgrad::math`, for `f32` and `f64`; and the `tanh` op's
//! forward loop (`ops::Tanh`, which calls `math::tanh`).
//!
//! `cargo bench --bench math`. Throughput is in elements: criterion's "elem/s".
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use exactgrad::{math, ops, CompactOp, Dims, RawTensor};
use std::hint::black_box;

const N: usize = 4096;

/// Values spread over `[-4, 4]`, the range pre-activations live in.
fn values(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 7919) % 4001) as f64 / 500.0 - 4.0).collect()
}

fn tanh(c: &mut Criterion) {
    let mut group = c.benchmark_group("tanh_4096");
    group.throughput(Throughput::Elements(N as u64));
    let x64 = values(N);
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let mut o32 = vec![0.0f32; N];
    let mut o64 = vec![0.0f64; N];
    group.bench_function(BenchmarkId::new("f32", "libm"), |b| {
        b.iter(|| {
            for (o, &v) in o32.iter_mut().zip(black_box(&x32)) {
                *o = v.tanh();
            }
            black_box(&o32);
        })
    });
    group.bench_function(BenchmarkId::new("f32", "math"), |b| {
        b.iter(|| {
            math::tanh_f32_slice(black_box(&x32), &mut o32);
            black_box(&o32);
        })
    });
    group.bench_function(BenchmarkId::new("f64", "libm"), |b| {
        b.iter(|| {
            for (o, &v) in o64.iter_mut().zip(black_box(&x64)) {
                *o = v.tanh();
            }
            black_box(&o64);
        })
    });
    group.bench_function(BenchmarkId::new("f64", "math"), |b| {
        b.iter(|| {
            math::tanh_f64_slice(black_box(&x64), &mut o64);
            black_box(&o64);
        })
    });
    // The op's forward loop (`PointwiseFn::forward` per element into a reused buffer).
    let op = ops::Tanh::new(0);
    let ctx = [RawTensor::from_vec(Dims::vector(N), x32.clone()).expect("4096 values")];
    let mut out = Vec::with_capacity(N);
    group.bench_function(BenchmarkId::new("f32", "op_forward"), |b| {
        b.iter(|| {
            out.clear();
            CompactOp::<f32, ()>::forward_into(&op, black_box(&ctx), &(), &mut out);
            black_box(&out);
        })
    });
    group.finish();
}

criterion_group!(benches, tanh);
criterion_main!(benches);
