//! The one routine that runs every generated program: a [`Plan`]'s forward, level by level, then
//! the reverse sweep of the chosen pass, step by step, through the steps of this module's
//! siblings. The plan holds every decision (which node, which buffer, which pending uniforms);
//! this loop only reads it. It sees the graph as a [`BoundGraph`] (the data's type erased), so
//! for `f32` and `f64` it is compiled once, in this crate (`crate::compiled`).

use super::ProgramState;
use crate::error::Error;
use crate::program::bound::BoundGraph;
use crate::program::plan::{PassPlan, Plan, Writes};
use crate::program::Pass;
use crate::scalar::Scalar;

/// How a [`run_plan`](ProgramState::run_plan) ended.
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
    /// Runs `plan` on `graph` (the graph of the same expansion bound to the run's data, its
    /// inputs lent to the state and its seeds in place): the forward, then the sweep of `pass`,
    /// leaving the input gradients in the state.
    ///
    /// # Errors
    /// The first failing node's error (as `compile` reports it), or a VJP's error.
    #[doc(hidden)]
    pub fn run_plan(&mut self, plan: &Plan, graph: &(dyn BoundGraph<A> + Sync), pass: Pass) -> Result<Ran, Error> {
        if A::COMPILED {
            return (A::compiled().run_plan)(self, plan, graph, pass);
        }
        self.run_plan_body(plan, graph, pass)
    }

    /// [`run_plan`](Self::run_plan)'s body (compiled in this crate for `f32` and `f64`).
    pub(crate) fn run_plan_body(
        &mut self,
        plan: &Plan,
        graph: &(dyn BoundGraph<A> + Sync),
        pass: Pass,
    ) -> Result<Ran, Error> {
        self.run_forward(plan, graph)?;
        let index = match pass {
            Pass::All => 0,
            Pass::From(j) => 1 + j,
        };
        let sweep = match plan.passes.get(index) {
            Some(PassPlan::Planned(sweep)) => sweep,
            Some(PassPlan::Runtime) => {
                let output = plan.outputs.get(index - 1).copied().ok_or_else(|| not_planned(0, "an output"))?;
                return Ok(Ran::Runtime(output));
            }
            None => return Err(not_planned(0, "a pass")),
        };
        for (t, (step, shift)) in sweep.steps.iter().enumerate() {
            let k = step.node_at(shift);
            let p = self.inputs + k;
            let g = self.cotangent(p, step.cotangent_at(shift));
            match &step.writes {
                Writes::Built(writes) => {
                    let root = self.vjp(t, k, graph, &g)?;
                    for i in 0..writes.len() {
                        let (q, pending) = step.write_at(shift, i).ok_or_else(|| not_planned(k, "a write"))?;
                        self.accumulate(k, graph.name(k), root, q, pending, &g)?;
                    }
                }
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
        for (q, (pending, shift)) in sweep.inputs.iter().enumerate() {
            self.input_gradient(q, shift.range(0, pending));
        }
        Ok(Ran::Done)
    }

    /// The plan's forward: each level's built-in nodes (together when two or more), an opaque
    /// node or user op through the graph's node, the value buffers given back after the level,
    /// then the first failure's error.
    fn run_forward(&mut self, plan: &Plan, graph: &(dyn BoundGraph<A> + Sync)) -> Result<(), Error> {
        for (level, shift) in plan.forward.iter() {
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
        self.forward_result()
    }
}
