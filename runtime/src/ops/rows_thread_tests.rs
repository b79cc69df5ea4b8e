//! Row-wise ops split over threads by blocks of whole rows (`parallel::rows`, `rows_pair`) or of
//! independent output elements: `softmax`'s and `log_softmax`'s forward and VJP, `layer_norm`'s
//! forward and VJP, `cross_entropy`'s forward (its per-row losses) and VJP, and `sum_axis`'s and
//! `mean_axis`'s forward and VJP give the one-thread bits on 1, 2, 3 and 4 threads, on any `f64`
//! bits and any shape (rows that do not divide evenly among the threads included). The split is
//! forced with `parallel::set_min_pointwise_work(0)` (it moves work only).

use proptest::prelude::*;

use super::testing::bits;
use super::{CrossEntropy, LayerNorm, LogSoftmax, MeanAxis, Softmax, SumAxis};
use crate::contributions::Contributions;
use crate::graph::{CompactOp, RawGraph, RawNode};
use crate::parallel;
use crate::saved::RawSavedGraph;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The pools of 1 to 4 threads, built once.
fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

/// `run` on pools of 1 to 4 threads (the split forced on): every run gives the one-thread bits.
fn same_on_1_to_4_threads(run: impl Fn() -> Vec<Vec<u64>> + Sync) -> Result<(), TestCaseError> {
    parallel::set_min_pointwise_work(0);
    let runs: Vec<Vec<Vec<u64>>> = pools().iter().map(|pool| pool.install(&run)).collect();
    for (threads, r) in runs.iter().enumerate().skip(1) {
        prop_assert!(r == &runs[0], "{} threads differ from one", threads + 1);
    }
    Ok(())
}

/// A tensor of dims `d` holding the `f64`s of the bits `v`.
fn tensor(d: &[usize], v: &[u64]) -> RawTensor<f64> {
    RawTensor::from_vec(Dims::new(d).unwrap(), v.iter().map(|&b| f64::from_bits(b)).collect()).unwrap()
}

/// The bits of one `op` node's value on `inputs` with the graph data `data`, then of its dense VJP
/// at the cotangent `g` (one tensor per input).
fn node_bits<D: Sync + 'static, O: CompactOp<f64, D> + Clone>(
    op: O,
    inputs: &[RawTensor<f64>],
    data: D,
    g: &RawTensor<f64>,
) -> Vec<Vec<u64>> {
    let mut graph = RawGraph::new(inputs.iter().map(RawTensor::dims).collect());
    let p = graph.push(RawNode::compact(op)).unwrap();
    let saved = RawSavedGraph::compile(&graph, inputs.to_vec(), data).unwrap();
    let mut out = vec![bits(&saved.values()[p.index()])];
    let mut c = Contributions::new();
    let node = saved.prepared_nodes().next().unwrap();
    out.extend(node.vjp_dense(g, &mut c).unwrap().iter().map(bits));
    out
}

/// Any `f64` bits, and often the special values (NaNs with payloads, `±0`, `±∞`, subnormals).
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => any::<u64>(),
        1 => prop::sample::select(vec![
            0u64,
            (-0.0f64).to_bits(),
            f64::INFINITY.to_bits(),
            f64::NEG_INFINITY.to_bits(),
            0x7ff8_0000_0000_0001,
            0xfff0_0000_0000_0002,
            1,
            0x800f_ffff_ffff_ffff,
        ]),
        4 => (-4.0..4.0f64).prop_map(f64::to_bits),
    ]
}

/// `len` values of [`value`].
fn values(len: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(value(), len)
}

/// The labels of `cross_entropy` tests: the graph data.
fn labels(d: &Vec<usize>) -> &[usize] {
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn row_ops_are_the_same_on_1_to_4_threads(
        (rows, n, x, g) in (0usize..12, 1usize..20).prop_flat_map(|(r, n)| (
            Just(r),
            Just(n),
            prop::collection::vec(any::<u64>(), r * n),
            prop::collection::vec(any::<u64>(), r * n),
        )),
    ) {
        let (x, g) = (tensor(&[rows, n], &x), tensor(&[rows, n], &g));
        same_on_1_to_4_threads(|| {
            let mut out = node_bits(Softmax::new(0), std::slice::from_ref(&x), (), &g);
            out.extend(node_bits(LogSoftmax::new(0), std::slice::from_ref(&x), (), &g));
            out
        })?;
    }

    #[test]
    fn layer_norm_is_the_same_on_1_to_4_threads(
        (rows, n, x, gain, bias, g) in (0usize..12, 1usize..20).prop_flat_map(|(r, n)| (
            Just(r),
            Just(n),
            values(r * n),
            values(n),
            values(n),
            values(r * n),
        )),
        eps in prop_oneof![Just(1e-5f64.to_bits()), value()],
    ) {
        let inputs = [tensor(&[rows, n], &x), tensor(&[n], &gain), tensor(&[n], &bias)];
        let g = tensor(&[rows, n], &g);
        let eps = f64::from_bits(eps);
        same_on_1_to_4_threads(|| {
            let mut out = node_bits(LayerNorm::new(0, 1, 2, eps), &inputs, (), &g);
            // Gain and bias at one position: their contributions added.
            out.extend(node_bits(LayerNorm::new(0, 1, 1, eps), &inputs[..2], (), &g));
            out
        })?;
    }

    #[test]
    fn cross_entropy_is_the_same_on_1_to_4_threads(
        (rows, classes, x, k) in (1usize..12, 1usize..20).prop_flat_map(|(r, c)| (
            Just(r),
            Just(c),
            values(r * c),
            prop::collection::vec(0..c, r),
        )),
        g in value(),
    ) {
        let x = tensor(&[rows, classes], &x);
        let g = tensor(&[], &[g]);
        same_on_1_to_4_threads(|| node_bits(CrossEntropy::new(0, labels), std::slice::from_ref(&x), k.clone(), &g))?;
    }

    #[test]
    fn axis_sums_are_the_same_on_1_to_4_threads(
        (dims, axis, x, g) in (prop::collection::vec(0usize..6, 1..4), 0usize..3).prop_flat_map(|(mut d, axis)| {
            let axis = axis % d.len();
            // `mean_axis` needs a non-empty axis.
            d[axis] = d[axis].max(1);
            let len: usize = d.iter().product();
            let out = len / d[axis];
            (Just(d), Just(axis), values(len), values(out))
        }),
    ) {
        let x = tensor(&dims, &x);
        let mut out_dims = dims.clone();
        out_dims.remove(axis);
        let g = tensor(&out_dims, &g);
        same_on_1_to_4_threads(|| {
            let mut out = node_bits(SumAxis::new(0, axis), std::slice::from_ref(&x), (), &g);
            out.extend(node_bits(MeanAxis::new(0, axis), std::slice::from_ref(&x), (), &g));
            out
        })?;
    }
}
