//! Over an **exact** scalar (`core::num::Wrapping<i64>`, a commutative ring whose storage equality
//! is `==`) and graphs of built-in ops, the single-output pass equals the all-seeds pass
//! (SEMANTICS §7, last paragraph):
//!
//! `backprop_from(output, seed)` == `backprop_all_dense(single(output, seed))` == `backprop_from_dense(output, seed)`
//!
//! at every position (inputs and nodes). The skipped nodes would only have added exact zeros:
//! every built-in VJP maps a zero cotangent to zero contributions with a zero uniform, and `x + 0
//! == x` holds in the ring. Graphs are random (1–30 nodes) over add, sub, mul, neg, scale, matmul,
//! transpose, sum, `add_row` and relu, with small random integer inputs and seeds (products wrap,
//! which keeps the ring laws). The all-seeds fast passes are also checked against the dense one.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod common;

use core::num::Wrapping;

use common::{plans, Kind, Plan, Rng, Step};
use exactgrad::{ops, RawGraph, RawNode, RawSavedGraph, RawTensor};
use proptest::prelude::*;

type W = Wrapping<i64>;

const KINDS: &[Kind] = &[
    Kind::Add,
    Kind::Sub,
    Kind::Mul,
    Kind::Neg,
    Kind::Scale,
    Kind::MatMul,
    Kind::Transpose,
    Kind::Sum,
    Kind::AddRow,
    Kind::Relu,
];

fn build(plan: &Plan) -> RawGraph<W, ()> {
    let mut g = RawGraph::new(plan.inputs.clone());
    for &step in &plan.steps {
        let node = match step {
            Step::Add(a, b) => RawNode::compact(ops::Add::new(a, b)),
            Step::Sub(a, b) => RawNode::compact(ops::Sub::new(a, b)),
            Step::Mul(a, b) => RawNode::compact(ops::Mul::new(a, b)),
            Step::Neg(a) => RawNode::compact(ops::Neg::new(a)),
            Step::Scale(a, r) => RawNode::compact(ops::Scale::new(a, Wrapping(i64::from(r % 7) - 3))),
            Step::MatMul(a, b) => RawNode::compact(ops::MatMul::new(a, b)),
            Step::Transpose(a) => RawNode::compact(ops::Transpose::new(a)),
            Step::Sum(a) => RawNode::compact(ops::Sum::new(a)),
            Step::AddRow(a, b) => RawNode::compact(ops::AddRow::new(a, b)),
            Step::Relu(a) => RawNode::compact(ops::Relu::new(a)),
            Step::Mean(_) | Step::Opaque { .. } => unreachable!("not planned here"),
        };
        let p = g.push(node).unwrap();
        assert_eq!(g.dims()[p.index()], plan.dims[p.index()]);
    }
    g
}

fn small(rng: &mut Rng) -> W {
    Wrapping(rng.below(9) as i64 - 4)
}

fn values(t: &RawTensor<W>) -> Vec<i64> {
    t.data().iter().map(|w| w.0).collect()
}

fn assert_equal<'t>(
    what: &str,
    a: impl IntoIterator<Item = &'t RawTensor<W>>,
    b: impl IntoIterator<Item = &'t RawTensor<W>>,
) {
    let a: Vec<&RawTensor<W>> = a.into_iter().collect();
    let b: Vec<&RawTensor<W>> = b.into_iter().collect();
    assert_eq!(a.len(), b.len(), "{what}: pack lengths differ");
    for (p, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.dims(), y.dims(), "{what}: dims at position {p}");
        assert_eq!(values(x), values(y), "{what}: position {p}");
    }
}

fn run_case(plan: &Plan, seed: u64) {
    let mut rng = Rng::new(seed);
    let g = build(plan);
    let inputs = plan.inputs.iter().map(|&d| RawTensor::from_fn(d, |_| small(&mut rng))).collect();
    let saved = RawSavedGraph::compile(&g, inputs, ()).unwrap();

    // Every position as the output (including inputs), with a random seed.
    for output in 0..plan.len() {
        let seed = RawTensor::from_fn(plan.dims[output], |_| small(&mut rng));
        let single: Vec<RawTensor<W>> = plan
            .dims
            .iter()
            .enumerate()
            .map(|(p, &d)| if p == output { seed.clone() } else { RawTensor::zeros(d) })
            .collect();
        let all = saved.backprop_all_dense(single.clone()).unwrap();
        let from = saved.backprop_from(saved.graph().position(output).unwrap(), seed.clone()).unwrap();
        assert_equal(&format!("from({output}) vs all-seeds dense"), &from, &all);
        assert_equal(
            &format!("from({output}) vs from_dense"),
            &from,
            &saved.backprop_from_dense(saved.graph().position(output).unwrap(), seed).unwrap(),
        );
        assert_equal(&format!("all_array single({output})"), &saved.backprop_all_array(single).unwrap(), &all);
    }

    // Random all-seeds packs: the array and inputs passes against the dense one.
    let seeds: Vec<RawTensor<W>> = plan.dims.iter().map(|&d| RawTensor::from_fn(d, |_| small(&mut rng))).collect();
    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_equal("all_array", &saved.backprop_all_array(seeds.clone()).unwrap(), &dense);
    assert_equal("all_stored", &saved.backprop_all_stored(seeds.clone()).unwrap(), &dense);
    let n_in = plan.inputs.len();
    assert_equal("inputs_array", &saved.backprop_inputs_array(seeds.clone()).unwrap(), &dense[..n_in]);
    assert_equal("inputs_stored", &saved.backprop_inputs_stored(seeds).unwrap(), &dense[..n_in]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn single_output_pass_equals_all_seeds_pass(plan in plans(KINDS, 4, 30), seed in any::<u64>()) {
        run_case(&plan, seed);
    }
}

/// A hand-made case: `y = relu(x * x - x)`, `z = sum(y)`, an unrelated `w = x + x`; the gradient
/// from `z` at `x = [-1, 0, 2, 3]` is `(2x - 1)` where `x*x - x > 0`, else `0`.
#[test]
fn worked_example() {
    let d = exactgrad::Dims::vector(4);
    let mut g = RawGraph::<W, ()>::new(vec![d]);
    let sq = g.push(RawNode::compact(ops::Mul::new(0, 0))).unwrap().index();
    let diff = g.push(RawNode::compact(ops::Sub::new(sq, 0))).unwrap().index();
    let y = g.push(RawNode::compact(ops::Relu::new(diff))).unwrap().index();
    let z = g.push(RawNode::compact(ops::Sum::new(y))).unwrap();
    g.push(RawNode::compact(ops::Add::new(0, 0))).unwrap();
    let x = RawTensor::from_vec(d, [-1, 0, 2, 3].map(Wrapping).to_vec()).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![x], ()).unwrap();
    let from = saved.backprop_from(z, RawTensor::full(exactgrad::Dims::scalar(), Wrapping(1))).unwrap();
    assert_eq!(values(&from[0]), [-3, 0, 3, 5]);
}
