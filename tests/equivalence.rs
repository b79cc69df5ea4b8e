//! Equivalence of the fast reverse passes and the dense reference passes (SEMANTICS §3, §6, §7).
//!
//! Random graphs are built through the untyped API from a *recipe* of small choice integers that
//! is interpreted deterministically (so proptest shrinks graphs, values and seeds together). The
//! graphs (1 to 40 nodes) mix every built-in op (for floats also `sigmoid`, `softplus`, `log`,
//! `sqrt`, `gelu`, `div`, `softmax`, `log_softmax` and `layer_norm`; `square`, `max`, `min`,
//! `sum_axis`, `mean_axis`, `reshape`, `permute`, `concat`, `slice`, `gather_rows` (also with a
//! `[3, 1]` batch of ids), `conv1d`, `conv2d`, `max_pool2d`, `avg_pool2d`, batched `matmul` (one
//! matrix per item, or one shared), `masked_fill` and `causal_mask` (fill values drawn from the
//! adversarial mix) for every scalar; inputs of rank 0 to 4), repeated
//! parents (`x + x`, `x * x`, `matmul(x, x)`, `div(x, x)`, `max(x, x)`, `concat(x, x)`,
//! `conv2d(x, x)`, ids repeated by `gather_rows`), fan-out, three
//! kinds of opaque node (an ordinary one, one whose VJP is non-zero at a zero cotangent, one
//! producing NaN in its forward and its VJP) and a user compact op whose contributions carry
//! non-zero uniforms (built-in ops only ever push the uniform `+0`, which would leave most of the
//! deferred history of §5 untested). Inputs and seeds (on inputs and on intermediates) are drawn
//! from an adversarial mix of `±0`, NaNs with several payloads (quiet, signalling, negative),
//! `±inf`, subnormals and ordinary values. Every comparison is on `to_bits`, element by element,
//! position by position.
//!
//! Properties, for f32, f64 and `Wrapping<i64>`:
//! * `backprop_all_array == backprop_all_stored == backprop_all_dense`, also with the seeds given
//!   as a sparse [`RawSeeds`] (unset positions are `zeros` without a buffer);
//! * `backprop_inputs_array == backprop_inputs_dense` == the first |Γ| tensors of
//!   `backprop_all_dense`, and `backprop_inputs_stored` == the graph-level reference
//!   `backprop_ctx` (not `inputs_array`, which runs the same loop);
//! * `backprop_from(p, s) == backprop_from_dense(p, s)` for a random position `p` (input or
//!   node) and an adversarial seed `s`.
//!
//! Over an exact scalar (`Wrapping<i64>`), on graphs of built-in ops, the single-output pass also
//! equals the all-seeds dense pass with `single(p, s)` (§7, last sentence).
//!
//! Deterministic regression tests check the worked examples of SEMANTICS §8 and the splitting of
//! uniform runs by bits (§5).
#![allow(clippy::unwrap_used)]

use exactgrad::{ops, Dims, RawGraph, RawNode, RawSavedGraph, RawSeeds, RawTensor};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

mod recipe;

use recipe::*;

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

fn fail(graph: &str, message: String) -> TestCaseError {
    TestCaseError::fail(format!("{message}\ngraph:\n{graph}"))
}

/// Every fast pass against its dense reference, bit for bit.
fn check_passes<T: TestScalar>(r: &Recipe) -> Result<(), TestCaseError> {
    let mut draw = Draw::<T>::new(r);
    let case = Case::<T>::build(r, &mut draw, false);
    let graph = case.graph.describe();
    let n_inputs = case.graph.num_inputs();
    let dims = case.graph.dims().to_vec();
    let saved = RawSavedGraph::compile(&case.graph, case.inputs, ()).unwrap();
    let seeds: Vec<RawTensor<T>> = dims.iter().map(|&d| draw.seed(d)).collect();
    let check = |what: &str, a: &[RawTensor<T>], b: &[RawTensor<T>]| {
        compare_bits(&format!("{what} (seeds {seeds:?})"), a, b).map_err(|m| fail(&graph, m))
    };

    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    let array = saved.backprop_all_array(seeds.clone()).unwrap();
    check("backprop_all_array vs backprop_all_dense", &array, &dense)?;
    let stored = saved.backprop_all_stored(seeds.clone()).unwrap();
    check("backprop_all_stored vs backprop_all_dense", &stored, &dense)?;

    let inputs_dense = saved.backprop_inputs_dense(seeds.clone()).unwrap();
    check("backprop_inputs_dense vs backprop_all_dense[..|Γ|]", &inputs_dense, &dense[..n_inputs])?;
    let inputs_array = saved.backprop_inputs_array(seeds.clone()).unwrap();
    check("backprop_inputs_array vs backprop_inputs_dense", &inputs_array, &inputs_dense)?;
    // Not against `inputs_array` (with storage equality both run one loop): against the
    // graph-level reference (`tests/reference.rs` holds the full `ofGraph_*` properties).
    let inputs_stored = saved.backprop_inputs_stored(seeds.clone()).unwrap();
    let inputs_reference = case.graph.backprop_ctx(&saved.values()[..n_inputs], &(), seeds.clone()).unwrap();
    check("backprop_inputs_stored vs backprop_ctx", &inputs_stored, &inputs_reference)?;

    // The same seeds as a sparse pack: all-`+0` positions left unset (no buffer until read).
    let mut sparse = RawSeeds::zeros(&dims);
    for (q, s) in seeds.iter().enumerate() {
        if s.data().iter().any(|v| v.bits() != T::zero().bits()) {
            sparse.set(saved.graph().position(q).unwrap(), s.clone()).unwrap();
        }
    }
    let sparse_array = saved.backprop_all_array(sparse.clone()).unwrap();
    check("backprop_all_array(sparse seeds) vs backprop_all_dense", &sparse_array, &dense)?;
    let sparse_dense = saved.backprop_all_dense(sparse.clone()).unwrap();
    check("backprop_all_dense(sparse seeds) vs backprop_all_dense", &sparse_dense, &dense)?;
    let sparse_inputs = saved.backprop_inputs_array(sparse).unwrap();
    check("backprop_inputs_array(sparse seeds) vs backprop_inputs_dense", &sparse_inputs, &inputs_dense)?;

    let p = usize::from(r.output) % dims.len();
    let seed = draw.tensor(dims[p]);
    let from = saved.backprop_from(saved.graph().position(p).unwrap(), seed.clone()).unwrap().into_vec();
    let from_dense = saved.backprop_from_dense(saved.graph().position(p).unwrap(), seed.clone()).unwrap().into_vec();
    check(&format!("backprop_from({p}, {seed:?}) vs backprop_from_dense"), &from, &from_dense)?;
    Ok(())
}

/// Over an exact scalar and built-in ops, the single-output pass equals the all-seeds passes with
/// `single(p, s)`.
fn check_exact_single_output(r: &Recipe) -> Result<(), TestCaseError> {
    let mut draw = Draw::<Int>::new(r);
    let case = Case::<Int>::build(r, &mut draw, true);
    let graph = case.graph.describe();
    let dims = case.graph.dims().to_vec();
    let saved = RawSavedGraph::compile(&case.graph, case.inputs, ()).unwrap();
    let p = usize::from(r.output) % dims.len();
    let seed = draw.tensor(dims[p]);
    let mut single: Vec<RawTensor<Int>> = dims.iter().map(|&d| RawTensor::zeros(d)).collect();
    single[p] = seed.clone();
    let check = |what: &str, a: &[RawTensor<Int>], b: &[RawTensor<Int>]| {
        compare_bits(&format!("{what}, output {p}, seed {seed:?}"), a, b).map_err(|m| fail(&graph, m))
    };
    let all_dense = saved.backprop_all_dense(single.clone()).unwrap();
    let from = saved.backprop_from(saved.graph().position(p).unwrap(), seed.clone()).unwrap().into_vec();
    check("backprop_from vs backprop_all_dense(single)", &from, &all_dense)?;
    let from_dense = saved.backprop_from_dense(saved.graph().position(p).unwrap(), seed.clone()).unwrap().into_vec();
    check("backprop_from_dense vs backprop_all_dense(single)", &from_dense, &all_dense)?;
    let array = saved.backprop_all_array(single).unwrap();
    check("backprop_all_array vs backprop_all_dense(single)", &array, &all_dense)?;
    Ok(())
}

/// 1024 cases per property (about a second in debug mode); `PROPTEST_CASES` may ask for more.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig { cases: default.cases.max(1024), failure_persistence: None, ..default }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fast_passes_equal_dense_f64(r in recipe()) {
        check_passes::<f64>(&r)?;
    }

    #[test]
    fn fast_passes_equal_dense_f32(r in recipe()) {
        check_passes::<f32>(&r)?;
    }

    #[test]
    fn fast_passes_equal_dense_wrapping_i64(r in recipe()) {
        check_passes::<Int>(&r)?;
    }

    #[test]
    fn single_output_equals_all_seeds_over_exact_scalars(r in recipe()) {
        check_exact_single_output(&r)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic regression tests (SEMANTICS §8)
// ---------------------------------------------------------------------------------------------

fn vector(v: &[f64]) -> RawTensor<f64> {
    RawTensor::from_vec(Dims::vector(v.len()), v.to_vec()).unwrap()
}

fn bits_of(t: &RawTensor<f64>) -> Vec<u64> {
    t.data().iter().map(|x| x.to_bits()).collect()
}

/// `y = x + x`, seed `[-0, +0]` on `x`: the dense all-seeds pass adds `g + g = [+0, +0]` to it and
/// gives `[+0, +0]`; the single-output pass from `x` skips the node and keeps `[-0, +0]`.
#[test]
fn x_plus_x_with_negative_zero_seed() {
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    let y = graph.push(RawNode::compact(ops::Add::new(0, 0))).unwrap();
    assert_eq!(y.index(), 1);
    let saved = RawSavedGraph::compile(&graph, vec![vector(&[1.0, 2.0])], ()).unwrap();
    let seeds = vec![vector(&[-0.0, 0.0]), vector(&[0.0, 0.0])];

    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(bits_of(&dense[0]), [0, 0]);
    assert_bits_eq(&saved.backprop_all_array(seeds.clone()).unwrap(), &dense);
    assert_bits_eq(&saved.backprop_all_stored(seeds.clone()).unwrap(), &dense);
    assert_bits_eq(&saved.backprop_inputs_array(seeds.clone()).unwrap(), &dense[..1]);
    assert_bits_eq(&saved.backprop_inputs_dense(seeds).unwrap(), &dense[..1]);

    let from = saved.backprop_from(graph.position(0).unwrap(), vector(&[-0.0, 0.0])).unwrap();
    assert_eq!(bits_of(&from[0]), [(-0.0f64).to_bits(), 0]);
    assert_bits_eq(&from, &saved.backprop_from_dense(graph.position(0).unwrap(), vector(&[-0.0, 0.0])).unwrap());
}

/// `p1 = x * x, p2 = p1 + x`, `x = 2^-53`, seed 1 at `p2`: `x` gets `1 + (2^-53 + 2^-53)` =
/// `0x3FF0000000000001` in every pass (adding the two parent terms separately would round to 1).
#[test]
fn square_plus_x_adds_both_parent_terms_first() {
    let x = f64::powi(2.0, -53);
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::scalar()]);
    let p1 = graph.push(RawNode::compact(ops::Mul::new(0, 0))).unwrap();
    let p2 = graph.push(RawNode::compact(ops::Add::new(p1.index(), 0))).unwrap();
    let scalar = |v: f64| RawTensor::full(Dims::scalar(), v);
    let saved = RawSavedGraph::compile(&graph, vec![scalar(x)], ()).unwrap();
    let seeds = vec![scalar(0.0), scalar(0.0), scalar(1.0)];
    let expected = 0x3FF0_0000_0000_0001u64;

    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(bits_of(&dense[0]), [expected]);
    let passes = [
        ("backprop_all_array", saved.backprop_all_array(seeds.clone()).unwrap()),
        ("backprop_all_stored", saved.backprop_all_stored(seeds.clone()).unwrap()),
        ("backprop_inputs_array", saved.backprop_inputs_array(seeds.clone()).unwrap()),
        ("backprop_inputs_stored", saved.backprop_inputs_stored(seeds.clone()).unwrap()),
        ("backprop_inputs_dense", saved.backprop_inputs_dense(seeds).unwrap()),
        ("backprop_from", saved.backprop_from(p2, scalar(1.0)).unwrap().into_vec()),
        ("backprop_from_dense", saved.backprop_from_dense(p2, scalar(1.0)).unwrap().into_vec()),
    ];
    for (name, grads) in &passes {
        assert_eq!(bits_of(&grads[0]), [expected], "{name}");
    }
    assert_bits_eq(&passes[0].1, &dense);
    assert_bits_eq(&passes[5].1, &dense);
}

/// The products fuse (SEMANTICS §8, worked check): `x · w` with `x = [[-1, 1 + e]]`,
/// `w = [[1], [1 - e]]` adds the exact `1 - e²` to `-1` with one rounding, `-e²`, where two
/// roundings give `+0` (`1 - e²` rounds to 1). Then the VJP product of `w`'s gradient: `x` as a
/// `[2, 1]` column times `w = [[1]]`, seeded `[[1], [1 - e]]`, sums `δ[i] · x[i]` over the rows,
/// `fma(1 - e, 1 + e, fma(1, -1, 0)) = -e²`. In `f64` (`e = 2⁻³⁰`: `-2⁻⁶⁰ = 0xBC30000000000000`)
/// and `f32` (`e = 2⁻¹³`: `-2⁻²⁶ = 0xB2800000`), in the forward, the reference and every pass.
#[test]
fn matmul_fuses_each_product_into_its_sum() {
    fn check<A: exactgrad::Scalar + core::ops::Mul<Output = A> + core::fmt::Debug + Copy>(
        one: A,
        e: A,
        minus_e2: A,
        bits: fn(&A) -> u64,
        neg: fn(A) -> A,
        sub: fn(A, A) -> A,
        add: fn(A, A) -> A,
    ) {
        let expected = bits(&minus_e2);
        let tensor = |d: &[usize], v: Vec<A>| RawTensor::from_vec(Dims::new(d).unwrap(), v).unwrap();
        // Forward: [1, 2] · [2, 1].
        let mut graph = RawGraph::<A, ()>::new(vec![Dims::new(&[1, 2]).unwrap(), Dims::new(&[2, 1]).unwrap()]);
        let y = graph.push(RawNode::compact(ops::MatMul::new(0, 1))).unwrap();
        let inputs = vec![tensor(&[1, 2], vec![neg(one), add(one, e)]), tensor(&[2, 1], vec![one, sub(one, e)])];
        let saved = RawSavedGraph::compile(&graph, inputs.clone(), ()).unwrap();
        assert_eq!(saved.values()[y.index()].data().iter().map(bits).collect::<Vec<_>>(), [expected]);
        let reference = graph.eval_ctx(&inputs, &()).unwrap();
        assert_eq!(reference[y.index()].data().iter().map(bits).collect::<Vec<_>>(), [expected]);
        // VJP: w's gradient xᵀ · δ of [2, 1] · [1, 1].
        let mut graph = RawGraph::<A, ()>::new(vec![Dims::new(&[2, 1]).unwrap(), Dims::new(&[1, 1]).unwrap()]);
        let y = graph.push(RawNode::compact(ops::MatMul::new(0, 1))).unwrap();
        let inputs = vec![tensor(&[2, 1], vec![neg(one), add(one, e)]), tensor(&[1, 1], vec![one])];
        let saved = RawSavedGraph::compile(&graph, inputs.clone(), ()).unwrap();
        let seed = tensor(&[2, 1], vec![one, sub(one, e)]);
        let zero = |d: &[usize]| RawTensor::full(Dims::new(d).unwrap(), <A as exactgrad::Scalar>::zero());
        let seeds = vec![zero(&[2, 1]), zero(&[1, 1]), seed.clone()];
        let passes = [
            ("backprop_all_dense", saved.backprop_all_dense(seeds.clone()).unwrap()),
            ("backprop_all_array", saved.backprop_all_array(seeds.clone()).unwrap()),
            ("backprop_all_stored", saved.backprop_all_stored(seeds.clone()).unwrap()),
            ("backprop_inputs_array", saved.backprop_inputs_array(seeds.clone()).unwrap()),
            ("backprop_inputs_stored", saved.backprop_inputs_stored(seeds.clone()).unwrap()),
            ("backprop_inputs_dense", saved.backprop_inputs_dense(seeds.clone()).unwrap()),
            ("backprop_from", saved.backprop_from(y, seed.clone()).unwrap().into_vec()),
            ("backprop_from_dense", saved.backprop_from_dense(y, seed).unwrap().into_vec()),
            ("backprop_ctx", graph.backprop_ctx(&inputs, &(), seeds).unwrap()),
        ];
        for (name, grads) in &passes {
            assert_eq!(grads[1].data().iter().map(bits).collect::<Vec<_>>(), [expected], "{name}");
        }
    }
    let e64 = f64::powi(2.0, -30);
    assert_eq!((-(e64 * e64)).to_bits(), 0xBC30_0000_0000_0000);
    check(1.0f64, e64, -(e64 * e64), |x| x.to_bits(), |x| -x, |a, b| a - b, |a, b| a + b);
    let e32 = f32::powi(2.0, -13);
    assert_eq!((-(e32 * e32)).to_bits(), 0xB280_0000);
    check(1.0f32, e32, -(e32 * e32), |x| u64::from(x.to_bits()), |x| -x, |a, b| a - b, |a, b| a + b);
    // Two roundings would give +0 in both: the check can fail.
    assert_eq!((-1.0f64 + (1.0 + e64) * (1.0 - e64)).to_bits(), 0);
    assert_eq!((-1.0f32 + (1.0 + e32) * (1.0 - e32)).to_bits(), 0);
}

/// The comparison itself must see a sign of zero and a NaN payload (a helper that cannot fail
/// would make every property above vacuous).
#[test]
fn bit_comparison_distinguishes_zero_signs_and_nan_payloads() {
    assert!(compare_bits("zero", &[vector(&[0.0])], &[vector(&[-0.0])]).is_err());
    let (n1, n2) = (f64::from_bits(0x7ff8_0000_0000_0001), f64::from_bits(0x7ff8_0000_0000_0002));
    let err = compare_bits("nan", &[vector(&[1.0, n1])], &[vector(&[1.0, n2])]).unwrap_err();
    assert!(err.contains("position 0, element 1"), "{err}");
    assert!(compare_bits("nan", &[vector(&[n1])], &[vector(&[n1])]).is_ok());
    assert!(compare_bits("len", &[vector(&[1.0])], &[]).is_err());
}

/// Deferred uniforms are grouped in runs by *bits*: `fill(-0)` then a built-in op's `+0` are two
/// runs. With inputs `x` (seed `-0`) and `w`: `n0 = relu(w)`, `n1 = fill(-0)`; `x` is never
/// written, so it receives both uniforms lazily: `(-0 + -0) + +0 = +0`. Merging the runs by value
/// (`-0 == +0`) would replay `-0` twice, stop at the fixed point, and keep `-0`.
#[test]
fn uniform_runs_are_split_by_bits_not_by_value() {
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::vector(1), Dims::vector(1)]);
    graph.push(RawNode::compact(ops::Relu::new(1))).unwrap();
    graph.push(RawNode::compact(Uniforms { parents: [0, 0], variant: 0, u: [-0.0, 0.0] })).unwrap();
    let saved = RawSavedGraph::compile(&graph, vec![vector(&[1.0]), vector(&[2.0])], ()).unwrap();
    let seeds = vec![vector(&[-0.0]), vector(&[0.0]), vector(&[0.0]), vector(&[0.0])];

    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(bits_of(&dense[0]), [0]);
    assert_bits_eq(&saved.backprop_all_array(seeds.clone()).unwrap(), &dense);
    assert_bits_eq(&saved.backprop_inputs_array(seeds).unwrap(), &dense[..2]);
}
