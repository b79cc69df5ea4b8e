//! A generated program of built-in ops allocates nothing on the heap after its first run (issue
//! 10: buffers are sized on the first call and reused): every later `gradients` /
//! `gradients_from` call on the same shapes makes zero heap allocations, counted by `dhat`'s
//! testing allocator (one profiler per process, so the checks run in one test). Opaque closures
//! return new tensors, so they allocate by their signature; they are not measured here. Batched
//! products run one GEMM per batch item into one buffer: nothing is allocated per item.

use exactgrad::typenum::{U16, U2, U24, U3, U4, U8};
use exactgrad::{graph, Tensor};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The heap allocations (blocks, growths included) made while `f` runs.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = dhat::HeapStats::get().total_blocks;
    f();
    dhat::HeapStats::get().total_blocks - before
}

graph! {
    /// A small attention block: layer norm, fused projection, two heads, softmax, residual, MLP.
    fn block(g: [8], b: [8], w_qkv: [8, 24], b_qkv: [24], w_o: [8, 8], w_1: [8, 16], w_2: [16, 8]; x: [4, 8]) -> [] {
        let h = layer_norm(x, g, b);
        let qkv = h.matmul(w_qkv) + b_qkv;
        let q = slice(qkv, 1, 0, 8);
        let k = slice(qkv, 1, 8, 8);
        let v = slice(qkv, 1, 16, 8);
        let a0 = softmax(slice(q, 1, 0, 4).matmul(slice(k, 1, 0, 4).t()) * 0.5).matmul(slice(v, 1, 0, 4));
        let a1 = softmax(slice(q, 1, 4, 4).matmul(slice(k, 1, 4, 4).t()) * 0.5).matmul(slice(v, 1, 4, 4));
        let x1 = x + concat(a0, a1, 1).matmul(w_o);
        let out = x1 + gelu(x1.matmul(w_1)).matmul(w_2);
        mean(square(out))
    }
}

graph! {
    /// Two outputs sharing a prefix.
    fn two_heads(x: [2, 3], w: [3, 3]) -> ([], []) {
        let h = tanh(x.matmul(w));
        (sum(relu(h) * h), mean(exp(h) + x))
    }
}

graph! {
    /// Convolutions and poolings (their patch matrices and columns are scratch).
    fn cnn(x: [2, 2, 6, 6], k: [3, 2, 3, 3], q: [2, 3, 2, 2], s: [2, 2, 7], r: [4, 2, 3]) -> [] {
        let h = relu(conv2d(x, k, padding = 1));
        let p = max_pool2d(h, kernel = 2);
        let c = conv2d(p, q, dilation = (1, 2), padding = (0, 1));
        sum(avg_pool2d(c, kernel = 2, stride = 1, padding = 1)) + sum(conv1d(s, r, stride = 2))
    }
}

graph! {
    /// Batched attention: an embedding of two sequences, shared projections, a batched product
    /// per head, the causal and padding masks.
    fn batched(table: [9, 8], wq: [8, 8], wk: [8, 8], wv: [8, 8], wo: [8, 8]; ids: Vec<usize>, pad: Vec<bool>) -> [] {
        let x: [3, 4, 8] = embedding(table, ids);
        let q = x.matmul(wq);
        let k = x.matmul(wk);
        let s = causal_mask(q.matmul(permute(k, [0, 2, 1])) * 0.25, f64::NEG_INFINITY);
        let a = softmax(masked_fill(s, pad, -1e9)).matmul(x.matmul(wv));
        mean(square(a.matmul(wo) + x))
    }
}

graph! {
    /// A concat of three parts, a split and a dropout (SEMANTICS §8.3).
    fn parts(a: [2, 3], b: [2, 1]; seed: u64) -> [] {
        let (l, r) = split(concat([a, b, a], 1), 1, [4, 3]);
        sum(dropout(concat([r, l, r], 1), 0.5, seed) * concat([a, b, a, b, b, b], 1))
    }
}

fn filled<S: exactgrad::Shape>(salt: u32) -> Tensor<f32, S> {
    Tensor::from_fn(|i| ((i as u32 * 7 + salt) % 11) as f32 * 0.25 - 1.0)
}

fn attention_block() {
    let (_, h) = block::<f32>();
    let mut inputs = h.inputs(
        Tensor::full(1.0),
        Tensor::zeros(),
        filled::<(U8, U24)>(1),
        filled(2),
        filled::<(U8, U8)>(3),
        filled::<(U8, U16)>(4),
        filled::<(U16, U8)>(5),
    );
    let data = BlockData { x: filled::<(U4, U8)>(6) };
    let seed = Tensor::full(1.0);
    let mut prog = Block::program::<f32>();
    let first = allocations(|| {
        prog.gradients(&mut inputs, &data, &seed).expect("runs");
    });
    assert!(first > 0, "the first run sizes the buffers");
    for run in 2..8 {
        let n = allocations(|| {
            prog.gradients(&mut inputs, &data, &seed).expect("runs");
        });
        assert_eq!(n, 0, "run {run} of the attention block allocated {n} times");
    }
}

fn two_outputs() {
    let (_, h) = two_heads::<f32>();
    let mut inputs = h.inputs(filled::<(U2, U3)>(1), filled::<(U3, U3)>(2));
    let seeds = (Tensor::full(1.0), Tensor::full(0.5));
    let mut prog = TwoHeads::program::<f32>();
    prog.gradients(&mut inputs, &(), &seeds).expect("runs");
    for run in 2..8 {
        let n = allocations(|| {
            prog.gradients(&mut inputs, &(), &seeds).expect("runs");
        });
        assert_eq!(n, 0, "all-outputs run {run} allocated {n} times");
    }
    let mut from = TwoHeads::program::<f32>();
    let seed = Tensor::full(1.0);
    from.gradients_from(h.output0, &mut inputs, &(), &seed).expect("runs");
    for run in 2..8 {
        let n = allocations(|| {
            from.gradients_from(h.output0, &mut inputs, &(), &seed).expect("runs");
        });
        assert_eq!(n, 0, "single-output run {run} allocated {n} times");
    }
}

fn convolutions() {
    let (_, h) = cnn::<f32>();
    let mut inputs = h.inputs(filled(1), filled(2), filled(3), filled(4), filled(5));
    let seed = Tensor::full(1.0);
    let mut prog = Cnn::program::<f32>();
    prog.gradients(&mut inputs, &(), &seed).expect("runs");
    for run in 2..8 {
        let n = allocations(|| {
            prog.gradients(&mut inputs, &(), &seed).expect("runs");
        });
        assert_eq!(n, 0, "run {run} of the convolutions allocated {n} times");
    }
}

fn batched_attention() {
    let (_, h) = batched::<f32>();
    let mut inputs = h.inputs(filled(1), filled(2), filled(3), filled(4), filled(5));
    let data = BatchedData { ids: (0..12).map(|i| (i * 5) % 9).collect(), pad: (0..16).map(|i| i % 4 == 3).collect() };
    let seed = Tensor::full(1.0);
    let mut prog = Batched::program::<f32>();
    prog.gradients(&mut inputs, &data, &seed).expect("runs");
    for run in 2..8 {
        let n = allocations(|| {
            prog.gradients(&mut inputs, &data, &seed).expect("runs");
        });
        assert_eq!(n, 0, "run {run} of the batched attention allocated {n} times");
    }
}

fn concat_split_dropout() {
    let (_, h) = parts::<f32>();
    let mut inputs = h.inputs(filled(1), filled(2));
    let seed = Tensor::full(1.0);
    let mut prog = Parts::program::<f32>();
    for step in 0..8u64 {
        // A new mask each step, as in training: the seed is data, not a buffer.
        let data = PartsData { seed: step };
        let n = allocations(|| {
            prog.gradients(&mut inputs, &data, &seed).expect("runs");
        });
        assert!(step == 0 || n == 0, "run {step} of concat, split and dropout allocated {n} times");
    }
}

#[test]
fn programs_allocate_only_on_their_first_run() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // The counts are process-wide: a pool's worker threads allocate as they start, so the
    // programs run on a pool (one thread per core, like rayon's global one) whose every worker
    // has started and gone idle before anything is counted.
    let pool = exactgrad::parallel::pool(0).expect("a thread pool");
    pool.broadcast(|_| ());
    pool.install(|| {
        attention_block();
        two_outputs();
        convolutions();
        batched_attention();
        concat_split_dropout();
    });
}
