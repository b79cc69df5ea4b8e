//! Fuzzing the runtime (issue 11, item 3): random graph descriptions ([`describe`]) are built
//! through the untyped builder (`RawGraph::push` of `RawNode` made with the ops' raw
//! constructors), compiled with random adversarial inputs and data, and every pass is run with
//! random seeds — wrong-shaped seeds, seed packs of the wrong length, foreign output positions
//! included. The property: every call returns `Ok` or a typed `Error`; nothing panics (caught,
//! and the description reported) and nothing hangs (graphs are bounded; a case slower than
//! [`SLOW`] fails). Graphs with a position of more than [`MAX_ELEMENTS`] elements are built but
//! not compiled (their values would not fit in memory; building them checks the shape rules).
//!
//! Case counts come from `EXACTGRAD_FUZZ_CASES` (CI's default is small). The soak:
//! `EXACTGRAD_FUZZ_CASES=50000 cargo test --release -p exactgrad-runtime --test fuzz`.
#![allow(clippy::unwrap_used)]

mod describe;
mod regressions;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use describe::{Description, Op, Opaque, Rng, VALUES};
use exactgrad_runtime::{ops, Dims, RawGraph, RawNode, RawSavedGraph, RawSeeds, RawTensor};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Cases when `EXACTGRAD_FUZZ_CASES` is unset.
const DEFAULT_CASES: u32 = 1000;

/// A case this slow counts as a hang.
const SLOW: Duration = Duration::from_secs(10);

/// The largest position a compiled graph may have.
const MAX_ELEMENTS: usize = 1 << 12;

/// The graph's data: labels (possibly out of range, of any length), one data tensor and a mask
/// (of any length).
struct Data {
    labels: Vec<usize>,
    x: RawTensor<f64>,
    mask: Vec<bool>,
}

fn mask(d: &Data) -> &[bool] {
    &d.mask
}

fn labels(d: &Data) -> &[usize] {
    &d.labels
}

fn seed(d: &Data) -> u64 {
    d.labels.len() as u64
}

fn data_x(d: &Data) -> &RawTensor<f64> {
    &d.x
}

fn tensor(rng: &mut Rng, dims: Dims) -> RawTensor<f64> {
    let n = dims.checked_numel().unwrap_or(0).min(MAX_ELEMENTS);
    RawTensor::from_vec(dims, (0..n).map(|_| rng.pick(VALUES)).collect())
        .unwrap_or_else(|_| RawTensor::zeros(Dims::scalar()))
}

/// A tensor of `dims`, or now and then of other dims.
fn maybe_wrong(rng: &mut Rng, dims: Dims) -> RawTensor<f64> {
    let d = if rng.below(8) == 0 { describe::dims(rng) } else { dims };
    tensor(rng, d)
}

fn opaque(dims: Dims, parents: Vec<usize>, kind: Opaque) -> RawNode<f64, Data> {
    let first = parents.first().copied();
    let forward = move |ctx: &[RawTensor<f64>], _: &Data| match kind {
        Opaque::PanicForward => panic!("a user forward panics"),
        Opaque::WrongForward => RawTensor::full(Dims::vector(dims.checked_numel().unwrap_or(0) + 1), 1.0),
        _ => match first.and_then(|p| ctx.get(p)) {
            Some(t) if t.dims() == dims => t.clone(),
            _ => RawTensor::full(dims, 0.5),
        },
    };
    let vjp = move |ctx: &[RawTensor<f64>], _: &Data, g: &RawTensor<f64>| match kind {
        Opaque::PanicVjp => panic!("a user vjp panics"),
        Opaque::ShortVjp => Vec::new(),
        Opaque::MisshapenVjp => ctx.iter().map(|_| g.clone()).collect(),
        _ => ctx
            .iter()
            .enumerate()
            .map(|(q, t)| if Some(q) == first && t.dims() == g.dims() { g.clone() } else { RawTensor::zeros(t.dims()) })
            .collect(),
    };
    RawNode::opaque("fuzzed", dims, parents, forward, vjp)
}

fn node(op: &Op) -> RawNode<f64, Data> {
    match op.clone() {
        Op::Binary(k, a, b) => match k {
            0 => RawNode::compact(ops::Add::new(a, b)),
            1 => RawNode::compact(ops::Sub::new(a, b)),
            2 => RawNode::compact(ops::Mul::new(a, b)),
            3 => RawNode::compact(ops::Div::new(a, b)),
            4 => RawNode::compact(ops::Max::new(a, b)),
            5 => RawNode::compact(ops::Min::new(a, b)),
            6 => RawNode::compact(ops::MatMul::new(a, b)),
            _ => RawNode::compact(ops::Mse::new(a, b)),
        },
        Op::Unary(k, a) => match k {
            0 => RawNode::compact(ops::Neg::new(a)),
            1 => RawNode::compact(ops::Relu::new(a)),
            2 => RawNode::compact(ops::Exp::new(a)),
            3 => RawNode::compact(ops::Log::new(a)),
            4 => RawNode::compact(ops::Sqrt::new(a)),
            5 => RawNode::compact(ops::Tanh::new(a)),
            6 => RawNode::compact(ops::Sigmoid::new(a)),
            7 => RawNode::compact(ops::Softplus::new(a)),
            8 => RawNode::compact(ops::Gelu::new(a)),
            9 => RawNode::compact(ops::Square::new(a)),
            10 => RawNode::compact(ops::Transpose::new(a)),
            11 => RawNode::compact(ops::Sum::new(a)),
            12 => RawNode::compact(ops::Mean::new(a)),
            13 => RawNode::compact(ops::Softmax::new(a)),
            14 => RawNode::compact(ops::LogSoftmax::new(a)),
            _ => RawNode::compact(ops::Silu::new(a)),
        },
        Op::Scale(a, f) => RawNode::compact(ops::Scale::new(a, f)),
        Op::AddRow(x, b) => RawNode::compact(ops::AddRow::new(x, b)),
        Op::Axis(true, x, axis) => RawNode::compact(ops::SumAxis::new(x, axis)),
        Op::Axis(false, x, axis) => RawNode::compact(ops::MeanAxis::new(x, axis)),
        Op::Concat(a, b, axis) => RawNode::compact(ops::Concat::new(a, b, axis)),
        Op::ConcatParts(parts, axis) => RawNode::compact(ops::Concat::parts(parts, axis)),
        Op::Dropout(x, p) => RawNode::compact(ops::Dropout::new(x, p, seed)),
        Op::Slice(x, axis, start, len) => RawNode::compact(ops::Slice::new(x, axis, start, len)),
        Op::Permute(x, perm) => RawNode::compact(ops::Permute::new(x, &perm)),
        Op::Reshape(x, dims) => RawNode::compact(ops::Reshape::new(x, dims)),
        Op::LayerNorm(x, g, b, eps) => RawNode::compact(ops::LayerNorm::new(x, g, b, eps)),
        Op::CrossEntropy(x) => RawNode::compact(ops::CrossEntropy::new(x, labels)),
        Op::GatherRows(table, count) => RawNode::compact(ops::GatherRows::new(table, labels, count)),
        Op::Embedding(table, lead) => RawNode::compact(ops::GatherRows::with_lead(table, labels, lead)),
        Op::MaskedFill(x, v) => RawNode::compact(ops::MaskedFill::new(x, mask, v)),
        Op::CausalMask(x, v) => RawNode::compact(ops::CausalMask::new(x, v)),
        Op::DataTensor(dims) => RawNode::compact(ops::DataTensor::new(data_x, dims)),
        Op::MatMulData(rows, w) => RawNode::compact(ops::MatMulData::new(data_x, rows, w)),
        Op::Window(k, x, w, c) => match k {
            0 => RawNode::compact(ops::Conv1d::with_sliding(
                x,
                w,
                ops::Sliding { stride: [c[0]], padding: [c[1]], dilation: [c[2]] },
            )),
            1 => RawNode::compact(ops::Conv2d::with_sliding(
                x,
                w,
                ops::Sliding { stride: [c[0], c[3]], padding: [c[1], c[4]], dilation: [c[2], c[5]] },
            )),
            2 => RawNode::compact(ops::MaxPool2d::new(x, [c[0], c[3]], [c[1], c[4]], [c[2], c[5]])),
            _ => RawNode::compact(ops::AvgPool2d::new(x, [c[0], c[3]], [c[1], c[4]], [c[2], c[5]])),
        },
        Op::Opaque(dims, parents, kind) => opaque(dims, parents, kind),
    }
}

/// How far one case got: nodes pushed, whether it compiled, passes that returned `Ok`.
#[derive(Clone, Copy, Debug, Default)]
struct Reached {
    nodes: usize,
    compiled: bool,
    passes_ok: usize,
}

/// Builds, compiles and runs every pass; every call's result is dropped (an `Err` is fine).
fn run(desc: &Description, rng: &mut Rng) -> Reached {
    let mut reached = Reached::default();
    let mut g = RawGraph::<f64, Data>::new(desc.inputs.clone());
    for op in &desc.ops {
        reached.nodes += usize::from(g.push(node(op)).is_ok());
    }
    let _ = g.describe();
    let dims = g.dims().to_vec();
    if dims.iter().any(|d| d.checked_numel().is_none_or(|n| n > MAX_ELEMENTS)) {
        return reached;
    }
    let mut inputs: Vec<RawTensor<f64>> = desc.inputs.iter().map(|&d| maybe_wrong(rng, d)).collect();
    if rng.below(16) == 0 {
        inputs.pop();
    }
    let n_labels = rng.below(5);
    let data = Data {
        labels: (0..n_labels).map(|_| rng.pick(&[0, 1, 2, 3, usize::MAX])).collect(),
        x: RawTensor::zeros(Dims::scalar()),
        mask: (0..rng.pick(&[0, 1, 2, 4, 6, 9, 12])).map(|_| rng.below(2) == 0).collect(),
    };
    let x_dims = describe::dims(rng);
    let data = Data { x: tensor(rng, x_dims), ..data };
    let Ok(saved) = RawSavedGraph::compile(&g, inputs, data) else { return reached };
    reached.compiled = true;
    for _ in 0..3 {
        // Every pass of a round gets the same seeds.
        let round = rng.next();
        let seeds = || -> RawSeeds<f64> {
            let mut rng = Rng::new(round);
            if rng.below(4) == 0 {
                let n = (dims.len() + rng.below(3)).saturating_sub(1);
                let pack: Vec<_> =
                    (0..n).map(|q| maybe_wrong(&mut rng, dims.get(q).copied().unwrap_or_else(Dims::scalar))).collect();
                return pack.into();
            }
            let mut s = RawSeeds::zeros(&dims);
            for _ in 0..rng.below(4) {
                let q = rng.below(dims.len() + 1);
                let t = maybe_wrong(&mut rng, dims.get(q).copied().unwrap_or_else(Dims::scalar));
                // Out of range: `position` refuses it; a handle of another graph: `set` does.
                match g.position(q) {
                    Ok(p) if rng.below(8) == 0 => {
                        let other = RawGraph::<f64, Data>::new(dims.clone());
                        let _ = other.position(p.index()).map(|f| s.set(f, t));
                    }
                    Ok(p) => {
                        let _ = s.set(p, t);
                    }
                    Err(_) => {}
                }
            }
            s
        };
        let ok = [
            saved.backprop_all_dense(seeds()).is_ok(),
            saved.backprop_all_array(seeds()).is_ok(),
            saved.backprop_all_stored(seeds()).is_ok(),
            saved.backprop_inputs_dense(seeds()).is_ok(),
            saved.backprop_inputs_array(seeds()).is_ok(),
            saved.backprop_inputs_stored(seeds()).is_ok(),
        ];
        reached.passes_ok += ok.iter().filter(|&&b| b).count();
        let out = if rng.below(8) == 0 { dims.len() + rng.below(2) } else { rng.below(dims.len().max(1)) };
        let seed = maybe_wrong(rng, dims.get(out).copied().unwrap_or_else(Dims::scalar));
        // An output out of range has no handle (`position` refuses it); one of another graph of
        // the same shapes is refused by the passes.
        let Ok(mut at) = g.position(out) else { continue };
        if rng.below(8) == 0 {
            if let Ok(foreign) = RawGraph::<f64, Data>::new(dims.clone()).position(out) {
                at = foreign;
            }
        }
        let _ = saved.reached_from(at);
        if let Ok(grads) = saved.backprop_from(at, seed.clone()) {
            reached.passes_ok += 1;
            for q in 0..=dims.len() {
                let _ = grads.get(q);
            }
        }
        reached.passes_ok += usize::from(saved.backprop_from_dense(at, seed).is_ok());
    }
    reached
}

thread_local! {
    /// Where the last panic on this thread happened (recorded instead of printed while fuzzing).
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    /// How far each case of this thread got.
    static CASES: std::cell::RefCell<Vec<Reached>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Whether this thread is running a fuzzed case (whose panics are recorded, not printed).
    static IN_CASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that records the location instead of printing it: the fuzzed
/// closures panic on purpose thousands of times, and the runtime catches those.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.get() {
                LAST_PANIC.with(|l| *l.borrow_mut() = info.to_string());
            } else {
                print(info);
            }
        }));
    });
}

fn no_panic(seed: u64) -> Result<(), TestCaseError> {
    quiet_panics();
    let mut rng = Rng::new(seed);
    let desc = describe::description(&mut rng);
    let start = Instant::now();
    IN_CASE.set(true);
    let out = catch_unwind(AssertUnwindSafe(|| run(&desc, &mut rng)));
    IN_CASE.set(false);
    let _ = out.as_ref().map(|r| CASES.with(|c| c.borrow_mut().push(*r)));
    let took = start.elapsed();
    if out.is_err() {
        let at = LAST_PANIC.with(|l| l.borrow().clone());
        return Err(TestCaseError::fail(format!("the runtime panicked on seed {seed}: {at}\n{desc:#?}")));
    }
    prop_assert!(took < SLOW, "the runtime took {took:?} on seed {seed}:\n{desc:#?}");
    Ok(())
}

fn config() -> ProptestConfig {
    let cases = std::env::var("EXACTGRAD_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_CASES);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    /// Random descriptions through build, compile and every pass.
    #[test]
    fn fuzz_graph_descriptions(seed: u64) {
        no_panic(seed)?;
    }
}

/// The generator reaches every stage often enough: a fuzzer whose graphs all fail at `push` would
/// test nothing past it.
#[test]
fn the_cases_reach_compile_and_the_passes() {
    for seed in 0..500 {
        no_panic(seed).unwrap();
    }
    let cases = CASES.with(|c| c.borrow().clone());
    let with_nodes = cases.iter().filter(|r| r.nodes > 1).count();
    let compiled = cases.iter().filter(|r| r.compiled && r.nodes > 0).count();
    let passed = cases.iter().filter(|r| r.passes_ok > 0).count();
    eprintln!(
        "of {} cases: {with_nodes} built 2+ nodes, {compiled} compiled with nodes, {passed} ran a pass",
        cases.len()
    );
    assert!(with_nodes > 100 && compiled > 50 && passed > 50, "{with_nodes} {compiled} {passed}");
}

/// For hunting: seeds `0..200_000` in order, each printed before it runs (so a crash or a hang
/// names its seed): `cargo test --release -p exactgrad-runtime --test fuzz trace_seeds -- --ignored --nocapture`.
#[test]
#[ignore]
fn trace_seeds() {
    for seed in 0..200_000u64 {
        let t = Instant::now();
        eprint!("\r{seed} ");
        no_panic(seed).unwrap();
        if t.elapsed() > Duration::from_millis(500) {
            eprintln!("slow seed {seed}: {:?}", t.elapsed());
        }
    }
}
