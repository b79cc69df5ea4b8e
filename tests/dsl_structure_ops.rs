//! The structural ops in `graph!` (concat, slice, permute, reshape): the same graph built by hand
//! with the runtime builder gives bit-identical values and gradients.
#![allow(clippy::unwrap_used)]

use exactgrad::typenum::{U1, U2, U3, U4, U6};
use exactgrad::{graph, ops, GraphData, Node, Pack, RawTensor, Tensor};

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

fn bits(ts: &[RawTensor<f64>]) -> Vec<Vec<u64>> {
    ts.iter().map(|t| t.data().iter().map(|v| v.to_bits()).collect()).collect()
}

#[test]
fn macro_graph_equals_the_hand_built_one() {
    let a = || Tensor::<f64, (U2, U3)>::from_vec(vec![0.5, -0.0, 1.5, f64::from_bits(1), -2.0, 3.0]).unwrap();
    let b = || Tensor::<f64, (U2, U1)>::from_vec(vec![0.25, -1.0]).unwrap();
    let (mg, mh) = shuffle::<f64>();
    let ms = mg.compile(mh.inputs(a(), b()), ()).unwrap();
    let m = (bits(ms.raw().values()), bits(ms.backprop_from(mh.output, Tensor::full(1.0)).unwrap().as_slice()));

    let g = GraphData::<f64, ()>::new();
    let (g, xa) = g.input::<(U2, U3)>();
    let (g, xb) = g.input::<(U2, U1)>();
    let (g, c) = g.push(Node::<f64, (), (U2, U4)>::compact(ops::Concat::new(xa.index(), xb.index(), 1), &[&xa, &xb]));
    let (g, s) = g.push(Node::<f64, (), (U2, U3)>::compact(ops::Slice::new(c.index(), 1, 1, 3), &[&c]));
    let (g, p) = g.push(Node::<f64, (), (U3, U2)>::compact(ops::Permute::new(s.index(), &[1, 0]), &[&s]));
    let (g, r) = g.push(ops::reshape::<f64, (), (U3, U2), (U6,), ()>(p));
    let (g, t) = g.push(ops::tanh(r));
    let (g, q) = g.push(ops::reshape::<f64, (), (U6,), (U3, U2), ()>(t));
    let (g, qp) = g.push(ops::mul(q, p));
    let (g, out) = g.push(ops::sum(qp));
    let hs = g.compile(Pack::new().push(a()).push(b()), ()).unwrap();
    let h = (bits(hs.raw().values()), bits(hs.backprop_from(out, Tensor::full(1.0)).unwrap().as_slice()));
    assert_eq!(m, h);
    assert_eq!(mg.describe(), g.describe());
    assert_eq!(ms.value(mh.output).unwrap().dims().numel(), 1);
}
