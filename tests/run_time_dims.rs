//! Run-time dims (`fn f<batch: dyn>(…)`): one compiled graph (and one generated program) serves
//! every batch size, and at size `b` it is bit for bit the same model written with the literal
//! `b` (SEMANTICS §2.1): every value, every pass's gradients, every program run (`to_bits`).

#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

use exactgrad::{graph, Dims, Error, RawTensor, Seeds, Tensor};
use proptest::prelude::*;

graph! {
    /// An MLP on a data batch, with labels.
    pub fn mlp_dyn<batch: dyn>(w1: [4, 3], b1: [3], w2: [3, 2]; x: [batch, 4], labels: Vec<usize>) -> [] {
        let h = relu(x.matmul(w1) + b1);
        cross_entropy(h.matmul(w2), labels)
    }
}

graph! {
    /// A conv / max-pool model whose batch is an input, flattened along the batch by a reshape.
    pub fn cnn_dyn<batch: dyn>(x: [batch, 1, 6, 6], k: [2, 1, 3, 3], w: [8, 3]; labels: Vec<usize>) -> [] {
        let p = max_pool2d(relu(conv2d(x, k, padding = 1)), kernel = 3);
        let flat: [batch, 8] = reshape(p);
        cross_entropy(tanh(flat.matmul(w)), labels)
    }
}

graph! {
    /// Rows gathered by ids (one per batch row), reshaped along the batch, two outputs.
    pub fn embed_dyn<batch: dyn>(table: [5, 3], w: [3, 2]; ids: Vec<usize>, m: [batch, 2]) -> ([batch, 2], []) {
        let e: [batch, 3] = gather_rows(table, ids);
        let r: [batch, 3, 1] = reshape(e);
        let back: [batch, 3] = reshape(r);
        let y = tanh(back.matmul(w)) * m;
        (y, sum(y * y))
    }
}

graph! {
    /// An embedding of `batch` windows of 3 ids (`[batch, 3, 4]`: the run-time dim in front of a
    /// literal one, resolved from the id count), a batched product with a shared matrix.
    pub fn seq_dyn<batch: dyn>(table: [5, 4], w: [4, 2]; ids: Vec<usize>) -> [] {
        let e: [batch, 3, 4] = embedding(table, ids);
        let s = softmax(e.matmul(w));
        sum(s * s)
    }
}

/// The four models with a literal batch `$b`, in module `$m`.
macro_rules! literal_models {
    ($($m:ident: $b:tt),*) => {$(
        #[allow(dead_code, unreachable_pub)]
        mod $m {
            use exactgrad::graph;
            graph! {
                pub fn mlp(w1: [4, 3], b1: [3], w2: [3, 2]; x: [$b, 4], labels: Vec<usize>) -> [] {
                    let h = relu(x.matmul(w1) + b1);
                    cross_entropy(h.matmul(w2), labels)
                }
            }
            graph! {
                pub fn cnn(x: [$b, 1, 6, 6], k: [2, 1, 3, 3], w: [8, 3]; labels: Vec<usize>) -> [] {
                    let p = max_pool2d(relu(conv2d(x, k, padding = 1)), kernel = 3);
                    let flat: [$b, 8] = reshape(p);
                    cross_entropy(tanh(flat.matmul(w)), labels)
                }
            }
            graph! {
                pub fn embed(table: [5, 3], w: [3, 2]; ids: Vec<usize>, m: [$b, 2]) -> ([$b, 2], []) {
                    let e: [$b, 3] = gather_rows(table, ids);
                    let r: [$b, 3, 1] = reshape(e);
                    let back: [$b, 3] = reshape(r);
                    let y = tanh(back.matmul(w)) * m;
                    (y, sum(y * y))
                }
            }
            graph! {
                pub fn seq(table: [5, 4], w: [4, 2]; ids: Vec<usize>) -> [] {
                    let e: [$b, 3, 4] = embedding(table, ids);
                    let s = softmax(e.matmul(w));
                    sum(s * s)
                }
            }
        }
    )*};
}
literal_models!(b1: 1, b2: 2, b3: 3, b5: 5);

/// A tensor of `dims` with distinct values, signed zeros and a negative (from `seed`).
fn t(dims: &[usize], seed: u64) -> RawTensor<f64> {
    let d = Dims::new(dims).unwrap();
    let n = d.numel();
    let v = (0..n)
        .map(|i| {
            let k = (i as u64).wrapping_mul(2_654_435_761).wrapping_add(seed * 97) % 1000;
            match k % 17 {
                0 => -0.0,
                1 => 0.0,
                _ => (k as f64 - 500.0) / 173.0,
            }
        })
        .collect();
    RawTensor::from_vec(d, v).unwrap()
}

fn typed<S: exactgrad::Shape>(r: &RawTensor<f64>) -> Tensor<f64, S> {
    Tensor::try_from_raw(r.clone()).unwrap()
}

fn bits(ts: &[RawTensor<f64>]) -> Vec<(Dims, Vec<u64>)> {
    ts.iter().map(|t| (t.dims(), t.data().iter().map(|v| v.to_bits()).collect())).collect()
}

fn labels(b: usize, classes: usize, seed: u64) -> Vec<usize> {
    (0..b).map(|i| (i * 7 + seed as usize) % classes).collect()
}

/// Every value and every pass of two saved graphs of the same structure, as bits.
fn passes(saved: &exactgrad::RawSavedGraph<'_, f64, impl Sized + 'static>, loss: usize) -> Vec<Vec<(Dims, Vec<u64>)>> {
    let out = saved.graph().position(loss).unwrap();
    let one = RawTensor::from_vec(Dims::scalar(), vec![1.25]).unwrap();
    let mut seeds = saved.zero_seeds();
    seeds.set(out, one.clone()).unwrap();
    vec![
        bits(saved.values()),
        bits(&saved.backprop_all_dense(seeds.clone()).unwrap()),
        bits(&saved.backprop_all_array(seeds.clone()).unwrap()),
        bits(&saved.backprop_inputs_stored(seeds).unwrap()),
        bits(&saved.backprop_from(out, one.clone()).unwrap().into_vec()),
        bits(&saved.backprop_from_dense(out, one).unwrap().into_vec()),
    ]
}

/// Every value, pass and program of the four dyn models at batch `$b` against the literal
/// models of module `$m`.
macro_rules! compare {
    ($m:ident, $b:expr, $seed:expr) => {{
        let (b, seed): (usize, u64) = ($b, $seed);
        // The MLP: data batch and labels; typed seeds; the generated programs.
        let (w1, b1, w2, x) = (t(&[4, 3], seed), t(&[3], seed + 1), t(&[3, 2], seed + 2), t(&[b, 4], seed + 3));
        let lb = labels(b, 2, seed);
        let (gd, hd) = mlp_dyn::<f64>();
        let (gl, hl) = $m::mlp::<f64>();
        let dd = MlpDynData { x: x.clone(), labels: lb.clone() };
        let dl = $m::MlpData { x: typed(&x), labels: lb };
        let sd = gd.compile(hd.inputs(typed(&w1), typed(&b1), typed(&w2)), dd.clone()).unwrap();
        let sl = gl.compile(hl.inputs(typed(&w1), typed(&b1), typed(&w2)), dl.clone()).unwrap();
        let want = passes(sl.raw(), hl.output.index());
        assert_eq!(passes(sd.raw(), hd.output.index()), want);
        let seeds = Seeds::single(&gd, hd.output, Tensor::full(1.25)).unwrap();
        assert_eq!(bits(sd.backprop_inputs_array(seeds).unwrap().as_slice()), want[3]);
        let mut pd = MlpDyn::program::<f64>();
        let mut pl = $m::Mlp::program::<f64>();
        let mut id = hd.inputs(typed(&w1), typed(&b1), typed(&w2));
        let mut il = hl.inputs(typed(&w1), typed(&b1), typed(&w2));
        let got = bits(pd.gradients(&mut id, &dd, &Tensor::full(1.25)).unwrap().as_slice());
        assert_eq!(got, bits(pl.gradients(&mut il, &dl, &Tensor::full(1.25)).unwrap().as_slice()));
        let got = bits(pd.gradients_from(hd.output, &mut id, &dd, &Tensor::full(0.5)).unwrap().as_slice());
        assert_eq!(got, bits(pl.gradients_from(hl.output, &mut il, &dl, &Tensor::full(0.5)).unwrap().as_slice()));

        // The CNN: batch input, conv2d, max_pool2d, reshape along the batch.
        let (x, k, w) = (t(&[b, 1, 6, 6], seed), t(&[2, 1, 3, 3], seed + 1), t(&[8, 3], seed + 2));
        let lb = labels(b, 3, seed);
        let (gd, hd) = cnn_dyn::<f64>();
        let (gl, hl) = $m::cnn::<f64>();
        let dd = CnnDynData { labels: lb.clone() };
        let dl = $m::CnnData { labels: lb };
        let sd = gd.compile(hd.inputs(x.clone(), typed(&k), typed(&w)), dd.clone()).unwrap();
        let sl = gl.compile(hl.inputs(typed(&x), typed(&k), typed(&w)), dl.clone()).unwrap();
        assert_eq!(passes(sd.raw(), hd.output.index()), passes(sl.raw(), hl.output.index()));
        let mut pd = CnnDyn::program::<f64>();
        let mut pl = $m::Cnn::program::<f64>();
        let mut id = hd.inputs(x.clone(), typed(&k), typed(&w));
        let mut il = hl.inputs(typed(&x), typed(&k), typed(&w));
        let got = bits(pd.gradients(&mut id, &dd, &Tensor::full(1.0)).unwrap().as_slice());
        assert_eq!(got, bits(pl.gradients(&mut il, &dl, &Tensor::full(1.0)).unwrap().as_slice()));
        // The gradient of the batch input has the batch's real dims.
        assert_eq!(sd.backprop_from(hd.output, Tensor::full(1.0)).unwrap().get(hd.x).unwrap().dims(), x.dims());

        // gather_rows and reshapes along the batch, a data tensor, an output with the batch.
        let (table, w, m) = (t(&[5, 3], seed), t(&[3, 2], seed + 1), t(&[b, 2], seed + 2));
        let ids = labels(b, 5, seed);
        let (gd, hd) = embed_dyn::<f64>();
        let (gl, hl) = $m::embed::<f64>();
        let sd =
            gd.compile(hd.inputs(typed(&table), typed(&w)), EmbedDynData { ids: ids.clone(), m: m.clone() }).unwrap();
        let sl = gl.compile(hl.inputs(typed(&table), typed(&w)), $m::EmbedData { ids, m: typed(&m) }).unwrap();
        assert_eq!(passes(sd.raw(), hd.output1.index()), passes(sl.raw(), hl.output1.index()));
        assert_eq!(sd.value(hd.output0).unwrap().dims(), Dims::matrix(b, 2));

        // An embedding whose leading dims `[batch, 3]` take the batch from the id count.
        let (table, w) = (t(&[5, 4], seed), t(&[4, 2], seed + 1));
        let ids = labels(3 * b, 5, seed);
        let (gd, hd) = seq_dyn::<f64>();
        let (gl, hl) = $m::seq::<f64>();
        let sd = gd.compile(hd.inputs(typed(&table), typed(&w)), SeqDynData { ids: ids.clone() }).unwrap();
        let sl = gl.compile(hl.inputs(typed(&table), typed(&w)), $m::SeqData { ids: ids.clone() }).unwrap();
        assert_eq!(passes(sd.raw(), hd.output.index()), passes(sl.raw(), hl.output.index()));
        assert_eq!(sd.raw().values()[2].dims(), Dims::new(&[b, 3, 4]).unwrap());
        let mut pd = SeqDyn::program::<f64>();
        let mut pl = $m::Seq::program::<f64>();
        let mut id = hd.inputs(typed(&table), typed(&w));
        let mut il = hl.inputs(typed(&table), typed(&w));
        let (dd, dl) = (SeqDynData { ids: ids.clone() }, $m::SeqData { ids });
        let got = bits(pd.gradients(&mut id, &dd, &Tensor::full(1.0)).unwrap().as_slice());
        assert_eq!(got, bits(pl.gradients(&mut il, &dl, &Tensor::full(1.0)).unwrap().as_slice()));
    }};
}

/// The literal batch sizes the proptest picks from (each a module of literal models).
fn dispatch(b: usize, seed: u64) {
    match b {
        1 => compare!(b1, 1, seed),
        2 => compare!(b2, 2, seed),
        3 => compare!(b3, 3, seed),
        _ => compare!(b5, 5, seed),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn the_dyn_model_at_size_b_is_the_literal_model_bit_for_bit(
        b in prop::sample::select(vec![1usize, 2, 3, 5]),
        seed in 0u64..1000,
    ) {
        dispatch(b, seed);
    }
}

#[test]
fn one_graph_and_one_program_serve_64_then_39_then_64() {
    let (g, h) = mlp_dyn::<f64>();
    let mut prog = MlpDyn::program::<f64>();
    let (w1, b1, w2) = (t(&[4, 3], 1), t(&[3], 2), t(&[3, 2], 3));
    for (b, seed) in [(64, 10), (39, 20), (64, 30)] {
        let data = MlpDynData { x: t(&[b, 4], seed), labels: labels(b, 2, seed) };
        let saved = g.compile(h.inputs(typed(&w1), typed(&b1), typed(&w2)), data.clone()).unwrap();
        assert_eq!(saved.raw().dims()[3], Dims::matrix(b, 3)); // x · w1
        let want = bits(
            saved.backprop_inputs_dense(Seeds::single(&g, h.output, Tensor::full(1.0)).unwrap()).unwrap().as_slice(),
        );
        let mut inputs = h.inputs(typed(&w1), typed(&b1), typed(&w2));
        let got = bits(prog.gradients(&mut inputs, &data, &Tensor::full(1.0)).unwrap().as_slice());
        assert_eq!(got, want, "batch {b}");
        // `eval` too: every value at the real dims.
        let all = g.eval(h.inputs(typed(&w1), typed(&b1), typed(&w2)), data).unwrap();
        assert_eq!(all.into_vec().len(), saved.raw().values().len());
    }
}

#[test]
fn disagreeing_sizes_and_an_empty_batch_are_typed_errors() {
    let (g, h) = mlp_dyn::<f64>();
    let (w1, b1, w2) = (t(&[4, 3], 1), t(&[3], 2), t(&[3, 2], 3));
    let inputs = || h.inputs(typed(&w1), typed(&b1), typed(&w2));
    // The labels disagree with the data tensor: cross_entropy reports it at its node.
    let e = g.compile(inputs(), MlpDynData { x: t(&[64, 4], 1), labels: labels(39, 2, 1) }).err().unwrap();
    assert!(matches!(e, Error::Node { .. }), "{e}");
    let e = g.compile(inputs(), MlpDynData { x: t(&[0, 4], 1), labels: Vec::new() }).err().unwrap();
    assert_eq!(
        e.to_string(),
        "run-time dim `batch` is 0 in the data of node 0 (matmul_data); a run-time dim is at least 1"
    );
    let e = g.compile(inputs(), MlpDynData { x: t(&[3, 5], 1), labels: labels(3, 2, 1) }).err().unwrap();
    assert!(matches!(e, Error::Node { .. }), "{e}");

    let (g, h) = cnn_dyn::<f64>();
    let bad = t(&[2, 1, 6, 5], 1);
    let e =
        g.compile(h.inputs(bad, typed(&t(&[2, 1, 3, 3], 2)), typed(&t(&[8, 3], 3))), CnnDynData { labels: vec![0, 1] });
    assert_eq!(e.err().unwrap().to_string(), "input `x` has shape [2, 1, 6, 5], but it was declared [batch, 1, 6, 6]");
    let e = g.compile(
        h.inputs(t(&[2, 1, 6, 6], 1), typed(&t(&[2, 1, 3, 3], 2)), typed(&t(&[8, 3], 3))),
        CnnDynData { labels: vec![0, 1, 2] },
    );
    let Err(Error::Node { op, .. }) = e else { panic!("a node error") };
    assert_eq!(op, "cross_entropy");

    let (g, h) = embed_dyn::<f64>();
    assert!(g.describe().contains("[batch, 3]"), "{}", g.describe());
    let inputs = || h.inputs(typed(&t(&[5, 3], 1)), typed(&t(&[3, 2], 2)));
    let e = g.compile(inputs(), EmbedDynData { ids: Vec::new(), m: t(&[0, 2], 3) });
    assert_eq!(
        e.err().unwrap().to_string(),
        "run-time dim `batch` is 0 in the data of node 0 (gather_rows); a run-time dim is at least 1"
    );
    let e = g.compile(inputs(), EmbedDynData { ids: vec![0, 1, 2], m: t(&[2, 2], 3) });
    assert_eq!(
        e.err().unwrap().to_string(),
        "run-time dim `batch` is 3 in the data of node 0 (gather_rows) but 2 in the data of node 5 (data_tensor)"
    );

    // 7 ids do not make whole windows of 3.
    let (g, h) = seq_dyn::<f64>();
    let e = g.compile(h.inputs(typed(&t(&[5, 4], 1)), typed(&t(&[4, 2], 2))), SeqDynData { ids: vec![0; 7] });
    let Err(e) = e else { panic!("7 ids for windows of 3 must be an error") };
    assert!(e.to_string().contains("7 ids are not a whole number of groups of 3 ids"), "{e}");
}
