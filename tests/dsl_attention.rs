//! The attention ops in `graph!` (issue 12, item 3): batched `matmul` (`[b, m, k] · [b, k, n]` and
//! a shared right matrix `[b, m, k] · [k, n]`), `embedding` (`gather_rows` with batched ids),
//! `causal_mask` and `masked_fill` (an infinite fill value, a mask from the data repeated over the
//! batch). The same graph built by hand gives the same description and bit-identical values and
//! gradients; the generated programs (`Model::program`: `gradients`, `gradients_from`) equal the
//! graph-level reference bit for bit on adversarial `f32` and `f64` values; bad ids and masks are
//! errors from `compile`.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U0, U1, U2, U3, U4, U7};
use exactgrad::{graph, ops, Error, GraphData, Pack, Seeds, Tensor};
use floats::{adv, all_bits, bits, TestFloat};

graph! {
    /// One causal self-attention head over a batch of two sequences of three token ids, with a
    /// padding mask shared by both sequences, and a rank-2 branch (`gather_rows` of the first
    /// four ids, a causal mask of a square matrix).
    fn attention(table: [7, 4], wq: [4, 4], wk: [4, 4], wv: [4, 4], wo: [4, 3]; ids: Vec<usize>, pad: Vec<bool>)
        -> ([2, 3, 3], [])
    {
        let e: [2, 3, 4] = embedding(table, ids);
        let q = e.matmul(wq);
        let k = matmul(e, wk);
        let v = e.matmul(wv);
        let scores = q.matmul(permute(k, [0, 2, 1])) * 0.5;
        let masked = masked_fill(causal_mask(scores, f64::NEG_INFINITY), pad, -1e9);
        let o = softmax(masked).matmul(v);
        let rows: [6, 4] = gather_rows(table, ids);
        let square = rows.matmul(transpose(rows));
        (o.matmul(wo), sum(causal_mask(square, 0.25)))
    }
}

fn data() -> AttentionData {
    AttentionData {
        ids: vec![6, 0, 3, 3, 3, 1],
        pad: vec![false, false, true, false, false, false, false, true, false],
    }
}

#[test]
fn macro_graph_equals_the_hand_built_one() {
    let (mg, mh) = attention::<f64>();
    let table = || Tensor::<f64, (U7, U4)>::from_fn(|i| i as f64 * 0.125 - 1.0);
    let wq = || Tensor::<f64, (U4, U4)>::from_fn(|i| (i as f64 - 7.0) / 9.0);
    let wk = || Tensor::<f64, (U4, U4)>::from_fn(|i| (i as f64 * 3.0 % 5.0) / 4.0 - 0.5);
    let wv = || Tensor::<f64, (U4, U4)>::from_fn(|i| 0.25 - i as f64 / 16.0);
    let wo = || Tensor::<f64, (U4, U3)>::from_fn(|i| (i as f64 - 5.0) / 6.0);
    let ms = mg.compile(mh.inputs(table(), wq(), wk(), wv(), wo()), data()).unwrap();
    let seed = Tensor::from_fn(|i| 1.0 + i as f64);
    let m = (all_bits(ms.raw().values()), all_bits(ms.backprop_from(mh.output0, seed.clone()).unwrap().iter()));

    let ids: fn(&AttentionData) -> &[usize] = |d| &d.ids;
    let pad: fn(&AttentionData) -> &[bool] = |d| &d.pad;
    let g = GraphData::<f64, AttentionData>::new();
    let (g, ht) = g.input::<(U7, U4)>();
    let (g, hq) = g.input::<(U4, U4)>();
    let (g, hk) = g.input::<(U4, U4)>();
    let (g, hv) = g.input::<(U4, U4)>();
    let (g, ho) = g.input::<(U4, U3)>();
    let (g, e) = g.push(ops::gather_rows::<_, _, _, (U2, U3), _, _>(ht, ids));
    let (g, q) = g.push(ops::matmul(e, hq));
    let (g, k) = g.push(ops::matmul(e, hk));
    let (g, v) = g.push(ops::matmul(e, hv));
    let (g, kt) = g.push(ops::permute::<_, _, _, (U0, U2, U1), _, _>(k, Default::default()));
    let (g, qk) = g.push(ops::matmul(q, kt));
    let (g, s) = g.push(ops::scale(qk, 0.5));
    let (g, c) = g.push(ops::causal_mask(s, f64::NEG_INFINITY));
    let (g, mf) = g.push(ops::masked_fill(c, pad, -1e9));
    let (g, a) = g.push(ops::softmax(mf));
    let (g, o) = g.push(ops::matmul(a, v));
    let (g, rows) = g.push(ops::gather_rows::<_, _, _, (exactgrad::typenum::U6,), _, _>(ht, ids));
    let (g, rt) = g.push(ops::transpose(rows));
    let (g, square) = g.push(ops::matmul(rows, rt));
    let (g, y) = g.push(ops::matmul(o, ho));
    let (g, cm) = g.push(ops::causal_mask(square, 0.25));
    let (g, _) = g.push(ops::sum(cm));
    let hs = g.compile(Pack::new().push(table()).push(wq()).push(wk()).push(wv()).push(wo()), data()).unwrap();
    let h = (all_bits(hs.raw().values()), all_bits(hs.backprop_from(y, seed).unwrap().iter()));
    assert_eq!(m, h);
    assert_eq!(mg.describe(), g.describe());
    assert_eq!(ms.value(mh.output0).unwrap().dims().as_slice(), [2, 3, 3]);
}

fn check<A: TestFloat>(salt: u64) {
    let (g, h) = attention::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4));
    let (s0, s1): (Tensor<A, (U2, U3, U3)>, Tensor<A, ()>) = (adv(salt, 5), adv(salt, 6));
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let what = |w: &str| format!("{w} (salt {salt})");

    let reference = g.backprop_ctx(&inputs, &data(), seeds.clone()).unwrap();
    let saved = g.compile(inputs.clone(), data()).unwrap();
    assert_eq!(
        all_bits(saved.backprop_inputs_stored(seeds.clone()).unwrap().as_slice()),
        all_bits(reference.as_slice()),
        "{}",
        what("inputs stored")
    );
    let mut prog = Attention::program::<A>();
    for _ in 0..2 {
        // Twice: the second run reuses every buffer.
        let got = prog.gradients(&mut inputs, &data(), &(s0.clone(), s1.clone())).unwrap();
        assert_eq!(all_bits(got.as_slice()), all_bits(reference.as_slice()), "{}", what("program gradients"));
    }
    let raw = inputs.as_slice().to_vec();
    let n = raw.len();
    for (out, seed) in [(h.output0.index(), s0.raw().clone()), (h.output1.index(), s1.raw().clone())] {
        let want = g.raw().backprop_from_ctx(&raw, &data(), g.raw().position(out).unwrap(), seed).unwrap();
        let got = if out == h.output0.index() {
            prog.gradients_from(h.output0, &mut inputs, &data(), &s0).unwrap()
        } else {
            prog.gradients_from(h.output1, &mut inputs, &data(), &s1).unwrap()
        };
        assert_eq!(all_bits(got.as_slice()), all_bits(&want[..n]), "{}", what("gradients_from"));
    }
}

#[test]
fn programs_equal_the_reference() {
    for salt in 0..16 {
        check::<f64>(salt);
        check::<f32>(salt);
    }
}

#[test]
fn bad_ids_and_masks_are_compile_errors() {
    let (g, h) = attention::<f64>();
    let inputs =
        || h.inputs(Tensor::full(0.5), Tensor::full(0.5), Tensor::full(0.5), Tensor::full(0.5), Tensor::full(0.5));
    let node_message = |e: Error| match e {
        Error::Node { op, message, .. } => (op, message),
        e => panic!("unexpected error {e}"),
    };
    let mut d = data();
    d.ids[4] = 7;
    let (op, message) = node_message(g.compile(inputs(), d).err().unwrap());
    assert_eq!(op, "gather_rows");
    assert_eq!(message, "gather_rows id 7 at row 4 is out of range for a table of 7 rows");
    let mut d = data();
    d.pad.pop();
    let (op, message) = node_message(g.compile(inputs(), d).err().unwrap());
    assert_eq!(op, "masked_fill");
    assert!(message.contains("got 8"), "{message}");
    // One flag for every element (a mask of the whole [2, 3, 3] tensor) is accepted too.
    let mut d = data();
    d.pad = vec![false; 18];
    assert!(g.compile(inputs(), d).is_ok());
}

graph! {
    /// Generic batch and sequence length: the ids' layout, the batched products and the causal
    /// mask follow `B` and `T`.
    fn tokens<B, T>(table: [7, 4], w: [4, 4], pos: [B, T, 4]; ids: Vec<usize>) -> [B, T, T] {
        let e: [B, T, 4] = embedding(table, ids);
        let x = e + pos;
        causal_mask(x.matmul(w).matmul(permute(x, [0, 2, 1])), -1e9)
    }
}

#[test]
fn generic_batch_and_sequence_length() {
    let (g, h) = tokens::<f64, U2, U3>();
    let inputs = h.inputs(Tensor::from_fn(|i| i as f64 / 8.0), Tensor::full(0.5), Tensor::full(0.25));
    let saved = g.compile(inputs, TokensData { ids: vec![0, 1, 2, 3, 4, 5] }).unwrap();
    let y = saved.value(h.output).unwrap();
    assert_eq!(y.dims().as_slice(), [2, 3, 3]);
    // Row i of each item keeps columns 0..=i; the rest is the fill value.
    for (e, v) in y.data().iter().enumerate() {
        assert_eq!(*v == -1e9, e % 3 > (e / 3) % 3, "element {e}");
    }
    let (g, h) = tokens::<f32, U4, U1>();
    let inputs = h.inputs(Tensor::full(1.0), Tensor::full(1.0), Tensor::full(0.0));
    let err = g.compile(inputs, TokensData { ids: vec![0; 3] }).err().unwrap();
    assert!(err.to_string().contains("gather_rows expects 4 ids, got 3"), "{err}");
}

graph! {
    /// A batch of data on the left of `matmul`: a `data_tensor` leaf under the batched product.
    fn projected(w: [4, 2]; x: [2, 3, 4]) -> [2, 3, 2] {
        x.matmul(w)
    }
}

graph! {
    /// The same product with the batch as an input.
    fn projected_input(x: [2, 3, 4], w: [4, 2]) -> [2, 3, 2] {
        x.matmul(w)
    }
}

#[test]
fn a_data_batch_on_the_left_is_a_leaf_under_the_batched_product() {
    let x = || Tensor::<f64, (U2, U3, U4)>::from_fn(|i| (i as f64 - 11.0) / 7.0);
    let w = || Tensor::<f64, (U4, U2)>::from_fn(|i| 0.5 - i as f64 / 5.0);
    let seed = Tensor::from_fn(|i| 1.0 - i as f64 / 4.0);
    let (g, h) = projected::<f64>();
    assert!(g.describe().contains("data_tensor"), "{}", g.describe());
    let saved = g.compile(h.inputs(w()), ProjectedData { x: x() }).unwrap();
    let (gi, hi) = projected_input::<f64>();
    let si = gi.compile(hi.inputs(x(), w()), ()).unwrap();
    assert_eq!(bits(saved.value(h.output).unwrap()), bits(si.value(hi.output).unwrap()));
    let gw = saved.backprop_from(h.output, seed.clone()).unwrap();
    let gwi = si.backprop_from(hi.output, seed).unwrap();
    assert_eq!(bits(gw.get(h.w).unwrap()), bits(gwi.get(hi.w).unwrap()));
}
