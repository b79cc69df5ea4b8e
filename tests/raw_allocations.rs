//! The raw API's step — `compile`, a pass, the inputs handed to the next step, the gradients
//! given back with `RawGraph::recycle` — allocates no buffer per node once its graph has spare
//! buffers (issue 26): the heap allocations of a step, counted by `dhat`'s testing allocator, do
//! not grow with the number of layers of a chain. (One profiler per process, so the checks run in
//! one test.)

use exactgrad::ops::{Add, Mul, Sum, Tanh};
use exactgrad::{Dims, RawGraph, RawNode, RawSavedGraph, RawSeeds, RawTensor};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The heap allocations (blocks, growths included) made while `f` runs.
fn allocations<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = dhat::HeapStats::get().total_blocks;
    let r = f();
    (dhat::HeapStats::get().total_blocks - before, r)
}

/// `layers` of `x = tanh(x * a_i + b_i)` on 16 elements, summed: the graph, its inputs, the seed.
fn chain(layers: usize) -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>, RawSeeds<f32>) {
    let d = Dims::vector(16);
    let mut g = RawGraph::new(vec![d; 1 + 2 * layers]);
    let value = |i: usize| RawTensor::from_vec(d, (0..16).map(|e| ((e * 7 + i) % 11) as f32 / 11.0 - 0.4).collect());
    let inputs = (0..1 + 2 * layers).map(|i| value(i).expect("16 elements")).collect();
    let mut x = 0;
    for i in 0..layers {
        let m = g.push(RawNode::compact(Mul::new(x, 1 + 2 * i))).expect("well-formed").index();
        let s = g.push(RawNode::compact(Add::new(m, 2 + 2 * i))).expect("well-formed").index();
        x = g.push(RawNode::compact(Tanh::new(s))).expect("well-formed").index();
    }
    let loss = g.push(RawNode::compact(Sum::new(x))).expect("well-formed");
    let mut seeds = RawSeeds::zeros(g.dims());
    seeds.set(loss, RawTensor::full(Dims::scalar(), 1.0)).expect("seed fits");
    (g, inputs, seeds)
}

/// The allocations of each of `steps` steps after two warm-up steps, with the all-seeds pass
/// (`all`) or the inputs-only one; the gradients of every step are the first step's.
fn steps(layers: usize, all: bool, steps: usize) -> Vec<u64> {
    let (g, mut inputs, seeds) = chain(layers);
    let mut first: Option<Vec<Vec<u32>>> = None;
    let mut counts = Vec::new();
    for step in 0..steps + 2 {
        let (n1, (saved, grads)) = allocations(|| {
            let saved = RawSavedGraph::compile(&g, core::mem::take(&mut inputs), ()).expect("compiles");
            let grads =
                if all { saved.backprop_all_array(seeds.clone()) } else { saved.backprop_inputs_array(seeds.clone()) };
            (saved, grads.expect("the pass runs"))
        });
        // Read outside the counts (this allocates per tensor).
        let bits: Vec<Vec<u32>> = grads.iter().map(|t| t.data().iter().map(|v| v.to_bits()).collect()).collect();
        let (n2, ()) = allocations(|| {
            let (next, ()) = saved.into_inputs_and_data();
            inputs = next;
            g.recycle(grads);
        });
        let n = n1 + n2;
        match &first {
            None => first = Some(bits),
            Some(want) => assert!(*want == bits, "step {step} of {layers} layers gave other gradients"),
        }
        if step >= 2 {
            counts.push(n);
        }
    }
    counts
}

#[test]
fn a_raw_step_allocates_nothing_per_node_after_the_first() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for all in [false, true] {
        let short = steps(20, all, 3);
        let long = steps(200, all, 3);
        // The bits of the gradients were checked per step above; here the allocation counts: the
        // same for 61 and 601 nodes (the few containers of a step: values, slots, results).
        assert_eq!(short, long, "all-seeds pass {all}: allocations per step grow with the layers");
        assert!(long.iter().all(|&n| n < 32), "all-seeds pass {all}: {long:?} allocations per step");
    }
}
