//! The forward's steps (SEMANTICS §8.4): a built-in node into the value buffer the plan gives it,
//! a *level* of built-in nodes at the same time, a node through the graph's own code (opaque
//! closures, user compact ops), and the error of the first failing node.
//!
//! The generated forward runs level by level (`macros/src/plan/levels.rs`): a level's nodes read
//! only values of lower levels, so each value is computed by the same code from the same parent
//! values whether its level runs on one thread or on several. A failing node does not stop the
//! forward at once: the state records it and runs only nodes of lower index from then on (they
//! read only nodes of lower index still, all computed), so the error
//! [`forward_result`](ProgramState::forward_result) returns is the one of the lowest failing
//! index: the first failure in node order, as `compile` reports it. An opaque node or a user op
//! sits above every node before it, so it runs exactly when it would in node order.

use rayon::prelude::*;

use super::ProgramState;
use crate::error::Error;
use crate::graph::node_work;
use crate::guard::guarded;
use crate::parallel;
use crate::program::bound::BoundGraph;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// One node of a level computed at the same time as the others: the node's entry in the level,
/// its value buffer, and its failure.
#[derive(Clone, Debug)]
pub(super) struct LevelSlot<A> {
    entry: usize,
    buf: Vec<A>,
    error: Option<String>,
}

/// Validates node `k` of `graph` on `ctx` (the values below it), then computes its value into
/// `buf`, which must come out with the node's dims `d`.
fn compute<A: Scalar>(
    graph: &(dyn BoundGraph<A> + Sync),
    k: usize,
    ctx: &[RawTensor<A>],
    d: Dims,
    buf: &mut Vec<A>,
) -> Result<(), String> {
    buf.clear();
    graph.checked_forward_into(k, ctx, buf)?;
    if buf.len() == d.numel() {
        Ok(())
    } else {
        Err(format!("forward gave {} elements, the node's shape {d} has {}", buf.len(), d.numel()))
    }
}

impl<A: Scalar> ProgramState<A> {
    /// Whether node `k` runs: no node of lower index has failed in this run.
    fn runs(&self, k: usize) -> bool {
        self.failed.as_ref().is_none_or(|(f, _)| k < *f)
    }

    /// Records node `k`'s failure (it ran, so it is the lowest failing index so far).
    #[cold]
    fn fail(&mut self, k: usize, op: &str, parents: &[usize], message: String) {
        let parent_shapes = parents.iter().filter_map(|&q| self.dims.get(q).copied()).collect();
        self.failed = Some((k, Error::Node { node: k, op: op.to_owned(), parent_shapes, message }));
    }

    /// Node `k`'s value buffer, taken from the pool (empty when the plan gives it none).
    fn value_buffer(&mut self, k: usize) -> Vec<A> {
        self.plan.values.get(k).map_or_else(Vec::new, |&i| core::mem::take(&mut self.value_pool[i]))
    }

    /// Gives node `k`'s value buffer back to the pool unused.
    fn give_back(&mut self, k: usize, buf: Vec<A>) {
        if let Some(&i) = self.plan.values.get(k) {
            self.value_pool[i] = buf;
        }
    }

    /// Stores node `k`'s value, or gives its buffer back and records `error`.
    fn finish(&mut self, k: usize, graph: &(dyn BoundGraph<A> + Sync), buf: Vec<A>, error: Option<String>) {
        let p = self.inputs + k;
        match error {
            None => self.values[p] = RawTensor::from_parts(self.dims[p], buf),
            Some(message) => {
                self.give_back(k, buf);
                self.fail(k, graph.name(k), graph.parents(k), message);
            }
        }
    }

    /// Forward of built-in node `k`: validates it on the values so far, then computes its value
    /// into the value buffer the plan gives it. A failure (validation, or a value of the wrong
    /// length) is recorded for [`forward_result`](Self::forward_result).
    #[doc(hidden)]
    pub fn forward(&mut self, k: usize, graph: &(dyn BoundGraph<A> + Sync)) {
        if !self.runs(k) {
            return;
        }
        let p = self.inputs + k;
        let mut buf = self.value_buffer(k);
        let error = compute(graph, k, &self.values[..p], self.dims[p], &mut buf).err();
        self.finish(k, graph, buf, error);
    }

    /// Forward of one level's built-in nodes of `graph` (ascending node index; none reads
    /// another's value): at the same time when there are threads to share and the level's work
    /// (elements read and written) reaches [`parallel::min_node_work`], else one after the other.
    /// Failures are recorded as by [`forward`](Self::forward).
    #[doc(hidden)]
    pub fn forward_level(&mut self, nodes: &[usize], graph: &(dyn BoundGraph<A> + Sync)) {
        let work = || {
            nodes
                .iter()
                .fold(0usize, |w, &k| w.saturating_add(node_work(graph.parents(k), self.inputs + k, &self.dims)))
        };
        if nodes.iter().any(|&k| !graph.is_compact(k)) || !parallel::concurrent(nodes.len(), work) {
            for &k in nodes {
                if graph.is_compact(k) {
                    self.forward(k, graph);
                } else {
                    self.forward_node(k, graph);
                }
            }
            return;
        }
        let mut level = core::mem::take(&mut self.level);
        level.clear();
        for (entry, &k) in nodes.iter().enumerate() {
            if self.runs(k) {
                level.push(LevelSlot { entry, buf: self.value_buffer(k), error: None });
            }
        }
        let (values, dims, inputs, pieces) = (&self.values, &self.dims, self.inputs, level.len());
        parallel::split(|| {
            level.par_iter_mut().for_each(|slot| {
                parallel::piece(pieces, || {
                    let k = nodes[slot.entry];
                    let p = inputs + k;
                    slot.error = compute(graph, k, &values[..p], dims[p], &mut slot.buf).err();
                });
            });
        });
        for slot in level.drain(..) {
            let k = nodes[slot.entry];
            if self.runs(k) {
                self.finish(k, graph, slot.buf, slot.error);
            } else {
                // A node of lower index in this level failed: this value is not needed.
                self.give_back(k, slot.buf);
            }
        }
        self.level = level;
    }

    /// Forward of node `k` through the graph's own node (opaque closures, user compact ops). A
    /// failure, or a panic of the node's code (caught at the node; the state stays usable for the
    /// next run), is recorded for [`forward_result`](Self::forward_result).
    #[doc(hidden)]
    pub fn forward_node(&mut self, k: usize, graph: &(dyn BoundGraph<A> + Sync)) {
        if !self.runs(k) {
            return;
        }
        let p = self.inputs + k;
        let ctx = &self.values[..p];
        let checked = if graph.is_compact(k) {
            guarded("its validation", || graph.validate(k, ctx)).and_then(|c| c)
        } else {
            Ok(())
        };
        let value = checked.and_then(|()| guarded("the forward", || graph.forward(k, ctx)));
        let value = value.and_then(|v| {
            if v.dims() == self.dims[p] {
                Ok(v)
            } else {
                Err(format!("forward returned shape {}, the node's shape is {}", v.dims(), self.dims[p]))
            }
        });
        match value {
            Ok(v) => self.values[p] = v,
            Err(message) => self.fail(k, graph.name(k), graph.parents(k), message),
        }
    }

    /// The end of the forward: the error of the lowest-index node that failed in it, if any.
    ///
    /// # Errors
    /// [`Error::Node`] of that node (its index, op, parent shapes and message).
    #[doc(hidden)]
    pub fn forward_result(&mut self) -> Result<(), Error> {
        self.failed.take().map_or(Ok(()), |(_, e)| Err(e))
    }
}
