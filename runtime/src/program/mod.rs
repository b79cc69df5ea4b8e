//! The backward programs `graph!` generates for each model (`Model::program::<A>()`): one saved
//! forward and a straight-line reverse sweep per pass, whose schedule — the order of every
//! addition, where each contribution's `+ 0` lands, which uniforms are pending at each write —
//! was resolved when the macro expanded and written out as tables ([`plan`]). The model's
//! generated `run` function is the program's control flow: the forward's rows, then the chosen
//! pass's sweep, a rolled loop of the model as a Rust `for` loop over its iterations; it calls
//! the routines of this crate that run a table's rows (see [`state`] for their steps).
//!
//! A [`Program`] offers the all-inputs pass ([`gradients`](Program::gradients), seeds on the
//! declared outputs) and each declared output's single-output pass
//! ([`gradients_from`](Program::gradients_from)). Each returns the input gradients, bit for bit
//! those of the runtime passes on the same graph: `backprop_inputs_dense` with the seeds at the
//! outputs, and `backprop_from(output, seed)` (SEMANTICS §3–§7). The buffers were planned by
//! liveness when the macro expanded ([`MemoryPlan`]); they are allocated on the first run and
//! reused by every later one.

pub mod bound;
mod describe;
pub mod plan;
pub mod state;

use core::marker::PhantomData;

pub use plan::{Level, PassPlan, Plan, PlannedKind, PlannedNode, Step, Sweep, Writes};
pub use state::{MemoryPlan, ProgramState};

use crate::error::Error;
use crate::graph::{GraphData, RawGraph};
use crate::pack::Pack;
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::{RawTensor, Tensor};

/// The error of a program made without a part its plan needs (never for the code `graph!`
/// generates, which sets what its model needs).
#[cold]
fn not_generated(what: &str) -> Error {
    Error::Node {
        node: 0,
        op: "graph".to_owned(),
        parent_shapes: Vec::new(),
        message: format!("this program was made without the part that {what}"),
    }
}

/// Which generated sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// The all-inputs pass, seeded at every declared output.
    All,
    /// The single-output pass of the declared output with this index (0 = the first).
    From(usize),
}

/// Seeds for every declared output of a model: one tensor (a single output) or a tuple of them.
pub trait OutputSeeds<A> {
    /// Number of seeds.
    fn count(&self) -> usize;
    /// The seed of output `k` (`k < count`).
    fn seed(&self, k: usize) -> Option<&RawTensor<A>>;
}

impl<A, S: Shape> OutputSeeds<A> for Tensor<A, S> {
    fn count(&self) -> usize {
        1
    }
    fn seed(&self, k: usize) -> Option<&RawTensor<A>> {
        (k == 0).then(|| self.raw())
    }
}

macro_rules! output_seeds {
    ($($t:ident . $i:tt),+) => {
        impl<A, $($t: Shape),+> OutputSeeds<A> for ($(Tensor<A, $t>,)+) {
            fn count(&self) -> usize {
                [$($i),+].len()
            }
            fn seed(&self, k: usize) -> Option<&RawTensor<A>> {
                match k {
                    $($i => Some(self.$i.raw()),)+
                    _ => None,
                }
            }
        }
    };
}
output_seeds!(S0.0, S1.1);
output_seeds!(S0.0, S1.1, S2.2);
output_seeds!(S0.0, S1.1, S2.2, S3.3);

/// A model's generated backward program (see the [module docs](self)): `A` the scalar, `D` the
/// data, `G` the input list, `O` the output seeds, `Br` the graph's brand.
pub struct Program<A, D, G, O, Br> {
    graph: RawGraph<A, D>,
    /// The first error found while building the graph, returned by every run.
    build_error: Option<Error>,
    visits: usize,
    plan: &'static Plan,
    /// The model's generated `run`.
    run: RunFn<A>,
    state: Option<ProgramState<A>>,
    gradients: Pack<A, G>,
    /// Binds a graph's run-time dims from a run's inputs and data (set for models with run-time
    /// dims: [`with_run_time_dims`](Self::with_run_time_dims)).
    bind: Option<BindDims<A, D>>,
    /// The runtime's single-output loop (set for models with user compact ops:
    /// [`with_runtime_passes`](Self::with_runtime_passes)).
    runtime_from: Option<RuntimeFrom<A, D>>,
    marker: PhantomData<fn() -> (O, Br)>,
}

/// A model's generated `run`: the forward's rows, then the sweep of the pass (or the runtime's
/// single-output loop, for a model with user compact ops: [`Ran::Runtime`](state::Ran)).
pub type RunFn<A> = fn(&mut ProgramState<A>, &(dyn bound::BoundGraph<A> + Sync), Pass) -> Result<state::Ran, Error>;

/// [`RawGraph::bound_dims`](crate::RawGraph) as a program calls it.
type BindDims<A, D> =
    for<'g> fn(&'g RawGraph<A, D>, &[RawTensor<A>], &D) -> Result<std::borrow::Cow<'g, [Dims]>, Error>;

/// [`ProgramState::sweep_from_runtime`] as a program calls it.
type RuntimeFrom<A, D> = fn(&mut ProgramState<A>, &RawGraph<A, D>, &D, usize) -> Result<(), Error>;

/// The graph, the declared outputs, the memory plan and the build error, if any (the plan's
/// other tables and the buffers are not shown).
impl<A: 'static, D: 'static, G, O, Br> core::fmt::Debug for Program<A, D, G, O, Br> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Program")
            .field("graph", &self.graph)
            .field("outputs", &self.plan.outputs)
            .field("plan", &self.plan.memory)
            .field("build_error", &self.build_error)
            .finish_non_exhaustive()
    }
}

impl<A: Scalar, D: Sync + 'static, G, O, Br> Program<A, D, G, O, Br> {
    /// The program running `plan` over `graph` by `run` (all three from the same expansion of
    /// `graph!`, which calls this).
    #[doc(hidden)]
    pub fn new<Ss>(graph: GraphData<A, D, G, Ss, Br>, plan: &'static Plan, run: RunFn<A>) -> Self {
        let build_error = graph.first_build_error();
        let raw = graph.into_raw();
        let visits = raw.nodes().len();
        // An input whose shape cannot be a tensor is the build error every run returns.
        // An input with run-time dims gets its gradient buffer at its first run's size.
        let dynamic = !raw.run_time_dims().is_empty();
        let inputs = raw.dims()[..raw.num_inputs()]
            .iter()
            .map(|&d| {
                if dynamic {
                    RawTensor::vacant(d)
                } else {
                    RawTensor::try_zeros(d).unwrap_or_else(|_| RawTensor::vacant(d))
                }
            })
            .collect();
        Program {
            graph: raw,
            build_error,
            visits,
            plan,
            run,
            state: None,
            gradients: Pack::from_raw(None, inputs),
            bind: None,
            runtime_from: None,
            marker: PhantomData,
        }
    }

    /// The program of a model with run-time dims, which binds them from each run's inputs and
    /// data. (Called by the code `graph!` generates for such models only, so other models'
    /// crates do not compile the binding.)
    #[doc(hidden)]
    #[must_use]
    pub fn with_run_time_dims(mut self) -> Self {
        self.bind = Some(|graph, inputs, data| graph.bound_dims(inputs, data));
        self
    }

    /// The program of a model with user compact ops, whose single-output passes run the
    /// runtime's own loop. (Called by the code `graph!` generates for such models only.)
    #[doc(hidden)]
    #[must_use]
    pub fn with_runtime_passes(mut self) -> Self {
        self.runtime_from = Some(ProgramState::sweep_from_runtime::<D>);
        self
    }

    /// The graph the program runs.
    pub fn graph(&self) -> &RawGraph<A, D> {
        &self.graph
    }

    /// The bytes of the buffers the program's plan holds once every pass has run, for this
    /// graph's shapes: each value buffer and each gradient buffer at the largest position the plan
    /// puts in it, and the input gradients handed back. The inputs themselves are the caller's;
    /// the contribution tensors a node builds while it runs and the GEMM's packing buffers come on
    /// top (at most a few tensors of the largest position).
    /// For a graph with run-time dims, the shapes of the last run.
    /// For `x: [4, 3]`, `w: [3, 2]` and one node `x · w: [4, 2]` in `f32`: the value 8 (the
    /// output), gradients 12 + 6 + 8, input gradients 12 + 6, so 52 × 4 bytes. Saturates at
    /// `usize::MAX` (for shapes whose element count overflows, which no run accepts).
    pub fn planned_bytes(&self) -> usize {
        let numel = |d: &Dims| d.checked_numel().unwrap_or(usize::MAX);
        // With run-time dims: the sizes of the last run (before any, the stand-ins: saturates).
        let dims = self.state.as_ref().map_or(self.graph.dims(), ProgramState::dims);
        let n_in = self.graph.num_inputs();
        let mut values = vec![0usize; self.plan.memory.value_buffers];
        for (k, b) in self.plan.memory.values.to_vec().into_iter().enumerate() {
            if let (Some(v), Some(d)) = (values.get_mut(b), dims.get(n_in + k)) {
                *v = (*v).max(numel(d));
            }
        }
        let mut gradients = vec![0usize; self.plan.memory.gradient_buffers];
        for pass in self.plan.memory.gradients {
            for (q, b) in pass.to_vec().into_iter().enumerate() {
                if let (Some(g), Some(d)) = (gradients.get_mut(b), dims.get(q)) {
                    *g = (*g).max(numel(d));
                }
            }
        }
        let sum = |xs: &mut dyn Iterator<Item = usize>| xs.fold(0usize, usize::saturating_add);
        let inputs = sum(&mut dims[..n_in].iter().map(numel));
        let elements = sum(&mut [sum(&mut values.into_iter()), sum(&mut gradients.into_iter()), inputs].into_iter());
        elements.saturating_mul(core::mem::size_of::<A>())
    }

    /// One run: checks, seeds (`seed` is called with the state and the output positions), the
    /// sweep of `pass`, the input gradients into `self.gradients`.
    fn run(
        &mut self,
        inputs: &mut Pack<A, G>,
        data: &D,
        pass: Pass,
        seed: impl FnOnce(&mut ProgramState<A>, &[usize]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if let Some(e) = &self.build_error {
            return Err(e.clone());
        }
        // On a pool's thread: a caller outside every pool becomes one of its own.
        crate::parallel::entered(|| self.run_here(inputs, data, pass, seed))
    }

    /// [`run`](Self::run) on the current thread.
    fn run_here(
        &mut self,
        inputs: &mut Pack<A, G>,
        data: &D,
        pass: Pass,
        seed: impl FnOnce(&mut ProgramState<A>, &[usize]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let n_in = self.graph.num_inputs();
        let plan = self.plan.memory;
        let state = if self.graph.run_time_dims().is_empty() {
            let dims = self.graph.dims();
            let fits = inputs.len() == n_in && inputs.as_slice().iter().zip(dims).all(|(t, &d)| t.dims() == d);
            if !fits {
                let actual = inputs.as_slice().iter().map(RawTensor::dims).collect();
                return Err(Error::PackShapes { what: "graph inputs", expected: dims[..n_in].to_vec(), actual });
            }
            self.state.get_or_insert_with(|| ProgramState::new(dims, n_in, self.visits, plan))
        } else {
            // Run-time dims: bound from these inputs and data; the buffers are planned again when
            // the sizes change (a run at the sizes of the last one reuses them).
            let bind = self.bind.ok_or_else(|| not_generated("binds run-time dims"))?;
            let dims = bind(&self.graph, inputs.as_slice(), data)?;
            match &mut self.state {
                Some(st) if st.dims() == &*dims => st,
                slot => slot.insert(ProgramState::new(&dims, n_in, self.visits, plan)),
            }
        };
        state.reset();
        state.select_pass(match pass {
            Pass::All => 0,
            Pass::From(j) => 1 + j,
        });
        seed(state, self.plan.outputs)?;
        state.swap_inputs(inputs.tensors_mut());
        let bound = bound::Bound { graph: &self.graph, data };
        let result = match (self.run)(state, &bound, pass) {
            Ok(state::Ran::Done) => Ok(()),
            Ok(state::Ran::Runtime(output)) => match self.runtime_from {
                Some(from) => from(state, &self.graph, data, output),
                None => Err(not_generated("runs the runtime's single-output loop")),
            },
            Err(e) => Err(e),
        };
        state.swap_inputs(inputs.tensors_mut());
        if result.is_ok() {
            state.swap_input_gradients(self.gradients.tensors_mut());
        }
        result
    }

    /// The single-output pass from the declared output `output`: the gradients of every input,
    /// bit for bit those `saved.backprop_from(output, seed)` gives them (for a scalar without
    /// storage equality that is the all-inputs sweep with this one seed, SEMANTICS §7).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] when `output` is not a declared output; else as
    /// [`gradients`](Self::gradients).
    pub fn gradients_from<S: Shape>(
        &mut self,
        output: Position<S, Br>,
        inputs: &mut Pack<A, G>,
        data: &D,
        seed: &Tensor<A, S>,
    ) -> Result<&Pack<A, G>, Error> {
        let Some(index) = self.plan.outputs.iter().position(|&o| o == output.index()) else {
            return Err(Error::ForeignPosition { index: output.index(), len: self.graph.dims().len() });
        };
        // Without storage equality the single-output pass is the dense all-seeds pass (§7): every
        // node runs, with the one seed.
        let pass = if A::HAS_STORAGE_EQUALITY { Pass::From(index) } else { Pass::All };
        self.run(inputs, data, pass, |st: &mut ProgramState<A>, _: &[usize]| st.seed(output.index(), seed.raw()))?;
        Ok(&self.gradients)
    }

    /// The value the last run computed at `pos` (a declared output: the handles of a model name
    /// only its inputs and outputs, and the program keeps every output's value; it gives back
    /// the buffers of values no VJP reads during the forward).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] before the first run or for an input or out-of-range position.
    pub fn value<S: Shape>(&self, pos: Position<S, Br>) -> Result<&RawTensor<A>, Error> {
        let (index, len) = (pos.index(), self.graph.dims().len());
        self.state.as_ref().and_then(|st| st.value(index)).ok_or(Error::ForeignPosition { index, len })
    }
}

impl<A: Scalar, D: Sync + 'static, G, O: OutputSeeds<A>, Br> Program<A, D, G, O, Br> {
    /// The all-inputs pass: the forward, then the gradients of every input with `seeds` at the
    /// declared outputs (zeros elsewhere) — bit for bit
    /// `saved.backprop_inputs_dense(seeds at the outputs)` of the same graph. The inputs are lent
    /// to the program for the run (moved in and back, not copied).
    ///
    /// # Errors
    /// The graph's first build error, [`Error::PackShapes`] for inputs of other shapes,
    /// [`Error::Node`] for a node failing validation, [`Error::Vjp`] for a malformed VJP.
    pub fn gradients(&mut self, inputs: &mut Pack<A, G>, data: &D, seeds: &O) -> Result<&Pack<A, G>, Error> {
        self.run(inputs, data, Pass::All, |st: &mut ProgramState<A>, outputs: &[usize]| {
            for (k, &p) in outputs.iter().enumerate() {
                if let Some(t) = seeds.seed(k) {
                    st.seed(p, t)?;
                }
            }
            Ok(())
        })?;
        Ok(&self.gradients)
    }
}
