//! Saved forward executions and every reverse pass (SEMANTICS §3, §6, §7).
//!
//! [`RawSavedGraph`] is the untyped core: the values of one forward run, computed once by checked
//! lowering ([`RawSavedGraph::compile`]) and never re-evaluated. [`SavedGraph`] is its typed face,
//! made by [`GraphData::compile`](crate::GraphData::compile). Every pass is a loop from the last node to the first; none
//! recurses, so graphs of any length run.
//!
//! | pass | seeds | result | needs storage equality |
//! |---|---|---|---|
//! | `backprop_all_dense` | pack over Γ ++ ss | pack over Γ ++ ss | no (the reference) |
//! | `backprop_all_array` | pack over Γ ++ ss | pack over Γ ++ ss | yes |
//! | `backprop_all_stored` | pack over Γ ++ ss | pack over Γ ++ ss | array if it has it, else dense |
//! | `backprop_inputs_*` | pack over Γ ++ ss | pack over Γ | as above; intermediate gradients freed at once |
//! | `backprop_from` / `backprop_from_dense` | one output and its seed | pack over Γ ++ ss | dense all-seeds without it |

use std::borrow::Cow;
use std::sync::Arc;

use crate::contributions::{Contrib, Contributions};
use crate::error::Error;
use crate::gradients::GradientContext;
use crate::graph::buffers::BufferPool;
use crate::graph::{RawGraph, RawNode, SavedValues};
use crate::guard::guarded;
use crate::pack::{RawPack, RawSeeds};
use crate::program::bound::{Bound, BoundGraph};
use crate::scalar::Scalar;
use crate::shape::{Dims, RawPosition};
use crate::tensor::RawTensor;

mod forward;
mod loops;
mod typed;

pub(crate) use forward::run_body as forward_body;
use loops::reachability;
pub(crate) use loops::Reached;
pub(crate) use loops::{array_slots_body, dense_loop_body, View};
pub use typed::{InputPack, SavedGraph};

/// One node of a saved graph, together with the saved context prefix it reads and the data:
/// everything its VJP needs, with no re-evaluation.
pub struct PreparedNode<'s, A, D> {
    index: usize,
    graph: &'s RawGraph<A, D>,
    node: &'s RawNode<A, D>,
    saved: SavedValues<'s, A, D>,
    /// Dims of the prefix.
    dims: &'s [Dims],
}

impl<A, D> Clone for PreparedNode<'_, A, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A, D> Copy for PreparedNode<'_, A, D> {}

/// The node's index and the node (the saved prefix is not shown).
impl<A: 'static, D: 'static> core::fmt::Debug for PreparedNode<'_, A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PreparedNode").field("index", &self.index).field("node", self.node).finish()
    }
}

impl<'s, A: Scalar, D: 'static> PreparedNode<'s, A, D> {
    /// Index of the node (0 = first node).
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its position in the context (`|Γ| + index`).
    #[must_use]
    pub fn position(&self) -> usize {
        self.saved.prefix.len()
    }

    /// The node.
    #[must_use]
    pub fn node(&self) -> &'s RawNode<A, D> {
        self.node
    }

    /// The dense VJP at cotangent `g`: one tensor per earlier position. For a compact node this is
    /// the dense form of its contributions (built in `c`).
    ///
    /// # Errors
    /// [`Error::Vjp`] when the result does not fit the prefix.
    pub fn vjp_dense(&self, g: &RawTensor<A>, c: &mut Contributions<A>) -> Result<Vec<RawTensor<A>>, Error> {
        let bound = Bound { graph: self.graph, data: self.saved.data };
        let prep = Prep {
            index: self.index,
            graph: &bound,
            prefix: self.saved.prefix,
            output: self.saved.output,
            dims: self.dims,
        };
        prep.vjp_dense_with_support(g, c, None)
    }
}

/// A node of a saved graph bound to its data, as the passes' loops see it (the data's type
/// erased): its index, its graph, the saved prefix it reads, its own value and the prefix's dims.
pub(crate) struct Prep<'v, A> {
    pub(crate) index: usize,
    pub(crate) graph: &'v dyn BoundGraph<A>,
    pub(crate) prefix: &'v [RawTensor<A>],
    pub(crate) output: &'v RawTensor<A>,
    pub(crate) dims: &'v [Dims],
}

impl<A: Scalar> Prep<'_, A> {
    /// Its position in the context (`|Γ| + index`).
    pub(crate) fn position(&self) -> usize {
        self.prefix.len()
    }

    pub(crate) fn vjp_error(&self, message: String) -> Error {
        Error::Vjp { node: self.index, op: self.graph.name(self.index).to_owned(), message }
    }

    /// The op's contributions at `g` built in `c`; a panic in the op, or a root that is not a handle
    /// of `c`, is [`Error::Vjp`].
    fn contributions(&self, g: &RawTensor<A>, c: &mut Contributions<A>) -> Result<Contrib, Error> {
        let root = guarded("the VJP", || self.graph.contributions(self.index, self.prefix, self.output, g, c))
            .map_err(|m| self.vjp_error(m))?;
        if !c.is_handle(root) {
            return Err(self.vjp_error("returned a handle that is not one of its contributions".to_owned()));
        }
        Ok(root)
    }

    /// An opaque node's VJP closure at `g`; a panic in it is [`Error::Vjp`].
    fn opaque_vjp(&self, g: &RawTensor<A>) -> Result<Vec<RawTensor<A>>, Error> {
        guarded("the VJP", || self.graph.opaque_vjp(self.index, self.prefix, g))
            .map_err(|m| self.vjp_error(m))
            .map(Option::unwrap_or_default)
    }

    /// The dense VJP at `g` (see [`PreparedNode::vjp_dense`]), also appending a compact node's
    /// support to `support`.
    pub(crate) fn vjp_dense_with_support(
        &self,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
        support: Option<&mut Vec<usize>>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let prefix = self.prefix;
        if self.graph.is_compact(self.index) {
            c.clear();
            let root = self.contributions(g, c)?;
            if let Some(s) = support {
                c.support_into(root, s);
            }
            return c.dense(root, self.dims, g).map_err(|m| self.vjp_error(m));
        }
        let out = self.opaque_vjp(g)?;
        if out.len() != prefix.len() {
            return Err(self.vjp_error(format!("returned {} tensors for a prefix of {}", out.len(), prefix.len())));
        }
        if let Some((q, t)) = out.iter().enumerate().find(|(q, t)| t.dims() != prefix[*q].dims()) {
            return Err(self.vjp_error(format!(
                "returned shape {} at position {q}, which has shape {}",
                t.dims(),
                prefix[q].dims()
            )));
        }
        Ok(out)
    }

    /// `accumulate(node, g)` of SEMANTICS §6: compact program → `add_contributions`, opaque →
    /// `add_dense(vjp(g))`. Returns `true` when the whole prefix was touched (opaque).
    pub(crate) fn accumulate(
        &self,
        ctx: &mut GradientContext<A>,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
    ) -> Result<bool, Error> {
        if self.graph.is_compact(self.index) {
            c.clear();
            let root = self.contributions(g, c)?;
            ctx.add_contributions(c, root, g).map_err(|m| self.vjp_error(m))?;
            Ok(false)
        } else {
            let out = self.opaque_vjp(g)?;
            ctx.add_dense(&out).map_err(|m| self.vjp_error(m))?;
            Ok(true)
        }
    }
}

/// The values of one forward execution of a [`RawGraph`], with its data. Cloning copies the
/// values and the data, not the graph (both saved graphs borrow the same one).
#[derive(Clone)]
pub struct RawSavedGraph<'g, A, D> {
    graph: &'g RawGraph<A, D>,
    /// Dims of every position in this execution: the graph's (borrowed), or with its run-time dims
    /// bound.
    dims: Cow<'g, [Dims]>,
    values: Values<A>,
    data: D,
}

/// A saved graph's values, whose buffers go back to the graph's spare buffers when it is dropped
/// (`graph::buffers`).
#[derive(Clone)]
struct Values<A> {
    tensors: Vec<RawTensor<A>>,
    pool: Arc<BufferPool<A>>,
}

impl<A> Drop for Values<A> {
    fn drop(&mut self) {
        self.pool.give_all(self.tensors.drain(..).map(RawTensor::into_vec));
    }
}

/// The graph, every value and the data.
impl<A: core::fmt::Debug + 'static, D: core::fmt::Debug + 'static> core::fmt::Debug for RawSavedGraph<'_, A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawSavedGraph")
            .field("graph", self.graph)
            .field("values", &self.values.tensors)
            .field("data", &self.data)
            .finish()
    }
}

pub(crate) fn node_error<A: 'static, D: 'static>(graph: &RawGraph<A, D>, k: usize, message: String) -> Error {
    node_error_at(graph, graph.dims(), k, message)
}

/// [`node_error`] with the parent shapes read from `dims` (the dims of a binding of the graph's
/// run-time dims).
pub(crate) fn node_error_at<A: 'static, D: 'static>(
    graph: &RawGraph<A, D>,
    dims: &[Dims],
    k: usize,
    message: String,
) -> Error {
    node_error_of(graph.nodes().get(k).map(|node| (node.name(), node.parents())), dims, k, message)
}

/// [`node_error_at`] from node `k`'s op name and parents (`None`: no such node): not generic, so
/// compiled once, here.
pub(crate) fn node_error_of(node: Option<(&str, &[usize])>, dims: &[Dims], k: usize, message: String) -> Error {
    match node {
        Some((name, parents)) => Error::Node {
            node: k,
            op: name.to_owned(),
            parent_shapes: parents.iter().filter_map(|&q| dims.get(q).copied()).collect(),
            message,
        },
        None => Error::Node { node: k, op: "graph".to_owned(), parent_shapes: Vec::new(), message },
    }
}

impl<'g, A: Scalar, D: Sync + 'static> RawSavedGraph<'g, A, D> {
    /// Checked lowering: for each node in order, validate it against the values so far (the first
    /// failure aborts with the node index, op, parent shapes and message), then compute its value.
    /// On two or more threads, independent nodes of a wide level are computed at the same time
    /// (the same values; see `parallel::min_node_work`), hence `D: Sync`; when a node fails
    /// there, the forward runs again in order to name the first failing node, so an opaque
    /// node's closure may run twice.
    ///
    /// **Buffers.** A built-in node's value is written into a spare buffer of `graph`, and the
    /// saved graph gives every value's buffer back to it when dropped; the passes take their
    /// gradients' buffers from it too, and [`RawGraph::recycle`] gives returned gradients back. So
    /// a training loop's steps allocate nothing per node after the first; the graph keeps up to
    /// about two buffers per position until it is dropped.
    ///
    /// # Errors
    /// [`Error::PackShapes`] for inputs of the wrong number or shapes, [`Error::Node`] for a node
    /// that fails validation, returns a value of the wrong shape or panics (a user closure or
    /// compact op: the panic is caught at the node and reported with its message).
    pub fn compile(graph: &'g RawGraph<A, D>, inputs: Vec<RawTensor<A>>, data: D) -> Result<Self, Error> {
        // For a graph with run-time dims: their sizes bound from the inputs and data, and every
        // node's dims recomputed for them (else the declared dims, the inputs checked against them).
        crate::parallel::entered(|| {
            let dims = graph.bound_dims(&inputs, &data)?;
            // About two spare buffers per position: the values of one compile, the gradients of
            // one pass.
            graph.buffers().reserve(dims.len().saturating_mul(2));
            let mut values = Values { tensors: inputs, pool: Arc::clone(graph.buffers()) };
            forward::run(graph, &dims, &mut values.tensors, &data)?;
            Ok(RawSavedGraph { graph, dims, values, data })
        })
    }
}

impl<'g, A: Scalar, D: 'static> RawSavedGraph<'g, A, D> {
    /// The graph.
    pub fn graph(&self) -> &'g RawGraph<A, D> {
        self.graph
    }

    /// All-zero seeds for this graph (positions left unset cost no buffer).
    pub fn zero_seeds(&self) -> RawSeeds<A> {
        RawSeeds::zeros_for(self.graph.id(), &self.dims)
    }

    /// The dims of every position (Γ ++ ss) in this execution: the graph's
    /// [`dims`](RawGraph::dims) with each run-time dim at the size the inputs gave it.
    pub fn dims(&self) -> &[Dims] {
        &self.dims
    }

    /// Every saved value (Γ ++ ss).
    pub fn values(&self) -> &[RawTensor<A>] {
        &self.values.tensors
    }

    /// The data (Δ).
    pub fn data(&self) -> &D {
        &self.data
    }

    /// The values, consuming the saved graph.
    pub fn into_values(mut self) -> Vec<RawTensor<A>> {
        core::mem::take(&mut self.values.tensors)
    }

    /// The inputs and the data, consuming the saved graph (node values are dropped): a training
    /// loop hands them to the next `compile` without copying them.
    pub fn into_inputs_and_data(mut self) -> (Vec<RawTensor<A>>, D) {
        let mut inputs = core::mem::take(&mut self.values.tensors);
        // The node values' buffers go back to the graph for the next compile.
        self.values.tensors = inputs.split_off(self.graph.num_inputs().min(inputs.len()));
        (inputs, self.data)
    }

    /// The prepared nodes, first to last.
    pub fn prepared_nodes(&self) -> impl DoubleEndedIterator<Item = PreparedNode<'_, A, D>> + '_ {
        let n_in = self.graph.num_inputs();
        self.graph.nodes().iter().enumerate().map(move |(k, node)| PreparedNode {
            index: k,
            graph: self.graph,
            node,
            saved: SavedValues {
                prefix: &self.values.tensors[..n_in + k],
                output: &self.values.tensors[n_in + k],
                data: &self.data,
            },
            dims: &self.dims[..n_in + k],
        })
    }

    /// Runs `f` on the loops' view of this execution (its graph bound to its data), on a pool's
    /// thread (`parallel::entered`: a caller outside every pool becomes one of its own).
    pub(super) fn with_view<R>(&self, f: impl FnOnce(View<'_, A>) -> R) -> R {
        crate::parallel::entered(|| {
            let bound = Bound { graph: self.graph, data: &self.data };
            f(View::bound(&bound, &self.dims, &self.values.tensors))
        })
    }

    /// §3 `backprop_all_dense`: the reference. `seeds` has one tensor per position (Γ ++ ss).
    ///
    /// # Errors
    /// [`Error::PackShapes`] for seeds that do not fit, [`Error::Vjp`] for a malformed VJP.
    pub fn backprop_all_dense(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.dense_loop(slots, None, true))
    }

    /// §3 `backprop_inputs_dense`: the reference loop returning only the input gradients.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_dense(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.dense_loop(slots, None, false))
    }

    /// §6 `backprop_array`: indexed gradients with deferred uniform updates.
    ///
    /// # Errors
    /// [`Error::NoStorageEquality`] for a scalar without storage equality, else as the dense pass.
    pub fn backprop_all_array(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.array_tensors(slots, true))
    }

    /// §6 `backprop_inputs_array`: as the array pass, freeing each intermediate gradient as soon
    /// as its node has run.
    ///
    /// # Errors
    /// As [`backprop_all_array`](Self::backprop_all_array).
    pub fn backprop_inputs_array(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.array_tensors(slots, false))
    }

    /// §6 `backprop_stored`: the array pass when the scalar has storage equality, else the dense one.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_all_stored(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.all_stored_tensors(slots, true))
    }

    /// §6 `backprop_inputs_stored`.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_stored(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = seeds.into().into_slots_for(self.graph.id())?;
        self.with_view(|v| v.all_stored_tensors(slots, false))
    }

    /// §7 `backprop_from(output, seed)`: visits only what `output` depends on (an opaque node
    /// makes its whole prefix reachable). Without storage equality it is the dense all-seeds pass.
    ///
    /// The positions it never writes (skipped nodes, inputs no reached node contributes to) are
    /// returned as uniforms, built only when read ([`RawPack`]).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for an `output` of another graph, [`Error::ShapeMismatch`] for a
    /// seed of another shape than the output, [`Error::Vjp`] for a malformed VJP.
    pub fn backprop_from(&self, output: RawPosition, seed: RawTensor<A>) -> Result<RawPack<A>, Error> {
        let output = self.graph.check_position(output)?;
        self.with_view(|v| {
            let slots = v.single_seed(output, seed)?;
            if A::HAS_STORAGE_EQUALITY {
                v.array_loop(slots, Some(Reached::new(self.graph.dims().len(), output)), true)
            } else {
                Ok(RawPack::from_tensors(v.dense_loop(slots, None, true)?))
            }
        })
    }

    /// §7 `backprop_from_dense`: the reference of [`backprop_from`](Self::backprop_from) — the same
    /// reachability, with dense pack additions.
    ///
    /// # Errors
    /// As [`backprop_from`](Self::backprop_from).
    pub fn backprop_from_dense(&self, output: RawPosition, seed: RawTensor<A>) -> Result<RawPack<A>, Error> {
        let output = self.graph.check_position(output)?;
        self.with_view(|v| {
            let slots = v.single_seed(output, seed)?;
            Ok(RawPack::from_tensors(v.dense_loop(slots, Some(Reached::new(self.graph.dims().len(), output)), true)?))
        })
    }

    /// Which positions [`backprop_from(output, …)`](Self::backprop_from) reaches: one flag per
    /// position (Γ ++ ss). Node `k` is visited — its VJP runs — exactly when the flag of its
    /// position `|Γ| + k` is set; every other node is skipped entirely. A reached input is one
    /// that may receive a contribution.
    ///
    /// The rule is the pass's own (§7, the same code): walking from the last node down, a reached
    /// compact node reaches its support, a reached opaque node its whole prefix. Node supports are
    /// read from their declarations ([`RawNode::support`]) since no VJP runs here, while the
    /// pass follows the support of the contributions each visited VJP actually builds. For every
    /// built-in op the two are the same set, so the flags are exactly the pass's. For a user
    /// [`CompactOp`](crate::CompactOp) they can differ, and the flags then say what the pass
    /// *may* reach, not what it does:
    ///
    /// * a **narrow** user op — its contributions touch only part of its declared
    ///   [`support`](crate::CompactOp::support) (which defaults to all its parents) — makes the
    ///   pass reach and visit a subset of the flagged nodes (the branch it never contributes to is
    ///   skipped; `a_narrow_user_op_makes_reached_from_an_over_approximation`);
    /// * a user op whose contributions leave its declared support makes the pass reach positions
    ///   not flagged here (declare the full support to keep the prediction an over-approximation).
    ///
    /// Without storage equality
    /// `backprop_from` runs the dense all-seeds pass, which visits every node: every flag is set.
    /// [`backprop_from_dense`](Self::backprop_from_dense) visits the nodes flagged here on every
    /// scalar.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for an `output` of another graph.
    pub fn reached_from(&self, output: RawPosition) -> Result<Vec<bool>, Error> {
        let output = self.graph.check_position(output)?;
        let len = self.graph.dims().len();
        if !A::HAS_STORAGE_EQUALITY {
            return Ok(vec![true; len]);
        }
        Ok(reachability(self.graph, output))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod thread_tests;
