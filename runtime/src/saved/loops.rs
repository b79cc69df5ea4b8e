//! The loops every pass of a saved graph runs (SEMANTICS §3, §6, §7), over a [`View`] of its
//! values: the dense reference loop, the indexed loop, and the reached set of the single-output
//! passes. A generated program whose single-output pass is only known at run time (a model with
//! user compact ops) runs the same loop over its own values ([`View::bound`]). The view sees the
//! graph through [`BoundGraph`] (the data's type erased), so the loops are generic over the
//! scalar only and, for `f32` and `f64`, compiled once in this crate (`crate::compiled`).

use super::Prep;
use crate::contributions::Contributions;
use crate::error::Error;
use crate::gradients::{full_in, GradientContext, Stored};
use crate::graph::{RawGraph, RawNode};
use crate::pack::RawPack;
use crate::program::bound::BoundGraph;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The saved values of one forward execution and its graph bound to its data, borrowed.
pub(crate) struct View<'v, A> {
    graph: &'v dyn BoundGraph<A>,
    /// Dims of every position in this execution (the graph's, run-time dims bound).
    dims: &'v [Dims],
    values: &'v [RawTensor<A>],
}

impl<A> Clone for View<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for View<'_, A> {}

impl<'v, A: Scalar> View<'v, A> {
    /// The view of `values` (one per position of `graph`: Γ ++ ss, of dims `dims` — the graph's
    /// with its run-time dims bound, see `RawGraph::bound_dims`). A value no VJP of the pass
    /// reads may be vacant.
    pub(crate) fn bound(graph: &'v dyn BoundGraph<A>, dims: &'v [Dims], values: &'v [RawTensor<A>]) -> Self {
        View { graph, dims, values }
    }

    fn prepared(&self, k: usize) -> Prep<'v, A> {
        let p = self.graph.inputs() + k;
        Prep { index: k, graph: self.graph, prefix: &self.values[..p], output: &self.values[p], dims: &self.dims[..p] }
    }

    /// Checks that `seeds` fit the positions; a seed left at zero for a position declared with a
    /// run-time dim (built from the graph's declared dims) takes the position's bound dims.
    pub(super) fn check_seeds(&self, seeds: &mut [Stored<A>]) -> Result<(), Error> {
        let dims = self.dims;
        if seeds.len() == dims.len() && self.graph.has_run_time_dims() {
            for ((s, &bound), &declared) in seeds.iter_mut().zip(dims).zip(self.graph.declared_dims()) {
                s.rebind_uniform(declared, bound);
            }
        }
        if seeds.len() != dims.len() || seeds.iter().zip(dims).any(|(s, d)| s.dims() != *d) {
            return Err(Error::PackShapes {
                what: "seeds",
                expected: dims.to_vec(),
                actual: seeds.iter().map(Stored::dims).collect(),
            });
        }
        Ok(())
    }

    pub(super) fn storage_check() -> Result<(), Error> {
        if A::HAS_STORAGE_EQUALITY {
            Ok(())
        } else {
            Err(Error::NoStorageEquality { scalar: core::any::type_name::<A>() })
        }
    }

    /// The dense reference loop (SEMANTICS §3). With `reached`, nodes outside it are skipped and
    /// reachability grows as in §7 (`backprop_from_dense`). `keep` says whether node gradients are
    /// returned.
    pub(super) fn dense_loop(
        &self,
        seeds: Vec<Stored<A>>,
        reached: Option<Reached>,
        keep: bool,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        if A::COMPILED {
            return (A::compiled().dense_loop)(self, seeds, reached, keep);
        }
        self.dense_loop_body(seeds, reached, keep)
    }

    /// [`dense_loop`](Self::dense_loop)'s body (compiled in this crate for `f32` and `f64`).
    pub(crate) fn dense_loop_body(
        &self,
        mut seeds: Vec<Stored<A>>,
        mut reached: Option<Reached>,
        keep: bool,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        self.check_seeds(&mut seeds)?;
        let mut acc: Vec<RawTensor<A>> = seeds.into_iter().map(Stored::into_tensor).collect();
        let mut node_grads = Vec::with_capacity(if keep { self.graph.nodes() } else { 0 });
        let mut c = Contributions::new();
        let mut support = Vec::new();
        for k in (0..self.graph.nodes()).rev() {
            let prepared = self.prepared(k);
            let p = prepared.position();
            let Some(g) = acc.pop() else { unreachable!("acc holds every position") };
            if reached.as_ref().is_none_or(|r| r.contains(p)) {
                support.clear();
                let vjp = prepared.vjp_dense_with_support(&g, &mut c, reached.is_some().then_some(&mut support))?;
                for (a, v) in acc.iter_mut().zip(&vjp) {
                    // The dims were checked against the prefix by `vjp_dense_with_support`.
                    a.add_assign(v).map_err(|e| prepared.vjp_error(e.to_string()))?;
                }
                if let Some(r) = reached.as_mut() {
                    let opaque = !self.graph.is_compact(k);
                    r.record(p, if opaque { Touched::WholePrefix } else { Touched::Support(&support) });
                }
            }
            if keep {
                node_grads.push(g);
            }
        }
        node_grads.reverse();
        acc.extend(node_grads);
        Ok(acc)
    }

    /// The indexed loop (SEMANTICS §6–7) on a [`GradientContext`]. A position nobody wrote
    /// element by element stays a uniform in the result ([`RawPack`]); a node whose VJP runs
    /// gets its gradient built first.
    pub(super) fn array_loop(
        &self,
        seeds: Vec<Stored<A>>,
        reached: Option<Reached>,
        keep: bool,
    ) -> Result<RawPack<A>, Error> {
        Ok(RawPack::from_stored(self.array_slots(seeds, reached, keep)?))
    }

    /// [`array_loop`](Self::array_loop)'s result as tensors (the uniforms built), without a pack.
    pub(super) fn array_tensors(&self, seeds: Vec<Stored<A>>, keep: bool) -> Result<Vec<RawTensor<A>>, Error> {
        let slots = self.array_slots(seeds, None, keep)?;
        // A uniform result is filled into a spare buffer of the graph.
        let mut spare = self.graph.buffers().lend(slots.len());
        let tensors = slots
            .into_iter()
            .map(|s| match s {
                Stored::Uniform(v, d) => full_in(&mut spare, d, &v),
                Stored::Tensor(t) => t,
            })
            .collect();
        self.graph.buffers().absorb(spare);
        Ok(tensors)
    }

    /// [`array_loop`](Self::array_loop)'s slots: the input positions, then (with `keep`) the
    /// nodes'.
    fn array_slots(
        &self,
        seeds: Vec<Stored<A>>,
        reached: Option<Reached>,
        keep: bool,
    ) -> Result<Vec<Stored<A>>, Error> {
        if A::COMPILED {
            return (A::compiled().array_slots)(self, seeds, reached, keep);
        }
        self.array_slots_body(seeds, reached, keep)
    }

    /// [`array_slots`](Self::array_slots)'s body (compiled in this crate for `f32` and `f64`).
    pub(crate) fn array_slots_body(
        &self,
        mut seeds: Vec<Stored<A>>,
        mut reached: Option<Reached>,
        keep: bool,
    ) -> Result<Vec<Stored<A>>, Error> {
        Self::storage_check()?;
        self.check_seeds(&mut seeds)?;
        let mut ctx = GradientContext::of_stored(seeds);
        // The graph's spare buffers, for the gradients this pass builds (`graph::buffers`).
        let pool = self.graph.buffers();
        ctx.lend(pool.lend(self.dims.len()));
        let mut node_grads = Vec::with_capacity(if keep { self.graph.nodes() } else { 0 });
        let mut c = Contributions::new();
        for k in (0..self.graph.nodes()).rev() {
            let prepared = self.prepared(k);
            let p = prepared.position();
            let slot = ctx.pop_stored();
            let slot = if reached.as_ref().is_none_or(|r| r.contains(p)) {
                let g = ctx.build(slot);
                let whole_prefix = prepared.accumulate(&mut ctx, &g, &mut c)?;
                if let Some(r) = reached.as_mut() {
                    // The support positions `add_contributions` just wrote (duplicates removed:
                    // the reached set is a set).
                    let touched =
                        if whole_prefix { Touched::WholePrefix } else { Touched::Support(ctx.last_support()) };
                    r.record(p, touched);
                }
                Stored::Tensor(g)
            } else {
                slot
            };
            if keep {
                node_grads.push(slot);
            } else if let Stored::Tensor(g) = slot {
                ctx.recycle(g);
            }
        }
        pool.absorb(ctx.take_spare());
        pool.give_all(c.take_buffers());
        // The context's buffer still has room for every position: no reallocation.
        let mut out = ctx.into_stored();
        out.extend(node_grads.into_iter().rev());
        Ok(out)
    }

    pub(super) fn all_stored(&self, seeds: Vec<Stored<A>>, keep: bool) -> Result<RawPack<A>, Error> {
        if A::HAS_STORAGE_EQUALITY {
            self.array_loop(seeds, None, keep)
        } else {
            Ok(RawPack::from_tensors(self.dense_loop(seeds, None, keep)?))
        }
    }

    /// [`all_stored`](Self::all_stored)'s result as tensors, without a pack.
    pub(super) fn all_stored_tensors(&self, seeds: Vec<Stored<A>>, keep: bool) -> Result<Vec<RawTensor<A>>, Error> {
        if A::HAS_STORAGE_EQUALITY {
            self.array_tensors(seeds, keep)
        } else {
            self.dense_loop(seeds, None, keep)
        }
    }

    pub(super) fn single_seed(&self, output: usize, seed: RawTensor<A>) -> Result<Vec<Stored<A>>, Error> {
        let dims = self.dims;
        if output >= dims.len() {
            return Err(Error::ForeignPosition { index: output, len: dims.len() });
        }
        if seed.dims() != dims[output] {
            return Err(Error::ShapeMismatch { expected: dims[output], actual: seed.dims() });
        }
        let mut slots: Vec<Stored<A>> = dims.iter().map(|&d| Stored::Uniform(A::zero(), d)).collect();
        slots[output] = Stored::Tensor(seed);
        Ok(slots)
    }

    /// §7 with storage equality: the indexed loop from `output` seeded by `slots`, visiting only
    /// what `output` reaches; the input gradients (node gradients freed as they finish).
    pub(crate) fn inputs_from(&self, slots: Vec<Stored<A>>, output: usize) -> Result<RawPack<A>, Error> {
        self.array_loop(slots, Some(Reached::new(self.dims.len(), output)), false)
    }
}

/// The reached set of `backprop_from(output)` on a scalar with storage equality, by the pass's
/// rule with declared supports (see [`RawSavedGraph::reached_from`]).
pub(super) fn reachability<A: 'static, D: 'static>(graph: &RawGraph<A, D>, output: usize) -> Vec<bool> {
    let mut reached = Reached::new(graph.dims().len(), output);
    for (k, node) in graph.nodes().iter().enumerate().rev() {
        let p = graph.num_inputs() + k;
        if reached.contains(p) {
            reached.record(p, Touched::declared(node));
        }
    }
    reached.into_flags()
}

/// What a visited node's VJP touched, as far as reachability (§7) is concerned.
pub(crate) enum Touched<'a> {
    /// A compact node: the support of its contributions.
    Support(&'a [usize]),
    /// An opaque node: every position below it.
    WholePrefix,
}

impl<'a> Touched<'a> {
    /// What a node touches according to its declaration: its static support when compact, the
    /// whole prefix when opaque.
    pub(super) fn declared<A: 'static, D: 'static>(node: &'a RawNode<A, D>) -> Self {
        match node.support() {
            Some(s) => Touched::Support(s),
            None => Touched::WholePrefix,
        }
    }
}

/// The reached set of §7: explicit marks plus "every position below `below`" (set by opaque nodes).
///
/// The one place the reachability rule lives: the single-output passes and
/// [`RawSavedGraph::reached_from`] all go through [`contains`](Self::contains) (does the node at
/// `p` run?) and [`record`](Self::record) (what did it reach?).
pub(crate) struct Reached {
    marks: Vec<bool>,
    below: usize,
}

impl Reached {
    pub(super) fn new(len: usize, output: usize) -> Self {
        let mut marks = vec![false; len];
        marks[output] = true;
        Reached { marks, below: 0 }
    }

    pub(super) fn contains(&self, p: usize) -> bool {
        p < self.below || self.marks[p]
    }

    /// `reached ∪= c.support` for a compact node, `reached ∪= all positions < p` for an opaque one.
    pub(super) fn record(&mut self, p: usize, touched: Touched<'_>) {
        match touched {
            Touched::Support(support) => {
                for &q in support {
                    self.marks[q] = true;
                }
            }
            Touched::WholePrefix => self.below = self.below.max(p),
        }
    }

    /// One flag per position.
    pub(super) fn into_flags(self) -> Vec<bool> {
        let below = self.below;
        self.marks.into_iter().enumerate().map(|(p, m)| m || p < below).collect()
    }
}

/// [`View::dense_loop_body`] as a function of any view (the compiled table's entry).
pub(crate) fn dense_loop_body<A: Scalar>(
    view: &View<'_, A>,
    seeds: Vec<Stored<A>>,
    reached: Option<Reached>,
    keep: bool,
) -> Result<Vec<RawTensor<A>>, Error> {
    view.dense_loop_body(seeds, reached, keep)
}

/// [`View::array_slots_body`] as a function of any view (the compiled table's entry).
pub(crate) fn array_slots_body<A: Scalar>(
    view: &View<'_, A>,
    seeds: Vec<Stored<A>>,
    reached: Option<Reached>,
    keep: bool,
) -> Result<Vec<Stored<A>>, Error> {
    view.array_slots_body(seeds, reached, keep)
}
