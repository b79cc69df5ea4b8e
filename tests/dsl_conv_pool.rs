//! The sliding-window ops in `graph!` (`conv1d`, `conv2d`, `max_pool2d`, `avg_pool2d`): the named
//! constants reach the runtime ops (the same graph built by hand gives the same description and
//! bit-identical values and gradients), a per-channel bias through `permute`/`reshape`/`add_row`,
//! generic batch and channel dims, and the generated programs (`Model::program`: `gradients`,
//! `gradients_from`) against the graph-level reference on adversarial `f32` and `f64` values.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U1, U2, U3, U4, U5, U7};
use exactgrad::{graph, ops, GraphData, Pack, Seeds, Tensor};
use floats::{adv, all_bits, TestFloat};

graph! {
    /// A small convolutional network: conv2d (padding 1) with a per-channel bias, relu, max
    /// pooling, a strided dilated conv2d, average pooling with padding, and a conv1d branch.
    fn cnn(x: [2, 1, 6, 6], k1: [2, 1, 3, 3], bias: [2], k2: [3, 2, 2, 2], s: [1, 2, 7], k3: [2, 2, 3])
        -> ([2, 3, 2, 1], [])
    {
        let h = conv2d(x, k1, padding = 1);
        let rows: [72, 2] = reshape(permute(h, [0, 2, 3, 1]));
        let biased: [2, 6, 6, 2] = reshape(rows + bias);
        let p = max_pool2d(relu(permute(biased, [0, 3, 1, 2])), kernel = 2);
        let c = p.conv2d(k2, stride = (1, 2), padding = (1, 0), dilation = (2, 1));
        let y = avg_pool2d(c, kernel = (3, 1), stride = (2, 1), padding = (1, 0));
        (y, sum(conv1d(s, k3, padding = 1, stride = 2)) + sum(max_pool2d(x, kernel = 3, stride = 1, padding = 1)))
    }
}

graph! {
    /// Generic batch and channels.
    fn sequence<B, C>(x: [B, C, 7], k: [3, C, 3]) -> [B, 3, 4] {
        conv1d(x, k, stride = 2, padding = 1)
    }
}

#[test]
fn macro_graph_equals_the_hand_built_one() {
    let (mg, mh) = sequence::<f64, U2, U3>();
    let x = || Tensor::<f64, (U2, U3, U7)>::from_fn(|i| i as f64 * 0.25 - 2.0);
    let k = || Tensor::<f64, (U3, U3, U3)>::from_fn(|i| (i as f64 - 13.0) / 7.0);
    let ms = mg.compile(mh.inputs(x(), k()), ()).unwrap();
    let seed = Tensor::from_fn(|i| 1.0 + i as f64);
    let m = (all_bits(ms.raw().values()), all_bits(ms.backprop_from(mh.output, seed.clone()).unwrap().iter()));

    let g = GraphData::<f64, ()>::new();
    let (g, hx) = g.input::<(U2, U3, U7)>();
    let (g, hk) = g.input::<(U3, U3, U3)>();
    let (g, out) = g.push(ops::conv1d(hx, hk, U2::new(), U1::new(), U1::new()));
    let hs = g.compile(Pack::new().push(x()).push(k()), ()).unwrap();
    let h = (all_bits(hs.raw().values()), all_bits(hs.backprop_from(out, seed).unwrap().iter()));
    assert_eq!(m, h);
    assert_eq!(mg.describe(), g.describe());

    // The network's window nodes: the constants reached the ops (their output dims say so).
    let (cg, _) = cnn::<f64>();
    let raw = cg.raw();
    let windows: Vec<(&str, Vec<usize>)> = raw
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.name().contains("conv") || n.name().contains("pool"))
        .map(|(k, n)| (n.name(), raw.dims()[raw.num_inputs() + k].as_slice().to_vec()))
        .collect();
    let expected: [(&str, &[usize]); 6] = [
        ("conv2d", &[2, 2, 6, 6]),
        ("max_pool2d", &[2, 2, 3, 3]),
        ("conv2d", &[2, 3, 3, 1]),
        ("avg_pool2d", &[2, 3, 2, 1]),
        ("conv1d", &[1, 2, 4]),
        ("max_pool2d", &[2, 1, 6, 6]),
    ];
    assert_eq!(windows, expected.map(|(n, d)| (n, d.to_vec())));
}

#[test]
fn generic_batch_and_channels() {
    let (g, h) = sequence::<f32, U4, U5>();
    let saved = g.compile(h.inputs(Tensor::full(1.0), Tensor::full(0.5)), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().dims().as_slice(), &[4, 3, 4]);
}

fn check_cnn<A: TestFloat>(salt: u64) {
    let (g, h) = cnn::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4), adv(salt, 5));
    let (s0, s1): (Tensor<A, (U2, U3, U2, U1)>, Tensor<A, ()>) = (adv(salt, 6), adv(salt, 7));
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let what = |w: &str| format!("{w} (salt {salt})");

    let reference = g.backprop_ctx(&inputs, &(), seeds.clone()).unwrap();
    let saved = g.compile(inputs.clone(), ()).unwrap();
    assert_eq!(
        all_bits(saved.backprop_inputs_stored(seeds.clone()).unwrap().as_slice()),
        all_bits(reference.as_slice()),
        "{}",
        what("inputs stored")
    );
    let mut prog = Cnn::program::<A>();
    for _ in 0..2 {
        // Twice: the second run reuses every buffer.
        let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
        assert_eq!(all_bits(got.as_slice()), all_bits(reference.as_slice()), "{}", what("program gradients"));
    }
    let raw = inputs.as_slice().to_vec();
    let n = raw.len();
    let from0 = g.raw().backprop_from_ctx(&raw, &(), g.raw().position(h.output0.index()).unwrap(), s0.raw().clone());
    let got = prog.gradients_from(h.output0, &mut inputs, &(), &s0).unwrap();
    assert_eq!(all_bits(got.as_slice()), all_bits(&from0.unwrap()[..n]), "{}", what("gradients_from(output0)"));
    let from1 = g.raw().backprop_from_ctx(&raw, &(), g.raw().position(h.output1.index()).unwrap(), s1.raw().clone());
    let got = prog.gradients_from(h.output1, &mut inputs, &(), &s1).unwrap();
    assert_eq!(all_bits(got.as_slice()), all_bits(&from1.unwrap()[..n]), "{}", what("gradients_from(output1)"));
}

#[test]
fn programs_equal_the_reference() {
    for salt in 0..16 {
        check_cnn::<f64>(salt);
        check_cnn::<f32>(salt);
    }
}
