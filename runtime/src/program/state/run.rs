//! The one routine that runs every generated program: a [`Plan`]'s forward, level by level, then
//! the reverse sweep of the chosen pass, step by step, through the steps of this module's
//! siblings. The plan holds every decision (which node, which buffer, which pending uniforms);
//! this loop only reads it.

use super::ProgramState;
use crate::error::Error;
use crate::graph::{CompactOp, Program as NodeProgram, RawGraph};
use crate::program::plan::{PassPlan, Plan, Writes};
use crate::program::Pass;
use crate::scalar::Scalar;

/// Built-in node `k`'s op (every built-in node of a graph `graph!` built is a compact op).
fn compact<A: 'static, D: 'static>(graph: &RawGraph<A, D>, k: usize) -> Result<&dyn CompactOp<A, D>, Error> {
    match graph.nodes().get(k).map(|n| n.program()) {
        Some(NodeProgram::Compact(op)) => Ok(&**op),
        _ => Err(not_planned(k, "a built-in op")),
    }
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
    /// Runs `plan` on `graph` (the graph of the same expansion, its inputs lent to the state and
    /// its seeds in place): the forward, then the sweep of `pass`, leaving the input gradients in
    /// the state.
    ///
    /// # Errors
    /// The first failing node's error (as `compile` reports it), or a VJP's error.
    #[doc(hidden)]
    pub fn run_plan<D: Sync + 'static>(
        &mut self,
        plan: &Plan,
        graph: &RawGraph<A, D>,
        data: &D,
        pass: Pass,
    ) -> Result<(), Error> {
        self.run_forward(plan, graph, data)?;
        let index = match pass {
            Pass::All => 0,
            Pass::From(j) => 1 + j,
        };
        let sweep = match plan.passes.get(index) {
            Some(PassPlan::Planned(sweep)) => sweep,
            Some(PassPlan::Runtime) => {
                let output = plan.outputs.get(index - 1).copied().ok_or_else(|| not_planned(0, "an output"))?;
                return self.sweep_from_runtime(graph, data, output);
            }
            None => return Err(not_planned(0, "a pass")),
        };
        for (t, (step, shift)) in sweep.steps.iter().enumerate() {
            let k = step.node_at(shift);
            let p = self.inputs + k;
            let g = self.cotangent(p, step.cotangent_at(shift));
            match &step.writes {
                Writes::Built(writes) => {
                    let op = compact(graph, k)?;
                    let root = self.vjp(t, k, op, &g, data)?;
                    for i in 0..writes.len() {
                        let (q, pending) = step.write_at(shift, i).ok_or_else(|| not_planned(k, "a write"))?;
                        self.accumulate(k, op.name(), root, q, pending, &g)?;
                    }
                }
                Writes::Product(writes) => {
                    let op = compact(graph, k)?.as_product().ok_or_else(|| not_planned(k, "a product"))?;
                    // A repeated step's writes, moved to its iteration, in a buffer kept from run to run.
                    let mut moved = core::mem::take(&mut self.moved_writes);
                    moved.clear();
                    moved.extend((0..writes.len()).filter_map(|i| step.write_at(shift, i)));
                    let result = self.vjp_product(t, k, op, &g, data, &moved);
                    self.moved_writes = moved;
                    result?;
                }
                Writes::Window(..) => {
                    let op = compact(graph, k)?.as_window().ok_or_else(|| not_planned(k, "a window"))?;
                    let (q, pending) = step.write_at(shift, 0).ok_or_else(|| not_planned(k, "a window"))?;
                    self.vjp_window(t, k, op, &g, q, pending)?;
                }
                Writes::WholePrefix(pending) => self.vjp_node(t, k, graph, &g, data, pending)?,
            }
            self.release(p, g);
        }
        for (q, pending) in sweep.inputs.iter().enumerate() {
            self.input_gradient(q, pending.clone());
        }
        Ok(())
    }

    /// The plan's forward: each level's built-in nodes (together when two or more), an opaque
    /// node or user op through the graph's node, the value buffers given back after the level,
    /// then the first failure's error.
    fn run_forward<D: Sync + 'static>(&mut self, plan: &Plan, graph: &RawGraph<A, D>, data: &D) -> Result<(), Error> {
        for (level, shift) in plan.forward.iter() {
            let first = level.nodes.first().map(|&k| shift.at(0, k));
            match (first, level.nodes.len()) {
                (Some(k), _) if level.graph => self.forward_node(k, graph, data),
                (Some(k), 1) => self.forward(k, compact(graph, k)?, data),
                _ => {
                    // A repeated level's nodes, moved to its iteration, in a buffer kept from run to run.
                    let mut moved = core::mem::take(&mut self.moved_nodes);
                    moved.clear();
                    moved.extend(level.nodes.iter().enumerate().map(|(i, &k)| shift.at(i, k)));
                    self.forward_level(&moved, graph, data);
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
