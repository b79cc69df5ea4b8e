//! An independent reference: the graph-level semantics (`GraphData.backpropAllCtx` and
//! `backpropCtx` of the `TorchLean` algebra), defined directly over a [`RawGraph`] and its inputs
//! and data, sharing no code with the passes under test (SEMANTICS, "Lean statements").
//!
//! [`RawGraph::backprop_all_ctx`] evaluates the graph with its own naive forward of every built-in
//! op (`forward.rs`, on its own [`RefTensor`]), then runs the dense loop of SEMANTICS §3 with its
//! own dense VJP of every built-in op (`vjp.rs`): from the last node to the first, the node's
//! whole dense VJP is added into the accumulator of every earlier position,
//! `acc[q] = acc[q] + vjp[q]`, with its own NaN-pinning addition ([`plus`]). No GEMM kernel, no
//! `Contributions`, no `GradientContext`, no op's `forward` or `contributions`, no pass: an op is
//! known to it only through [`CompactOp::reference`](crate::CompactOp::reference), which names
//! the op and its parameters ([`RefOp`]). `exp` and `tanh` are the engine's deterministic kernels
//! (`crate::math`), elementary functions every op calls (SEMANTICS §8).
//!
//! **Trusted, not re-derived.** An opaque node is defined by its closures: the reference calls its
//! forward and its dense VJP. A user compact op (whose `reference` is `None`) is defined by its own
//! `forward` and the dense form of its contributions (SEMANTICS §2), which the reference calls.
//!
//! The passes of a saved graph are tested against it (`tests/reference.rs`): the `ofGraph_*`
//! theorems say `backprop_all_array`, `backprop_all_stored` and `backprop_all_dense` of
//! `compile(graph, inputs, data)` equal [`backprop_all_ctx`](RawGraph::backprop_all_ctx), the
//! inputs-only passes equal [`backprop_ctx`](RawGraph::backprop_ctx), and `backprop_from` equals
//! [`backprop_from_ctx`](RawGraph::backprop_from_ctx) (with storage equality; without it
//! `backprop_from` is the all-seeds pass with one seed).

mod dropout;
mod forward;
mod op;
mod tensor;
mod vjp;
mod window;

pub use op::{FloatKit, RefOp, Unary};
pub use tensor::{fused, plus, RefTensor};

use crate::contributions::Contributions;
use crate::error::Error;
use crate::graph::{Program, RawGraph, SavedValues};
use crate::pack::{ContextPack, Pack, Seeds};
use crate::scalar::Scalar;
use crate::shape::RawPosition;
use crate::tensor::RawTensor;
use crate::GraphData;

/// The forward values of every position and, for opaque nodes and user ops, the same values as
/// engine tensors (what their closures read).
struct Evaluated<A> {
    values: Vec<RefTensor<A>>,
    raw: Vec<RawTensor<A>>,
}

/// What a node's VJP touched, for the reachability of §7.
enum Reach {
    /// These positions (a compact node's support).
    Support(Vec<usize>),
    /// Every position below the node (an opaque node).
    WholePrefix,
}

fn node_error<A: 'static, D: 'static>(graph: &RawGraph<A, D>, k: usize, message: String) -> Error {
    let node = &graph.nodes()[k];
    Error::Node {
        node: k,
        op: node.name().to_owned(),
        parent_shapes: node.parents().iter().filter_map(|&q| graph.dims().get(q).copied()).collect(),
        message,
    }
}

fn vjp_error<A: 'static, D: 'static>(graph: &RawGraph<A, D>, k: usize, message: String) -> Error {
    Error::Vjp { node: k, op: graph.nodes()[k].name().to_owned(), message }
}

impl<A: Scalar, D: 'static> RawGraph<A, D> {
    /// The reference's forward: every value of Γ ++ ss.
    fn evaluate(&self, inputs: &[RawTensor<A>], data: &D) -> Result<Evaluated<A>, Error> {
        let expected = &self.dims()[..self.num_inputs()];
        if inputs.len() != expected.len() || inputs.iter().zip(expected).any(|(t, d)| t.dims() != *d) {
            return Err(Error::PackShapes {
                what: "graph inputs",
                expected: expected.to_vec(),
                actual: inputs.iter().map(RawTensor::dims).collect(),
            });
        }
        let mut ev = Evaluated { values: inputs.iter().map(RefTensor::of_raw).collect(), raw: inputs.to_vec() };
        for (k, node) in self.nodes().iter().enumerate() {
            let value = match node.program() {
                Program::Compact(op) => {
                    if let Some(r) = op.reference() {
                        forward::forward(&r, &ev.values, data).map_err(|m| node_error(self, k, m))?
                    } else {
                        op.validate(&ev.raw, data).map_err(|m| node_error(self, k, m))?;
                        RefTensor::of_raw(&op.forward(&ev.raw, data))
                    }
                }
                Program::Opaque { forward, .. } => RefTensor::of_raw(&forward(&ev.raw, data)),
            };
            if value.dims != self.dims()[ev.values.len()].as_slice() {
                return Err(node_error(self, k, format!("value of dims {:?}, node of {}", value.dims, node.dims())));
            }
            ev.raw.push(value.to_raw()?);
            ev.values.push(value);
        }
        Ok(ev)
    }

    /// Node `k`'s dense VJP at cotangent `g`: one tensor per position below it, and what it
    /// touched.
    fn dense_vjp(
        &self,
        k: usize,
        ev: &Evaluated<A>,
        g: &RefTensor<A>,
        data: &D,
    ) -> Result<(Vec<RefTensor<A>>, Reach), Error> {
        let p = self.num_inputs() + k;
        let dims = &self.dims()[..p];
        let err = |m: String| vjp_error(self, k, m);
        match self.nodes()[k].program() {
            Program::Compact(op) => {
                if let Some(r) = op.reference() {
                    let terms = vjp::vjp(&r, &ev.values[..p], &ev.values[p], g, data).map_err(err)?;
                    if let Some((q, _)) = terms.iter().find(|(q, _)| *q >= p) {
                        return Err(err(format!("contributes to position {q}, outside its prefix of {p}")));
                    }
                    let out = dims.iter().enumerate().map(|(q, d)| vjp::dense_at(&terms, q, d.as_slice()));
                    let out = out.collect::<Result<Vec<_>, String>>().map_err(err)?;
                    Ok((out, Reach::Support(terms.iter().map(|(q, _)| *q).collect())))
                } else {
                    // A user op: its contributions' dense form is its definition (trusted).
                    let saved = SavedValues { prefix: &ev.raw[..p], output: &ev.raw[p], data };
                    let (g, mut c) = (g.to_raw()?, Contributions::new());
                    let root = op.contributions(&saved, &g, &mut c);
                    let out = c.dense(root, dims, &g).map_err(err)?;
                    Ok((out.iter().map(RefTensor::of_raw).collect(), Reach::Support(c.support(root))))
                }
            }
            Program::Opaque { vjp, .. } => {
                let out = vjp(&ev.raw[..p], data, &g.to_raw()?);
                if out.len() != p {
                    return Err(err(format!("returned {} tensors for a prefix of {p}", out.len())));
                }
                if let Some(q) = (0..p).find(|&q| out[q].dims() != dims[q]) {
                    return Err(err(format!("returned dims {} at position {q} of dims {}", out[q].dims(), dims[q])));
                }
                Ok((out.iter().map(RefTensor::of_raw).collect(), Reach::WholePrefix))
            }
        }
    }

    /// The dense loop of §3 from `seeds` (one per position), visiting only the reached nodes when
    /// `reached` is given (§7, growing as nodes run). Returns every position's gradient.
    fn dense_loop(
        &self,
        ev: &Evaluated<A>,
        data: &D,
        seeds: Vec<RawTensor<A>>,
        mut reached: Option<(Vec<bool>, usize)>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let dims = self.dims();
        if seeds.len() != dims.len() || seeds.iter().zip(dims).any(|(s, d)| s.dims() != *d) {
            return Err(Error::PackShapes {
                what: "seeds",
                expected: dims.to_vec(),
                actual: seeds.iter().map(RawTensor::dims).collect(),
            });
        }
        let mut acc: Vec<RefTensor<A>> = seeds.iter().map(RefTensor::of_raw).collect();
        let mut node_grads = Vec::with_capacity(self.nodes().len());
        for k in (0..self.nodes().len()).rev() {
            let p = self.num_inputs() + k;
            let Some(g) = acc.pop() else { break };
            if reached.as_ref().is_none_or(|(marks, below)| p < *below || marks[p]) {
                let (vjp, reach) = self.dense_vjp(k, ev, &g, data)?;
                for (a, v) in acc.iter_mut().zip(&vjp) {
                    *a = a.plus(v);
                }
                if let Some((marks, below)) = reached.as_mut() {
                    match reach {
                        Reach::Support(s) => s.into_iter().for_each(|q| marks[q] = true),
                        Reach::WholePrefix => *below = (*below).max(p),
                    }
                }
            }
            node_grads.push(g);
        }
        node_grads.reverse();
        acc.extend(node_grads);
        acc.iter().map(RefTensor::to_raw).collect()
    }

    /// The graph's forward by the reference's own ops: the value of every position (Γ ++ ss).
    /// Equal, bit for bit, to the values of `compile(inputs, data)`.
    ///
    /// # Errors
    /// [`Error::PackShapes`] for inputs that do not fit, [`Error::Node`] for a node whose operands
    /// or data do not fit its op.
    pub fn eval_ctx(&self, inputs: &[RawTensor<A>], data: &D) -> Result<Vec<RawTensor<A>>, Error> {
        Ok(self.evaluate(inputs, data)?.raw)
    }

    /// `backpropAllCtx`: the gradient of every position (Γ ++ ss) for the seed pack `seeds` (one
    /// tensor per position), by the graph-level semantics: this module's own forward, then the
    /// dense loop of SEMANTICS §3 with its own dense VJPs. Equal, bit for bit, to
    /// `compile(inputs, data)` followed by `backprop_all_dense`, `backprop_all_array` or
    /// `backprop_all_stored` (the `ofGraph_*` tests of `tests/reference.rs`).
    ///
    /// # Errors
    /// [`Error::PackShapes`] for inputs or seeds that do not fit, [`Error::Node`] for a node whose
    /// operands or data do not fit its op, [`Error::Vjp`] for a malformed opaque or user VJP.
    pub fn backprop_all_ctx(
        &self,
        inputs: &[RawTensor<A>],
        data: &D,
        seeds: Vec<RawTensor<A>>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let ev = self.evaluate(inputs, data)?;
        self.dense_loop(&ev, data, seeds, None)
    }

    /// `backpropCtx`: the input gradients (Γ) of [`backprop_all_ctx`](Self::backprop_all_ctx).
    ///
    /// # Errors
    /// As [`backprop_all_ctx`](Self::backprop_all_ctx).
    pub fn backprop_ctx(
        &self,
        inputs: &[RawTensor<A>],
        data: &D,
        seeds: Vec<RawTensor<A>>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let mut all = self.backprop_all_ctx(inputs, data, seeds)?;
        all.truncate(self.num_inputs());
        Ok(all)
    }

    /// The single-output semantics of SEMANTICS §7 from `output` with cotangent `seed`: the dense
    /// loop seeded with `single(output, seed)` that runs only the nodes `output` reaches (a
    /// reached compact node reaches the positions its VJP writes, an opaque node its whole
    /// prefix; reachability computed here, by this module's own rule). Equal to `backprop_from`
    /// for a scalar with storage equality and to `backprop_from_dense` for every scalar.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for an `output` of another graph, [`Error::ShapeMismatch`] for a
    /// seed of other dims, else as [`backprop_all_ctx`](Self::backprop_all_ctx).
    pub fn backprop_from_ctx(
        &self,
        inputs: &[RawTensor<A>],
        data: &D,
        output: RawPosition,
        seed: RawTensor<A>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let dims = self.dims();
        let output = self.check_position(output)?;
        if seed.dims() != dims[output] {
            return Err(Error::ShapeMismatch { expected: dims[output], actual: seed.dims() });
        }
        let ev = self.evaluate(inputs, data)?;
        let mut seeds: Vec<RawTensor<A>> = dims.iter().map(|&d| RawTensor::zeros(d)).collect();
        seeds[output] = seed;
        let mut marks = vec![false; dims.len()];
        marks[output] = true;
        self.dense_loop(&ev, data, seeds, Some((marks, 0)))
    }
}

impl<A: Scalar, D: 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// `backpropAllCtx` of the typed graph: [`RawGraph::backprop_all_ctx`] on `inputs`, `data` and
    /// `seeds`, the reference every saved pass is tested against.
    ///
    /// # Errors
    /// The first error recorded while building the graph (as `compile` reports it), else as
    /// [`RawGraph::backprop_all_ctx`].
    pub fn backprop_all_ctx(
        &self,
        inputs: &Pack<A, G>,
        data: &D,
        seeds: Seeds<A, G, Ss, Br>,
    ) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        if let Some(e) = self.first_build_error() {
            return Err(e);
        }
        if seeds.graph() != self.raw().id() {
            return Err(Error::ForeignPosition { index: 0, len: self.raw().dims().len() });
        }
        let seeds = seeds.into_stored().into_iter().map(super::gradients::Stored::into_tensor).collect();
        let all = self.raw().backprop_all_ctx(inputs.as_slice(), data, seeds)?;
        Ok(ContextPack::from_raw(self.raw().id(), self.raw().num_inputs(), crate::pack::RawPack::from_tensors(all)))
    }

    /// `backpropCtx` of the typed graph: the input gradients of
    /// [`backprop_all_ctx`](Self::backprop_all_ctx).
    ///
    /// # Errors
    /// As [`backprop_all_ctx`](Self::backprop_all_ctx).
    pub fn backprop_ctx(&self, inputs: &Pack<A, G>, data: &D, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        let all = self.backprop_all_ctx(inputs, data, seeds)?.into_vec();
        Ok(Pack::from_raw(Some(self.raw().id()), all.into_iter().take(self.raw().num_inputs()).collect()))
    }

    /// The pure VJP through the saved implementation (`backpropCtxSaved`): `compile(inputs, data)`
    /// followed by `backprop_inputs_stored(seeds)` — equal, bit for bit, to
    /// [`backprop_ctx`](Self::backprop_ctx) (`GraphData.backpropCtx_eq_saved`, tested in
    /// `tests/reference.rs`), at the cost of the fast passes.
    ///
    /// # Errors
    /// As `compile` and `backprop_inputs_stored`.
    pub fn backprop(&self, inputs: Pack<A, G>, data: D, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error>
    where
        D: Sync,
    {
        self.compile(inputs, data)?.backprop_inputs_stored(seeds)
    }
}
