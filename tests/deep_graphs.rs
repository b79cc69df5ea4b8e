//! Deep graphs: no pass recurses, so graphs of 100 000 nodes compile, run every reverse pass and
//! drop on the default test thread (2 MiB stack), and the fast passes stay bit-equal to the dense
//! reference.
//!
//! The dense passes are quadratic (every node adds a pack over its whole prefix: ~5·10⁹ tensor
//! additions for 100 000 nodes; in a debug build one dense pass over 10 000 nodes already takes
//! ~13 s), so they do not run on 100 000 nodes:
//! * every non-dense pass (array, stored, inputs-array, inputs-stored, `backprop_from`) and
//!   `compile` run on [`NODES`] = 100 000 nodes, where results are checked for length and against
//!   each other;
//! * the all-seeds dense pass runs once on the 10 000-node chain ([`DENSE_NODES`]) and is compared
//!   bit for bit with the array pass;
//! * every dense pass (all-seeds, inputs-only, `backprop_from_dense`) runs on each graph cut to
//!   [`SMALL_DENSE_NODES`] = 3 000 nodes and is compared bit for bit with the fast passes.
//!
//! Graphs (16-element `f32` tensors, raw API — a typed graph's type grows with every node):
//! * a chain alternating `tanh`, `scale(0.9)` and `add` with a constant input;
//! * the same chain followed by one opaque node (its VJP is non-zero at a zero cotangent);
//! * a chain where every node reads the previous one twice (`x + x`).
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

use exactgrad::ops::{Add, Scale, Tanh};
use exactgrad::{Dims, RawGraph, RawNode, RawSavedGraph, RawTensor};

/// Nodes of the graphs every non-dense pass runs on.
const NODES: usize = 100_000;
/// Nodes of the chain the all-seeds dense pass runs on once.
const DENSE_NODES: usize = 10_000;
/// Nodes of the graphs every (quadratic) dense pass runs on.
const SMALL_DENSE_NODES: usize = 3_000;
const WIDTH: usize = 16;

fn d() -> Dims {
    Dims::vector(WIDTH)
}

/// Inputs `x0`, `c`; node `k` is `tanh`, `scale(0.9)` or `add(·, c)` of the previous position.
fn tanh_chain(nodes: usize) -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>) {
    let mut g = RawGraph::new(vec![d(), d()]);
    let mut x = 0;
    for k in 0..nodes {
        let node = match k % 3 {
            0 => RawNode::compact(Tanh::new(x)),
            1 => RawNode::compact(Scale::new(x, 0.9f32)),
            _ => RawNode::compact(Add::new(x, 1)),
        };
        x = g.push(node).unwrap().index();
    }
    let x0 = RawTensor::from_fn(d(), |i| (i as f32 - 7.5) / 4.0);
    let c = RawTensor::from_fn(d(), |i| 0.01 * i as f32 - 0.05);
    (g, vec![x0, c])
}

/// The chain of `nodes - 1` nodes, then an opaque node `y = 2 · prev` whose VJP gives `δ + δ` at
/// `prev`, `-0.0` at every other position and `0.5` at input 0 whatever `δ` is.
fn opaque_last(nodes: usize) -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>) {
    let (mut g, inputs) = tanh_chain(nodes - 1);
    let prev = g.dims().len() - 1;
    g.push(RawNode::opaque(
        "double",
        d(),
        vec![prev],
        move |ctx: &[RawTensor<f32>], (): &()| ctx[prev].map(|&v| v + v),
        move |ctx: &[RawTensor<f32>], (): &(), g: &RawTensor<f32>| {
            let mut out: Vec<RawTensor<f32>> = ctx.iter().map(|t| RawTensor::full(t.dims(), -0.0)).collect();
            out[prev] = g.map(|&v| v + v);
            out[0] = RawTensor::full(d(), 0.5);
            out
        },
    ))
    .unwrap();
    (g, inputs)
}

/// Node `k` is `prev + prev`.
fn doubling_chain(nodes: usize) -> (RawGraph<f32, ()>, Vec<RawTensor<f32>>) {
    let mut g = RawGraph::new(vec![d()]);
    let mut x = 0;
    for _ in 0..nodes {
        x = g.push(RawNode::compact(Add::new(x, x))).unwrap().index();
    }
    (g, vec![RawTensor::from_fn(d(), |i| f32::from_bits(1 + i as u32))])
}

fn bits<'t>(pack: impl IntoIterator<Item = &'t RawTensor<f32>>) -> Vec<Vec<u32>> {
    pack.into_iter().map(|t| t.data().iter().map(|x| x.to_bits()).collect()).collect()
}

fn assert_bits<'t>(
    what: &str,
    a: impl IntoIterator<Item = &'t RawTensor<f32>>,
    b: impl IntoIterator<Item = &'t RawTensor<f32>>,
) {
    let a: Vec<&RawTensor<f32>> = a.into_iter().collect();
    let b: Vec<&RawTensor<f32>> = b.into_iter().collect();
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    if let Some(p) = bits(a.iter().copied()).iter().zip(bits(b.iter().copied())).position(|(x, y)| *x != y) {
        panic!("{what}: position {p} differs: {:?} vs {:?}", a[p], b[p]);
    }
}

/// Seeds: `1` at the last position, `-0.0` at the inputs, zeros elsewhere.
fn seeds(g: &RawGraph<f32, ()>) -> Vec<RawTensor<f32>> {
    let n = g.dims().len();
    g.dims()
        .iter()
        .enumerate()
        .map(|(p, &dims)| {
            let v = if p + 1 == n {
                1.0
            } else if p < g.num_inputs() {
                -0.0
            } else {
                0.0
            };
            RawTensor::full(dims, v)
        })
        .collect()
}

/// Every non-dense pass; returns (all-seeds array result, single-output result).
fn fast_passes(g: &RawGraph<f32, ()>, inputs: Vec<RawTensor<f32>>) -> (Vec<RawTensor<f32>>, Vec<RawTensor<f32>>) {
    let saved = RawSavedGraph::compile(g, inputs, ()).unwrap();
    let (len, n_in) = (g.dims().len(), g.num_inputs());
    assert_eq!(saved.values().len(), len);

    let array = saved.backprop_all_array(seeds(g)).unwrap();
    assert_eq!(array.len(), len);
    assert!(array.iter().all(|t| t.numel() == WIDTH));
    assert_bits("all_stored vs all_array", &saved.backprop_all_stored(seeds(g)).unwrap(), &array);
    assert_bits("inputs_array vs all_array", &saved.backprop_inputs_array(seeds(g)).unwrap(), &array[..n_in]);
    assert_bits("inputs_stored vs all_array", &saved.backprop_inputs_stored(seeds(g)).unwrap(), &array[..n_in]);

    let from = saved.backprop_from(g.position(len - 1).unwrap(), RawTensor::full(d(), 1.0)).unwrap();
    assert_eq!(from.len(), len);
    (array, from.into_vec())
}

/// Every pass, fast and dense, bit-compared.
fn all_passes_against_dense(g: &RawGraph<f32, ()>, inputs: Vec<RawTensor<f32>>) {
    let saved = RawSavedGraph::compile(g, inputs.clone(), ()).unwrap();
    let (len, n_in) = (g.dims().len(), g.num_inputs());
    let dense = saved.backprop_all_dense(seeds(g)).unwrap();
    assert_eq!(dense.len(), len);
    assert_bits("inputs_dense vs all_dense", &saved.backprop_inputs_dense(seeds(g)).unwrap(), &dense[..n_in]);
    let from_dense = saved.backprop_from_dense(g.position(len - 1).unwrap(), RawTensor::full(d(), 1.0)).unwrap();
    let (array, from) = fast_passes(g, inputs);
    assert_bits("all_array vs all_dense", &array, &dense);
    assert_bits("from vs from_dense", &from, &from_dense);
}

#[test]
fn tanh_chain_dense_reference() {
    let (g, inputs) = tanh_chain(SMALL_DENSE_NODES);
    all_passes_against_dense(&g, inputs);
}

#[test]
fn tanh_chain_all_seeds_dense_10k() {
    let (g, inputs) = tanh_chain(DENSE_NODES);
    let saved = RawSavedGraph::compile(&g, inputs, ()).unwrap();
    let dense = saved.backprop_all_dense(seeds(&g)).unwrap();
    assert_eq!(dense.len(), DENSE_NODES + 2);
    assert_bits("all_array vs all_dense", &saved.backprop_all_array(seeds(&g)).unwrap(), &dense);
}

#[test]
fn tanh_chain_fast_passes() {
    let (g, inputs) = tanh_chain(NODES);
    let (array, from) = fast_passes(&g, inputs);
    // Every node of the chain is reached from the last one, so the single-output pass performs the
    // same additions as the all-seeds pass seeded at the last node — except at the inputs, whose
    // `-0.0` seeds the all-seeds pass keeps and `backprop_from` replaces by `+0.0`; both then add
    // the same non-zero contributions.
    assert_bits("from vs array (nodes)", &from[2..], &array[2..]);
    assert!(array.iter().flat_map(exactgrad::RawTensor::data).all(|v| v.is_finite()));
    assert!(array[0].data().iter().any(|&v| v != 0.0), "the gradient reaches x0");
}

#[test]
fn opaque_last_dense_reference() {
    let (g, inputs) = opaque_last(SMALL_DENSE_NODES);
    assert!(g.nodes().last().unwrap().is_opaque());
    all_passes_against_dense(&g, inputs);
}

#[test]
fn opaque_last_fast_passes() {
    let (g, inputs) = opaque_last(NODES);
    let (array, from) = fast_passes(&g, inputs);
    assert_bits("from vs array (nodes)", &from[2..], &array[2..]);
}

#[test]
fn doubling_chain_dense_reference() {
    let (g, inputs) = doubling_chain(SMALL_DENSE_NODES);
    all_passes_against_dense(&g, inputs);
}

#[test]
fn doubling_chain_fast_passes() {
    let (g, inputs) = doubling_chain(NODES);
    let (array, from) = fast_passes(&g, inputs);
    assert_bits("from vs array (nodes)", &from[1..], &array[1..]);
    // 2^100000 overflows: the input gradient is +inf.
    assert!(array[0].data().iter().all(|&v| v == f32::INFINITY));
}

/// Building, compiling and dropping a 100 000-node graph (and every result) needs no deep stack.
#[test]
fn drop_of_a_deep_graph() {
    let (g, inputs) = opaque_last(NODES);
    let saved = RawSavedGraph::compile(&g, inputs, ()).unwrap();
    let grads = saved.backprop_inputs_array(seeds(&g)).unwrap();
    assert_eq!(grads.len(), 2);
    drop(grads);
    drop(saved);
    drop(g);
    let (g, _) = doubling_chain(NODES);
    drop(g);
}
