//! `tanh` and `exp` over 4096 elements (the W4 workload's per-step count): libm's `tanh`/`exp`
//! per element vs the deterministic slice kernels of `exactgrad::math`, for `f32` and `f64`; the
//! `tanh` and `exp` ops' forward loops (`ops::Tanh`, `ops::Exp`, which call `math::tanh` and
//! `math::exp`); and the softmax of 64 rows of 64 (`ops::Softmax`) against the same rows computed
//! with libm's `exp` per element (the op's loop before `math::exp`); the GELU op's forward and
//! derivative loops.
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
        });
    });
    group.bench_function(BenchmarkId::new("f32", "math"), |b| {
        b.iter(|| {
            math::tanh_f32_slice(black_box(&x32), &mut o32);
            black_box(&o32);
        });
    });
    group.bench_function(BenchmarkId::new("f64", "libm"), |b| {
        b.iter(|| {
            for (o, &v) in o64.iter_mut().zip(black_box(&x64)) {
                *o = v.tanh();
            }
            black_box(&o64);
        });
    });
    group.bench_function(BenchmarkId::new("f64", "math"), |b| {
        b.iter(|| {
            math::tanh_f64_slice(black_box(&x64), &mut o64);
            black_box(&o64);
        });
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
        });
    });
    group.finish();
}

fn exp(c: &mut Criterion) {
    let mut group = c.benchmark_group("exp_4096");
    group.throughput(Throughput::Elements(N as u64));
    // Softmax-like arguments: `x − max` over a spread of logits, in `[-16, 0]`.
    let x64: Vec<f64> = values(N).iter().map(|v| v * 2.0 - 8.0).collect();
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let mut o32 = vec![0.0f32; N];
    let mut o64 = vec![0.0f64; N];
    group.bench_function(BenchmarkId::new("f32", "libm"), |b| {
        b.iter(|| {
            for (o, &v) in o32.iter_mut().zip(black_box(&x32)) {
                *o = v.exp();
            }
            black_box(&o32);
        });
    });
    group.bench_function(BenchmarkId::new("f32", "math"), |b| {
        b.iter(|| {
            math::exp_f32_slice(black_box(&x32), &mut o32);
            black_box(&o32);
        });
    });
    group.bench_function(BenchmarkId::new("f64", "libm"), |b| {
        b.iter(|| {
            for (o, &v) in o64.iter_mut().zip(black_box(&x64)) {
                *o = v.exp();
            }
            black_box(&o64);
        });
    });
    group.bench_function(BenchmarkId::new("f64", "math"), |b| {
        b.iter(|| {
            math::exp_f64_slice(black_box(&x64), &mut o64);
            black_box(&o64);
        });
    });
    let op = ops::Exp::new(0);
    let ctx = [RawTensor::from_vec(Dims::vector(N), x32.clone()).expect("4096 values")];
    let mut out = Vec::with_capacity(N);
    group.bench_function(BenchmarkId::new("f32", "op_forward"), |b| {
        b.iter(|| {
            out.clear();
            CompactOp::<f32, ()>::forward_into(&op, black_box(&ctx), &(), &mut out);
            black_box(&out);
        });
    });
    // Softmax over 64 rows of 64: the op, and the same steps with libm's `exp` per element.
    let rows = [RawTensor::from_vec(Dims::matrix(64, 64), x32.clone()).expect("4096 values")];
    let softmax = ops::Softmax::new(0);
    group.bench_function(BenchmarkId::new("f32", "softmax_op_forward"), |b| {
        b.iter(|| {
            out.clear();
            CompactOp::<f32, ()>::forward_into(&softmax, black_box(&rows), &(), &mut out);
            black_box(&out);
        });
    });
    group.bench_function(BenchmarkId::new("f32", "softmax_libm"), |b| {
        b.iter(|| {
            out.clear();
            for row in black_box(&x32).chunks_exact(64) {
                let m = row[1..].iter().fold(row[0], |m, &v| if v > m { v } else { m });
                let start = out.len();
                out.extend(row.iter().map(|&v| (v - m).exp()));
                let s = out[start..].iter().fold(0.0f32, |acc, &v| acc + v);
                for v in &mut out[start..] {
                    *v /= s;
                }
            }
            black_box(&out);
        });
    });
    group.finish();
}

/// The GELU op's loops (`ops::GeluFn`, tanh form): its forward and its derivative (the VJP's
/// per-element work) over 4096 `f32`, the size of one attention block's MLP hidden layer / 2.
fn gelu(c: &mut Criterion) {
    let mut group = c.benchmark_group("gelu_4096");
    group.throughput(Throughput::Elements(N as u64));
    let x32: Vec<f32> = values(N).iter().map(|&v| v as f32).collect();
    let g32: Vec<f32> = values(N).iter().rev().map(|&v| v as f32).collect();
    let mut out = Vec::with_capacity(N);
    group.bench_function(BenchmarkId::new("f32", "op_forward"), |b| {
        b.iter(|| {
            out.clear();
            ops::pointwise::forward_into::<f32, ops::GeluFn>(black_box(&x32), &mut out);
            black_box(&out);
        });
    });
    group.bench_function(BenchmarkId::new("f32", "op_derivative"), |b| {
        b.iter(|| {
            out.clear();
            ops::pointwise::derivative_into::<f32, ops::GeluFn>(black_box(&g32), black_box(&x32), &x32, &mut out);
            black_box(&out);
        });
    });
    group.finish();
}

/// The pointwise loops on threads (`parallel::min_pointwise_work`): every pointwise op's forward
/// and derivative over `n` `f32`, timed inside a pool of 1 thread (`1`) and called from outside
/// any pool on the global pool of 2 threads (`global`: what a plain `main` pays, the hand-off
/// included), with the split forced on: `cargo bench --bench math -- threads`. Where `global`
/// beats `1`, the split pays.
fn threads(c: &mut Criterion) {
    let one = exactgrad::parallel::pool(1).expect("a pool");
    exactgrad::parallel::set_min_pointwise_work(0);
    for n in [1usize << 14, 1 << 16, 1 << 18] {
        let mut group = c.benchmark_group(format!("threads_{n}"));
        group.throughput(Throughput::Elements(n as u64));
        // Positive values, so that `log` and `sqrt` take their ordinary path.
        let x32: Vec<f32> = values(n).iter().map(|&v| (v as f32).abs() + 0.5).collect();
        let g32: Vec<f32> = x32.iter().rev().copied().collect();
        let mut out = Vec::with_capacity(n);
        macro_rules! loops {
            ($($f:ident),*) => {$(
                for (label, pool) in [("1", Some(&one)), ("global", None)] {
                    let mut forward = || {
                        out.clear();
                        ops::pointwise::forward_into::<f32, ops::$f>(black_box(&x32), &mut out);
                        black_box(&out);
                    };
                    group.bench_function(BenchmarkId::new(concat!(stringify!($f), "_forward"), label), |b| match pool {
                        Some(p) => p.install(|| b.iter(&mut forward)),
                        None => b.iter(&mut forward),
                    });
                    let mut derivative = || {
                        out.clear();
                        ops::pointwise::derivative_into::<f32, ops::$f>(black_box(&g32), &x32, &g32, &mut out);
                        black_box(&out);
                    };
                    group.bench_function(BenchmarkId::new(concat!(stringify!($f), "_derivative"), label), |b| match pool {
                        Some(p) => p.install(|| b.iter(&mut derivative)),
                        None => b.iter(&mut derivative),
                    });
                }
            )*};
        }
        loops!(ReluFn, NegFn, SqrtFn, LogFn, ExpFn, TanhFn, SigmoidFn, SoftplusFn, GeluFn);
        group.finish();
    }
}

criterion_group!(benches, tanh, exp, gelu, threads);
criterion_main!(benches);
