//! The attention block of the benchmarks written two ways (`benches/attention_block`): heads
//! written out, and the heads as the batch axis of batched products. They are one model: the same loss and the same parameter gradients bit for bit —
//! from every runtime pass and from the generated programs — in `f32` and `f64`, on ordinary and
//! on adversarial values (signed zeros, NaN payloads, infinities, subnormals) — and on 1, 2, 3 and
//! 4 threads with every split forced.
#![allow(clippy::unwrap_used)]

#[path = "../benches/attention_block/mod.rs"]
mod attention_block;
mod floats;

use attention_block::{attention, attention_batched, Attention, AttentionBatched, AttentionBatchedData, AttentionData};
use exactgrad::{Pack, Seeds, Tensor};
use floats::{adv, all_bits, Bits, TestFloat, MODES};

/// The loss and every parameter-gradient pass of one variant, as bits.
macro_rules! outcome {
    ($build:ident, $Model:ident, $Data:ident, $params:expr, $x:expr, $seed:expr) => {{
        let (g, h) = $build::<A>();
        let params: Pack<A, _> = $params.clone();
        let data = $Data { x: $x.clone() };
        let saved = g.compile(params.clone(), $Data { x: $x.clone() }).unwrap();
        let loss = all_bits(saved.raw().values().last());
        let seeds = || Seeds::single(&g, h.output, $seed.clone()).unwrap();
        let passes = vec![
            all_bits(saved.backprop_inputs_dense(seeds()).unwrap().as_slice()),
            all_bits(saved.backprop_inputs_array(seeds()).unwrap().as_slice()),
            all_bits(saved.backprop_inputs_stored(seeds()).unwrap().as_slice()),
            // The gradients of the 12 parameters (positions 0..12) among every position's.
            all_bits(saved.backprop_from(h.output, $seed.clone()).unwrap().iter().take(12)),
            all_bits(saved.backprop_from_dense(h.output, $seed.clone()).unwrap().iter().take(12)),
        ];
        let mut prog = $Model::program::<A>();
        let mut p = params.clone();
        let program = vec![
            all_bits(prog.gradients(&mut p, &data, &$seed).unwrap().as_slice()),
            all_bits(prog.gradients_from(h.output, &mut p, &data, &$seed).unwrap().as_slice()),
        ];
        (loss, passes, program)
    }};
}

type Outcome = (Vec<Bits>, Vec<Vec<Bits>>, Vec<Vec<Bits>>);

/// Checks both variants at `salt` against each other and their dense references; returns the
/// unrolled variant's outcome.
fn check<A: TestFloat>(salt: u64) -> Outcome {
    let (_, h) = attention::<A>();
    let k = |i: u64| salt + MODES * 31 * i;
    let params = h.inputs(
        adv(k(1), 1),
        adv(k(2), 2),
        adv(k(3), 3),
        adv(k(4), 4),
        adv(k(5), 5),
        adv(k(6), 6),
        adv(k(7), 7),
        adv(k(8), 8),
        adv(k(9), 9),
        adv(k(10), 10),
        adv(k(11), 11),
        adv(k(12), 12),
    );
    let x = adv(k(13), 13);
    let seed: Tensor<A, ()> = adv(k(14), 14);
    let unrolled: Outcome = outcome!(attention, Attention, AttentionData, params, x, seed);
    let batched: Outcome = outcome!(attention_batched, AttentionBatched, AttentionBatchedData, params, x, seed);
    // Every pass of one variant agrees with its dense reference.
    for o in [&unrolled, &batched] {
        assert!(o.1.iter().chain(&o.2).all(|p| *p == o.1[0]), "salt {salt}: a pass differs from the dense one");
    }
    assert!(batched == unrolled, "salt {salt}: the batched block differs from the unrolled one");
    if salt.is_multiple_of(MODES) {
        // Ordinary values: the comparison is of real numbers, not of NaNs everywhere.
        let finite = unrolled.1[0].iter().flat_map(|(_, b)| b).all(|&b| A::from_raw_bits(b).is_finite());
        assert!(finite, "salt {salt}: ordinary inputs give finite gradients");
    }
    unrolled
}

// One test per scalar, so the two run side by side.
#[test]
fn the_batched_block_is_the_unrolled_block_bit_for_bit_f32() {
    for salt in 0..MODES {
        let _ = check::<f32>(salt);
    }
}

#[test]
fn the_batched_block_is_the_unrolled_block_bit_for_bit_f64() {
    for salt in 0..MODES {
        let _ = check::<f64>(salt);
    }
}

/// The block — `layer_norm`, batched products, `softmax`, `gelu`, four independent heads — gives
/// the same loss and gradients (every pass, both programs, both variants) on pools of 1, 2, 3
/// and 4 threads, with every split forced on: products by row panels and batch items, row-wise
/// and pointwise loops, forward levels and a product's two VJP products (the splits move work,
/// never a result). Ordinary and adversarial values, `f32` and `f64`.
#[test]
fn the_block_is_the_same_on_1_to_4_threads() {
    use exactgrad::parallel;
    parallel::set_min_work(0);
    parallel::set_min_pointwise_work(0);
    parallel::set_min_node_work(0);
    let pools: Vec<parallel::ThreadPool> = (1..=4).map(|n| parallel::pool(n).unwrap()).collect();
    for salt in [0, 1] {
        let runs: Vec<(Outcome, Outcome)> =
            pools.iter().map(|pool| pool.install(|| (check::<f32>(salt), check::<f64>(salt)))).collect();
        for (threads, run) in runs.iter().enumerate().skip(1) {
            assert!(run == &runs[0], "salt {salt}: {} threads differ from one", threads + 1);
        }
    }
}
