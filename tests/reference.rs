//! The `ofGraph_*` theorems of the `TorchLean` algebra as tests: every saved pass equals the
//! graph-level reference (`RawGraph::backprop_all_ctx`, `backprop_ctx`, `backprop_from_ctx`,
//! `runtime/src/reference/`), bit for bit, for arbitrary seed packs.
//!
//! * `ofGraph_backpropArray`, `ofGraph_backpropStored`: `backprop_all_array`,
//!   `backprop_all_stored` (and `backprop_all_dense`) of `compile(graph, inputs, data)` equal
//!   `backprop_all_ctx(inputs, data, seeds)`;
//! * `ofGraph_backpropInputsDense` (and the array and stored forms): the inputs-only passes equal
//!   `backprop_ctx`;
//! * the single-output pass: `backprop_from` and `backprop_from_dense` equal `backprop_from_ctx`;
//! * `backpropCtx_eq_saved`: `GraphData::backprop` (compile, then the stored pass) equals
//!   `GraphData::backprop_ctx`; a generated program's `gradients` / `gradients_from` equal the
//!   reference too.
//!
//! Random graphs are the recipes of `tests/recipe/` (every built-in op but the data-reading ones
//! — `gather_rows` and `masked_fill` read fixed ids and masks —,
//! opaque nodes, a user op with adversarial uniforms; adversarial values) on `f64`, `f32` and
//! `Wrapping<i64>`; the data-reading ops (`matmul_data`, `data_tensor`, `cross_entropy`) and
//! `mse` run in the `graph!` models below; the symbolic scalar, whose trees prove the order of
//! every addition, is compared with the reference in `tests/symbolic.rs`.
//!
//! 256 cases per property (a few seconds in debug). `cargo test --release --test reference --
//! --ignored --nocapture soak` runs `EXACTGRAD_SOAK_CASES` cases (default 1 000 000) per scalar and
//! prints its figures.
#![allow(clippy::unwrap_used)]

mod floats;
mod recipe;

use exactgrad::typenum::{U2, U3};
use exactgrad::{graph, Dims, Error, RawGraph, RawNode, RawSavedGraph, RawTensor, Seeds, Tensor};
use floats::{adv, all_bits, TestFloat};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use recipe::*;
use std::sync::atomic::{AtomicU64, Ordering};

fn fail(graph: &str, message: String) -> TestCaseError {
    TestCaseError::fail(format!("{message}\ngraph:\n{graph}"))
}

/// Every pass of the saved graph against the graph-level reference, on one recipe.
fn check_against_reference<T: TestScalar>(r: &Recipe) -> Result<(), TestCaseError> {
    let mut draw = Draw::<T>::new(r);
    let case = Case::<T>::build(r, &mut draw, false);
    let graph = case.graph.describe();
    let n_inputs = case.graph.num_inputs();
    let dims = case.graph.dims().to_vec();
    let seeds: Vec<RawTensor<T>> = dims.iter().map(|&d| draw.seed(d)).collect();
    let check = |what: &str, a: &[RawTensor<T>], b: &[RawTensor<T>]| {
        CHECKS.fetch_add(1, Ordering::Relaxed);
        ELEMENTS.fetch_add(a.iter().map(|t| t.data().len() as u64).sum(), Ordering::Relaxed);
        compare_bits(&format!("{what} (seeds {seeds:?})"), a, b).map_err(|m| fail(&graph, m))
    };

    let reference = case.graph.backprop_all_ctx(&case.inputs, &(), seeds.clone()).unwrap();
    let inputs_reference = case.graph.backprop_ctx(&case.inputs, &(), seeds.clone()).unwrap();
    check("backprop_ctx vs backprop_all_ctx[..|Γ|]", &inputs_reference, &reference[..n_inputs])?;

    let saved = RawSavedGraph::compile(&case.graph, case.inputs.clone(), ()).unwrap();
    check("compile's values vs eval_ctx", saved.values(), &case.graph.eval_ctx(&case.inputs, &()).unwrap())?;
    check("backprop_all_dense vs backprop_all_ctx", &saved.backprop_all_dense(seeds.clone()).unwrap(), &reference)?;
    check("backprop_all_array vs backprop_all_ctx", &saved.backprop_all_array(seeds.clone()).unwrap(), &reference)?;
    check("backprop_all_stored vs backprop_all_ctx", &saved.backprop_all_stored(seeds.clone()).unwrap(), &reference)?;
    let inputs = [
        ("backprop_inputs_dense", saved.backprop_inputs_dense(seeds.clone()).unwrap()),
        ("backprop_inputs_array", saved.backprop_inputs_array(seeds.clone()).unwrap()),
        ("backprop_inputs_stored", saved.backprop_inputs_stored(seeds.clone()).unwrap()),
    ];
    for (name, got) in &inputs {
        check(&format!("{name} vs backprop_ctx"), got, &inputs_reference)?;
    }

    let p = usize::from(r.output) % dims.len();
    let seed = draw.tensor(dims[p]);
    let at = case.graph.position(p).unwrap();
    let from_reference = case.graph.backprop_from_ctx(&case.inputs, &(), at, seed.clone()).unwrap();
    let what = format!("output {p}, seed {seed:?}");
    let from = saved.backprop_from(at, seed.clone()).unwrap().into_vec();
    check(&format!("backprop_from vs backprop_from_ctx, {what}"), &from, &from_reference)?;
    let from_dense = saved.backprop_from_dense(at, seed).unwrap().into_vec();
    check(&format!("backprop_from_dense vs backprop_from_ctx, {what}"), &from_dense, &from_reference)?;
    Ok(())
}

/// Over an exact scalar and built-in ops, the reference's single-output semantics equals its
/// all-seeds semantics with `single(p, s)` (SEMANTICS §7, last sentence): a check of the
/// reference itself.
fn check_reference_single_output_is_exact(r: &Recipe) -> Result<(), TestCaseError> {
    let mut draw = Draw::<Int>::new(r);
    let case = Case::<Int>::build(r, &mut draw, true);
    let dims = case.graph.dims().to_vec();
    let p = usize::from(r.output) % dims.len();
    let seed = draw.tensor(dims[p]);
    let mut single: Vec<RawTensor<Int>> = dims.iter().map(|&d| RawTensor::zeros(d)).collect();
    single[p] = seed.clone();
    let all = case.graph.backprop_all_ctx(&case.inputs, &(), single).unwrap();
    let from = case.graph.backprop_from_ctx(&case.inputs, &(), case.graph.position(p).unwrap(), seed).unwrap();
    compare_bits("backprop_from_ctx vs backprop_all_ctx(single)", &from, &all)
        .map_err(|m| fail(&case.graph.describe(), m))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

    #[test]
    fn of_graph_f64(r in recipe()) {
        check_against_reference::<f64>(&r)?;
    }

    #[test]
    fn of_graph_f32(r in recipe()) {
        check_against_reference::<f32>(&r)?;
    }

    #[test]
    fn of_graph_wrapping_i64(r in recipe()) {
        check_against_reference::<Int>(&r)?;
    }

    #[test]
    fn reference_single_output_is_all_seeds_over_exact_scalars(r in recipe()) {
        check_reference_single_output_is_exact(&r)?;
    }
}

/// Comparisons made by `check_against_reference` (one per pass result), for the soak's figures.
static CHECKS: AtomicU64 = AtomicU64::new(0);
/// Scalars compared bit for bit by those comparisons.
static ELEMENTS: AtomicU64 = AtomicU64::new(0);

/// What one scalar's soak saw.
struct Tally {
    cases: u64,
    checks: u64,
    elements: u64,
    mismatches: u64,
    panics: u64,
}

/// `cases` random recipes over `T`, each checked against the reference; unlike a proptest run it
/// does not stop at the first failure, so the figures count every mismatch and every panic (the
/// first of each is printed in full).
fn soak_scalar<T: TestScalar>(cases: u64) -> Tally {
    let config = ProptestConfig { failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    let (checks, elements) = (CHECKS.load(Ordering::Relaxed), ELEMENTS.load(Ordering::Relaxed));
    let (mut mismatches, mut panics) = (0, 0);
    for _ in 0..cases {
        let r = recipe().new_tree(&mut runner).expect("recipes always generate").current();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_against_reference::<T>(&r))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                mismatches += 1;
                if mismatches == 1 {
                    eprintln!("first mismatch: {e}");
                }
            }
            Err(_) => {
                panics += 1;
                if panics == 1 {
                    eprintln!("first panic on recipe {r:?}");
                }
            }
        }
    }
    Tally {
        cases,
        checks: CHECKS.load(Ordering::Relaxed) - checks,
        elements: ELEMENTS.load(Ordering::Relaxed) - elements,
        mismatches,
        panics,
    }
}

/// The soak run: `EXACTGRAD_SOAK_CASES` recipes (default 10⁶) per scalar against the reference;
/// prints cases, comparisons, scalars compared, mismatches and panics per scalar (`--nocapture`).
#[test]
#[ignore = "long: run with `cargo test --release --test reference -- --ignored --nocapture soak`"]
fn soak() {
    let cases = std::env::var("EXACTGRAD_SOAK_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let start = std::time::Instant::now();
    let tallies = [
        ("f64", soak_scalar::<f64>(cases)),
        ("f32", soak_scalar::<f32>(cases)),
        ("Wrapping<i64>", soak_scalar::<Int>(cases)),
    ];
    for (name, t) in &tallies {
        println!(
            "soak {name}: {} cases, {} comparisons, {} scalars compared, {} mismatches, {} panics",
            t.cases, t.checks, t.elements, t.mismatches, t.panics
        );
    }
    println!("soak: {:.1} s", start.elapsed().as_secs_f64());
    assert!(tallies.iter().all(|(_, t)| t.mismatches == 0 && t.panics == 0), "the soak found failures (above)");
}

// ---------------------------------------------------------------------------------------------
// Worked examples and errors
// ---------------------------------------------------------------------------------------------

fn vector(v: &[f64]) -> RawTensor<f64> {
    RawTensor::from_vec(Dims::vector(v.len()), v.to_vec()).unwrap()
}

/// SEMANTICS §8's worked checks, computed by the reference alone.
#[test]
fn the_reference_computes_the_worked_examples() {
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    graph.push(RawNode::compact(exactgrad::ops::Add::new(0, 0))).unwrap();
    let inputs = [vector(&[1.0, 2.0])];
    let all = graph.backprop_all_ctx(&inputs, &(), vec![vector(&[-0.0, 0.0]), vector(&[0.0, 0.0])]).unwrap();
    assert_eq!(all[0].data().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [0, 0]);
    let from = graph.backprop_from_ctx(&inputs, &(), graph.position(0).unwrap(), vector(&[-0.0, 0.0])).unwrap();
    assert_eq!(from[0].data()[0].to_bits(), (-0.0f64).to_bits());

    let x = f64::powi(2.0, -53);
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::scalar()]);
    let p1 = graph.push(RawNode::compact(exactgrad::ops::Mul::new(0, 0))).unwrap();
    let p2 = graph.push(RawNode::compact(exactgrad::ops::Add::new(p1.index(), 0))).unwrap();
    let scalar = |v: f64| RawTensor::full(Dims::scalar(), v);
    let from = graph.backprop_from_ctx(&[scalar(x)], &(), p2, scalar(1.0)).unwrap();
    assert_eq!(from[0].data()[0].to_bits(), 0x3FF0_0000_0000_0001);
}

/// Bad inputs, seeds, outputs and data are errors, never panics.
#[test]
fn the_reference_reports_bad_arguments() {
    let mut graph = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    graph.push(RawNode::compact(exactgrad::ops::Sum::new(0))).unwrap();
    let ok = [vector(&[1.0, 2.0])];
    let seeds = || vec![vector(&[0.0, 0.0]), RawTensor::full(Dims::scalar(), 1.0)];
    assert!(matches!(graph.backprop_all_ctx(&[vector(&[1.0])], &(), seeds()), Err(Error::PackShapes { .. })));
    assert!(matches!(graph.backprop_all_ctx(&ok, &(), seeds()[..1].to_vec()), Err(Error::PackShapes { .. })));
    let other = RawGraph::<f64, ()>::new(vec![Dims::vector(1); 6]);
    let foreign = other.position(5).unwrap();
    assert!(matches!(graph.backprop_from_ctx(&ok, &(), foreign, vector(&[1.0])), Err(Error::ForeignPosition { .. })));
    assert!(matches!(
        graph.backprop_from_ctx(&ok, &(), graph.position(1).unwrap(), vector(&[1.0])),
        Err(Error::ShapeMismatch { .. })
    ));
    let wrong_vjp = RawNode::opaque(
        "short",
        Dims::vector(2),
        vec![0],
        |c: &[RawTensor<f64>], (): &()| c[0].clone(),
        |_, (), _| vec![],
    );
    graph.push(wrong_vjp).unwrap();
    let seeds3 = vec![vector(&[0.0, 0.0]), RawTensor::full(Dims::scalar(), 1.0), vector(&[1.0, 1.0])];
    assert!(matches!(graph.backprop_all_ctx(&ok, &(), seeds3), Err(Error::Vjp { .. })));
}

// ---------------------------------------------------------------------------------------------
// `graph!` models: typed reference, the pure saved entry point and the generated programs
// ---------------------------------------------------------------------------------------------

graph! {
    /// Data-reading ops (`matmul_data` through `x.matmul(w)` with `x` data, labels), the row-wise
    /// float ops and the losses.
    fn head(w: [3, 3], b: [3], gain: [3], bias: [3], t: [2, 3]; x: [2, 3], labels: Vec<usize>) -> ([2, 3], []) {
        let h = layer_norm(x.matmul(w) + b, gain, bias);
        let p = softmax(h) * gelu(h) + x;
        (p, cross_entropy(h, labels) + mse(tanh(h), t) + sum(log_softmax(p)))
    }
}

fn head_data<A: TestFloat>(salt: u64) -> HeadData<A> {
    HeadData { x: adv(salt, 10), labels: vec![(salt % 3) as usize, 2] }
}

type Five<A> = (Tensor<A, (U3, U3)>, Tensor<A, (U3,)>, Tensor<A, (U3,)>, Tensor<A, (U3,)>, Tensor<A, (U2, U3)>);

fn head_inputs<A: TestFloat>(salt: u64) -> Five<A> {
    (adv(salt, 0), adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4))
}

fn check_head<A: TestFloat>(salt: u64) {
    let (g, h) = head::<A>();
    let (w, b, gain, bias, t) = head_inputs::<A>(salt);
    let mut inputs = h.inputs(w, b, gain, bias, t);
    let (s0, s1): (Tensor<A, (U2, U3)>, Tensor<A, ()>) = (adv(salt, 5), adv(salt, 6));
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let data = head_data::<A>(salt);

    let reference = g.backprop_all_ctx(&inputs, &data, seeds.clone()).unwrap();
    let inputs_reference = g.backprop_ctx(&inputs, &data, seeds.clone()).unwrap();
    let saved = g.compile(inputs.clone(), head_data(salt)).unwrap();
    let what = |w: &str| format!("{w} (salt {salt})");
    assert_eq!(
        all_bits(saved.backprop_all_array(seeds.clone()).unwrap().iter()),
        all_bits(reference.iter()),
        "{}",
        what("all array")
    );
    let pure = g.backprop(inputs.clone(), head_data(salt), seeds.clone()).unwrap();
    assert_eq!(all_bits(pure.as_slice()), all_bits(inputs_reference.as_slice()), "{}", what("GraphData::backprop"));

    let mut prog = Head::program::<A>();
    let got = prog.gradients(&mut inputs, &data, &(s0.clone(), s1.clone())).unwrap();
    assert_eq!(all_bits(got.as_slice()), all_bits(inputs_reference.as_slice()), "{}", what("program gradients"));
    let n = g.raw().num_inputs();
    let raw_inputs = inputs.as_slice().to_vec();
    for (o, s) in [(h.output0.index(), s0.raw().clone()), (h.output1.index(), s1.raw().clone())] {
        let from = g.raw().backprop_from_ctx(&raw_inputs, &data, g.raw().position(o).unwrap(), s).unwrap();
        let got = if o == h.output0.index() {
            prog.gradients_from(h.output0, &mut inputs, &data, &s0).unwrap()
        } else {
            prog.gradients_from(h.output1, &mut inputs, &data, &s1).unwrap()
        };
        assert_eq!(all_bits(got.as_slice()), all_bits(&from[..n]), "{}", what(&format!("gradients_from({o})")));
    }
}

#[test]
fn programs_and_the_pure_entry_point_equal_the_reference() {
    for salt in 0..24 {
        check_head::<f64>(salt);
        check_head::<f32>(salt);
    }
}
