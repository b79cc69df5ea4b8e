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
//!   `+` fused with the reader (onto a uniform slot it is written once, into the gradient buffer
//!   the plan gives the position);
//! * positions outside the support just have one more pending uniform: nothing runs.
//!
//! **Buffers.** Which buffer each value and each gradient lives in was planned by liveness when
//! `graph!` expanded ([`MemoryPlan`]): the forward keeps only the values a VJP reads and the
//! declared outputs, gives every other value's buffer back after its last reader
//! ([`free_value`](ProgramState::free_value)), and a gradient buffer passes to a later position once
//! its node has run. Every buffer is taken from and given back to its index in a pool, so the same
//! buffers serve every run: after the first, a program of built-in ops allocates nothing
//! (`tests/program_allocations.rs`).
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
use crate::guard::guarded;
use crate::ops::window_vjp as window;
use crate::ops::{ProductVjp, WindowVjp};
use crate::saved::View;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The buffers `graph!` planned for a model's program: which buffer each node's value and each
/// position's gradient lives in (written by the macro; see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct MemoryPlan {
    /// Per node, the index of its value buffer.
    pub values: &'static [usize],
    /// Per node, whether its value is kept to the end of a run (a VJP reads it, or it is a
    /// declared output).
    pub kept: &'static [bool],
    /// Number of value buffers.
    pub value_buffers: usize,
    /// Per pass (the all-inputs pass, then each declared output's single-output pass), the index
    /// of every position's gradient buffer; inputs own buffers `0..inputs`.
    pub gradients: &'static [&'static [usize]],
    /// Number of gradient buffers.
    pub gradient_buffers: usize,
}

/// The values, gradient slots and scratch of a generated program (see the [module docs](self)).
/// Allocated on the first run and reused by every later one.
pub struct ProgramState<A> {
    dims: Vec<Dims>,
    inputs: usize,
    plan: MemoryPlan,
    /// The gradient buffer of each position in the running pass.
    gradient_buffer: &'static [usize],
    /// Forward values (Γ ++ ss): the inputs are lent by the caller for one run; a node's value
    /// holds its buffer from its forward until the plan gives it back.
    values: Vec<RawTensor<A>>,
    /// The value buffers not in use.
    value_pool: Vec<Vec<A>>,
    slots: Vec<Slot<A>>,
    /// The uniform of each visited node, by visit.
    uniforms: Vec<A>,
    /// The final input gradients of the last run.
    input_gradients: Vec<RawTensor<A>>,
    /// Per input, the value every element of `input_gradients[q]` holds, when they all hold one
    /// (`Some`); `None` when unknown. With storage equality, an input whose final gradient is a
    /// uniform its buffer already holds is not written again (the single-output pass of one head
    /// among many leaves every other head's parameters at a uniform zero).
    input_fills: Vec<Option<A>>,
    /// The same for the buffers on the caller's side of [`swap_input_gradients`](Self::swap_input_gradients).
    returned_fills: Vec<Option<A>>,
    contributions: Contributions<A>,
    /// The gradient buffers not in use (a slot holding a uniform has none).
    gradient_pool: Vec<Vec<A>>,
}

/// `x[i] + u` for the pending uniforms `us`, in order (one pass when adding zero is idempotent).
fn apply_pending<A: Scalar>(x: &mut [A], us: &[A]) {
    let us = if A::ZERO_ADD_IDEMPOTENT { &us[..us.len().min(1)] } else { us };
    for u in us {
        crate::ops::elementwise(|| {
            for e in x.iter_mut() {
                *e = A::pinned_add(e.clone(), u.clone());
            }
        });
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
    /// The state for a graph whose positions have `dims`, the first `inputs` of them inputs,
    /// whose sweeps visit at most `visits` nodes, with the buffers of `plan` (allocated as the
    /// first run uses them).
    pub fn new(dims: &[Dims], inputs: usize, visits: usize, plan: MemoryPlan) -> Self {
        ProgramState {
            dims: dims.to_vec(),
            inputs,
            plan,
            gradient_buffer: plan.gradients.first().copied().unwrap_or(&[]),
            values: dims.iter().map(|&d| RawTensor::vacant(d)).collect(),
            value_pool: (0..plan.value_buffers).map(|_| Vec::new()).collect(),
            slots: dims.iter().map(|&d| Slot::Full(A::zero(), d)).collect(),
            uniforms: vec![A::zero(); visits],
            input_gradients: dims[..inputs].iter().map(|&d| RawTensor::zeros(d)).collect(),
            input_fills: vec![Some(A::zero()); inputs],
            returned_fills: vec![Some(A::zero()); inputs],
            contributions: Contributions::new(),
            gradient_pool: (0..plan.gradient_buffers).map(|_| Vec::new()).collect(),
        }
    }

    /// The value of position `p` after a run, when the plan keeps it (a node whose value a VJP
    /// reads, or a declared output); `None` for inputs (given back) and values given back.
    pub fn value(&self, p: usize) -> Option<&RawTensor<A>> {
        let k = p.checked_sub(self.inputs)?;
        self.plan.kept.get(k).copied().unwrap_or(false).then(|| &self.values[p])
    }

    /// Selects the gradient buffers of the pass with this index (0: the all-inputs pass, `1 + j`:
    /// output `j`'s single-output pass).
    pub(crate) fn select_pass(&mut self, index: usize) {
        if let Some(&b) = self.plan.gradients.get(index) {
            self.gradient_buffer = b;
        }
    }

    /// Lends the caller's input tensors to the state for one run (swapped, not copied).
    pub(crate) fn swap_inputs(&mut self, inputs: &mut [RawTensor<A>]) {
        for (v, t) in self.values.iter_mut().zip(inputs) {
            core::mem::swap(v, t);
        }
    }

    /// Position `q`'s gradient buffer, empty.
    fn take_buf(&mut self, q: usize) -> Vec<A> {
        let mut b = self.gradient_buffer.get(q).map_or_else(Vec::new, |&i| core::mem::take(&mut self.gradient_pool[i]));
        b.clear();
        b
    }

    /// Gives position `q`'s gradient buffer back to the pool.
    fn give_buf(&mut self, q: usize, t: RawTensor<A>) {
        if let Some(&i) = self.gradient_buffer.get(q) {
            let old = core::mem::replace(&mut self.gradient_pool[i], t.into_vec());
            if old.capacity() > 0 {
                self.contributions.recycle(old);
            }
        }
    }

    /// Gives the buffer of node position `p`'s value back to the pool (the larger one, should the
    /// pool's place be taken: an opaque forward brings its own).
    fn give_value(&mut self, p: usize) {
        let v = self.values[p].take_data();
        if let Some(&i) = p.checked_sub(self.inputs).and_then(|k| self.plan.values.get(k)) {
            if v.capacity() > self.value_pool[i].capacity() {
                self.value_pool[i] = v;
            }
        }
    }

    /// The value of node position `p` is not read again in this run: its buffer goes back to the
    /// pool for a later node.
    pub fn free_value(&mut self, p: usize) {
        self.give_value(p);
    }

    /// Every gradient slot back to `zeros` and every value buffer back to the pool.
    pub(crate) fn reset(&mut self) {
        for q in 0..self.slots.len() {
            let d = self.dims[q];
            if let Slot::Dense(t) = core::mem::replace(&mut self.slots[q], Slot::Full(A::zero(), d)) {
                self.give_buf(q, t);
            }
        }
        for p in self.inputs..self.values.len() {
            self.give_value(p);
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
    /// into the value buffer the plan gives it.
    ///
    /// # Errors
    /// [`Error::Node`] when validation fails or the value has the wrong length.
    pub fn forward<D, Op: CompactOp<A, D>>(&mut self, k: usize, op: &Op, data: &D) -> Result<(), Error> {
        let p = self.inputs + k;
        let ctx = &self.values[..p];
        if let Err(m) = op.validate(ctx, data) {
            return Err(self.node_error(k, op.name(), op.parents(), m));
        }
        let mut buf = self.plan.values.get(k).map_or_else(Vec::new, |&i| core::mem::take(&mut self.value_pool[i]));
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
    /// As [`forward`](Self::forward), and [`Error::Node`] when the node's code panics (caught at
    /// the node; the state stays usable for the next run).
    pub fn forward_node<D: 'static>(&mut self, k: usize, graph: &RawGraph<A, D>, data: &D) -> Result<(), Error> {
        let p = self.inputs + k;
        let node = &graph.nodes()[k];
        let (ctx, _) = self.values.split_at(p);
        let fail = |m| self.node_error(k, node.name(), node.parents(), m);
        let value = match node.program() {
            NodeProgram::Compact(op) => {
                guarded("its validation", || op.validate(ctx, data)).map_err(fail)?.map_err(fail)?;
                guarded("the forward", || op.forward(ctx, data)).map_err(fail)?
            }
            NodeProgram::Opaque { forward, .. } => guarded("the forward", || forward(ctx, data)).map_err(fail)?,
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
                let mut out =
                    self.gradient_buffer.get(q).map_or_else(Vec::new, |&i| core::mem::take(&mut self.gradient_pool[i]));
                out.clear();
                c.read_into(root, q, g, Sink::OntoUniformInto(v, &mut out)).map_err(vjp_error)?;
                let d = *d;
                self.slots[q] = Slot::Dense(RawTensor::from_parts(d, out));
            }
        }
        Ok(())
    }

    /// The VJP of a product node `k` (`matmul` of distinct operands, `matmul_data`; visit `visit`)
    /// and its accumulation at its support `writes` (position, pending visits; support order):
    /// where every written position still holds a uniform, each contribution is computed straight
    /// into the position's gradient buffer, `stored +` fused into the GEMM's store
    /// ([`ProductVjp`]); from the first position already written on, as [`vjp`](Self::vjp) and
    /// [`accumulate`](Self::accumulate). The same additions in the same order either way.
    ///
    /// # Errors
    /// [`Error::Vjp`] when a contribution does not fit its position.
    pub fn vjp_product<D, Op: ProductVjp<A, D>>(
        &mut self,
        visit: usize,
        k: usize,
        op: &Op,
        g: &RawTensor<A>,
        data: &D,
        writes: &[(usize, Range<usize>)],
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        self.uniforms[visit] = op.product_uniform();
        for (i, (q, pending)) in writes.iter().enumerate() {
            let (q, d) = (*q, self.dims[*q]);
            let Slot::Full(v, _) = &mut self.slots[q] else {
                // A position already written: the contributions, built once, for the rest.
                let root = self.vjp(visit, k, op, g, data);
                for (q, pending) in &writes[i..] {
                    self.accumulate(k, op.name(), root, *q, pending.clone(), g)?;
                }
                return Ok(());
            };
            apply_pending_scalar(v, &self.uniforms[pending.clone()]);
            let mut out =
                self.gradient_buffer.get(q).map_or_else(Vec::new, |&b| core::mem::take(&mut self.gradient_pool[b]));
            out.clear();
            let saved = SavedValues { prefix: &self.values[..p], output: &self.values[p], data };
            op.product_onto(&saved, g, i, v, &mut out);
            if out.len() != d.numel() {
                let message = format!(
                    "its product at position {q} has {} elements, the position's shape {d} has {}",
                    out.len(),
                    d.numel()
                );
                return Err(Error::Vjp { node: k, op: op.name().to_owned(), message });
            }
            self.slots[q] = Slot::Dense(RawTensor::from_parts(d, out));
        }
        Ok(())
    }

    /// The VJP of a window node `k` (`slice`; visit `visit`) added at its one support position
    /// `q` in one pass: `(slot_q + the uniforms of the pending visits) + t[e]`, `t` the cotangent
    /// in the op's [`Window`](crate::ops::Window) of `q` and zeros around it — the additions of
    /// [`vjp`](Self::vjp) and [`accumulate`](Self::accumulate), without building `t`.
    ///
    /// # Errors
    /// [`Error::Vjp`] when the window does not fit the position or the cotangent.
    pub fn vjp_window<D, Op: WindowVjp<A, D>>(
        &mut self,
        visit: usize,
        k: usize,
        op: &Op,
        g: &RawTensor<A>,
        q: usize,
        pending: Range<usize>,
    ) -> Result<(), Error> {
        self.uniforms[visit] = A::zero();
        let d = self.dims[q];
        let w = op.window(d);
        if !w.fits(d.numel(), g.numel()) {
            let message = format!(
                "its window {w:?} does not fit position {q} of shape {d} and a cotangent of shape {}",
                g.dims()
            );
            return Err(Error::Vjp { node: k, op: op.name().to_owned(), message });
        }
        let us = &self.uniforms[pending];
        let us = if A::ZERO_ADD_IDEMPOTENT { &us[..us.len().min(1)] } else { us };
        match &mut self.slots[q] {
            Slot::Dense(t) => {
                // All but the last pending uniform in their own passes (only for scalars whose
                // zeros do not collapse), the last fused with the window's additions.
                let (last, before) = us.split_last().map_or((None, us), |(l, b)| (Some(l), b));
                apply_pending(t.data_mut(), before);
                window::accumulate(t.data_mut(), last, g.data(), w);
            }
            Slot::Full(v, _) => {
                apply_pending_scalar(v, us);
                let mut out =
                    self.gradient_buffer.get(q).map_or_else(Vec::new, |&b| core::mem::take(&mut self.gradient_pool[b]));
                window::onto(v, g.data(), w, &mut out);
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
    /// [`Error::Vjp`] for a VJP that does not fit the prefix or panics (caught at the node; the
    /// state stays usable for the next run).
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
                let out = guarded("the VJP", || vjp(&self.values[..p], data, g)).map_err(vjp_error)?;
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
                let c = &mut self.contributions;
                let root = guarded("the VJP", || op.contributions(&saved, g, c)).map_err(vjp_error)?;
                if !c.is_handle(root) {
                    return Err(vjp_error("returned a handle that is not one of its contributions".to_owned()));
                }
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
            let mut buf =
                self.gradient_buffer.get(q).map_or_else(Vec::new, |&i| core::mem::take(&mut self.gradient_pool[i]));
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
    /// A uniform is written into the result's buffer, unless that buffer already holds it
    /// everywhere (storage-equal: the same bits).
    pub fn input_gradient(&mut self, q: usize, pending: Range<usize>) {
        let d = self.dims[q];
        match core::mem::replace(&mut self.slots[q], Slot::Full(A::zero(), d)) {
            Slot::Dense(mut t) => {
                apply_pending(t.data_mut(), &self.uniforms[pending]);
                let old = core::mem::replace(&mut self.input_gradients[q], t);
                self.give_buf(q, old);
                self.input_fills[q] = None;
            }
            Slot::Full(mut v, _) => {
                apply_pending_scalar(&mut v, &self.uniforms[pending]);
                let holds = A::HAS_STORAGE_EQUALITY && self.input_fills[q].as_ref().is_some_and(|u| u.storage_eq(&v));
                if !holds {
                    let mut buf = self.input_gradients[q].take_data();
                    buf.clear();
                    buf.extend((0..d.numel()).map(|_| v.clone()));
                    self.input_gradients[q] = RawTensor::from_parts(d, buf);
                    self.input_fills[q] = Some(v);
                }
            }
        }
    }

    /// The single-output pass from position `output` run by the runtime's own loop
    /// (`RawSavedGraph::backprop_from`, SEMANTICS §7) over this run's values and slots: for a
    /// model with user compact ops, whose supports — and so the nodes the pass reaches — are
    /// declared only when the graph is built. Every input's gradient is written. (The values the
    /// pass reads are kept: the plan keeps every value below a user op.)
    ///
    /// # Errors
    /// As `backprop_from`: [`Error::Vjp`] for a malformed VJP.
    pub fn sweep_from_runtime<D: 'static>(
        &mut self,
        graph: &RawGraph<A, D>,
        data: &D,
        output: usize,
    ) -> Result<(), Error> {
        let slots: Vec<Slot<A>> = self
            .slots
            .iter_mut()
            .zip(&self.dims)
            .map(|(s, &d)| core::mem::replace(s, Slot::Full(A::zero(), d)))
            .collect();
        let gradients = View::new(graph, &self.values, data).inputs_from(slots, output)?;
        for (q, t) in gradients.into_vec().into_iter().enumerate().take(self.inputs) {
            self.input_gradients[q] = t;
            self.input_fills[q] = None;
        }
        Ok(())
    }

    /// Swaps the last run's input gradients into `out` (the previous buffers come back for reuse;
    /// `out` must be the buffers the previous call gave out — the program's own gradient pack).
    pub(crate) fn swap_input_gradients(&mut self, out: &mut [RawTensor<A>]) {
        for (a, b) in self.input_gradients.iter_mut().zip(out) {
            core::mem::swap(a, b);
        }
        core::mem::swap(&mut self.input_fills, &mut self.returned_fills);
    }
}
