//! `concat` of many parts, `split` and `dropout` in `graph!` (SEMANTICS §8.3): `concat([…], axis)`
//! is one node of every part, `let (a, b, c) = split(…)` one `slice` per part, `dropout` reads its
//! seed from the data; the generated programs (`Model::program`) against the graph-level reference
//! on adversarial `f32` and `f64` values; the mask is the same in every pass, a new seed draws a
//! new one, and the dropped fraction is close to `p`.
#![allow(clippy::unwrap_used)]

mod floats;

use core::num::Wrapping;

use exactgrad::typenum::{U1, U2, U3, U4, U6, U7};
use exactgrad::{graph, ops, GraphData, Pack, Seeds, Tensor};
use floats::{adv, all_bits, TestFloat};

graph! {
    /// Three parts joined (one of them twice), a split into three undone in another order, and a
    /// dropout of the result.
    fn mixer(a: [2, 3], b: [2, 1], x: [4, 6]; seed: u64) -> ([2, 7], [4, 6], []) {
        let c = concat([a, b, a], 1);
        let (p, q, r) = split(x, 1, [1, 2, 3]);
        let j = concat([r, p, q], 1);
        let d = dropout(j, 0.5, seed);
        (c, d, sum(concat(d, x, 0)) + sum(concat([b], 1)))
    }
}

graph! {
    /// Equal parts along the first axis, and a dropout whose probability is a constant expression.
    fn halves(x: [4, 3]; seed: u64) -> [2, 3] {
        let (top, bottom) = split(x, 0, 2);
        dropout(top - bottom, 1.0 / 4.0, seed)
    }
}

graph! {
    /// Generic rows: the parts agree off the axis by the type-level rule, the sizes along it are
    /// literal.
    fn generic<B>(a: [B, 2], b: [B, 3]; seed: u64) -> [B, 7] {
        let (l, r) = split(concat([a, b, a], 1), 1, [3, 4]);
        dropout(concat([r, l], 1), 0.1, seed)
    }
}

graph! {
    /// A large dropout, for the dropped fraction.
    fn wide(x: [256, 256]; seed: u64) -> [256, 256] {
        dropout(x, 0.3, seed)
    }
}

#[test]
fn one_concat_node_per_call_and_one_slice_per_part() {
    let (g, _) = mixer::<f64>();
    let raw = g.raw();
    let nodes: Vec<(&str, Vec<usize>)> = raw.nodes().iter().map(|n| (n.name(), n.parents().to_vec())).collect();
    assert_eq!(
        nodes[..6],
        [
            ("concat", vec![0, 1, 0]),
            ("slice", vec![2]),
            ("slice", vec![2]),
            ("slice", vec![2]),
            ("concat", vec![6, 4, 5]),
            ("dropout", vec![7]),
        ]
        .map(|(n, p)| (n, p))
    );
    assert_eq!(Mixer::support()[0], [0, 1, 0]);
    assert_eq!(Mixer::reads()[5], [] as [usize; 0], "dropout reads the seed from the data, no saved value");

    // The same graph by hand.
    let h = GraphData::<f64, ()>::new();
    let (h, a) = h.input::<(U2, U3)>();
    let (h, b) = h.input::<(U2, U1)>();
    let (h, x) = h.input::<(U4, U6)>();
    let (h, c) = h.push(ops::concat_parts(a, U1::new()).then(b).then(a).node());
    let (h, p) = h.push(ops::slice(x, U1::new(), 0, U1::new()));
    let (h, q) = h.push(ops::slice(x, U1::new(), 1, U2::new()));
    let (h, r) = h.push(ops::slice(x, U1::new(), 3, U3::new()));
    let (h, _) = h.push(ops::concat_parts(r, U1::new()).then(p).then(q).node());
    let pack = || {
        Pack::new()
            .push(Tensor::from_fn(|i| i as f64))
            .push(Tensor::full(-1.0))
            .push(Tensor::from_fn(|i| 0.5 * i as f64))
    };
    let hs = h.compile(pack(), ()).unwrap();
    let (_, mh) = mixer::<f64>();
    let ms = g
        .compile(
            mh.inputs(Tensor::from_fn(|i| i as f64), Tensor::full(-1.0), Tensor::from_fn(|i| 0.5 * i as f64)),
            MixerData { seed: 3 },
        )
        .unwrap();
    assert_eq!(all_bits(&ms.raw().values()[..8]), all_bits(hs.raw().values()));
    assert_eq!(hs.value(c).unwrap().data()[..7], [0.0, 1.0, 2.0, -1.0, 0.0, 1.0, 2.0]);
}

fn check_mixer<A: TestFloat>(salt: u64, seed: u64) {
    let (g, h) = mixer::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2));
    let data = MixerData { seed };
    let s0: Tensor<A, (U2, U7)> = adv(salt, 3);
    let s1: Tensor<A, (U4, U6)> = adv(salt, 4);
    let s2: Tensor<A, ()> = adv(salt, 5);
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    seeds.set(h.output2, s2.clone()).unwrap();
    let what = |w: &str| format!("{w} (salt {salt}, seed {seed})");

    let reference = g.backprop_ctx(&inputs, &data, seeds.clone()).unwrap();
    let saved = g.compile(inputs.clone(), data).unwrap();
    assert_eq!(
        all_bits(saved.backprop_inputs_stored(seeds.clone()).unwrap().as_slice()),
        all_bits(reference.as_slice()),
        "{}",
        what("inputs stored")
    );
    assert_eq!(
        all_bits(saved.raw().values()),
        all_bits(&g.raw().eval_ctx(inputs.as_slice(), &MixerData { seed }).unwrap()),
        "{}",
        what("values vs eval_ctx")
    );
    let mut prog = Mixer::program::<A>();
    let data = MixerData { seed };
    for _ in 0..2 {
        let got = prog.gradients(&mut inputs, &data, &(s0.clone(), s1.clone(), s2.clone())).unwrap();
        assert_eq!(all_bits(got.as_slice()), all_bits(reference.as_slice()), "{}", what("program gradients"));
    }
    let raw = inputs.as_slice().to_vec();
    let n = raw.len();
    let from1 = g.raw().backprop_from_ctx(&raw, &data, g.raw().position(h.output1.index()).unwrap(), s1.raw().clone());
    let got = prog.gradients_from(h.output1, &mut inputs, &data, &s1).unwrap();
    assert_eq!(all_bits(got.as_slice()), all_bits(&from1.unwrap()[..n]), "{}", what("gradients_from(output1)"));
}

#[test]
fn programs_equal_the_reference() {
    for salt in 0..16 {
        check_mixer::<f64>(salt, salt * 7919);
        check_mixer::<f32>(salt, u64::MAX - salt);
    }
}

/// Every pass of one saved forward reads the mask of its seed: the value, the gradient and the
/// generated program agree element by element on which entries were dropped.
#[test]
fn every_pass_sees_the_same_mask() {
    let (g, h) = halves::<f64>();
    let x = || Tensor::<f64, (U4, U3)>::from_fn(|i| 1.0 + i as f64);
    let saved = g.compile(h.inputs(x()), HalvesData { seed: 11 }).unwrap();
    let y = saved.value(h.output).unwrap().data().to_vec();
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    let gx = grads.raw()[0].data().to_vec();
    let k: f64 = 1.0 / 0.75;
    for i in 0..6 {
        // y = (top - bottom) * m: top - bottom = -6 everywhere; the top half's gradient is m.
        let kept = ops::keeps(11, i, 0.25);
        assert_eq!(y[i].to_bits(), (-6.0 * if kept { k } else { 0.0f64 }).to_bits(), "value {i}");
        assert_eq!(gx[i].to_bits(), (if kept { k } else { 0.0f64 }).to_bits(), "gradient {i}");
        assert_eq!(gx[i + 6].to_bits(), (0.0 - gx[i]).to_bits(), "gradient {}", i + 6);
    }
    let mut prog = Halves::program::<f64>();
    let mut inputs = h.inputs(x());
    let got = prog.gradients(&mut inputs, &HalvesData { seed: 11 }, &Tensor::full(1.0)).unwrap();
    assert_eq!(all_bits(got.as_slice()), all_bits([&grads.raw()[0]]));
}

#[test]
fn generic_rows() {
    let (g, h) = generic::<f32, U3>();
    let inputs = h.inputs(Tensor::from_fn(|i| i as f32), Tensor::from_fn(|i| -(i as f32)));
    let saved = g.compile(inputs.clone(), GenericData { seed: 4 }).unwrap();
    assert_eq!(saved.value(h.output).unwrap().dims().as_slice(), &[3, 7]);
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output, Tensor::from_fn(|i| 1.0 + i as f32)).unwrap();
    let reference = g.backprop_ctx(&inputs, &GenericData { seed: 4 }, seeds.clone()).unwrap();
    assert_eq!(all_bits(saved.backprop_inputs_stored(seeds).unwrap().as_slice()), all_bits(reference.as_slice()));
}

#[test]
fn new_seeds_draw_new_masks_and_the_dropped_fraction_is_close_to_p() {
    let (g, h) = wide::<f64>();
    let mut masks = Vec::new();
    for seed in [1u64, 2, 0xDEAD_BEEF] {
        let saved = g.compile(h.inputs(Tensor::full(1.0)), WideData { seed }).unwrap();
        let y = saved.value(h.output).unwrap();
        let kept: Vec<bool> = y.data().iter().map(|&v| v != 0.0).collect();
        // Every kept element is exactly the factor from_f64(1 / (1 - 0.3)).
        assert!(y.data().iter().all(|&v| v == 0.0 || v.to_bits() == (1.0f64 / (1.0 - 0.3)).to_bits()));
        // 65 536 draws at p = 0.3: the standard deviation of the fraction is 0.0018, so a bound of
        // 0.01 is more than five of them (and the seeds are fixed: the test is deterministic).
        let dropped = kept.iter().filter(|&&k| !k).count() as f64 / kept.len() as f64;
        assert!((dropped - 0.3).abs() < 0.01, "seed {seed}: dropped fraction {dropped}");
        masks.push(kept);
    }
    assert_ne!(masks[0], masks[1]);
    assert_ne!(masks[0], masks[2]);
    assert_ne!(masks[1], masks[2]);
}

/// In `Wrapping<i64>` the factor is `from_f64(1 / (1 - p))` truncated toward zero: 1 at
/// `p = 0.25`; the program and the reference agree.
#[test]
fn integer_factors_truncate() {
    type W = Wrapping<i64>;
    let (g, h) = halves::<W>();
    let x = Tensor::<W, (U4, U3)>::from_fn(|i| Wrapping(i as i64 * 3 - 5));
    let saved = g.compile(h.inputs(x.clone()), HalvesData { seed: 5 }).unwrap();
    let y = saved.value(h.output).unwrap();
    for (i, v) in y.data().iter().enumerate() {
        let diff = Wrapping(-18i64); // x[i] - x[i + 6]
        assert_eq!(*v, if ops::keeps(5, i, 0.25) { diff } else { Wrapping(0) });
    }
    let reference = g.backprop_ctx(&h.inputs(x.clone()), &HalvesData { seed: 5 }, {
        let mut s = Seeds::zeros(&g);
        s.set(h.output, Tensor::full(Wrapping(3))).unwrap();
        s
    });
    let mut prog = Halves::program::<W>();
    let got = prog.gradients(&mut h.inputs(x), &HalvesData { seed: 5 }, &Tensor::full(Wrapping(3))).unwrap();
    assert_eq!(got.as_slice(), reference.unwrap().as_slice());
}
