//! `tanh` and `exp` over 4096 elements (the W4 workload's per-step count): libm's `tanh`/`exp`
//! per element vs the deterministic slice kernels of `exactgrad::math`, for `f32` and `f64`; the
//! `tanh` and `exp` ops' forward loops (`ops::Tanh`, `ops::Exp`, which call `math::tanh` and
//! `math::exp`); and the softmax of 64 rows of 64 (`ops::Softmax`) against the same rows computed
//! with libm's `exp` per element (the op's loop before `math::exp`); the GELU op's forward and
//! derivative loops; the pointwise loops and the row-wise ops (`layer_norm`, `cross_entropy`) on
//! 1 thread and on the global pool (`threads`).
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
    rows_threads(c, &one);
}

/// The labels of the `cross_entropy` cases: the graph data.
fn labels(d: &Vec<usize>) -> &[usize] {
    d
}

/// The row-wise ops split by blocks of rows (`parallel::rows`): `layer_norm`'s and
/// `cross_entropy`'s forward and VJP on `rows × n` `f32`, on 1 thread and on the global pool, the
/// split forced on (part of `threads`).
fn rows_threads(c: &mut Criterion, one: &exactgrad::parallel::ThreadPool) {
    for (rows, n) in [(64usize, 256usize), (512, 512)] {
        let mut group = c.benchmark_group(format!("threads_rows_{rows}x{n}"));
        group.throughput(Throughput::Elements((rows * n) as u64));
        let tensor = |d: &[usize], seed: usize| {
            let d = Dims::new(d).expect("dims");
            let v = values(d.numel() + seed)[seed..].iter().map(|&v| v as f32).collect();
            RawTensor::from_vec(d, v).expect("a tensor")
        };
        let ln = [tensor(&[rows, n], 0), tensor(&[n], 1), tensor(&[n], 2)];
        let layer_norm = ops::LayerNorm::new(0, 1, 2, 1e-5f32);
        let ln_y = CompactOp::<f32, ()>::forward(&layer_norm, &ln, &());
        let g = tensor(&[rows, n], 3);
        let ks: Vec<usize> = (0..rows).map(|i| (i * 7) % n).collect();
        let ce = ops::CrossEntropy::new(0, labels);
        let logits = [tensor(&[rows, n], 4)];
        let ce_y = CompactOp::<f32, Vec<usize>>::forward(&ce, &logits, &ks);
        let ce_g = RawTensor::from_vec(Dims::scalar(), vec![1.0f32]).expect("a scalar");
        let mut out = Vec::with_capacity(rows * n);
        let mut arena = exactgrad::Contributions::new();
        for (label, pool) in [("1", Some(one)), ("global", None)] {
            let run = |b: &mut criterion::Bencher<'_>, f: &mut (dyn FnMut() + Send)| match pool {
                Some(p) => p.install(|| b.iter(&mut *f)),
                None => b.iter(&mut *f),
            };
            group.bench_function(BenchmarkId::new("layer_norm_forward", label), |b| {
                run(b, &mut || {
                    out.clear();
                    CompactOp::<f32, ()>::forward_into(&layer_norm, black_box(&ln), &(), &mut out);
                    black_box(&out);
                });
            });
            group.bench_function(BenchmarkId::new("layer_norm_vjp", label), |b| {
                let saved = exactgrad::SavedValues { prefix: &ln, output: &ln_y, data: &() };
                run(b, &mut || {
                    arena.clear();
                    black_box(CompactOp::<f32, ()>::contributions(&layer_norm, &saved, black_box(&g), &mut arena));
                });
            });
            group.bench_function(BenchmarkId::new("cross_entropy_forward", label), |b| {
                run(b, &mut || {
                    out.clear();
                    CompactOp::<f32, Vec<usize>>::forward_into(&ce, black_box(&logits), &ks, &mut out);
                    black_box(&out);
                });
            });
            group.bench_function(BenchmarkId::new("cross_entropy_vjp", label), |b| {
                let saved = exactgrad::SavedValues { prefix: &logits, output: &ce_y, data: &ks };
                run(b, &mut || {
                    arena.clear();
                    black_box(CompactOp::<f32, Vec<usize>>::contributions(&ce, &saved, black_box(&ce_g), &mut arena));
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, tanh, exp, gelu, threads);
criterion_main!(benches);
