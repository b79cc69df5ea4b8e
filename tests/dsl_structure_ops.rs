//! The structural ops in `graph!` (concat, slice, permute, reshape): the same graph built by hand
//! with the runtime builder gives bit-identical values and gradients.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U1, U2, U3, U4, U6};
use exactgrad::{graph, ops, GraphData, Node, Pack, Tensor};
use floats::all_bits;

graph! {
    /// Concat, slice, permute and reshape in one graph.
    fn shuffle(a: [2, 3], b: [2, 1]) -> [] {
        let c = concat(a, b, 1);
        let s = slice(c, 1, 1, 3);
        let p = permute(s, [1, 0]);
        let r: [6] = reshape(p);
        let q: [3, 2] = reshape(tanh(r));
        sum(q * p)
    }
}

#[test]
fn macro_graph_equals_the_hand_built_one() {
    let a = || Tensor::<f64, (U2, U3)>::from_vec(vec![0.5, -0.0, 1.5, f64::from_bits(1), -2.0, 3.0]).unwrap();
    let b = || Tensor::<f64, (U2, U1)>::from_vec(vec![0.25, -1.0]).unwrap();
    let (mg, mh) = shuffle::<f64>();
    let ms = mg.compile(mh.inputs(a(), b()), ()).unwrap();
    let m = (all_bits(ms.raw().values()), all_bits(ms.backprop_from(mh.output, Tensor::full(1.0)).unwrap().iter()));

    let g = GraphData::<f64, ()>::new();
    let (g, xa) = g.input::<(U2, U3)>();
    let (g, xb) = g.input::<(U2, U1)>();
    let (g, c) = g.push(Node::<f64, (), (U2, U4)>::compact(ops::Concat::new(xa.index(), xb.index(), 1), &[&xa, &xb]));
    let (g, s) = g.push(Node::<f64, (), (U2, U3)>::compact(ops::Slice::new(c.index(), 1, 1, 3), &[&c]));
    let (g, p) = g.push(Node::<f64, (), (U3, U2)>::compact(ops::Permute::new(s.index(), &[1, 0]), &[&s]));
    let (g, r) = g.push(ops::reshape::<(U6,), _, _, _, _>(p));
    let (g, t) = g.push(ops::tanh(r));
    let (g, q) = g.push(ops::reshape::<(U3, U2), _, _, _, _>(t));
    let (g, qp) = g.push(ops::mul(q, p));
    let (g, out) = g.push(ops::sum(qp));
    let hs = g.compile(Pack::new().push(a()).push(b()), ()).unwrap();
    let h = (all_bits(hs.raw().values()), all_bits(hs.backprop_from(out, Tensor::full(1.0)).unwrap().iter()));
    assert_eq!(m, h);
    assert_eq!(mg.describe(), g.describe());
    assert_eq!(ms.value(mh.output).unwrap().dims().numel(), 1);
}

graph! {
    /// An embedding lookup with a generic number of ids.
    fn embed<N>(table: [4, 3], w: [3, 2], t: [N, 2]; ids: Vec<usize>) -> [] {
        let e: [N, 3] = gather_rows(table, ids);
        mse(e.matmul(w), t)
    }
}

#[test]
fn gather_rows_reads_ids_from_the_data() {
    use exactgrad::typenum::U5;
    let (g, h) = embed::<f64, U5>();
    let table = || Tensor::from_fn(|i| i as f64 * 0.5 - 1.0);
    let w = || Tensor::from_fn(|i| (i as f64 + 1.0) / 4.0);
    let t = || Tensor::full(0.25);
    let saved = g.compile(h.inputs(table(), w(), t()), EmbedData { ids: vec![3, 0, 3, 1, 2] }).unwrap();
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.table).unwrap().dims().as_slice(), &[4, 3]);

    // The same graph by hand.
    let ids: fn(&Vec<usize>) -> &[usize] = |d| d;
    let hg = GraphData::<f64, Vec<usize>>::new();
    let (hg, ht) = hg.input::<(U4, U3)>();
    let (hg, hw) = hg.input::<(U3, U2)>();
    let (hg, htt) = hg.input::<(U5, U2)>();
    let (hg, e) = hg.push(Node::<f64, Vec<usize>, (U5, U3)>::compact(ops::GatherRows::new(ht.index(), ids, 5), &[&ht]));
    let (hg, m) = hg.push(ops::matmul(e, hw));
    let (hg, out) = hg.push(ops::mse(m, htt));
    let hs = hg.compile(Pack::new().push(table()).push(w()).push(t()), vec![3, 0, 3, 1, 2]).unwrap();
    let by_hand = hs.backprop_from(out, Tensor::full(1.0)).unwrap();
    assert_eq!(all_bits(grads.iter()), all_bits(by_hand.iter()));

    // An id out of range is an error from compile, not a panic.
    let err = g.compile(h.inputs(table(), w(), t()), EmbedData { ids: vec![3, 0, 4, 1, 2] }).err().unwrap();
    assert!(err.to_string().contains("id 4 at row 2 is out of range"), "{err}");
}
