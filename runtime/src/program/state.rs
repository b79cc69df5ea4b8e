//! The buffers a generated program runs on, and the few steps its plan's rows are run by
//! (the routines a model's generated `run` calls: [`forward_rows`](ProgramState::forward_rows),
//! [`sweep_rows`](ProgramState::sweep_rows)).
//!
//! A generated reverse sweep is a list of steps whose every field — which position, which
//! node, which uniforms are pending — was resolved when `graph!` expanded, from the ops' support
//! patterns (`exactgrad_spec`). So there is no history, no clock, no epoch and no support
//! bookkeeping at run time, only the arithmetic SEMANTICS §3 (all-inputs sweeps) and §7
//! (single-output sweeps, which skip what the output does not reach) prescribe, in its order:
//!
//! * a node's **cotangent** is its slot with the uniforms pushed since its last write applied;
//! * a node's **VJP** runs its compact program (the graph's op)
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
//!
//! **Files.** This one: the state, its buffers and pools, seeding and reset; `state/forward.rs`:
//! the forward's steps (a node, a level of nodes at the same time, the first failure);
//! `state/run.rs`: the loop that runs a plan;
//! `state/sweep.rs`: the reverse-sweep steps (cotangent, VJP, accumulation, input gradients);
//! `state/fused.rs`: the VJP paths that bypass the general one (products into their buffers,
//! windows, whole-prefix nodes).

use crate::contributions::Contributions;
use crate::error::Error;
use crate::gradients::Stored;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

use super::plan::Table;

mod forward;
mod fused;
mod run;
mod sweep;

pub use run::Ran;

/// The buffers `graph!` planned for a model's program: which buffer each node's value and each
/// position's gradient lives in (written by the macro; see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct MemoryPlan {
    /// Per node, the index of its value buffer.
    pub values: Table<usize>,
    /// Per node, whether its value is kept to the end of a run (a VJP reads it, or it is a
    /// declared output).
    pub kept: Table<bool>,
    /// Number of value buffers.
    pub value_buffers: usize,
    /// Per pass (the all-inputs pass, then each declared output's single-output pass), the index
    /// of every position's gradient buffer; inputs own buffers `0..inputs`.
    pub gradients: &'static [Table<usize>],
    /// Number of gradient buffers.
    pub gradient_buffers: usize,
}

/// A [`MemoryPlan`]'s tables read out once, for a state's runs.
#[derive(Clone, Debug)]
pub(super) struct Memory {
    values: Vec<usize>,
    kept: Vec<bool>,
    gradients: Vec<Vec<usize>>,
}

impl Memory {
    fn of(plan: &MemoryPlan) -> Self {
        Memory {
            values: plan.values.to_vec(),
            kept: plan.kept.to_vec(),
            gradients: plan.gradients.iter().map(Table::<usize>::to_vec).collect(),
        }
    }

    /// The gradient buffer of each position in pass `pass`.
    pub(super) fn gradient(&self, pass: usize) -> &[usize] {
        self.gradients.get(pass).map_or(&[], Vec::as_slice)
    }
}

/// The values, gradient slots and scratch of a generated program (see the [module docs](self)).
/// Allocated on the first run and reused by every later one.
///
/// Users run programs through [`Program`](crate::Program) and read values with
/// [`value`](Self::value). The step methods (`forward`, `cotangent`, `vjp`, `accumulate`, …) are
/// public only for the code `graph!` generates and hidden from the docs. **Contract:** their
/// position, node, visit and pending-visit arguments are the ones the macro resolved for this
/// graph and this state (a `Program` makes both from the same expansion); they index the state
/// without checking them, so other indices may panic (out of bounds). Everything that comes from
/// the user — inputs, seeds, data, the values and VJPs of ops — is checked and returned as an
/// [`Error`], and a panic in a user closure or op is caught at the node.
#[derive(Clone, Debug)]
pub struct ProgramState<A> {
    dims: Vec<Dims>,
    inputs: usize,
    plan: Memory,
    /// The running pass (an index of the memory plan's `gradients`).
    pass: usize,
    /// Forward values (Γ ++ ss): the inputs are lent by the caller for one run; a node's value
    /// holds its buffer from its forward until the plan gives it back.
    values: Vec<RawTensor<A>>,
    /// The value buffers not in use.
    value_pool: Vec<Vec<A>>,
    slots: Vec<Stored<A>>,
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
    /// The lowest-index node that failed in this run's forward, with its error (see
    /// [`forward_result`](Self::forward_result)).
    failed: Option<(usize, Error)>,
    /// The value buffers of a level's nodes while they are computed at the same time (its
    /// capacity reused from run to run).
    level: Vec<forward::LevelSlot<A>>,
    /// The number of the next visit of this run's sweep.
    visit: usize,
    /// The node the sweep visits (the one a panic caught around its rows is reported at).
    visiting: usize,
    /// A repeated level's nodes and a repeated product step's writes, moved to their iteration
    /// ([`forward_rows`](Self::forward_rows), [`sweep_rows`](Self::sweep_rows); capacities
    /// reused from run to run).
    moved_nodes: Vec<usize>,
    moved_writes: Vec<(usize, core::ops::Range<usize>)>,
}

/// The pending uniforms `us` that change a value when added in order: all of them, or only the
/// first for a scalar whose adding of zero is idempotent (`(x + 0) + 0 = x + 0`).
fn effective<A: Scalar>(us: &[A]) -> &[A] {
    if A::ZERO_ADD_IDEMPOTENT {
        &us[..us.len().min(1)]
    } else {
        us
    }
}

/// `x[i] + u` for the pending uniforms `us`, in order (one pass when adding zero is idempotent).
fn apply_pending<A: Scalar>(x: &mut [A], us: &[A]) {
    for u in effective(us) {
        crate::ops::elementwise(|| {
            for e in x.iter_mut() {
                *e = A::pinned_add(e.clone(), u.clone());
            }
        });
    }
}

/// [`apply_pending`] on a uniform slot's one scalar.
fn apply_pending_scalar<A: Scalar>(v: &mut A, us: &[A]) {
    for u in effective(us) {
        *v = A::pinned_add(v.clone(), u.clone());
    }
}

/// Position `q`'s gradient buffer (its index in `pool` from `buffers`), taken from the pool and
/// empty; a new one for a position without a planned buffer. A free function, so the steps can
/// take a buffer while they hold another slot.
fn take_buffer<A>(buffers: &[usize], pool: &mut [Vec<A>], q: usize) -> Vec<A> {
    let mut b = buffers.get(q).map_or_else(Vec::new, |&i| core::mem::take(&mut pool[i]));
    b.clear();
    b
}

impl<A: Scalar> ProgramState<A> {
    /// The state for a graph whose positions have `dims`, the first `inputs` of them inputs,
    /// whose sweeps visit at most `visits` nodes, with the buffers of `plan` (allocated as the
    /// first run uses them).
    #[doc(hidden)]
    #[must_use]
    pub fn new(dims: &[Dims], inputs: usize, visits: usize, plan: MemoryPlan) -> Self {
        crate::compiled::compiled_or_body!(A, state_new, Self::new_body, (dims, inputs, visits, plan))
    }

    /// [`new`](Self::new)'s body (compiled in this crate for `f32` and `f64`: `crate::compiled`).
    pub(crate) fn new_body(dims: &[Dims], inputs: usize, visits: usize, plan: MemoryPlan) -> Self {
        ProgramState {
            dims: dims.to_vec(),
            inputs,
            plan: Memory::of(&plan),
            pass: 0,
            values: dims.iter().map(|&d| RawTensor::vacant(d)).collect(),
            value_pool: (0..plan.value_buffers).map(|_| Vec::new()).collect(),
            slots: dims.iter().map(|&d| Stored::Uniform(A::zero(), d)).collect(),
            uniforms: vec![A::zero(); visits],
            input_gradients: dims[..inputs].iter().map(|&d| RawTensor::zeros(d)).collect(),
            input_fills: vec![Some(A::zero()); inputs],
            returned_fills: vec![Some(A::zero()); inputs],
            contributions: Contributions::reusable(),
            gradient_pool: (0..plan.gradient_buffers).map(|_| Vec::new()).collect(),
            failed: None,
            level: Vec::new(),
            visit: 0,
            visiting: 0,
            moved_nodes: Vec::new(),
            moved_writes: Vec::new(),
        }
    }

    /// The dims of every position the state holds buffers for.
    pub(crate) fn dims(&self) -> &[Dims] {
        &self.dims
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
        if index < self.plan.gradients.len() {
            self.pass = index;
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
        take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, q)
    }

    /// Gives position `q`'s gradient buffer back to the pool.
    fn give_buf(&mut self, q: usize, t: RawTensor<A>) {
        if let Some(&i) = self.plan.gradient(self.pass).get(q) {
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
    #[doc(hidden)]
    pub fn free_value(&mut self, p: usize) {
        self.give_value(p);
    }

    /// Every gradient slot back to `zeros` and every value buffer back to the pool.
    pub(crate) fn reset(&mut self) {
        for q in 0..self.slots.len() {
            let d = self.dims[q];
            if let Stored::Tensor(t) = core::mem::replace(&mut self.slots[q], Stored::Uniform(A::zero(), d)) {
                self.give_buf(q, t);
            }
        }
        for p in self.inputs..self.values.len() {
            self.give_value(p);
        }
        self.failed = None;
        self.visit = 0;
    }

    /// Seeds position `p` with `t` (copied into a reused buffer).
    pub(crate) fn seed(&mut self, p: usize, t: &RawTensor<A>) -> Result<(), Error> {
        if t.dims() != self.dims[p] {
            return Err(Error::ShapeMismatch { expected: self.dims[p], actual: t.dims() });
        }
        let mut buf = self.take_buf(p);
        buf.extend_from_slice(t.data());
        self.slots[p] = Stored::Tensor(RawTensor::from_parts(t.dims(), buf));
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
