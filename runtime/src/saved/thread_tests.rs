//! Inter-op parallelism (SEMANTICS §8.4): the forward's wide levels computed at the same time and
//! a product's two VJP products run side by side give the one-thread bits on 1, 2, 3 and 4
//! threads — every value and every gradient of the array and dense passes — on graphs of
//! independent heads with an opaque node among them, on any `f64` bits. Errors are the first
//! failing node in index order whatever the thread count. Both splits are forced with
//! `parallel::set_min_node_work(0)` (it moves work only).

use proptest::prelude::*;

use super::RawSavedGraph;
use crate::error::Error;
use crate::graph::{RawGraph, RawNode};
use crate::ops::{Add, GatherRows, MatMul, Sum, Tanh};
use crate::parallel;
use crate::shape::Dims;
use crate::tensor::RawTensor;

fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

fn bits(t: &RawTensor<f64>) -> Vec<u64> {
    t.data().iter().map(|x| x.to_bits()).collect()
}

/// `heads` heads `s_k = sum(tanh(W_k · x))` over `x [n, 1]`, an opaque node after the first
/// heads (it reads its whole prefix), a head reading it, and the sum of the heads' sums.
fn heads_graph(heads: usize, n: usize) -> RawGraph<f64, ()> {
    let x = Dims::new(&[n, 1]).unwrap();
    let w = Dims::new(&[n, n]).unwrap();
    let mut dims = vec![x];
    dims.extend((0..heads).map(|_| w));
    let mut g = RawGraph::<f64, ()>::new(dims);
    let mut sums = Vec::new();
    for k in 0..heads {
        let m = g.push(RawNode::compact(MatMul::new(1 + k, 0))).unwrap().index();
        let t = g.push(RawNode::compact(Tanh::new(m))).unwrap().index();
        sums.push(g.push(RawNode::compact(Sum::new(t))).unwrap().index());
        if k == heads / 2 {
            let o = g
                .push(RawNode::opaque(
                    "twice",
                    x,
                    vec![t],
                    move |ctx: &[RawTensor<f64>], (): &()| ctx[t].add(&ctx[t]).unwrap(),
                    move |ctx: &[RawTensor<f64>], (): &(), g: &RawTensor<f64>| {
                        let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|v| RawTensor::zeros(v.dims())).collect();
                        out[t] = g.add(g).unwrap();
                        out
                    },
                ))
                .unwrap()
                .index();
            let t2 = g.push(RawNode::compact(Tanh::new(o))).unwrap().index();
            sums.push(g.push(RawNode::compact(Sum::new(t2))).unwrap().index());
        }
    }
    let mut total = sums[0];
    for &s in &sums[1..] {
        total = g.push(RawNode::compact(Add::new(total, s))).unwrap().index();
    }
    g
}

/// Every value, then the array pass's and the dense pass's gradients, seeded with `seeds`.
fn run(g: &RawGraph<f64, ()>, inputs: &[RawTensor<f64>], seeds: &[RawTensor<f64>]) -> Vec<Vec<u64>> {
    let saved = RawSavedGraph::compile(g, inputs.to_vec(), ()).unwrap();
    let mut out: Vec<Vec<u64>> = saved.values().iter().map(bits).collect();
    out.extend(saved.backprop_all_array(seeds.to_vec()).unwrap().iter().map(bits));
    out.extend(saved.backprop_all_dense(seeds.to_vec()).unwrap().iter().map(bits));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn heads_are_the_same_on_1_to_4_threads(
        (heads, n, words) in (2usize..6, 1usize..6).prop_flat_map(|(h, n)| (
            Just(h),
            Just(n),
            // Inputs, then one seed per position (inputs again, and 4·h + 3 nodes of at most
            // n elements each).
            prop::collection::vec(any::<u64>(), 2 * (n + h * n * n) + (4 * h + 3) * n),
        )),
    ) {
        parallel::set_min_node_work(0);
        let g = heads_graph(heads, n);
        let mut word = words.into_iter().map(f64::from_bits);
        let mut draw = |d: Dims| RawTensor::from_vec(d, word.by_ref().take(d.numel()).collect()).unwrap();
        let inputs: Vec<RawTensor<f64>> = g.dims()[..g.num_inputs()].iter().map(|&d| draw(d)).collect();
        let seeds: Vec<RawTensor<f64>> = g.dims().iter().map(|&d| draw(d)).collect();
        prop_assert!(g.levels().widest() >= 2, "the heads share levels");
        let runs: Vec<Vec<Vec<u64>>> = pools().iter().map(|pool| pool.install(|| run(&g, &inputs, &seeds))).collect();
        for (threads, r) in runs.iter().enumerate().skip(1) {
            prop_assert!(r == &runs[0], "{} threads differ from one", threads + 1);
        }
    }
}

/// Two lookups of one level whose ids are out of range: the error names the first (node 0) on
/// every thread count, and the graph compiles afterwards with good ids.
#[test]
fn the_first_failing_node_is_reported_on_every_thread_count() {
    parallel::set_min_node_work(0);
    let ids: fn(&Vec<usize>) -> &[usize] = |d| d;
    let table = Dims::new(&[3, 2]).unwrap();
    let mut g = RawGraph::<f64, Vec<usize>>::new(vec![table, table]);
    g.push(RawNode::compact(GatherRows::new(1, ids, 2))).unwrap();
    g.push(RawNode::compact(GatherRows::new(0, ids, 2))).unwrap();
    assert_eq!(g.levels().widest(), 2);
    let inputs = vec![RawTensor::zeros(table), RawTensor::zeros(table)];
    for pool in pools() {
        let err = pool.install(|| RawSavedGraph::compile(&g, inputs.clone(), vec![0, 7]).unwrap_err());
        assert!(matches!(err, Error::Node { node: 0, .. }), "{err}");
        let saved = pool.install(|| RawSavedGraph::compile(&g, inputs.clone(), vec![0, 2]).unwrap());
        assert_eq!(saved.values().len(), 4);
    }
}
