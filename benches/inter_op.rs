//! Inter-op parallelism (`parallel::min_node_work`), each case on one thread, and on two threads
//! with the inter-op split off (`usize::MAX`) and forced (`0`), in one run:
//!
//! * `forward_levels/heads_NxW`: `compile` of `N` independent heads `sum(tanh(W_k · x))`
//!   (`x [W, 1]`, `W_k [W, W]`; W4 of `benches/workloads.rs` is 64 × 64): the 64 products of
//!   a level computed at the same time;
//! * `product_vjp/MxKxN`: the array pass of one `a [M, K] · b [K, N]` (both inputs), whose two
//!   products run side by side (below `parallel::min_work`, so neither is split by itself);
//! * `program_levels/heads_8x256`: a generated program (`graph!`) of 8 heads
//!   `sum(tanh(W_k · x))`, `W_k [256, 256]`, all-inputs pass: its forward's first level (the 8
//!   products) computed at the same time (`ProgramState::forward_level`);
//! * `wake_up/pieces_2x{P}us`: what running two independent pieces of `P` µs each at the same
//!   time gains on a pool of two threads when the second thread has been idle for 200 µs (as it is
//!   between the few splits of a model's step), against running them one after the other: the
//!   measurement behind `parallel::keep_awake` (plain `join`s, not the library's splits, so no
//!   keeper runs for them).
//!
//! `cargo bench --bench inter_op -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use exactgrad::ops::{MatMul, Sum, Tanh};
use exactgrad::typenum::{U1, U256};
use exactgrad::{graph, parallel, Dims, RawGraph, RawNode, RawSavedGraph, RawSeeds, RawTensor, Tensor};

fn filled(d: Dims, salt: u32) -> RawTensor<f32> {
    let n = d.numel();
    RawTensor::from_vec(
        d,
        (0..n).map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ salt) % 1000) as f32 / 1000.0 - 0.5).collect(),
    )
    .expect("sized")
}

/// The ways of running `f` on the inputs `setup` makes (untimed): one thread, then two threads
/// with the inter-op split off, forced, and at its default.
fn three_ways<I>(c: &mut Criterion, group: &str, name: &str, setup: &(dyn Fn() -> I + Sync), f: &(dyn Fn(I) + Sync))
where
    I: Send,
{
    let one = parallel::pool(1).expect("threads");
    let two = parallel::pool(2).expect("threads");
    let mut group = c.benchmark_group(group);
    let batched = BatchSize::LargeInput;
    // The measuring loop runs on the pool: no iteration pays for waking a pool thread.
    group.bench_function(format!("{name}/1_thread"), |b| one.install(|| b.iter_batched(setup, f, batched)));
    for (label, work) in [("off", usize::MAX), ("forced", 0), ("default", parallel::DEFAULT_MIN_NODE_WORK)] {
        group.bench_function(format!("{name}/2_threads_inter_op_{label}"), |b| {
            parallel::set_min_node_work(work);
            two.install(|| b.iter_batched(setup, f, batched));
        });
    }
    group.finish();
    parallel::set_min_node_work(parallel::DEFAULT_MIN_NODE_WORK);
}

fn forward_levels(c: &mut Criterion) {
    for (heads, width) in [(64, 64), (16, 128), (8, 256), (4, 512), (8, 512)] {
        let (dx, dw) = (Dims::matrix(width, 1), Dims::matrix(width, width));
        let mut dims = vec![dx];
        dims.extend(std::iter::repeat_n(dw, heads));
        let mut g = RawGraph::<f32, ()>::new(dims);
        let inputs: Vec<RawTensor<f32>> = g.dims().iter().enumerate().map(|(k, &d)| filled(d, k as u32)).collect();
        for k in 0..heads {
            let h = g.push(RawNode::compact(MatMul::new(1 + k, 0))).expect("well-formed").index();
            let t = g.push(RawNode::compact(Tanh::new(h))).expect("well-formed").index();
            g.push(RawNode::compact(Sum::new(t))).expect("well-formed");
        }
        let run = |i: Vec<RawTensor<f32>>| {
            std::hint::black_box(RawSavedGraph::compile(&g, i, ()).expect("compiles"));
        };
        three_ways(c, "forward_levels", &format!("heads_{heads}x{width}"), &|| inputs.clone(), &run);
    }
}

fn product_vjp(c: &mut Criterion) {
    for (m, k, n) in [(32, 64, 64), (64, 64, 64), (64, 128, 128)] {
        let mut g = RawGraph::<f32, ()>::new(vec![Dims::matrix(m, k), Dims::matrix(k, n)]);
        let inputs: Vec<RawTensor<f32>> = g.dims().iter().enumerate().map(|(q, &d)| filled(d, q as u32)).collect();
        let p = g.push(RawNode::compact(MatMul::new(0, 1))).expect("well-formed");
        let saved = RawSavedGraph::compile(&g, inputs, ()).expect("compiles");
        let mut seeds = RawSeeds::zeros(g.dims());
        seeds.set(p, filled(Dims::matrix(m, n), 9)).expect("fits");
        let run = |s: RawSeeds<f32>| {
            std::hint::black_box(saved.backprop_inputs_array(s).expect("runs"));
        };
        three_ways(c, "product_vjp", &format!("{m}x{k}x{n}"), &|| seeds.clone(), &run);
    }
}

graph! {
    /// 8 independent heads `h_k = sum(tanh(W_k · x))`, summed.
    fn heads_8(x: [256, 1], w0: [256, 256], w1: [256, 256], w2: [256, 256], w3: [256, 256], w4: [256, 256],
        w5: [256, 256], w6: [256, 256], w7: [256, 256]) -> []
    {
        sum(tanh(w0.matmul(x))) + sum(tanh(w1.matmul(x))) + sum(tanh(w2.matmul(x))) + sum(tanh(w3.matmul(x)))
            + sum(tanh(w4.matmul(x))) + sum(tanh(w5.matmul(x))) + sum(tanh(w6.matmul(x))) + sum(tanh(w7.matmul(x)))
    }
}

fn program_levels(c: &mut Criterion) {
    let (_, h) = heads_8::<f32>();
    let w = |k: u32| Tensor::<f32, (U256, U256)>::try_from_raw(filled(Dims::matrix(256, 256), k)).expect("sized");
    let x = Tensor::<f32, (U256, U1)>::try_from_raw(filled(Dims::matrix(256, 1), 0)).expect("sized");
    let mut params = h.inputs(x, w(1), w(2), w(3), w(4), w(5), w(6), w(7), w(8));
    let mut prog = Heads8::program::<f32>();
    let seed = Tensor::full(1.0);
    let mut group = c.benchmark_group("program_levels");
    let default = parallel::min_node_work();
    let (one, two) = (parallel::pool(1).expect("threads"), parallel::pool(2).expect("threads"));
    for (pool, label, work) in [
        (&one, "1_thread", default),
        (&two, "2_threads_inter_op_off", usize::MAX),
        (&two, "2_threads_inter_op_forced", 0),
        (&two, "2_threads_inter_op_default", default),
    ] {
        parallel::set_min_node_work(work);
        // The measuring loop runs on the pool: no iteration pays for waking a pool thread.
        group.bench_function(format!("heads_8x256/{label}"), |b| {
            pool.install(|| b.iter(|| prog.gradients(&mut params, &(), &seed).map(exactgrad::Pack::len)));
        });
    }
    parallel::set_min_node_work(default);
    group.finish();
}

/// About `ns` nanoseconds of work on the calling thread (a multiply-add loop the optimiser cannot
/// remove, calibrated once).
fn busy(ns: u64, per_ns: f64) -> u64 {
    let mut x = 1u64;
    for i in 0..(ns as f64 * per_ns) as u64 {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

fn wake_up(c: &mut Criterion) {
    let calibrate = 10_000_000;
    let start = std::time::Instant::now();
    busy(calibrate, 1.0);
    let per_ns = calibrate as f64 / start.elapsed().as_nanos() as f64;
    let two = parallel::pool(2).expect("threads");
    let mut group = c.benchmark_group("wake_up");
    for piece_us in [10, 30, 60] {
        let piece = piece_us * 1000;
        // 200 µs on the calling thread first: the second thread has gone to sleep by then.
        group.bench_function(format!("pieces_2x{piece_us}us/one_after_the_other"), |b| {
            two.install(|| b.iter(|| busy(200_000, per_ns) ^ busy(piece, per_ns) ^ busy(piece, per_ns)));
        });
        group.bench_function(format!("pieces_2x{piece_us}us/at_the_same_time"), |b| {
            two.install(|| {
                b.iter(|| {
                    let (x, y) = two.join(|| busy(piece, per_ns), || busy(piece, per_ns));
                    busy(200_000, per_ns) ^ x ^ y
                })
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = forward_levels, product_vjp, program_levels, wake_up
}
criterion_main!(benches);
