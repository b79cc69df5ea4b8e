//! Ops of your own, and what the single-output pass runs:
//!
//! * a **custom compact op** (`Axpy`) — implement [`CompactOp`] with the same contribution
//!   combinators the built-in ops use (`single`, `add`, `fill`) and [`FromParents`], and `graph!`
//!   calls it like a built-in; every fast pass handles it exactly;
//! * an **opaque node** — a forward closure and a VJP closure; always correct, and the
//!   single-output pass treats it conservatively (as reading its whole prefix);
//! * `backprop_from` visits only what its output depends on: [`SavedGraph::visited_from`] names
//!   the nodes whose VJP runs, and counters in the VJPs confirm it.
//!
//! `cargo run --release --example custom_ops`

use std::sync::atomic::{AtomicUsize, Ordering};

use exactgrad::num_traits::Float;
use exactgrad::{
    graph, CompactOp, Contrib, Contributions, Dims, Error, FromParents, RawTensor, SavedGraph, SavedValues, Scalar,
    Tensor,
};

/// How many times `Axpy`'s VJP and the opaque softplus VJP ran.
static AXPY_VJPS: AtomicUsize = AtomicUsize::new(0);
static SOFTPLUS_VJPS: AtomicUsize = AtomicUsize::new(0);

/// `axpy(a, x, y) = a * x + y` elementwise for three tensors of the same shape.
struct Axpy {
    parents: [usize; 3],
}

impl FromParents for Axpy {
    fn from_parents(parents: &[usize]) -> Self {
        Axpy { parents: [parents[0], parents[1], parents[2]] }
    }
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Axpy {
    fn name(&self) -> &str {
        "axpy"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let [a, x, y] = self.parents.map(|p| prefix[p]);
        if a == x && x == y {
            Ok(a)
        } else {
            Err(format!("axpy needs three operands of one shape, got {a}, {x} and {y}"))
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let [a, x, y] = self.parents.map(|p| ctx[p].data());
        RawTensor::from_fn(ctx[self.parents[0]].dims(), |i| a[i] * x[i] + y[i])
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        AXPY_VJPS.fetch_add(1, Ordering::Relaxed);
        // d/da = δ * x, d/dx = δ * a, d/dy = δ (δ left in products, SEMANTICS §4).
        let [pa, px, py] = self.parents;
        let (a, x, d) = (saved.prefix[pa].data(), saved.prefix[px].data(), g.data());
        let ga = c.tensor(g.dims(), |i| d[i] * x[i]);
        let gx = c.tensor(g.dims(), |i| d[i] * a[i]);
        let (sa, sx, sy) = (c.single(pa, ga), c.single(px, gx), c.single_cotangent(py));
        let ax = c.add(sa, sx);
        c.add(ax, sy)
    }
}

/// The softplus VJP: `δ * sigmoid(y)`, written `δ / (1 + exp(-y))`.
fn softplus_vjp<A: Float>(y: &RawTensor<A>, g: &RawTensor<A>) -> RawTensor<A> {
    SOFTPLUS_VJPS.fetch_add(1, Ordering::Relaxed);
    RawTensor::from_fn(g.dims(), |i| g.data()[i] / (A::one() + (-y.data()[i]).exp()))
}

graph! {
    /// Three heads over two inputs.
    fn heads(a: [3], x: [3]) -> ([], [], [3]) {
        // axpy(a, x, x) = a * x + x: `x` is read twice, and its two terms are added before they
        // reach the gradient (SEMANTICS §4).
        let y: [3] = Axpy(a, x, x);
        let side = a * a;
        let s: [3] = opaque(y, forward = |y| y.map(|v| v.exp().ln_1p()), vjp = |y, g| [softplus_vjp(y, g)]);
        let loss = sum(s);
        let other = sum(x * x);
        (loss, other, side)
    }
}

/// What [`run`] found, for the tests.
#[derive(Debug)]
pub(crate) struct Report {
    /// Nodes visited by `backprop_from(loss)`, `backprop_from(other)` and `backprop_from(side)`.
    pub(crate) visited: [Vec<usize>; 3],
    /// VJP runs (axpy, softplus) during `backprop_from(loss)`.
    pub(crate) runs_from_loss: (usize, usize),
    /// VJP runs (axpy, softplus) during `backprop_from(other)`.
    pub(crate) runs_from_other: (usize, usize),
    /// `d loss / d a`.
    pub(crate) grad_a: Vec<f64>,
}

fn counted<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<(T, (usize, usize)), Error> {
    let before = (AXPY_VJPS.load(Ordering::Relaxed), SOFTPLUS_VJPS.load(Ordering::Relaxed));
    let out = f()?;
    let after = (AXPY_VJPS.load(Ordering::Relaxed), SOFTPLUS_VJPS.load(Ordering::Relaxed));
    Ok((out, (after.0 - before.0, after.1 - before.1)))
}

fn names<G, Ss, Br>(saved: &SavedGraph<'_, f64, (), G, Ss, Br>, nodes: &[usize]) -> Vec<String> {
    let graph = saved.raw().graph();
    nodes.iter().map(|&k| format!("%{} {}", graph.num_inputs() + k, graph.nodes()[k].name())).collect()
}

/// Builds the graph, runs `backprop_from` from each head and reports which nodes ran.
pub(crate) fn run(verbose: bool) -> Result<Report, Error> {
    let (g, h) = heads::<f64>();
    if verbose {
        println!("{g}");
    }
    let inputs = h.inputs(Tensor::from_vec(vec![1.0, 2.0, -1.0])?, Tensor::from_vec(vec![0.5, -0.5, 3.0])?);
    let saved = g.compile(inputs, ())?;

    let visited = [saved.visited_from(h.output0)?, saved.visited_from(h.output1)?, saved.visited_from(h.output2)?];
    let (grads, runs_from_loss) = counted(|| saved.backprop_from(h.output0, Tensor::full(1.0)))?;
    let (_, runs_from_other) = counted(|| saved.backprop_from(h.output1, Tensor::full(1.0)))?;

    // The fast single-output pass equals its dense reference bit for bit.
    let reference = saved.backprop_from_dense(h.output0, Tensor::full(1.0))?;
    for (f, r) in grads.iter().zip(reference.iter()) {
        assert!(f.data().iter().zip(r.data()).all(|(u, v)| u.to_bits() == v.to_bits()));
    }
    if verbose {
        for (head, nodes) in ["loss", "other", "side"].iter().zip(&visited) {
            println!("backprop_from({head}) runs {}", names(&saved, nodes).join(", "));
        }
        println!("  (`side` runs for `loss` only because the opaque softplus reaches its whole prefix)");
        println!(
            "VJP calls from loss: axpy {}, softplus {}; from other: axpy {}, softplus {}",
            runs_from_loss.0, runs_from_loss.1, runs_from_other.0, runs_from_other.1
        );
        println!("d loss / d a = {:?}", grads.get(h.a)?.data());
        println!("d loss / d x = {:?}", grads.get(h.x)?.data());
    }
    Ok(Report { visited, runs_from_loss, runs_from_other, grad_a: grads.get(h.a)?.data().to_vec() })
}

fn main() -> Result<(), Error> {
    let report = run(true)?;
    // `other` shares no node with `loss`: none of the custom VJPs ran for it.
    assert_eq!(report.visited[1], [4, 5]);
    assert_eq!(report.runs_from_other, (0, 0));
    assert_eq!(report.runs_from_loss, (1, 1));
    assert_eq!(report.visited[0], [0, 1, 2, 3]);
    assert_eq!(report.grad_a.len(), 3);
    Ok(())
}
