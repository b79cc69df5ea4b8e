//! One compiled model serves several threads: graphs, saved graphs, packs and tensors are
//! `Send + Sync` (checked statically below), and passes run concurrently — on one shared saved
//! graph, on saved graphs compiled by each thread from one shared graph, and by generated programs
//! moved into threads — give the bits of the same passes run on one thread.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use exactgrad::typenum::{U2, U3};
use exactgrad::{
    graph, ops, ContextPack, Dims, GraphData, Init, Nil, Pack, Program, RawGraph, RawNode, RawPack, RawSavedGraph,
    RawSeeds, RawTensor, SavedGraph, Seeds, Snoc, Tensor,
};
use num_traits::Float;

/// Threads per check, and passes per thread (so the runs overlap).
const THREADS: usize = 4;
const ROUNDS: usize = 3;

fn assert_send_sync<T: Send + Sync>() {}

/// The same check on a value whose type cannot be named (a generated program).
fn assert_send_sync_value<T: Send + Sync>(_: &T) {}

type Inputs = Snoc<Snoc<Nil, (U2,)>, (U2, U3)>;
type Nodes = Snoc<Nil, (U3,)>;

#[test]
fn graphs_saved_graphs_packs_and_tensors_are_send_and_sync() {
    assert_send_sync::<GraphData<f64, (), Inputs, Nodes>>();
    assert_send_sync::<GraphData<f32, Vec<usize>, Inputs, Nodes, NetBrand>>();
    assert_send_sync::<RawGraph<f64, ()>>();
    assert_send_sync::<RawNode<f64, ()>>();
    assert_send_sync::<SavedGraph<'static, f64, (), Inputs, Nodes>>();
    assert_send_sync::<RawSavedGraph<'static, f64, Vec<usize>>>();
    assert_send_sync::<Pack<f64, Inputs>>();
    assert_send_sync::<ContextPack<f64, Inputs, Nodes>>();
    assert_send_sync::<RawPack<f64>>();
    assert_send_sync::<Seeds<f64, Inputs, Nodes>>();
    assert_send_sync::<RawSeeds<f64>>();
    assert_send_sync::<Tensor<f64, (U2, U3)>>();
    assert_send_sync::<RawTensor<f64>>();
    assert_send_sync::<NetHandles<U2>>();
    assert_send_sync::<NetData<f64, U2>>();
    assert_send_sync_value(&Net::program::<f64, U2>());
}

/// `x ↦ x²` elementwise, and its VJP: the opaque node of `net`.
fn square<A: Float>(x: &RawTensor<A>) -> RawTensor<A> {
    x.map(|&v| v * v)
}

fn square_vjp<A: Float>(x: &RawTensor<A>, g: &RawTensor<A>) -> [RawTensor<A>; 1] {
    [RawTensor::from_fn(x.dims(), |i| (x.data()[i] + x.data()[i]) * g.data()[i])]
}

graph! {
    /// A small classifier with an opaque node: the loss and the class probabilities.
    fn net<B>(w1: [3, 4], b1: [4], w2: [4, 2]; x: [B, 3], labels: Vec<usize>) -> ([], [B, 2]) {
        let h = tanh(x.matmul(w1) + b1);
        let q: [B, 4] = opaque(h, forward = |h| square(h), vjp = |h, g| square_vjp(h, g));
        let logits = (h + q).matmul(w2);
        (cross_entropy(logits, labels), softmax(logits))
    }
}

type NetParams = Pack<f64, NetInputs>;

fn params(seed: u64) -> NetParams {
    let mut init = Init::seeded(seed);
    let h = net::<f64, U2>().1;
    h.inputs(init.xavier_uniform(), init.uniform(-0.1, 0.1).unwrap(), init.xavier_uniform())
}

fn data(seed: u64) -> NetData<f64, U2> {
    let mut init = Init::seeded(seed ^ 0x5eed);
    NetData { x: init.uniform(-1.0, 1.0).unwrap(), labels: vec![(seed % 2) as usize, 1] }
}

/// Every tensor of `a` has the bits of the same tensor of `b`.
fn same_bits<'a>(a: impl IntoIterator<Item = &'a RawTensor<f64>>, b: impl IntoIterator<Item = &'a RawTensor<f64>>) {
    let (a, b): (Vec<_>, Vec<_>) = (a.into_iter().collect(), b.into_iter().collect());
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(x.storage_eq(y), "position {k}: {x:?} != {y:?}");
    }
}

/// What one round of passes on a saved graph of `net` gives: the loss's single-output pass (fast
/// and dense), the all-seeds array and stored passes seeded at both outputs, and the
/// probabilities' inputs-only pass.
struct Results {
    from_loss: Vec<RawTensor<f64>>,
    from_loss_dense: Vec<RawTensor<f64>>,
    all_array: Vec<RawTensor<f64>>,
    all_stored: Vec<RawTensor<f64>>,
    probabilities: Vec<RawTensor<f64>>,
}

fn passes(
    g: &NetGraph<f64, U2>,
    h: &NetHandles<U2>,
    saved: &SavedGraph<'_, f64, NetData<f64, U2>, NetInputs, NetNodes<U2>, NetBrand>,
) -> Results {
    let one = || Tensor::full(1.0);
    let mut seeds = Seeds::zeros(g);
    seeds.set(h.output0, one()).unwrap();
    seeds.set(h.output1, Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.25]).unwrap()).unwrap();
    Results {
        from_loss: saved.backprop_from(h.output0, one()).unwrap().into_vec(),
        from_loss_dense: saved.backprop_from_dense(h.output0, one()).unwrap().into_vec(),
        all_array: saved.backprop_all_array(seeds.clone()).unwrap().into_vec(),
        all_stored: saved.backprop_all_stored(seeds).unwrap().into_vec(),
        probabilities: saved
            .backprop_inputs_stored(Seeds::single(g, h.output1, Tensor::full(0.5)).unwrap())
            .unwrap()
            .into_vec(),
    }
}

fn check(got: &Results, want: &Results) {
    same_bits(&got.from_loss, &want.from_loss);
    same_bits(&got.from_loss_dense, &want.from_loss_dense);
    same_bits(&got.all_array, &want.all_array);
    same_bits(&got.all_stored, &want.all_stored);
    same_bits(&got.probabilities, &want.probabilities);
}

#[test]
fn threads_share_one_saved_graph() {
    let (g, h) = net::<f64, U2>();
    let saved = g.compile(params(1), data(1)).unwrap();
    let want = passes(&g, &h, &saved);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..ROUNDS {
                    check(&passes(&g, &h, &saved), &want);
                }
            });
        }
    });
}

#[test]
fn threads_compile_their_own_saved_graphs_from_one_shared_graph() {
    let (g, h) = net::<f64, U2>();
    let seeds: Vec<u64> = (0..THREADS as u64).map(|t| 10 + t).collect();
    let want: Vec<Results> = seeds.iter().map(|&t| passes(&g, &h, &g.compile(params(t), data(t)).unwrap())).collect();
    thread::scope(|s| {
        for (&t, want) in seeds.iter().zip(&want) {
            let (g, h) = (&g, &h);
            s.spawn(move || {
                for _ in 0..ROUNDS {
                    let saved = g.compile(params(t), data(t)).unwrap();
                    check(&passes(g, h, &saved), want);
                }
            });
        }
    });
}

/// The program of `net` over `f64` with `B = 2`.
type NetProgram = Program<f64, NetData<f64, U2>, NetInputs, (Tensor<f64, ()>, Tensor<f64, (U2, U2)>), NetBrand>;

/// The all-inputs pass and the loss's single-output pass of a program on the inputs of seed `t`.
fn run(program: &mut NetProgram, t: u64) -> [Vec<RawTensor<f64>>; 2] {
    let h = net::<f64, U2>().1;
    let (mut p, d) = (params(t), data(t));
    let all = program.gradients(&mut p, &d, &(Tensor::full(1.0), Tensor::full(0.5))).unwrap().clone();
    let from = program.gradients_from(h.output0, &mut p, &d, &Tensor::full(1.0)).unwrap().clone();
    [all.into_vec(), from.into_vec()]
}

#[test]
fn generated_programs_run_in_threads_as_on_one() {
    let want: Vec<_> = (0..THREADS as u64).map(|t| run(&mut Net::program::<f64, U2>(), t)).collect();
    thread::scope(|s| {
        for (t, want) in (0..THREADS as u64).zip(&want) {
            let mut program = Net::program::<f64, U2>(); // made here, moved into the thread
            s.spawn(move || {
                for _ in 0..ROUNDS {
                    let [all, from] = run(&mut program, t);
                    same_bits(&all, &want[0]);
                    same_bits(&from, &want[1]);
                }
            });
        }
    });
}

/// A hand-built graph whose opaque closures share an atomic counter: one saved graph, passes in
/// every thread, the closures called concurrently and every result the single-threaded one.
#[test]
fn opaque_closures_run_concurrently_on_one_raw_saved_graph() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(3), Dims::vector(3)]);
    let prod = g.push(RawNode::compact(ops::Mul::new(0, 1))).unwrap().index();
    let counter = Arc::clone(&calls);
    let sq = g
        .push(RawNode::opaque(
            "square",
            Dims::vector(3),
            vec![prod],
            move |ctx, _| square(&ctx[prod]),
            move |ctx, _, gr| {
                counter.fetch_add(1, Ordering::Relaxed);
                let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
                let [d] = square_vjp(&ctx[prod], gr);
                out[prod] = d;
                out
            },
        ))
        .unwrap()
        .index();
    let out = g.push(RawNode::compact(ops::Sum::new(sq))).unwrap();
    let x = |v: [f64; 3]| RawTensor::from_vec(Dims::vector(3), v.to_vec()).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![x([0.5, -1.5, 2.0]), x([-0.0, 3.0, f64::NAN])], ()).unwrap();
    let seed = || RawTensor::full(Dims::scalar(), 1.0);
    let want = saved.backprop_from(out, seed()).unwrap().into_vec();
    calls.store(0, Ordering::Relaxed);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..ROUNDS {
                    same_bits(&saved.backprop_from(out, seed()).unwrap().into_vec(), &want);
                }
            });
        }
    });
    assert_eq!(calls.load(Ordering::Relaxed), THREADS * ROUNDS);
}
