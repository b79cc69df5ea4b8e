//! The workloads of issue 10, each run three ways in one run: the generated backward program
//! (`Model::program`), the runtime's fast pass (`compile` + the array pass) and the dense
//! reference (`compile` + the dense pass), `f32`, one thread.
//!
//! * **attention block**: `x [32, 64]` data; pre-LN (gain and bias, eps 1e-5); one fused
//!   `W_qkv [64, 192]` + `b_qkv`, split into q, k, v; 4 heads of 16 via slices;
//!   `softmax(q·kᵀ/4)·v` (`/ 4` written `* 0.25`, the same rounding); `x1 = x + o·W_o + b_o`;
//!   `out = x1 + gelu_tanh(LN2(x1)·W_1 + b_1)·W_2 + b_2`, MLP 64→256→64; loss `mean(out²)`; the
//!   gradients of all 12 parameters. Target ≤ 0.15 ms per forward + backward. Also its 36 matrix
//!   products alone (`gemm_only`, `benches/attention_gemms`): the floor of the step. The same
//!   block with the heads as the batch axis of batched products (`benches/attention_block`, the
//!   same gradients bit for bit) is `program_batched`.
//! * **one head of 64**: `x [64, 1]` and 64 matrices `W_k [64, 64]`, all trainable,
//!   `h_k = sum(tanh(W_k·x))` for every `k`, then the gradient of `h_0` only, w.r.t. `x` and `W_0`
//!   (all 64 forwards included). Target ≤ 0.03 ms.
//! * **MLP step** 784-256-128-10, batch 64, `ReLU`, softmax cross-entropy (images and labels are
//!   data): the step against its GEMMs alone (`benches/workloads.rs`'s `gemm_only`). Target ≤ 1.15×.
//!
//! `cargo bench --bench programs -- --warm-up-time 2 --measurement-time 5`
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

mod attention_block;
mod attention_gemms;
mod mlp_gemms;
mod mlp_model;
mod product_floor;

use attention_block::{attention, Attention, AttentionBatched, AttentionBatchedData, AttentionData};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use exactgrad::typenum::{U1, U32, U64};
use exactgrad::{graph, Init, Seeds, Tensor};
use mlp_model::{mlp, params_and_batch, Mlp, MlpData};

fn attention_bench(c: &mut Criterion) {
    let (g, h) = attention::<f32>();
    let mut init = Init::seeded(10);
    let ones = || Tensor::<f32, (U64,)>::full(1.0);
    let zeros = || Tensor::<f32, (U64,)>::zeros();
    let mut params = h.inputs(
        ones(),
        zeros(),
        init.xavier_uniform(),
        init.uniform(-0.1, 0.1).expect("valid range"),
        init.xavier_uniform(),
        zeros(),
        ones(),
        zeros(),
        init.xavier_uniform(),
        init.uniform(-0.1, 0.1).expect("valid range"),
        init.xavier_uniform(),
        zeros(),
    );
    let x: Tensor<f32, (U32, U64)> = init.normal(0.0, 1.0).expect("valid std");
    let data = AttentionData { x: x.clone() };
    let seed = Tensor::full(1.0);
    let mut prog = Attention::program::<f32>();
    // One check: the program's gradients are the dense reference's.
    {
        let saved = g.compile(params.clone(), AttentionData { x: x.clone() }).expect("compiles");
        let dense =
            saved.backprop_inputs_dense(Seeds::single(&g, h.output, seed.clone()).expect("seed")).expect("dense");
        let got = prog.gradients(&mut params, &data, &seed).expect("program");
        assert!(
            got.as_slice().iter().zip(dense.as_slice()).all(|(a, b)| a.storage_eq(b)),
            "program differs from dense"
        );
    }
    let mut group = c.benchmark_group("attention_block");
    group.sample_size(30);
    group.bench_function("program", |b| b.iter(|| prog.gradients(&mut params, &data, &seed).map(exactgrad::Pack::len)));
    on_pools(&mut group, "program", &mut || {
        prog.gradients(&mut params, &data, &seed).map(exactgrad::Pack::len).expect("program");
    });
    group.bench_function("runtime_array", |b| {
        b.iter(|| {
            let saved = g.compile(params.clone(), AttentionData { x: x.clone() }).expect("compiles");
            saved.backprop_inputs_array(Seeds::single(&g, h.output, seed.clone()).expect("seed")).expect("array")
        });
    });
    // The same block, its heads the batch axis of batched products: the same gradients.
    let mut batched = AttentionBatched::program::<f32>();
    let batched_data = AttentionBatchedData { x: x.clone() };
    {
        let mut same = params.clone();
        let want = prog.gradients(&mut params, &data, &seed).expect("program");
        let got = batched.gradients(&mut same, &batched_data, &seed).expect("program");
        assert!(
            got.as_slice().iter().zip(want.as_slice()).all(|(a, b)| a.storage_eq(b)),
            "the batched block differs from the unrolled one"
        );
    }
    group.bench_function("program_batched", |b| {
        b.iter(|| batched.gradients(&mut params, &batched_data, &seed).map(exactgrad::Pack::len))
    });
    // The products the step needs, alone (`benches/attention_gemms`).
    let mut gemms = attention_gemms::attention_gemms();
    group.bench_function("gemm_only", |b| b.iter(|| gemms.run()));
    group.bench_function("runtime_dense", |b| {
        b.iter(|| {
            let saved = g.compile(params.clone(), AttentionData { x: x.clone() }).expect("compiles");
            saved.backprop_inputs_dense(Seeds::single(&g, h.output, seed.clone()).expect("seed")).expect("dense")
        });
    });
    group.finish();
}

graph! {
    /// 64 independent heads `h_k = sum(tanh(W_k · x))`.
    fn heads(x: [64, 1], w0: [64, 64], w1: [64, 64], w2: [64, 64], w3: [64, 64], w4: [64, 64], w5: [64, 64], w6: [64, 64], w7: [64, 64], w8: [64, 64], w9: [64, 64], w10: [64, 64], w11: [64, 64], w12: [64, 64], w13: [64, 64], w14: [64, 64], w15: [64, 64], w16: [64, 64], w17: [64, 64], w18: [64, 64], w19: [64, 64], w20: [64, 64], w21: [64, 64], w22: [64, 64], w23: [64, 64], w24: [64, 64], w25: [64, 64], w26: [64, 64], w27: [64, 64], w28: [64, 64], w29: [64, 64], w30: [64, 64], w31: [64, 64], w32: [64, 64], w33: [64, 64], w34: [64, 64], w35: [64, 64], w36: [64, 64], w37: [64, 64], w38: [64, 64], w39: [64, 64], w40: [64, 64], w41: [64, 64], w42: [64, 64], w43: [64, 64], w44: [64, 64], w45: [64, 64], w46: [64, 64], w47: [64, 64], w48: [64, 64], w49: [64, 64], w50: [64, 64], w51: [64, 64], w52: [64, 64], w53: [64, 64], w54: [64, 64], w55: [64, 64], w56: [64, 64], w57: [64, 64], w58: [64, 64], w59: [64, 64], w60: [64, 64], w61: [64, 64], w62: [64, 64], w63: [64, 64]) -> ([], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], []) {
        (sum(tanh(w0.matmul(x))), sum(tanh(w1.matmul(x))), sum(tanh(w2.matmul(x))), sum(tanh(w3.matmul(x))), sum(tanh(w4.matmul(x))), sum(tanh(w5.matmul(x))), sum(tanh(w6.matmul(x))), sum(tanh(w7.matmul(x))), sum(tanh(w8.matmul(x))), sum(tanh(w9.matmul(x))), sum(tanh(w10.matmul(x))), sum(tanh(w11.matmul(x))), sum(tanh(w12.matmul(x))), sum(tanh(w13.matmul(x))), sum(tanh(w14.matmul(x))), sum(tanh(w15.matmul(x))), sum(tanh(w16.matmul(x))), sum(tanh(w17.matmul(x))), sum(tanh(w18.matmul(x))), sum(tanh(w19.matmul(x))), sum(tanh(w20.matmul(x))), sum(tanh(w21.matmul(x))), sum(tanh(w22.matmul(x))), sum(tanh(w23.matmul(x))), sum(tanh(w24.matmul(x))), sum(tanh(w25.matmul(x))), sum(tanh(w26.matmul(x))), sum(tanh(w27.matmul(x))), sum(tanh(w28.matmul(x))), sum(tanh(w29.matmul(x))), sum(tanh(w30.matmul(x))), sum(tanh(w31.matmul(x))), sum(tanh(w32.matmul(x))), sum(tanh(w33.matmul(x))), sum(tanh(w34.matmul(x))), sum(tanh(w35.matmul(x))), sum(tanh(w36.matmul(x))), sum(tanh(w37.matmul(x))), sum(tanh(w38.matmul(x))), sum(tanh(w39.matmul(x))), sum(tanh(w40.matmul(x))), sum(tanh(w41.matmul(x))), sum(tanh(w42.matmul(x))), sum(tanh(w43.matmul(x))), sum(tanh(w44.matmul(x))), sum(tanh(w45.matmul(x))), sum(tanh(w46.matmul(x))), sum(tanh(w47.matmul(x))), sum(tanh(w48.matmul(x))), sum(tanh(w49.matmul(x))), sum(tanh(w50.matmul(x))), sum(tanh(w51.matmul(x))), sum(tanh(w52.matmul(x))), sum(tanh(w53.matmul(x))), sum(tanh(w54.matmul(x))), sum(tanh(w55.matmul(x))), sum(tanh(w56.matmul(x))), sum(tanh(w57.matmul(x))), sum(tanh(w58.matmul(x))), sum(tanh(w59.matmul(x))), sum(tanh(w60.matmul(x))), sum(tanh(w61.matmul(x))), sum(tanh(w62.matmul(x))), sum(tanh(w63.matmul(x))))
    }
}

fn one_head_bench(c: &mut Criterion) {
    let (g, h) = heads::<f32>();
    let mut init = Init::seeded(5);
    let mut params = h.inputs(
        init.uniform::<f32, (U64, U1)>(-1.0, 1.0).expect("valid range"),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
        init.xavier_uniform::<f32, U64, U64>(),
    );
    let seed = Tensor::full(1.0);
    let mut prog = Heads::program::<f32>();
    {
        let saved = g.compile(params.clone(), ()).expect("compiles");
        let from = saved.backprop_from(h.output0, seed.clone()).expect("from");
        let got = prog.gradients_from(h.output0, &mut params, &(), &seed).expect("program");
        assert!(got.as_slice().iter().enumerate().all(|(k, a)| a.storage_eq(from.raw().get(k).expect("input"))));
    }
    let mut group = c.benchmark_group("one_head_of_64");
    group.sample_size(30);
    group.bench_function("program", |b| {
        b.iter(|| prog.gradients_from(h.output0, &mut params, &(), &seed).map(exactgrad::Pack::len));
    });
    on_pools(&mut group, "program", &mut || {
        prog.gradients_from(h.output0, &mut params, &(), &seed).map(exactgrad::Pack::len).expect("program");
    });
    group.bench_function("runtime_from", |b| {
        b.iter(|| {
            let saved = g.compile(params.clone(), ()).expect("compiles");
            saved.backprop_from(h.output0, seed.clone()).expect("from")
        });
    });
    group.bench_function("runtime_from_dense", |b| {
        b.iter(|| {
            let saved = g.compile(params.clone(), ()).expect("compiles");
            saved.backprop_from_dense(h.output0, seed.clone()).expect("from")
        });
    });
    group.finish();
}

fn mlp_bench(c: &mut Criterion) {
    let (g, h) = mlp::<f32, U64>();
    let (mut params, x, labels) = params_and_batch();
    let data = MlpData { x: x.clone(), labels: labels.clone() };
    let seed = Tensor::full(1.0);
    let mut prog = Mlp::program::<f32, U64>();
    {
        let saved = g.compile(params.clone(), MlpData { x: x.clone(), labels: labels.clone() }).expect("compiles");
        let dense =
            saved.backprop_inputs_dense(Seeds::single(&g, h.output, seed.clone()).expect("seed")).expect("dense");
        let got = prog.gradients(&mut params, &data, &seed).expect("program");
        assert!(
            got.as_slice().iter().zip(dense.as_slice()).all(|(a, b)| a.storage_eq(b)),
            "program differs from dense"
        );
    }
    let mut group = c.benchmark_group("mlp_step");
    group.sample_size(20);
    group.bench_function("program", |b| b.iter(|| prog.gradients(&mut params, &data, &seed).map(exactgrad::Pack::len)));
    on_pools(&mut group, "program", &mut || {
        prog.gradients(&mut params, &data, &seed).map(exactgrad::Pack::len).expect("program");
    });
    // The runtime's step as a training loop runs it: parameters and batch moved into `compile`
    // and taken back (no copies).
    let mut state = Some((params.clone(), MlpData { x: x.clone(), labels: labels.clone() }));
    let seeds = Seeds::single(&g, h.output, seed.clone()).expect("seed");
    group.bench_function("runtime_array", |b| {
        b.iter(|| {
            let (p, d) = state.take().expect("put back by the previous step");
            let saved = g.compile(p, d).expect("compiles");
            let grads = saved.backprop_inputs_array(seeds.clone()).expect("array");
            state = Some(saved.into_inputs_and_data());
            grads
        });
    });
    // The GEMMs the step needs, alone (`benches/mlp_gemms`).
    let mut gemms = mlp_gemms::MlpGemms::new(x.data());
    group.bench_function("gemm_only", |b| b.iter(|| gemms.run()));
    group.finish();
}

/// `name/1_thread` and `name/2_threads`: `step` run inside pools of one and of two threads, in
/// one run (the same bits either way: `tests/thread_counts.rs`), for the scaling table; and, on two
/// threads, `name/2_threads_inter_op_off` with the inter-op splits off (a forward level's nodes
/// and a product's two VJP products one after the other: `min_node_work` at its maximum) and
/// `name/2_threads_keep_awake_off` with the other thread sleeping between splits
/// (`parallel::set_keep_awake(Duration::ZERO)`), so their shares of the speed-up show. The
/// measuring loop itself runs on the pool, so no step pays for handing work to a pool thread and
/// waking it (tens of µs on this machine's VM, against steps of tens of µs).
fn on_pools(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, step: &mut (dyn FnMut() + Send)) {
    use exactgrad::parallel;
    let (node_work, awake) = (parallel::min_node_work(), parallel::keep_awake());
    for (threads, label, work, keep) in [
        (1, "1_thread", node_work, awake),
        (2, "2_threads", node_work, awake),
        (2, "2_threads_inter_op_off", usize::MAX, awake),
        (2, "2_threads_keep_awake_off", node_work, Duration::ZERO),
    ] {
        let pool = parallel::pool(threads).expect("threads");
        parallel::set_min_node_work(work);
        parallel::set_keep_awake(keep);
        group.bench_function(format!("{name}/{label}"), |b| pool.install(|| b.iter(&mut *step)));
    }
    parallel::set_min_node_work(node_work);
    parallel::set_keep_awake(awake);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = attention_bench, one_head_bench, mlp_bench
}
criterion_main!(benches);
