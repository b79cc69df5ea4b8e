//! The routines a model's generated `run` function calls: a run of the forward's levels, a run of
//! a sweep's visits, and a sweep's end. The generated function is the program's control flow —
//! the forward's rows, then per pass its sweep's rows, a rolled loop as a Rust `for` loop over its
//! iterations ([`Rows`]); the plan's tables hold every decision (which node, which buffer, which
//! pending uniforms) and these routines only read them. They see the graph as a [`BoundGraph`]
//! (the data's type erased), so for `f32` and `f64` they are compiled once, in this crate
//! (`crate::compiled`), and a model's crate compiles only its own `run`.

use super::ProgramState;
use crate::error::Error;
use crate::guard::guarded;
use crate::program::bound::BoundGraph;
use crate::program::plan::{Plan, Rows, Sweep, Writes};
use crate::program::Pass;
use crate::scalar::Scalar;

/// How a generated `run` ended.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// The pass ran; the input gradients are in the state.
    Done,
    /// The forward ran; the pass is the runtime's own single-output loop from this position (a
    /// model with user compact ops), which the caller runs.
    Runtime(usize),
}

/// The error for a graph whose node `k` is not what the plan says (never for a graph and a plan
/// of the same expansion).
#[cold]
fn not_planned(k: usize, what: &str) -> Error {
    Error::Node {
        node: k,
        op: "graph".to_owned(),
        parent_shapes: Vec::new(),
        message: format!("the program's plan expects {what} here"),
    }
}

impl<A: Scalar> ProgramState<A> {
    /// Runs the forward's levels `rows` (a model's generated `run` calls this for each run of
    /// written rows and each iteration of a repeated one, in order, then
    /// [`forward_result`](Self::forward_result)): each level's built-in nodes (together when two
    /// or more), an opaque node or user op through the graph's node, then the value buffers given
    /// back after the level. A node's failure is recorded for `forward_result`.
    #[doc(hidden)]
    pub fn forward_rows(&mut self, plan: &Plan, graph: &(dyn BoundGraph<A> + Sync), rows: Rows) {
        if A::COMPILED {
            return (A::compiled().forward_rows)(self, plan, graph, rows);
        }
        self.forward_rows_body(plan, graph, rows);
    }

    /// [`forward_rows`](Self::forward_rows)' body (compiled in this crate for `f32` and `f64`).
    pub(crate) fn forward_rows_body(&mut self, plan: &Plan, graph: &(dyn BoundGraph<A> + Sync), rows: Rows) {
        for (level, shift) in plan.forward.at(rows) {
            let first = level.nodes.first().map(|&k| shift.at(0, k));
            match (first, level.nodes.len()) {
                (Some(k), _) if level.graph => self.forward_node(k, graph),
                (Some(k), 1) => self.forward(k, graph),
                _ if !shift.moves() => self.forward_level(level.nodes, graph),
                _ => {
                    // A repeated level's nodes, moved to its iteration, in a buffer kept from run to run.
                    let mut moved = core::mem::take(&mut self.moved_nodes);
                    moved.clear();
                    moved.extend(level.nodes.iter().enumerate().map(|(i, &k)| shift.at(i, k)));
                    self.forward_level(&moved, graph);
                    self.moved_nodes = moved;
                }
            }
            for (i, &q) in level.frees.iter().enumerate() {
                self.free_value(shift.at(level.nodes.len() + i, q));
            }
        }
    }

    /// Runs the visits `rows` of `sweep` (a model's generated `run` calls this for each run of
    /// written rows and each iteration of a repeated one, in order, then
    /// [`sweep_inputs`](Self::sweep_inputs)), numbering the visits from 0 since the run began:
    /// each visit takes its node's cotangent, runs its VJP and adds each contribution at its
    /// planned position with the uniforms pending there.
    ///
    /// # Errors
    /// A VJP's error, or a plan whose rows name no write (never for a generated program).
    #[doc(hidden)]
    pub fn sweep_rows(&mut self, sweep: &Sweep, graph: &(dyn BoundGraph<A> + Sync), rows: Rows) -> Result<(), Error> {
        if A::COMPILED {
            return (A::compiled().sweep_rows)(self, sweep, graph, rows);
        }
        self.sweep_rows_body(sweep, graph, rows)
    }

    /// [`sweep_rows`](Self::sweep_rows)' body (compiled in this crate for `f32` and `f64`): the
    /// visits under one guard, so that a panic in a step that is not guarded itself (a built-in
    /// elementwise op's read) is the error of the node that ran, and the state stays usable (the
    /// next run resets it).
    pub(crate) fn sweep_rows_body(
        &mut self,
        sweep: &Sweep,
        graph: &(dyn BoundGraph<A> + Sync),
        rows: Rows,
    ) -> Result<(), Error> {
        match guarded("the VJP", || self.visit_rows(sweep, graph, rows)) {
            Ok(result) => result,
            Err(message) => Err(super::sweep::vjp_error(self.visiting, graph.name(self.visiting), message)),
        }
    }

    /// The visits of [`sweep_rows_body`](Self::sweep_rows_body), unguarded.
    fn visit_rows(&mut self, sweep: &Sweep, graph: &(dyn BoundGraph<A> + Sync), rows: Rows) -> Result<(), Error> {
        for (step, shift) in sweep.steps.at(rows) {
            let t = self.visit;
            self.visit += 1;
            let k = step.node_at(shift);
            self.visiting = k;
            let p = self.inputs + k;
            let g = self.cotangent(p, step.cotangent_at(shift));
            match &step.writes {
                Writes::Built(writes) => match graph.elementwise(k) {
                    Some(op) => {
                        self.uniforms[t] = op.elementwise_uniform();
                        for i in 0..writes.len() {
                            let (q, pending) = step.write_at(shift, i).ok_or_else(|| not_planned(k, "a write"))?;
                            self.vjp_elementwise(k, graph, op, &g, q, pending)?;
                        }
                    }
                    None => {
                        let root = self.vjp(t, k, graph, &g)?;
                        for i in 0..writes.len() {
                            let (q, pending) = step.write_at(shift, i).ok_or_else(|| not_planned(k, "a write"))?;
                            self.accumulate(k, graph.name(k), root, q, pending, &g)?;
                        }
                    }
                },
                Writes::Product(writes) if !shift.moves() => self.vjp_product(t, k, graph, &g, writes)?,
                Writes::Product(writes) => {
                    // A repeated step's writes, moved to its iteration, in a buffer kept from run
                    // to run.
                    let mut moved = core::mem::take(&mut self.moved_writes);
                    moved.clear();
                    moved.extend((0..writes.len()).filter_map(|i| step.write_at(shift, i)));
                    let result = self.vjp_product(t, k, graph, &g, &moved);
                    self.moved_writes = moved;
                    result?;
                }
                Writes::Window(..) => {
                    let (q, pending) = step.write_at(shift, 0).ok_or_else(|| not_planned(k, "a window"))?;
                    self.vjp_window(t, k, graph, &g, q, pending)?;
                }
                Writes::WholePrefix(pending) => self.vjp_node(t, k, graph, &g, pending)?,
            }
            self.release(p, g);
        }
        Ok(())
    }

    /// Ends `sweep`: every input's final gradient, the uniforms pending on it applied.
    #[doc(hidden)]
    pub fn sweep_inputs(&mut self, sweep: &Sweep) -> Ran {
        if A::COMPILED {
            (A::compiled().sweep_inputs)(self, sweep);
        } else {
            self.sweep_inputs_body(sweep);
        }
        Ran::Done
    }

    /// [`sweep_inputs`](Self::sweep_inputs)' body (compiled in this crate for `f32` and `f64`).
    pub(crate) fn sweep_inputs_body(&mut self, sweep: &Sweep) {
        for (q, (pending, shift)) in sweep.inputs.iter().enumerate() {
            self.input_gradient(q, shift.range(0, pending));
        }
    }

    /// The error of a run whose pass has no planned sweep (never for a generated program).
    #[doc(hidden)]
    #[cold]
    #[must_use]
    pub fn no_sweep(pass: Pass) -> Error {
        not_planned(0, &format!("a sweep for the pass {pass:?}"))
    }
}
