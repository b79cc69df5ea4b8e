//! The buffers a generated program runs on, and the few steps its straight-line code calls.
//!
//! A generated reverse sweep is a list of calls whose every argument — which position, which
//! node, which uniforms are pending — was resolved when `graph!` expanded, from the ops' support
//! patterns (`exactgrad_spec`). So there is no history, no clock, no epoch and no support
//! bookkeeping at run time, only the arithmetic SEMANTICS §3 (all-inputs sweeps) and §7
//! (single-output sweeps, which skip what the output does not reach) prescribe, in its order:
//!
//! * a node's **cotangent** is its slot with the uniforms pushed since its last write applied;
//! * a node's **VJP** runs its compact program (a concrete op, called without dynamic dispatch)
//!   and records the uniform it gives every position outside its support;
//! * each distinct **support position** `q` becomes `(slot_q + pending uniforms) + read(q)`, the
//!   `+` fused with the reader (onto a uniform slot it is written once, into the position's own
//!   buffer: buffers never move between positions, so every run after the first allocates
//!   nothing — `tests/program_allocations.rs`);
//! * positions outside the support just have one more pending uniform: nothing runs.
//!
//! **Pending uniforms.** The uniform of a built-in op is a sum of zeros (`0`, `0 + 0`, …). For a
//! scalar whose [`ZERO_ADD_IDEMPOTENT`](crate::Storage::ZERO_ADD_IDEMPOTENT) holds, every one of
//! them is storage-equal to `0` and adding `0` twice equals adding it once, so a run of pending
//! uniforms is one `+ u`; for any other scalar each uniform is added in order. Both are exactly
//! the dense sequence of additions.

use core::ops::Range;

use crate::contributions::{Contrib, Contributions, Sink};
use crate::error::Error;
use crate::gradients::Slot;
use crate::graph::{CompactOp, NodeData, Program as NodeProgram, RawGraph, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The values, gradient slots and scratch of a generated program (see the [module docs](self)).
/// Allocated on the first run and reused by every later one.
pub struct ProgramState<A> {
    dims: Vec<Dims>,
    inputs: usize,
    /// Saved forward values (Γ ++ ss); the inputs are lent by the caller for one run.
    values: Vec<RawTensor<A>>,
    slots: Vec<Slot<A>>,
    /// The uniform of each visited node, by visit.
    uniforms: Vec<A>,
    /// The final input gradients of the last run.
    input_gradients: Vec<RawTensor<A>>,
    contributions: Contributions<A>,
    /// Each position's own spare buffer (its gradient's, when the slot holds a uniform or is
    /// taken): buffers keep their position's size, so a later run allocates nothing.
    bufs: Vec<Vec<A>>,
}

/// `x[i] + u` for the pending uniforms `us`, in order (one pass when adding zero is idempotent).
fn apply_pending<A: Scalar>(x: &mut [A], us: &[A]) {
    let us = if A::ZERO_ADD_IDEMPOTENT { &us[..us.len().min(1)] } else { us };
    for u in us {
        for e in x.iter_mut() {
            *e = A::pinned_add(e.clone(), u.clone());
        }
    }
}

/// [`apply_pending`] on a uniform slot's one scalar.
fn apply_pending_scalar<A: Scalar>(v: &mut A, us: &[A]) {
    let us = if A::ZERO_ADD_IDEMPOTENT { &us[..us.len().min(1)] } else { us };
    for u in us {
        *v = A::pinned_add(v.clone(), u.clone());
    }
}

impl<A: Scalar> ProgramState<A> {
    /// The state for a graph whose positions have `dims`, the first `inputs` of them inputs, and
    /// whose sweeps visit at most `visits` nodes.
    pub fn new(dims: &[Dims], inputs: usize, visits: usize) -> Self {
        ProgramState {
            dims: dims.to_vec(),
            inputs,
            values: dims.iter().map(|&d| RawTensor::zeros(d)).collect(),
            slots: dims.iter().map(|&d| Slot::Full(A::zero(), d)).collect(),
            uniforms: vec![A::zero(); visits],
            input_gradients: dims[..inputs].iter().map(|&d| RawTensor::zeros(d)).collect(),
            contributions: Contributions::new(),
            bufs: dims.iter().map(|d| Vec::with_capacity(d.numel())).collect(),
        }
    }

    /// The saved value of position `p` (after a run: inputs excepted, they are given back).
    pub fn value(&self, p: usize) -> &RawTensor<A> {
        &self.values[p]
    }

    /// Lends the caller's input tensors to the state for one run (swapped, not copied).
    pub(crate) fn swap_inputs(&mut self, inputs: &mut [RawTensor<A>]) {
        for (v, t) in self.values.iter_mut().zip(inputs) {
            core::mem::swap(v, t);
        }
    }

    /// Position `q`'s spare buffer, empty.
    fn take_buf(&mut self, q: usize) -> Vec<A> {
        let mut b = core::mem::take(&mut self.bufs[q]);
        b.clear();
        b
    }

    /// Gives position `q` its buffer back.
    fn give_buf(&mut self, q: usize, t: RawTensor<A>) {
        let old = core::mem::replace(&mut self.bufs[q], t.into_vec());
        if old.capacity() > 0 {
            self.contributions.recycle(old);
        }
    }

    /// Every gradient slot back to `zeros` (buffers kept for reuse).
    pub(crate) fn reset(&mut self) {
        for q in 0..self.slots.len() {
            let d = self.dims[q];
            if let Slot::Dense(t) = core::mem::replace(&mut self.slots[q], Slot::Full(A::zero(), d)) {
                self.give_buf(q, t);
            }
        }
    }

    /// Seeds position `p` with `t` (copied into a reused buffer).
    pub(crate) fn seed(&mut self, p: usize, t: &RawTensor<A>) -> Result<(), Error> {
        if t.dims() != self.dims[p] {
            return Err(Error::ShapeMismatch { expected: self.dims[p], actual: t.dims() });
        }
        let mut buf = self.take_buf(p);
        buf.extend_from_slice(t.data());
        self.slots[p] = Slot::Dense(RawTensor::from_parts(t.dims(), buf));
        Ok(())
    }

    fn node_error(&self, k: usize, op: &str, parents: &[usize], message: String) -> Error {
        Error::Node {
            node: k,
            op: op.to_owned(),
            parent_shapes: parents.iter().filter_map(|&q| self.dims.get(q).copied()).collect(),
            message,
        }
    }

    /// Forward of built-in node `k`: validates `op` on the values so far, then computes its value
    /// into the position's reused buffer.
    ///
    /// # Errors
    /// [`Error::Node`] when validation fails or the value has the wrong length.
    pub fn forward<D, Op: CompactOp<A, D>>(&mut self, k: usize, op: &Op, data: &D) -> Result<(), Error> {
        let p = self.inputs + k;
        let (ctx, rest) = self.values.split_at_mut(p);
        if let Err(m) = op.validate(ctx, data) {
            return Err(self.node_error(k, op.name(), op.parents(), m));
        }
        let mut buf = rest[0].take_data();
        buf.clear();
        op.forward_into(ctx, data, &mut buf);
        let d = self.dims[p];
        if buf.len() != d.numel() {
            let message = format!("forward gave {} elements, the node's shape {d} has {}", buf.len(), d.numel());
            return Err(self.node_error(k, op.name(), op.parents(), message));
        }
        self.values[p] = RawTensor::from_parts(d, buf);
        Ok(())
    }

    /// Forward of node `k` through the graph's own node (opaque closures, user compact ops).
    ///
    /// # Errors
    /// As [`forward`](Self::forward).
    pub fn forward_node<D: 'static>(&mut self, k: usize, graph: &RawGraph<A, D>, data: &D) -> Result<(), Error> {
        let p = self.inputs + k;
        let node = &graph.nodes()[k];
        let (ctx, _) = self.values.split_at(p);
        let value = match node.program() {
            NodeProgram::Compact(op) => {
                op.validate(ctx, data).map_err(|m| self.node_error(k, node.name(), node.parents(), m))?;
                op.forward(ctx, data)
            }
            NodeProgram::Opaque { forward, .. } => forward(ctx, data),
        };
        if value.dims() != self.dims[p] {
            let message = format!("forward returned shape {}, the node's shape is {}", value.dims(), self.dims[p]);
            return Err(self.node_error(k, node.name(), node.parents(), message));
        }
        self.values[p] = value;
        Ok(())
    }

    /// The final gradient of position `p`: its slot with the uniforms of the `pending` visits
    /// applied, as a tensor (a uniform slot is filled into a reused buffer).
    pub fn cotangent(&mut self, p: usize, pending: Range<usize>) -> RawTensor<A> {
        let slot = core::mem::replace(&mut self.slots[p], Slot::Full(A::zero(), self.dims[p]));
        let us = &self.uniforms[pending];
        match slot {
            Slot::Dense(mut t) => {
                apply_pending(t.data_mut(), us);
                t
            }
            Slot::Full(mut v, d) => {
                apply_pending_scalar(&mut v, us);
                let mut buf = self.take_buf(p);
                buf.extend((0..d.numel()).map(|_| v.clone()));
                RawTensor::from_parts(d, buf)
            }
        }
    }

    /// Gives back the cotangent of position `p` once its node has run.
    pub fn release(&mut self, p: usize, g: RawTensor<A>) {
        self.give_buf(p, g);
    }

    /// The VJP of built-in node `k` (visit `visit`) at cotangent `g`: its contributions, built
    /// by the concrete `op`; records their uniform. Returns the root description for
    /// [`accumulate`](Self::accumulate).
    pub fn vjp<D, Op: CompactOp<A, D>>(
        &mut self,
        visit: usize,
        k: usize,
        op: &Op,
        g: &RawTensor<A>,
        data: &D,
    ) -> Contrib {
        let p = self.inputs + k;
        self.contributions.clear();
        let saved = SavedValues { prefix: &self.values[..p], output: &self.values[p], data };
        let root = op.contributions(&saved, g, &mut self.contributions);
        self.uniforms[visit] = self.contributions.uniform(root);
        root
    }

    /// Position `q` becomes `(slot_q + the uniforms of the pending visits) + read(q)` for the last
    /// [`vjp`](Self::vjp) (of node `k`, named `op` in errors), `+ read` fused with the reader.
    ///
    /// # Errors
    /// [`Error::Vjp`] when the contribution does not fit the position.
    pub fn accumulate(
        &mut self,
        k: usize,
        op: &str,
        root: Contrib,
        q: usize,
        pending: Range<usize>,
        g: &RawTensor<A>,
    ) -> Result<(), Error> {
        let vjp_error = |message| Error::Vjp { node: k, op: op.to_owned(), message };
        let c = &mut self.contributions;
        c.check_dims(root, q, g, self.dims[q]).map_err(vjp_error)?;
        let us = &self.uniforms[pending];
        match &mut self.slots[q] {
            Slot::Dense(t) => {
                apply_pending(t.data_mut(), us);
                c.read_into(root, q, g, Sink::Accumulate(t.data_mut())).map_err(vjp_error)?;
            }
            Slot::Full(v, d) => {
                apply_pending_scalar(v, us);
                let mut out = core::mem::take(&mut self.bufs[q]);
                out.clear();
                c.read_into(root, q, g, Sink::OntoUniformInto(v, &mut out)).map_err(vjp_error)?;
                let d = *d;
                self.slots[q] = Slot::Dense(RawTensor::from_parts(d, out));
            }
        }
        Ok(())
    }

    /// The VJP of node `k` (visit `visit`) through the graph's own node, which touches its whole
    /// prefix: an opaque node adds its dense VJP to every position below it (SEMANTICS §6
    /// `add_dense`); a user compact op adds its contributions at its support and its uniform
    /// everywhere else. `pending[q]` are the pending visits of each position `q` below the node.
    ///
    /// # Errors
    /// [`Error::Vjp`] for a VJP that does not fit the prefix.
    #[allow(clippy::too_many_arguments)]
    pub fn vjp_node<D: 'static>(
        &mut self,
        visit: usize,
        k: usize,
        graph: &RawGraph<A, D>,
        g: &RawTensor<A>,
        data: &D,
        pending: &[Range<usize>],
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        let node: &NodeData<A, D> = &graph.nodes()[k];
        let vjp_error = |message: String| Error::Vjp { node: k, op: node.name().to_owned(), message };
        self.uniforms[visit] = A::zero();
        match node.program() {
            NodeProgram::Opaque { vjp, .. } => {
                let out = vjp(&self.values[..p], data, g);
                if out.len() != p {
                    return Err(vjp_error(format!("returned {} tensors for a prefix of {p}", out.len())));
                }
                if let Some((q, t)) = out.iter().enumerate().find(|(q, t)| t.dims() != self.dims[*q]) {
                    return Err(vjp_error(format!(
                        "returned shape {} at position {q}, which has shape {}",
                        t.dims(),
                        self.dims[q]
                    )));
                }
                for (q, t) in out.iter().enumerate() {
                    let slot = self.dense_slot(q, pending[q].clone());
                    for (x, y) in slot.iter_mut().zip(t.data()) {
                        *x = A::pinned_add(x.clone(), y.clone());
                    }
                }
            }
            NodeProgram::Compact(op) => {
                self.contributions.clear();
                let saved = SavedValues { prefix: &self.values[..p], output: &self.values[p], data };
                let root = op.contributions(&saved, g, &mut self.contributions);
                let u = self.contributions.uniform(root);
                let mut support = Vec::new();
                self.contributions.support_into(root, &mut support);
                if let Some(&q) = support.iter().find(|&&q| q >= p) {
                    return Err(vjp_error(format!("contributes to position {q}, outside its prefix of {p}")));
                }
                for (q, pending) in pending.iter().enumerate().take(p) {
                    if support.contains(&q) {
                        self.accumulate(k, node.name(), root, q, pending.clone(), g)?;
                    } else {
                        // One more uniform, applied now: the position's pending run ends here.
                        let us = &self.uniforms[pending.clone()];
                        match &mut self.slots[q] {
                            Slot::Dense(t) => {
                                apply_pending(t.data_mut(), us);
                                apply_pending(t.data_mut(), core::slice::from_ref(&u));
                            }
                            Slot::Full(v, _) => {
                                apply_pending_scalar(v, us);
                                *v = A::pinned_add(v.clone(), u.clone());
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The slot of `q` made dense, with its pending uniforms applied.
    fn dense_slot(&mut self, q: usize, pending: Range<usize>) -> &mut [A] {
        let us = &self.uniforms[pending];
        if let Slot::Full(v, d) = &mut self.slots[q] {
            apply_pending_scalar(v, us);
            let mut buf = core::mem::take(&mut self.bufs[q]);
            buf.clear();
            buf.extend((0..d.numel()).map(|_| v.clone()));
            let d = *d;
            self.slots[q] = Slot::Dense(RawTensor::from_parts(d, buf));
        } else if let Slot::Dense(t) = &mut self.slots[q] {
            apply_pending(t.data_mut(), us);
        }
        match &mut self.slots[q] {
            Slot::Dense(t) => t.data_mut(),
            Slot::Full(..) => &mut [],
        }
    }

    /// Finishes input `q`: its final gradient (pending uniforms applied) becomes the run's result.
    pub fn input_gradient(&mut self, q: usize, pending: Range<usize>) {
        let g = self.cotangent(q, pending);
        let old = core::mem::replace(&mut self.input_gradients[q], g);
        self.give_buf(q, old);
    }

    /// Swaps the last run's input gradients into `out` (the previous buffers come back for reuse).
    pub(crate) fn swap_input_gradients(&mut self, out: &mut [RawTensor<A>]) {
        for (a, b) in self.input_gradients.iter_mut().zip(out) {
            core::mem::swap(a, b);
        }
    }
}
