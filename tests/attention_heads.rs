//! The attention block of the benchmarks written two ways (`benches/attention_block`): heads
//! written out, and the heads as the batch axis of batched products. They are one model: the same loss and the same parameter gradients bit for bit —
//! from every runtime pass and from the generated programs — in `f32` and `f64`, on ordinary and
//! on adversarial values (signed zeros, NaN payloads, infinities, subnormals).
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

fn check<A: TestFloat>(salt: u64) {
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
}

// One test per scalar, so the two run side by side.
#[test]
fn the_batched_block_is_the_unrolled_block_bit_for_bit_f32() {
    for salt in 0..MODES {
        check::<f32>(salt);
    }
}

#[test]
fn the_batched_block_is_the_unrolled_block_bit_for_bit_f64() {
    for salt in 0..MODES {
        check::<f64>(salt);
    }
}
