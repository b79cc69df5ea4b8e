//! The model ops in `graph!` (softmax, `log_softmax`, `layer_norm`, `sum_axis`, `mean_axis`, mse,
//! `cross_entropy` with labels from the data): the same graph built by hand with the runtime
//! builder gives bit-identical values and gradients, and a bad label is a typed error from
//! `compile`.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U0, U1, U2, U3, U4};
use exactgrad::{graph, ops, GraphData, Node, Pack, Tensor};
use floats::all_bits;

type Inputs = (
    Tensor<f64, (U2, U4)>,
    Tensor<f64, (U4, U3)>,
    Tensor<f64, (U3,)>,
    Tensor<f64, (U3,)>,
    Tensor<f64, (U3,)>,
    Tensor<f64, (U2,)>,
);

graph! {
    /// A small classifier exercising the model ops.
    fn classifier<B>(x: [B, 4], w: [4, 3], b: [3], gain: [3], bias: [3], t: [B]; labels: Vec<usize>) -> [] {
        let z = layer_norm(x.matmul(w) + b, gain, bias);
        let ce = cross_entropy(z, labels);
        let p = softmax(z);
        let l = log_softmax(z);
        let rows = sum_axis(p * l, 1);
        let cols = mean_axis(l, 0);
        ce + mse(rows, t) + sum(cols) * 0.5
    }
}

/// The graph's data: the labels.
struct Labels(Vec<usize>);

fn inputs() -> Inputs {
    (
        Tensor::from_fn(|i| (i as f64 * 0.37).sin()),
        Tensor::from_fn(|i| (i as f64 * 0.91).cos() * 0.5),
        Tensor::from_vec(vec![0.1, -0.2, 0.3]).unwrap(),
        Tensor::from_vec(vec![1.0, 0.9, 1.1]).unwrap(),
        Tensor::from_vec(vec![0.0, 0.05, -0.05]).unwrap(),
        Tensor::from_vec(vec![-0.7, -0.4]).unwrap(),
    )
}

#[test]
fn macro_graph_equals_the_hand_built_one() {
    let (mg, mh) = classifier::<f64, U2>();
    let (x, w, b, gain, bias, t) = inputs();
    let saved = mg.compile(mh.inputs(x, w, b, gain, bias, t), ClassifierData { labels: vec![2, 0] }).unwrap();
    let m_values = all_bits(saved.raw().values());
    let m_grads = all_bits(saved.backprop_from(mh.output, Tensor::full(1.0)).unwrap().iter());

    let labels: fn(&Labels) -> &[usize] = |d| &d.0;
    let g = GraphData::<f64, Labels>::new();
    let (g, x) = g.input::<(U2, U4)>();
    let (g, w) = g.input::<(U4, U3)>();
    let (g, b) = g.input::<(U3,)>();
    let (g, gain) = g.input::<(U3,)>();
    let (g, bias) = g.input::<(U3,)>();
    let (g, t) = g.input::<(U2,)>();
    let (g, xw) = g.push(ops::matmul(x, w));
    let (g, xwb) = g.push(ops::add_row(xw, b));
    let (g, z) = g.push(Node::<f64, Labels, (U2, U3)>::compact(
        ops::LayerNorm::new(xwb.index(), gain.index(), bias.index(), 1e-5),
        &[&xwb, &gain, &bias],
    ));
    let (g, ce) = g.push(Node::<f64, Labels, ()>::compact(ops::CrossEntropy::new(z.index(), labels), &[&z]));
    let (g, p) = g.push(ops::softmax(z));
    let (g, l) = g.push(ops::log_softmax(z));
    let (g, pl) = g.push(ops::mul(p, l));
    let (g, rows) = g.push(ops::sum_axis(pl, U1::new()));
    let (g, cols) = g.push(ops::mean_axis(l, U0::new()));
    let (g, m) = g.push(ops::mse(rows, t));
    let (g, c1) = g.push(ops::add(ce, m));
    let (g, sc) = g.push(ops::sum(cols));
    let (g, half) = g.push(ops::scale(sc, 0.5));
    let (hg, out) = g.push(ops::add(c1, half));
    let (x, w, b, gain, bias, t) = inputs();
    let pack = Pack::new().push(x).push(w).push(b).push(gain).push(bias).push(t);
    let hs = hg.compile(pack, Labels(vec![2, 0])).unwrap();
    assert_eq!(m_values, all_bits(hs.raw().values()));
    assert_eq!(m_grads, all_bits(hs.backprop_from(out, Tensor::full(1.0)).unwrap().iter()));
    assert_eq!(mg.describe(), hg.describe());
    assert!(m_values.last().unwrap().1[0] != 0 && f64::from_bits(m_values.last().unwrap().1[0]).is_finite());
}

#[test]
fn an_out_of_range_label_is_an_error_from_compile() {
    let (g, h) = classifier::<f64, U2>();
    let (x, w, b, gain, bias, t) = inputs();
    let err = g.compile(h.inputs(x, w, b, gain, bias, t), ClassifierData { labels: vec![2, 3] }).err().unwrap();
    let message = err.to_string();
    assert!(message.starts_with("node 3 (cross_entropy)"), "{message}");
    assert!(message.contains("label 3 at row 1 is out of range for 3 classes"), "{message}");
}
