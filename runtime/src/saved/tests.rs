//! Which nodes the single-output passes visit (SEMANTICS §7).

use std::sync::{Arc, Mutex};

use super::*;
use crate::contributions::Contrib;
use crate::graph::GraphData;
use crate::graph::{CompactOp, Node};
use crate::ops;
use crate::pack::{Pack, Seeds};
use crate::shape::{Position, Shape};
use crate::tensor::Tensor;
use crate::typenum::U2;

type Log = Arc<Mutex<Vec<&'static str>>>;

/// The identity, logging its name each time its VJP runs.
struct Tap {
    name: &'static str,
    parents: [usize; 1],
    log: Log,
}

impl CompactOp<f64, ()> for Tap {
    fn name(&self) -> &str {
        self.name
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        Ok(prefix[self.parents[0]])
    }
    fn forward(&self, ctx: &[RawTensor<f64>], (): &()) -> RawTensor<f64> {
        ctx[self.parents[0]].clone()
    }
    fn contributions(&self, _: &SavedValues<'_, f64, ()>, _: &RawTensor<f64>, c: &mut Contributions<f64>) -> Contrib {
        self.log.lock().unwrap().push(self.name);
        c.single_cotangent(self.parents[0])
    }
}

fn tap<S: Shape, Br>(name: &'static str, of: Position<S, Br>, log: &Log) -> Node<f64, (), S> {
    Node::compact(Tap { name, parents: [of.index()], log: log.clone() }, &[&of])
}

fn sorted(log: &Log) -> Vec<&'static str> {
    let mut v = log.lock().unwrap().split_off(0);
    v.sort_unstable();
    v
}

#[test]
fn an_unrelated_head_is_not_visited() {
    let log = Log::default();
    let g = GraphData::<f64, ()>::new();
    let (g, x) = g.input::<(U2,)>(); // 0
    let (g, z) = g.input::<(U2,)>(); // 1
    let (g, a) = g.push(tap("a", x, &log)); // 2, node 0
    let (g, b) = g.push(tap("b", z, &log)); // 3, node 1
    let (g, head_a) = g.push(tap("head_a", a, &log)); // 4, node 2
    let (g, head_b) = g.push(tap("head_b", b, &log)); // 5, node 3
    let saved = g.compile(Pack::new().push(Tensor::full(1.0)).push(Tensor::full(2.0)), ()).unwrap();

    assert_eq!(saved.reached_from(head_a).unwrap(), [true, false, true, false, true, false]);
    assert_eq!(saved.visited_from(head_a).unwrap(), [0, 2]);
    assert_eq!(saved.visited_from(head_b).unwrap(), [1, 3]);
    assert_eq!(saved.visited_from(a).unwrap(), [0]);
    assert_eq!(saved.visited_from(x).unwrap(), Vec::<usize>::new());

    saved.backprop_from(head_a, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "head_a"]);
    saved.backprop_from_dense(head_a, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "head_a"]);
    saved.backprop_from(head_b, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["b", "head_b"]);
    // The all-seeds pass runs every node.
    saved.backprop_all_array(Seeds::zeros(&g)).unwrap();
    assert_eq!(sorted(&log), ["a", "b", "head_a", "head_b"]);
}

#[test]
fn an_opaque_node_reaches_its_whole_prefix() {
    let log = Log::default();
    let runs = Arc::new(Mutex::new(0usize));
    let g = GraphData::<f64, ()>::new();
    let (g, x) = g.input::<(U2,)>(); // 0
    let (g, z) = g.input::<(U2,)>(); // 1
    let (g, a) = g.push(tap("a", x, &log)); // 2, node 0
    let (g, b) = g.push(tap("b", z, &log)); // 3, node 1
    let counter = runs.clone();
    let pa = a.index();
    // Declares that it reads only `a`, yet reachability takes its whole prefix.
    let (g, o) = g.push(ops::opaque::<f64, (), (U2,)>(
        "twice",
        &[&a],
        move |ctx, ()| ctx[pa].map(|v| 2.0 * v),
        move |ctx, (), g| {
            *counter.lock().unwrap() += 1;
            let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
            out[pa] = g.map(|d| 2.0 * d);
            out
        },
    )); // 4, node 2
    let (g, head) = g.push(tap("head", o, &log)); // 5, node 3
    let (g, _late) = g.push(tap("late", z, &log)); // 6, node 4: after the opaque node
    let _ = b;
    let saved = g.compile(Pack::new().push(Tensor::full(1.0)).push(Tensor::full(2.0)), ()).unwrap();

    assert_eq!(saved.reached_from(head).unwrap(), [true, true, true, true, true, true, false]);
    assert_eq!(saved.visited_from(head).unwrap(), [0, 1, 2, 3]);
    saved.backprop_from(head, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "b", "head"]);
    assert_eq!(*runs.lock().unwrap(), 1);
    saved.backprop_from_dense(head, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "b", "head"]);
    assert_eq!(*runs.lock().unwrap(), 2);
}

#[test]
fn reached_from_checks_the_output() {
    let g = GraphData::<f64, ()>::new();
    let (g, x) = g.input::<(U2,)>();
    let (g, _y) = g.push(ops::mul(x, x));
    let saved = g.compile(Pack::new().push(Tensor::full(1.0)), ()).unwrap();
    assert!(matches!(g.raw().position(2), Err(Error::ForeignPosition { index: 2, len: 2 })));
    assert_eq!(saved.raw().reached_from(g.raw().position(1).unwrap()).unwrap(), [true, true]);
    let (other, ox) = GraphData::<f64, ()>::new().input::<(U2,)>();
    let _ = other;
    assert!(matches!(saved.reached_from(ox), Err(Error::ForeignPosition { index: 0, len: 2 })));
    assert!(matches!(saved.raw().reached_from(ox.into()), Err(Error::ForeignPosition { index: 0, len: 2 })));
}

/// A user op over `[a, b]` (its declared support, the default: its parents) whose contributions
/// only ever reach `a`: "narrow".
struct Narrow {
    parents: [usize; 2],
    log: Log,
}

impl CompactOp<f64, ()> for Narrow {
    fn name(&self) -> &'static str {
        "narrow"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        Ok(prefix[self.parents[0]])
    }
    fn forward(&self, ctx: &[RawTensor<f64>], (): &()) -> RawTensor<f64> {
        ctx[self.parents[0]].clone()
    }
    fn contributions(&self, _: &SavedValues<'_, f64, ()>, _: &RawTensor<f64>, c: &mut Contributions<f64>) -> Contrib {
        self.log.lock().unwrap().push("narrow");
        c.single_cotangent(self.parents[0])
    }
}

#[test]
fn a_narrow_user_op_makes_reached_from_an_over_approximation() {
    let log = Log::default();
    let g = GraphData::<f64, ()>::new();
    let (g, x) = g.input::<(U2,)>(); // 0
    let (g, z) = g.input::<(U2,)>(); // 1
    let (g, a) = g.push(tap("a", x, &log)); // 2, node 0
    let (g, b) = g.push(tap("b", z, &log)); // 3, node 1
    let narrow = Narrow { parents: [a.index(), b.index()], log: log.clone() };
    let (g, n) = g.push(Node::<f64, (), (U2,)>::compact(narrow, &[&a, &b])); // 4, node 2
    let saved = g.compile(Pack::new().push(Tensor::full(1.0)).push(Tensor::full(2.0)), ()).unwrap();
    // The prediction reads the declared support: both branches.
    assert_eq!(saved.reached_from(n).unwrap(), [true; 5]);
    assert_eq!(saved.visited_from(n).unwrap(), [0, 1, 2]);
    // The pass follows the contributions actually built: `b` is never reached, so never run.
    saved.backprop_from(n, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "narrow"]);
    saved.backprop_from_dense(n, Tensor::full(1.0)).unwrap();
    assert_eq!(sorted(&log), ["a", "narrow"]);
}
