//! A graph with a run-time dim, compiled at several sizes, against the same graph written with the
//! literal size: every value and every pass's gradients bit for bit; and the binding's errors.

use crate::error::Error;
use crate::graph::{RawGraph, RawNode};
use crate::ops::testing::{bits, sample};
use crate::ops::{CrossEntropy, DataTensor, GatherRows, MatMul, Mul, Reshape, Tanh};
use crate::saved::RawSavedGraph;
use crate::shape::{run_time_stand_in, Dims};
use crate::tensor::RawTensor;

/// The data: a `[b, 2]` tensor, `b` labels in `0..2`, `b` ids in `0..5`.
#[derive(Clone)]
struct Batch {
    x2: RawTensor<f64>,
    labels: Vec<usize>,
    ids: Vec<usize>,
}

fn x2(d: &Batch) -> &RawTensor<f64> {
    &d.x2
}
fn labels(d: &Batch) -> &[usize] {
    &d.labels
}
fn ids(d: &Batch) -> &[usize] {
    &d.ids
}

fn d(x: &[usize]) -> Dims {
    Dims::new(x).unwrap()
}

/// `cross_entropy(reshape(reshape(tanh(x · w) * x2)) * gather_rows(table, ids), labels)` with
/// `x: [b, 3]`: `b` is the literal `batch`, or the run-time dim `batch` when `batch` is `None`.
fn graph(batch: Option<usize>) -> RawGraph<f64, Batch> {
    let b = batch.unwrap_or(run_time_stand_in(0));
    let mut g = RawGraph::new(vec![d(&[b, 3]), d(&[3, 2]), d(&[5, 2])]);
    if batch.is_none() {
        g.set_run_time_dims(vec!["batch".into()]).unwrap();
        g.set_input_names(vec!["x".into(), "w".into(), "table".into()]);
    }
    let push = |g: &mut RawGraph<f64, Batch>, n| g.push(n).unwrap().index();
    let h = push(&mut g, RawNode::compact(MatMul::new(0, 1)));
    let t = push(&mut g, RawNode::compact(Tanh::new(h)));
    let x = push(&mut g, RawNode::compact(DataTensor::new(x2, d(&[b, 2]))));
    let m = push(&mut g, RawNode::compact(Mul::new(t, x)));
    let r = push(&mut g, RawNode::compact(Reshape::declared(m, d(&[b, 2]), d(&[b, 1, 2]))));
    let r = push(&mut g, RawNode::compact(Reshape::declared(r, d(&[b, 1, 2]), d(&[b, 2]))));
    let e = push(&mut g, RawNode::compact(GatherRows::new(2, ids, b)));
    let y = push(&mut g, RawNode::compact(Mul::new(r, e)));
    push(&mut g, RawNode::compact(CrossEntropy::new(y, labels)));
    g
}

fn inputs(b: usize, seed: u64) -> (Vec<RawTensor<f64>>, Batch) {
    let inputs = vec![sample(&[b, 3], seed), sample(&[3, 2], seed + 1), sample(&[5, 2], seed + 2)];
    let data = Batch {
        x2: sample(&[b, 2], seed + 3),
        labels: (0..b).map(|i| (i * 7 + seed as usize) % 2).collect(),
        ids: (0..b).map(|i| (i * 3 + seed as usize) % 5).collect(),
    };
    (inputs, data)
}

fn all_bits(ts: &[RawTensor<f64>]) -> Vec<(Dims, Vec<u64>)> {
    ts.iter().map(|t| (t.dims(), bits(t))).collect()
}

#[test]
fn one_graph_serves_every_batch_size_bit_for_bit_like_the_literal_graph() {
    let dynamic = graph(None);
    for (b, seed) in [(4, 10), (1, 20), (3, 30), (4, 40)] {
        let literal = graph(Some(b));
        let (xs, data) = inputs(b, seed);
        let s_dyn = RawSavedGraph::compile(&dynamic, xs.clone(), data.clone()).unwrap();
        let s_lit = RawSavedGraph::compile(&literal, xs, data).unwrap();
        assert_eq!(s_dyn.dims(), literal.dims());
        assert_eq!(all_bits(s_dyn.values()), all_bits(s_lit.values()));
        let out = dynamic.position(dynamic.dims().len() - 1).unwrap();
        let out_lit = literal.position(literal.dims().len() - 1).unwrap();
        let mut seeds = s_dyn.zero_seeds();
        seeds.set(out, RawTensor::from_vec(Dims::scalar(), vec![1.5]).unwrap()).unwrap();
        let mut seeds_lit = s_lit.zero_seeds();
        seeds_lit.set(out_lit, RawTensor::from_vec(Dims::scalar(), vec![1.5]).unwrap()).unwrap();
        let reference = all_bits(&s_lit.backprop_all_dense(seeds_lit).unwrap());
        assert_eq!(all_bits(&s_dyn.backprop_all_dense(seeds.clone()).unwrap()), reference);
        assert_eq!(all_bits(&s_dyn.backprop_all_array(seeds.clone()).unwrap()), reference);
        assert_eq!(all_bits(&s_dyn.backprop_inputs_stored(seeds).unwrap()), reference[..3].to_vec());
        let seed = RawTensor::from_vec(Dims::scalar(), vec![1.0]).unwrap();
        let from = s_dyn.backprop_from(out, seed.clone()).unwrap().into_vec();
        assert_eq!(all_bits(&from), all_bits(&s_lit.backprop_from(out_lit, seed).unwrap().into_vec()));
    }
}

#[test]
fn seeds_built_from_the_declared_dims_take_the_bound_dims() {
    let dynamic = graph(None);
    let (xs, data) = inputs(2, 5);
    let saved = RawSavedGraph::compile(&dynamic, xs, data).unwrap();
    let mut seeds = crate::pack::RawSeeds::zeros(dynamic.dims());
    seeds.set(dynamic.position(11).unwrap(), RawTensor::from_vec(Dims::scalar(), vec![1.0]).unwrap()).unwrap();
    let grads = saved.backprop_all_array(seeds).unwrap();
    assert_eq!(grads[0].dims(), Dims::matrix(2, 3));
}

fn message(e: Error) -> String {
    match e {
        Error::RunTimeDim { message, .. } => message,
        e => panic!("unexpected error {e}"),
    }
}

#[test]
fn inputs_and_data_that_disagree_on_a_run_time_dim_are_errors_naming_both() {
    let g = graph(None);
    let (mut xs, data) = inputs(3, 1);
    let bad = RawSavedGraph::compile(&g, xs.clone(), Batch { ids: vec![0, 1], ..data.clone() }).err().unwrap();
    assert_eq!(message(bad), "run-time dim `batch` is 3 in input `x` but 2 in the data of node 6 (gather_rows)");
    let bad = RawSavedGraph::compile(&g, xs.clone(), Batch { x2: sample(&[4, 2], 1), ..data.clone() }).err().unwrap();
    assert_eq!(message(bad), "run-time dim `batch` is 3 in input `x` but 4 in the data of node 2 (data_tensor)");
    xs[0] = sample(&[3, 4], 2);
    let bad = RawSavedGraph::compile(&g, xs.clone(), data.clone()).err().unwrap();
    assert_eq!(message(bad), "input `x` has shape [3, 4], but it was declared [batch, 3]");
    xs[0] = sample(&[0, 3], 2);
    let bad = RawSavedGraph::compile(&g, xs, data).err().unwrap();
    assert_eq!(message(bad), "run-time dim `batch` is 0 in input `x`; a run-time dim is at least 1");
}

#[test]
fn two_inputs_that_disagree_are_an_error_naming_both() {
    let b = run_time_stand_in(0);
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(b), Dims::vector(b)]);
    g.set_run_time_dims(vec!["batch".into()]).unwrap();
    g.set_input_names(vec!["x".into(), "y".into()]);
    g.push(RawNode::compact(Mul::new(0, 1))).unwrap();
    let bad = RawSavedGraph::compile(&g, vec![sample(&[64], 1), sample(&[39], 2)], ()).err().unwrap();
    assert_eq!(message(bad), "run-time dim `batch` is 64 in input `x` but 39 in input `y`");
    assert!(RawSavedGraph::compile(&g, vec![sample(&[39], 1), sample(&[39], 2)], ()).is_ok());
    assert_eq!(g.describe().lines().next(), Some("%0 = input [batch]"));
}

#[test]
fn a_graph_without_run_time_dims_still_checks_its_inputs_exactly() {
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    g.push(RawNode::compact(Tanh::new(0))).unwrap();
    assert!(matches!(RawSavedGraph::compile(&g, vec![sample(&[3], 1)], ()), Err(Error::PackShapes { .. })));
}
