//! Data tensors in `graph!`: a data parameter declared with a shape (`; x: [B, 4]`) is a tensor of
//! the graph's scalar type that is data, not an input — no gradient is computed for it.
//!
//! 1. **Macro == hand-built.** A data tensor on the left of `matmul` lowers to `ops::matmul_data`
//!    (no input gradient); anywhere else to one `ops::data_tensor` leaf, made at its first use and
//!    shared by later uses. Graphs written with `graph!` and the same graphs pushed by hand on
//!    `GraphData` (over the generated data struct) have the same `describe()`, bit-identical values
//!    and bit-identical results of every pass: `backprop_all_{dense,array,stored}`,
//!    `backprop_inputs_{dense,array,stored}` (adversarial seeds on every position, `-0.0` seeds on
//!    every position, typed single seeds on each output) and `backprop_from` / `backprop_from_dense`
//!    from every position. Within each graph every fast pass equals its dense reference. Inputs,
//!    data and seeds mix `±0`, NaNs with payloads (quiet, signalling, negative), `±inf`,
//!    subnormals and ordinary values (every mix of `floats::adversarial` twice: ordinary values
//!    only, mixed, adversarial values only); `f64` and `f32`; all comparisons on `to_bits`.
//! 2. **Data vs input.** The same MLP with `x` an input instead of data gives the same bits for the
//!    gradients of `w1`, `b1` and `w2` (seeded at the output), on every pass.
//! 3. **Proptest** over random values, seeds, batch sizes and labels.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{Unsigned, U2, U3, U4, U5};
use exactgrad::{graph, ops, GraphData, Pack, Position, RawSeeds, RawTensor, Scalar, Seeds, Shape, Tensor};
use floats::{adv, adversarial, all_bits, assert_all_eq, splitmix, Bits, TestFloat, MODES};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

// ---------------------------------------------------------------------------------------------
// The graphs
// ---------------------------------------------------------------------------------------------

graph! {
    /// An MLP whose batch `x` is data: the first layer is `matmul_data` (no gradient for `x`).
    fn mlp<B>(w1: [4, 3], b1: [3], w2: [3, 2]; x: [B, 4], labels: Vec<usize>) -> [] {
        let h = relu(x.matmul(w1) + b1);
        cross_entropy(h.matmul(w2), labels)
    }
}

graph! {
    /// The same MLP with `x` an input.
    fn mlp_input<B>(x: [B, 4], w1: [4, 3], b1: [3], w2: [3, 2]; labels: Vec<usize>) -> [] {
        let h = relu(x.matmul(w1) + b1);
        cross_entropy(h.matmul(w2), labels)
    }
}

graph! {
    /// Data tensors everywhere: shared leaves (`x` in `x * w` and `… - x`), a data tensor under a
    /// method (`m.t()`) and on the right of a matmul, `matmul(x, v)` in function form, and labels.
    fn mixer(w: [2, 3], v: [3, 3], r: [3]; x: [2, 3], m: [2, 3], k: Vec<usize>) -> ([2, 3], []) {
        let a = x * w;
        let b = (a + m) - x;
        let c = matmul(x, v) + r;
        let d = w.matmul(m.t());
        (b * c, sum(d) + cross_entropy(c, k))
    }
}

graph! {
    /// A graph whose only tensor data is read as a leaf, then shadowed by a binding of its name.
    fn shadow(w: [3]; x: [3]) -> [3] {
        let x = x * w;
        x + w
    }
}

// ---------------------------------------------------------------------------------------------
// What a graph computes, as bits
// ---------------------------------------------------------------------------------------------

/// Everything a graph computes on one input pack, one datum and one family of seeds.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    describe: String,
    values: Vec<Bits>,
    /// Typed `Seeds::single` on each output: all-seeds and inputs-only passes, dense then array.
    typed: Vec<[Vec<Bits>; 4]>,
    /// Adversarial seeds on every position: `backprop_all_dense`, then `backprop_inputs_dense`.
    all: [Vec<Bits>; 2],
    /// `-0.0` seeds on every position: `backprop_all_dense`, then `backprop_inputs_dense`.
    neg_zero: [Vec<Bits>; 2],
    /// `backprop_from_dense` from every position, with an adversarial and with a `-0.0` seed.
    from: Vec<[Vec<Bits>; 2]>,
}

/// The dense all-seeds and inputs-only passes on `seeds`, after checking that the array and stored
/// passes equal them bit for bit and that inputs-only is the inputs' part of all-seeds.
fn checked_passes<A: TestFloat, D>(
    raw: &exactgrad::RawSavedGraph<'_, A, D>,
    seeds: &[RawTensor<A>],
    what: &str,
) -> [Vec<Bits>; 2]
where
    D: 'static,
{
    let n_in = raw.graph().num_inputs();
    let all = [
        all_bits(&raw.backprop_all_dense(seeds.to_vec()).unwrap()),
        all_bits(&raw.backprop_all_array(seeds.to_vec()).unwrap()),
        all_bits(&raw.backprop_all_stored(seeds.to_vec()).unwrap()),
    ];
    assert_all_eq(&format!("backprop_all, {what}"), &all);
    let inputs = [
        all_bits(&raw.backprop_inputs_dense(seeds.to_vec()).unwrap()),
        all_bits(&raw.backprop_inputs_array(seeds.to_vec()).unwrap()),
        all_bits(&raw.backprop_inputs_stored(seeds.to_vec()).unwrap()),
    ];
    assert_all_eq(&format!("backprop_inputs, {what}"), &inputs);
    assert_eq!(inputs[0][..], all[0][..n_in], "{what}: inputs-only == inputs of all-seeds");
    // The graph-level reference (`ofGraph_*`), which also re-derives the data-reading ops.
    let reference = raw.graph().backprop_all_ctx(&raw.values()[..n_in], raw.data(), seeds.to_vec()).unwrap();
    assert_eq!(all[0], all_bits(&reference), "{what}: backprop_all_* == backprop_all_ctx");
    let [all, ..] = all;
    let [inputs, ..] = inputs;
    [all, inputs]
}

/// Runs every pass of `g` (seeding each of `outputs` in turn for the typed passes) and checks
/// each fast pass against its dense reference on the way.
fn outcome<A: TestFloat, D: Sync + 'static, G, Ss, Br, S: Shape>(
    g: &GraphData<A, D, G, Ss, Br>,
    inputs: Pack<A, G>,
    data: D,
    outputs: &[Position<S, Br>],
    salt: u64,
) -> Outcome {
    let saved = g.compile(inputs, data).unwrap();
    let raw = saved.raw();
    let dims = g.raw().dims().to_vec();
    let seed_at = |p: usize, s: u64| adversarial::<A>(dims[p], salt + MODES * (31 * p as u64 + s + 1));

    let typed = outputs
        .iter()
        .map(|&o| {
            let seed: Tensor<A, S> = Tensor::try_from_raw(seed_at(o.index(), 7)).unwrap();
            let single = Seeds::single(g, o, seed.clone()).unwrap();
            let all = [
                all_bits(saved.backprop_all_dense(single.clone()).unwrap().iter()),
                all_bits(saved.backprop_all_array(single.clone()).unwrap().iter()),
                all_bits(saved.backprop_all_stored(single.clone()).unwrap().iter()),
            ];
            assert_all_eq("typed backprop_all", &all);
            let inputs = [
                all_bits(saved.backprop_inputs_dense(single.clone()).unwrap().as_slice()),
                all_bits(saved.backprop_inputs_array(single.clone()).unwrap().as_slice()),
                all_bits(saved.backprop_inputs_stored(single).unwrap().as_slice()),
            ];
            assert_all_eq("typed backprop_inputs", &inputs);
            let from = [
                all_bits(saved.backprop_from_dense(o, seed.clone()).unwrap().iter()),
                all_bits(saved.backprop_from(o, seed).unwrap().iter()),
            ];
            assert_all_eq("typed backprop_from", &from);
            let [all, ..] = all;
            let [inputs, ..] = inputs;
            let [from_dense, from_fast] = from;
            [all, inputs, from_dense, from_fast]
        })
        .collect();

    let seeds: Vec<RawTensor<A>> = (0..dims.len()).map(|p| seed_at(p, 0)).collect();
    let all = checked_passes(raw, &seeds, "adversarial seeds");
    let neg_zero_seeds: Vec<RawTensor<A>> = dims.iter().map(|&d| RawTensor::full(d, -<A as Scalar>::zero())).collect();
    let neg_zero = checked_passes(raw, &neg_zero_seeds, "-0.0 seeds");
    let mut sparse = RawSeeds::zeros(&dims);
    for p in (0..dims.len()).filter(|p| p % 2 == 1) {
        sparse.set(raw.graph().position(p).unwrap(), seed_at(p, 3)).unwrap();
    }
    assert_eq!(
        all_bits(&raw.backprop_all_array(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_all_dense(sparse).unwrap()),
        "backprop_all, sparse seeds"
    );

    let from = (0..dims.len())
        .map(|p| {
            let run = |seed: RawTensor<A>, what: &str| {
                let r = [
                    all_bits(&raw.backprop_from_dense(raw.graph().position(p).unwrap(), seed.clone()).unwrap()),
                    all_bits(&raw.backprop_from(raw.graph().position(p).unwrap(), seed).unwrap()),
                ];
                assert_all_eq(&format!("backprop_from({p}), {what}"), &r);
                let [dense, _] = r;
                dense
            };
            [run(seed_at(p, 5), "adversarial seed"), run(RawTensor::full(dims[p], -<A as Scalar>::zero()), "-0.0 seed")]
        })
        .collect();

    Outcome { describe: g.describe(), values: all_bits(raw.values()), typed, all, neg_zero, from }
}

fn assert_same(what: &str, salt: u64, m: &Outcome, h: &Outcome) {
    assert_eq!(m.describe, h.describe, "{what}: describe() differs");
    assert_eq!(m.values, h.values, "{what} (salt {salt}): values differ");
    assert_eq!(m.typed, h.typed, "{what} (salt {salt}): typed passes differ");
    assert_eq!(m.all, h.all, "{what} (salt {salt}): passes with adversarial seeds differ");
    assert_eq!(m.neg_zero, h.neg_zero, "{what} (salt {salt}): passes with -0.0 seeds differ");
    assert_eq!(m.from, h.from, "{what} (salt {salt}): backprop_from differs");
}

// ---------------------------------------------------------------------------------------------
// The MLP: macro vs hand-built, data vs input
// ---------------------------------------------------------------------------------------------

/// The MLP's weights for one run.
type MlpWeights<A> = (Tensor<A, (U4, U3)>, Tensor<A, (U3,)>, Tensor<A, (U3, U2)>);

fn mlp_weights<A: TestFloat>(salt: u64) -> MlpWeights<A> {
    (adv(salt, 1), adv(salt, 2), adv(salt, 3))
}

fn mlp_labels(rows: usize, salt: u64) -> Vec<usize> {
    (0..rows).map(|i| (splitmix(salt ^ (i as u64 * 7919)) % 2) as usize).collect()
}

fn mlp_x<A: TestFloat, B: Unsigned>(d: &MlpData<A, B>) -> &RawTensor<A> {
    d.x.raw()
}

fn mlp_labels_of<A: TestFloat, B>(d: &MlpData<A, B>) -> &[usize] {
    &d.labels
}

fn mlp_case<A: TestFloat, B: Unsigned + 'static>(salt: u64) {
    let data = || MlpData::<A, B> { x: adv(salt, 0), labels: mlp_labels(B::USIZE, salt) };
    let (mg, mh) = mlp::<A, B>();
    let (w1, b1, w2) = mlp_weights::<A>(salt);
    let m = outcome(&mg, mh.inputs(w1, b1, w2), data(), &[mh.output], salt);

    // By hand: `matmul_data`, `add_row`, `relu`, `matmul`, `cross_entropy`.
    let g = GraphData::<A, MlpData<A, B>>::new();
    let (g, w1) = g.input::<(U4, U3)>();
    let (g, b1) = g.input::<(U3,)>();
    let (g, w2) = g.input::<(U3, U2)>();
    let (g, xw) = g.push(ops::matmul_data::<_, _, (B, U4), _, _, _>(mlp_x::<A, B>, w1));
    let (g, z) = g.push(ops::add_row(xw, b1));
    let (g, h) = g.push(ops::relu(z));
    let (g, logits) = g.push(ops::matmul(h, w2));
    let (hg, out) = g.push(ops::cross_entropy(logits, mlp_labels_of::<A, B>));
    let (w1, b1, w2) = mlp_weights::<A>(salt);
    let h = outcome(&hg, Pack::new().push(w1).push(b1).push(w2), data(), &[out], salt);
    assert_same("mlp", salt, &m, &h);
    assert!(m.describe.contains("matmul_data(%0)"), "{}", m.describe);
    assert!(!m.describe.contains("data_tensor"), "x is only read by matmul_data:\n{}", m.describe);
}

/// The gradients of `w1`, `b1`, `w2` seeded at the output, with `x` data and with `x` an input:
/// the same bits on every pass.
fn data_vs_input<A: TestFloat, B: Unsigned + 'static>(salt: u64) {
    let seed: Tensor<A, ()> = adv(salt, 9);
    let (dg, dh) = mlp::<A, B>();
    let (w1, b1, w2) = mlp_weights::<A>(salt);
    let data = MlpData::<A, B> { x: adv(salt, 0), labels: mlp_labels(B::USIZE, salt) };
    let ds = dg.compile(dh.inputs(w1, b1, w2), data).unwrap();
    let (ig, ih) = mlp_input::<A, B>();
    let (w1, b1, w2) = mlp_weights::<A>(salt);
    let is =
        ig.compile(ih.inputs(adv(salt, 0), w1, b1, w2), MlpInputData { labels: mlp_labels(B::USIZE, salt) }).unwrap();
    assert_eq!(all_bits(&ds.raw().values()[3..]), all_bits(&is.raw().values()[4..]), "values (salt {salt})");

    let weights = |d: Vec<RawTensor<A>>, i: Vec<RawTensor<A>>| (all_bits(&d[..3]), all_bits(&i[1..4]));
    let (d, i) = weights(
        ds.backprop_from(dh.output, seed.clone()).unwrap().into_vec(),
        is.backprop_from(ih.output, seed.clone()).unwrap().into_vec(),
    );
    assert_eq!(d, i, "backprop_from (salt {salt})");
    let (d, i) = weights(
        ds.backprop_all_dense(Seeds::single(&dg, dh.output, seed.clone()).unwrap()).unwrap().into_vec(),
        is.backprop_all_dense(Seeds::single(&ig, ih.output, seed.clone()).unwrap()).unwrap().into_vec(),
    );
    assert_eq!(d, i, "backprop_all_dense (salt {salt})");
    let (d, i) = weights(
        ds.backprop_all_array(Seeds::single(&dg, dh.output, seed.clone()).unwrap()).unwrap().into_vec(),
        is.backprop_all_array(Seeds::single(&ig, ih.output, seed.clone()).unwrap()).unwrap().into_vec(),
    );
    assert_eq!(d, i, "backprop_all_array (salt {salt})");
    let (d, i) = weights(
        ds.backprop_inputs_array(Seeds::single(&dg, dh.output, seed.clone()).unwrap()).unwrap().into_vec(),
        is.backprop_inputs_array(Seeds::single(&ig, ih.output, seed).unwrap()).unwrap().into_vec(),
    );
    assert_eq!(d, i, "backprop_inputs_array (salt {salt})");
}

#[test]
fn mlp_with_data_x_equals_the_hand_built_graph() {
    for salt in 0..2 * MODES {
        mlp_case::<f64, U2>(salt);
        mlp_case::<f64, U5>(salt);
        mlp_case::<f32, U3>(salt);
    }
}

#[test]
fn weight_gradients_are_the_same_as_with_x_an_input() {
    for salt in 0..2 * MODES {
        data_vs_input::<f64, U2>(salt);
        data_vs_input::<f64, U5>(salt);
        data_vs_input::<f32, U3>(salt);
    }
}

// ---------------------------------------------------------------------------------------------
// The mixer: data tensors as leaves everywhere
// ---------------------------------------------------------------------------------------------

fn mixer_x<A: TestFloat>(d: &MixerData<A>) -> &RawTensor<A> {
    d.x.raw()
}

fn mixer_m<A: TestFloat>(d: &MixerData<A>) -> &RawTensor<A> {
    d.m.raw()
}

fn mixer_k<A: TestFloat>(d: &MixerData<A>) -> &[usize] {
    &d.k
}

fn mixer_data<A: TestFloat>(salt: u64) -> MixerData<A> {
    MixerData { x: adv(salt, 10), m: adv(salt, 11), k: vec![(salt % 3) as usize, 2] }
}

type MixerTensors<A> = (Tensor<A, (U2, U3)>, Tensor<A, (U3, U3)>, Tensor<A, (U3,)>);

fn mixer_inputs<A: TestFloat>(salt: u64) -> MixerTensors<A> {
    (adv(salt, 12), adv(salt, 13), adv(salt, 14))
}

fn mixer_case<A: TestFloat>(salt: u64) {
    let (mg, mh) = mixer::<A>();
    let (w, v, r) = mixer_inputs::<A>(salt);
    let m0 = outcome(&mg, mh.inputs(w, v, r), mixer_data(salt), &[mh.output0], salt);
    let (w, v, r) = mixer_inputs::<A>(salt);
    let m1 = outcome(&mg, mh.inputs(w, v, r), mixer_data(salt), &[mh.output1], salt);

    let g = GraphData::<A, MixerData<A>>::new();
    let (g, w) = g.input::<(U2, U3)>();
    let (g, v) = g.input::<(U3, U3)>();
    let (g, r) = g.input::<(U3,)>();
    let (g, x) = g.push(ops::data_tensor::<_, _, (U2, U3)>(mixer_x::<A>));
    let (g, a) = g.push(ops::mul(x, w));
    let (g, m) = g.push(ops::data_tensor::<_, _, (U2, U3)>(mixer_m::<A>));
    let (g, am) = g.push(ops::add(a, m));
    let (g, b) = g.push(ops::sub(am, x));
    let (g, xv) = g.push(ops::matmul_data::<_, _, (U2, U3), _, _, _>(mixer_x::<A>, v));
    let (g, c) = g.push(ops::add_row(xv, r));
    let (g, mt) = g.push(ops::transpose(m));
    let (g, d) = g.push(ops::matmul(w, mt));
    let (g, out0) = g.push(ops::mul(b, c));
    let (g, sd) = g.push(ops::sum(d));
    let (g, ce) = g.push(ops::cross_entropy(c, mixer_k::<A>));
    let (hg, out1) = g.push(ops::add(sd, ce));
    let (w, v, r) = mixer_inputs::<A>(salt);
    let h0 = outcome(&hg, Pack::new().push(w).push(v).push(r), mixer_data(salt), &[out0], salt);
    let (w, v, r) = mixer_inputs::<A>(salt);
    let h1 = outcome(&hg, Pack::new().push(w).push(v).push(r), mixer_data(salt), &[out1], salt);
    assert_same("mixer, output 0", salt, &m0, &h0);
    assert_same("mixer, output 1", salt, &m1, &h1);
    // One leaf per data tensor, shared by its uses; `x` on the left of a matmul reads no leaf.
    assert_eq!(m0.describe.matches("data_tensor()").count(), 2, "{}", m0.describe);
    assert!(m0.describe.contains("matmul_data(%1)"), "{}", m0.describe);
}

#[test]
fn data_tensors_as_leaves_equal_the_hand_built_graph() {
    for salt in 0..2 * MODES {
        mixer_case::<f64>(salt);
        mixer_case::<f32>(salt);
    }
}

#[test]
fn a_binding_may_shadow_a_data_tensor() {
    let (g, h) = shadow::<f64>();
    let w = Tensor::from_vec(vec![1.0, -2.0, 0.5]).unwrap();
    let x = Tensor::from_vec(vec![3.0, 4.0, -0.0]).unwrap();
    let saved = g.compile(h.inputs(w), ShadowData { x }).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[4.0, -10.0, 0.5]);
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    // d/dw (x * w + w) = x + 1, accumulated as ((seed 0 + (0 + 1)) + (0 + x)) + 0 (the leaf).
    assert_eq!(grads.get(h.w).unwrap().data(), &[4.0, 5.0, 1.0]);
}

// ---------------------------------------------------------------------------------------------
// Random values
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_values_keep_macro_and_hand_built_equal(salt in any::<u64>()) {
        mlp_case::<f64, U3>(salt);
        mlp_case::<f32, U2>(salt);
        mixer_case::<f64>(salt);
        mixer_case::<f32>(salt);
        data_vs_input::<f64, U4>(salt);
        data_vs_input::<f32, U5>(salt);
    }
}
