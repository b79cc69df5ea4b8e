//! The "show" workloads of issue 4, each next to the figure it is judged against.
//!
//! * **W1** — one MLP training step, 784-256-128-10, batch 64, `relu`, softmax cross-entropy
//!   (labels from the data), `f32`, written with `graph!`: forward (`compile`) +
//!   `backprop_inputs_array` for the six parameters, looped as a training loop runs it (parameters
//!   and batch moved in and taken back with `into_inputs_and_data`, each step's gradients dropped
//!   before the next). The image batch is a data tensor
//!   (`; x: [64, 784]`) and the labels are data, so the first layer lowers to `ops::MatMulData`
//!   and no gradient of `x` is computed. Compared with `gemm_only`: the GEMMs that step needs
//!   (3 forward products, 5 VJP products: `xᵀ·δ1`, `r1ᵀ·δ2`, `δ2·w2ᵀ`, `r2ᵀ·δ3`, `δ3·w3ᵀ`), run
//!   with the same kernel on same-sized buffers. Target: step / `gemm_only` ≤ 1.3.
//! * **W2** — 2 000 layers `x = tanh(x * a_i + b_i)` on 16 elements (`a_i`, `b_i` distinct inputs
//!   per layer), loss `sum(x)`: forward + array pass (all seeds, seeded with 1 at the loss) per
//!   graph node (throughput elements = nodes; also with the inputs-only array pass, and the array
//!   pass alone; and the same chain written with `graph!` — a loop the macro builds as a loop —
//!   run by its generated program, `program`). Target < 0.3 µs per node. The dense reference runs too when one pass takes
//!   under 10 s (checked once, else skipped with a message).
//! * **W4** — 64 independent heads `h_k = sum(tanh(W_k · x))`, `W_k` 64×64, `x` 64×1; the gradient
//!   of head 0: `backprop_from(head 0)` vs the all-seeds array pass seeded at head 0.
//!   Target: `backprop_from` < 1/16 of the all-seeds time.
//!
//! `cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 3`. Ratios are read off
//! the printed times (criterion prints each group's benchmarks one after the other).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::{Duration, Instant};

mod mlp_gemms;
mod mlp_model;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use exactgrad::ops::{Add, MatMul, Mul, Sum, Tanh};
use exactgrad::typenum::{U128, U16, U64};
use exactgrad::{Dims, Init, RawGraph, RawNode, RawPosition, RawSavedGraph, RawSeeds, RawTensor, Seeds, Tensor};
use mlp_model::{mlp, params_and_batch, MlpData};

// ---------------------------------------------------------------------------------------------
// W1: MLP training step (the MLP and its batch: `mlp_model`).

fn w1_mlp(c: &mut Criterion) {
    let (g, h) = mlp::<f32, U64>();
    let (inputs, x, labels) = params_and_batch();
    // `compile` owns its data: the benchmarks build a copy in their (untimed) set-up.
    let data = || MlpData { x: x.clone(), labels: labels.clone() };
    let seeds = Seeds::single(&g, h.output, Tensor::full(1.0)).expect("seed of this graph");

    // One step, checked once: a finite loss and six finite parameter gradients.
    {
        let saved = g.compile(inputs.clone(), data()).expect("the MLP compiles");
        let l = saved.value(h.output).expect("loss of this graph").data()[0];
        let grads = saved.backprop_inputs_array(seeds.clone()).expect("array pass");
        assert!(l.is_finite() && grads.len() == 6, "loss {l}");
        assert!(grads.as_slice().iter().all(|t| t.data().iter().all(|v| v.is_finite())));
    }

    let mut group = c.benchmark_group("W1_mlp_step");
    group.sample_size(15);
    // The step as a training loop runs it: the parameters and the batch move into `compile` and
    // come back out of the saved graph (`into_inputs_and_data`, no copy), and the previous step's
    // gradients are dropped before the next step allocates its own.
    let mut state = Some((inputs.clone(), data()));
    group.bench_function("compile+backprop_inputs_array", |b| {
        b.iter(|| {
            let (params, batch) = state.take().expect("put back by the previous step");
            let saved = g.compile(params, batch).expect("the MLP compiles");
            let grads = saved.backprop_inputs_array(seeds.clone()).expect("array pass");
            state = Some(saved.into_inputs_and_data());
            grads
        });
    });
    let saved = g.compile(inputs.clone(), data()).expect("the MLP compiles");
    group.bench_function("backprop_inputs_array", |b| {
        b.iter_batched(|| seeds.clone(), |s| saved.backprop_inputs_array(s), BatchSize::LargeInput);
    });
    group.bench_function("compile", |b| {
        b.iter_batched(|| (inputs.clone(), data()), |(i, d)| g.compile(i, d).is_ok(), BatchSize::LargeInput);
    });

    // The GEMMs alone: same shapes, same kernel, same views and operand order as the pass
    // (`benches/mlp_gemms`).
    let mut gemms = mlp_gemms::MlpGemms::new(x.data());
    group.bench_function("gemm_only", |b| b.iter(|| gemms.run()));
    group.finish();
}

// ---------------------------------------------------------------------------------------------
// W2: a 2 000-layer chain with distinct parameters per layer.

const LAYERS: usize = 2_000;

fn w2_graph() -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>, RawPosition) {
    let d = Dims::vector(16);
    // Inputs: x0, then a_i, b_i per layer.
    let mut g = RawGraph::new(vec![d; 1 + 2 * LAYERS]);
    let mut init = Init::seeded(2);
    let mut inputs = vec![init.uniform::<f32, (U16,)>(-1.0, 1.0).expect("valid range").into_raw()];
    for _ in 0..LAYERS {
        inputs.push(init.uniform::<f32, (U16,)>(0.5, 1.5).expect("valid range").into_raw());
        inputs.push(init.uniform::<f32, (U16,)>(-0.1, 0.1).expect("valid range").into_raw());
    }
    let mut x = 0;
    for i in 0..LAYERS {
        let (a, b) = (1 + 2 * i, 2 + 2 * i);
        let m = g.push(RawNode::compact(Mul::new(x, a))).expect("well-formed").index();
        let s = g.push(RawNode::compact(Add::new(m, b))).expect("well-formed").index();
        x = g.push(RawNode::compact(Tanh::new(s))).expect("well-formed").index();
    }
    let loss = g.push(RawNode::compact(Sum::new(x))).expect("well-formed");
    (g, inputs, loss)
}

exactgrad::graph! {
    /// W2 written with `graph!`: its loop is built as a loop, and its generated program runs it.
    fn w2_dsl(x: [16], a: [[16]; 2000], b: [[16]; 2000]) -> [] {
        let mut h = x;
        for i in 0..2000 {
            h = tanh(h * a[i] + b[i]);
        }
        sum(h)
    }
}

fn seed_at(dims: &[Dims], p: RawPosition) -> RawSeeds<f32> {
    let mut s = RawSeeds::zeros(dims);
    s.set(p, RawTensor::full(dims[p.index()], 1.0)).expect("seed fits");
    s
}

fn w2_chain(c: &mut Criterion) {
    let (g, inputs, loss) = w2_graph();
    let nodes = g.nodes().len();
    let seeds = seed_at(g.dims(), loss);
    let mut group = c.benchmark_group("W2_chain_2000_layers");
    group.sample_size(15);
    group.throughput(Throughput::Elements(nodes as u64));
    let setup = || (inputs.clone(), seeds.clone());
    let step = |(i, s): (Vec<RawTensor<f32>>, RawSeeds<f32>)| {
        let saved = RawSavedGraph::compile(&g, i, ()).expect("chain compiles");
        saved.backprop_all_array(s).expect("array pass")
    };
    group.bench_with_input(BenchmarkId::new("compile+array", nodes), &nodes, |b, _| {
        b.iter_batched(setup, step, BatchSize::LargeInput);
    });
    group.bench_with_input(BenchmarkId::new("compile+inputs_array", nodes), &nodes, |b, _| {
        b.iter_batched(
            || (inputs.clone(), seeds.clone()),
            |(i, s)| {
                let saved = RawSavedGraph::compile(&g, i, ()).expect("chain compiles");
                saved.backprop_inputs_array(s).expect("array pass")
            },
            BatchSize::LargeInput,
        );
    });
    // The step as a training loop runs it: the inputs handed from one step to the next, the
    // gradients given back to the graph (`RawGraph::recycle`), so no buffer is allocated per node.
    {
        let mut carried = Some(inputs.clone());
        group.bench_with_input(BenchmarkId::new("compile+inputs_array/recycled", nodes), &nodes, |b, _| {
            b.iter(|| {
                let saved = RawSavedGraph::compile(&g, carried.take().unwrap_or_default(), ()).expect("chain compiles");
                let grads = saved.backprop_inputs_array(seeds.clone()).expect("array pass");
                let n = grads.len();
                carried = Some(saved.into_inputs_and_data().0);
                g.recycle(grads);
                n
            });
        });
    }
    // The same step inside pools of one and of two threads (the scaling table; the same bits).
    for (threads, label) in [(1, "compile+array/1_thread"), (2, "compile+array/2_threads")] {
        let pool = exactgrad::parallel::pool(threads).expect("threads");
        // The measuring loop runs on the pool: no iteration pays for waking a pool thread.
        group.bench_with_input(BenchmarkId::new(label, nodes), &nodes, |b, _| {
            pool.install(|| b.iter_batched(setup, step, BatchSize::LargeInput));
        });
    }
    // The same chain written with `graph!` (the same values: `inputs` is x, then a_i, b_i per
    // layer): its program's forward and all-inputs pass, the work of `compile+inputs_array`.
    {
        let h = w2_dsl::<f32>().1;
        let typed = |t: &RawTensor<f32>| Tensor::try_from_raw(t.clone()).expect("16 elements");
        let mut params = h.inputs(
            typed(&inputs[0]),
            core::array::from_fn(|i| typed(&inputs[1 + 2 * i])),
            core::array::from_fn(|i| typed(&inputs[2 + 2 * i])),
        );
        let mut program = W2Dsl::program::<f32>();
        let seed = Tensor::full(1.0);
        let want = RawSavedGraph::compile(&g, inputs.clone(), ()).expect("chain compiles");
        let want = want.backprop_inputs_array(seeds.clone()).expect("array pass");
        let got = program.gradients(&mut params, &(), &seed).expect("the program runs");
        assert!(got.get(h.x).expect("x").storage_eq(&want.as_slice()[0]), "the program differs from the runtime");
        group.bench_with_input(BenchmarkId::new("program", nodes), &nodes, |b, _| {
            b.iter(|| program.gradients(&mut params, &(), &seed).map(|g| g.len()));
        });
    }
    let saved = RawSavedGraph::compile(&g, inputs.clone(), ()).expect("chain compiles");
    group.bench_with_input(BenchmarkId::new("array", nodes), &nodes, |b, _| {
        b.iter_batched(|| seeds.clone(), |s| saved.backprop_all_array(s), BatchSize::LargeInput);
    });
    group.finish();

    // The dense reference is quadratic (every node adds a pack over its whole prefix, here
    // 4 001 inputs and up to 6 000 nodes): time one pass first, bench it only if it is < 10 s.
    let start = Instant::now();
    let dense = saved.backprop_all_dense(seeds.clone()).expect("dense pass");
    let once = start.elapsed();
    let array = saved.backprop_all_array(seeds.clone()).expect("array pass");
    assert!(dense.iter().zip(&array).all(|(a, b)| a.storage_eq(b)), "array pass differs from dense");
    if once < Duration::from_secs(10) {
        let mut slow = c.benchmark_group("W2_chain_2000_layers_dense");
        slow.sample_size(10);
        slow.throughput(Throughput::Elements(nodes as u64));
        slow.bench_with_input(BenchmarkId::new("dense", nodes), &nodes, |b, _| {
            b.iter_batched(|| seeds.clone(), |s| saved.backprop_all_dense(s), BatchSize::LargeInput);
        });
        slow.finish();
    } else {
        eprintln!("W2: dense reference skipped, one pass took {once:?} (>= 10 s)");
    }
}

// ---------------------------------------------------------------------------------------------
// W4: 64 independent heads, gradient of one.

const HEADS: usize = 64;
const WIDTH: usize = 64;

fn w4_heads(c: &mut Criterion) {
    let (dx, dw) = (Dims::matrix(WIDTH, 1), Dims::matrix(WIDTH, WIDTH));
    // Inputs: x, then W_0 … W_63.
    let mut dims = vec![dx];
    dims.extend(std::iter::repeat_n(dw, HEADS));
    let mut g = RawGraph::<f32, ()>::new(dims);
    let mut init = Init::seeded(5);
    let mut inputs = vec![init.uniform::<f32, (U64, exactgrad::typenum::U1)>(-1.0, 1.0).expect("valid").into_raw()];
    for _ in 0..HEADS {
        inputs.push(init.xavier_uniform::<f32, U64, U64>().into_raw());
    }
    let mut heads = Vec::with_capacity(HEADS);
    for k in 0..HEADS {
        let h = g.push(RawNode::compact(MatMul::new(1 + k, 0))).expect("well-formed").index();
        let t = g.push(RawNode::compact(Tanh::new(h))).expect("well-formed").index();
        heads.push(g.push(RawNode::compact(Sum::new(t))).expect("well-formed"));
    }
    let head0 = heads[0];
    let saved = RawSavedGraph::compile(&g, inputs, ()).expect("heads compile");
    let seeds = seed_at(g.dims(), head0);
    let one = RawTensor::full(Dims::scalar(), 1.0f32);

    // Same gradients either way (the all-seeds pass is the one backprop_from must agree with).
    let from = saved.backprop_from(head0, one.clone()).expect("single-output pass");
    let all = saved.backprop_all_array(seeds.clone()).expect("array pass");
    let n_in = g.num_inputs();
    assert!(from.iter().take(n_in).zip(&all[..n_in]).all(|(a, b)| a.storage_eq(b)), "input gradients differ");
    let visited = saved.reached_from(head0).expect("head of this graph").iter().filter(|&&r| r).count();
    eprintln!("W4: backprop_from(head 0) reaches {visited} of {} positions", g.dims().len());

    let mut group = c.benchmark_group("W4_64_heads");
    group.sample_size(20);
    group.bench_function("backprop_from_head0", |b| {
        b.iter_batched(|| one.clone(), |s| saved.backprop_from(head0, s), BatchSize::SmallInput);
    });
    group.bench_function("all_seeds_array_at_head0", |b| {
        b.iter_batched(|| seeds.clone(), |s| saved.backprop_all_array(s), BatchSize::LargeInput);
    });
    group.finish();
}

#[path = "../examples/transformer_block.rs"]
#[allow(dead_code)]
mod transformer_block;

/// W3: the attention block of `examples/transformer_block.rs` (sequence 32, model 64, 4 heads),
/// f32: the saved forward plus the gradients of every input from one `backprop_from`.
fn w3_attention(c: &mut Criterion) {
    use exactgrad::typenum::U32;
    let (g, h) = transformer_block::block::<f32>();
    let mut init = Init::seeded(3);
    let x: Tensor<f32, (U32, U64)> = init.normal(0.0, 1.0).expect("valid std");
    let p: Tensor<f32, (U32, U64)> = init.uniform(-1.0, 1.0).expect("valid bounds");
    let ones = Tensor::<f32, (U64,)>::full(1.0);
    let zeros = Tensor::<f32, (U64,)>::zeros();
    let w = |init: &mut Init| init.xavier_uniform::<f32, U64, U64>();
    let (wq, wk, wv, wo) = (w(&mut init), w(&mut init), w(&mut init), w(&mut init));
    let w1 = init.xavier_uniform::<f32, U64, U128>();
    let w2 = init.xavier_uniform::<f32, U128, U64>();
    let b1 = Tensor::<f32, (U128,)>::full(0.01);
    let inputs = h.inputs(x, p, ones.clone(), zeros.clone(), wq, wk, wv, wo, ones, zeros.clone(), w1, b1, w2, zeros);
    let mut group = c.benchmark_group("w3_attention");
    group.sample_size(20);
    group.bench_function("forward_backward", |b| {
        b.iter(|| {
            let saved = g.compile(inputs.clone(), ()).expect("compiles");
            saved.backprop_from(h.output, Tensor::full(1.0)).expect("runs")
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = w1_mlp, w2_chain, w3_attention, w4_heads
}
criterion_main!(benches);
