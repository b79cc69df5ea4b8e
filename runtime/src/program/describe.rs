//! [`Plan::describe`]: a plan's tables in words — the forward (value buffers, what is kept and
//! what is given back) and each pass's reverse sweep (per step the node, its VJP, the saved values
//! it reads, the positions it adds into with their pending uniforms, and the gradient buffers).

use core::fmt::Write as _;
use core::ops::Range;

use super::plan::{InputDecl, PassPlan, Plan, PlannedKind, Sweep, Table, Writes};

/// `%3, %4`.
fn positions(ps: &[usize]) -> String {
    ps.iter().map(|q| format!("%{q}")).collect::<Vec<_>>().join(", ")
}

fn pending(r: &Range<usize>) -> String {
    match r.len() {
        0 => "nothing pending".to_owned(),
        1 => format!("+ the uniform of visit {}", r.start),
        _ => format!("+ the uniforms of visits {}..{}", r.start, r.end),
    }
}

/// A node of the plan with its repeat applied.
struct NodeText {
    kind: PlannedKind,
    op: &'static str,
    shape: &'static str,
    parents: Vec<usize>,
    label: String,
}

impl Plan {
    /// The planned schedules in words, one line per step: the forward level by level (each
    /// node's value buffer, whether it is kept, what is given back after each level), then each
    /// pass's sweep (which node runs, its VJP and the saved values it reads, the uniforms pending
    /// on each position it writes, and what it frees).
    #[must_use]
    pub fn describe(&self) -> String {
        let mut text = String::new();
        let nodes = self.node_texts();
        self.describe_forward(&nodes, &mut text);
        let outputs = positions(self.outputs);
        let _ = writeln!(text, "all-inputs pass (seeds at {outputs}):");
        for (index, pass) in self.passes.iter().enumerate() {
            if index > 0 {
                let (j, o) = (index - 1, self.outputs.get(index - 1).copied().unwrap_or(0));
                let _ = write!(text, "single-output pass from output {j} (%{o}):");
                if let PassPlan::Runtime = pass {
                    text.push_str(
                        " the runtime's backprop_from loop (user compact ops declare their supports at run time)",
                    );
                }
                text.push('\n');
            }
            if let PassPlan::Planned(sweep) = pass {
                let buffers = self.memory.gradients.get(index).map(Table::<usize>::to_vec).unwrap_or_default();
                self.describe_sweep(&nodes, sweep, &buffers, &mut text);
            }
        }
        text
    }

    /// Every node with its parents and label, repeats expanded.
    fn node_texts(&self) -> Vec<NodeText> {
        self.nodes
            .iter()
            .map(|(node, shift)| NodeText {
                kind: node.kind,
                op: node.op,
                shape: node.shape,
                parents: node.parents_at(shift).collect(),
                label: node.label_at(shift),
            })
            .collect()
    }

    fn describe_forward(&self, nodes: &[NodeText], text: &mut String) {
        let n_in = InputDecl::count(self.inputs);
        let memory = &self.memory;
        let (kept, values) = (memory.kept.to_vec(), memory.values.to_vec());
        let _ = writeln!(
            text,
            "forward ({} value buffers; kept: read by a VJP or a declared output; a level's nodes read only \
             lower levels and may run at the same time):",
            memory.value_buffers
        );
        for (l, (level, shift)) in self.forward.iter().enumerate() {
            let _ = writeln!(text, "  level {l}:");
            for (i, &k) in level.nodes.iter().enumerate() {
                let k = shift.at(i, k);
                let Some(node) = nodes.get(k) else { continue };
                let kept = if kept.get(k).copied().unwrap_or(false) { ", kept" } else { "" };
                let label = if node.label.is_empty() { String::new() } else { format!(" ({})", node.label) };
                let buffer = values.get(k).copied().unwrap_or(0);
                let _ = writeln!(
                    text,
                    "    node {k} %{}{label} = {}({}) : {} into value buffer v{buffer}{kept}",
                    n_in + k,
                    node.op,
                    positions(&node.parents),
                    node.shape,
                );
            }
            if !level.frees.is_empty() {
                let frees: Vec<usize> =
                    level.frees.iter().enumerate().map(|(i, &q)| shift.at(level.nodes.len() + i, q)).collect();
                let _ = writeln!(text, "    gives back the value buffers of {}", positions(&frees));
            }
        }
    }

    fn describe_sweep(&self, nodes: &[NodeText], sweep: &Sweep, buffers: &[usize], text: &mut String) {
        let n_in = InputDecl::count(self.inputs);
        let names = InputDecl::names(self.inputs);
        let buffer = |q: usize| buffers.get(q).copied().unwrap_or(0);
        for (t, (step, shift)) in sweep.steps.iter().enumerate() {
            let k = step.node_at(shift);
            let Some(node) = nodes.get(k) else { continue };
            let p = n_in + k;
            let names: Vec<String> = node.parents.iter().map(|q| format!("%{q}")).collect();
            let (vjp, reads) = match (node.kind, exactgrad_spec::ops::by_name(node.op)) {
                (PlannedKind::Builtin, Some(op)) => {
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    let mut r: Vec<String> = op.reads.operands.iter().filter_map(|&i| names.get(i).cloned()).collect();
                    if op.reads.output {
                        r.push(format!("%{p}"));
                    }
                    if op.reads.data {
                        r.push("data".to_owned());
                    }
                    (op.vjp.describe(&refs), r.join(", "))
                }
                (PlannedKind::Custom, _) => ("user compact op".to_owned(), "the whole prefix".to_owned()),
                _ => ("dense VJP (opaque)".to_owned(), "the whole prefix".to_owned()),
            };
            let _ = writeln!(
                text,
                "  {t}: node {k} %{p} = {}({}) : {}; cotangent %{p} (gradient buffer g{}) {}; VJP {vjp}, reads [{reads}]",
                node.op,
                names.join(", "),
                node.shape,
                buffer(p),
                pending(&step.cotangent_at(shift))
            );
            let adds = |text: &mut String, writes: &[(usize, Range<usize>)]| {
                for (q, r) in writes {
                    let _ = writeln!(text, "       adds into %{q} (g{}, {})", buffer(*q), pending(r));
                }
            };
            let moved: Vec<(usize, Range<usize>)> = (0..).map_while(|i| step.write_at(shift, i)).collect();
            match &step.writes {
                Writes::Built(_) => adds(text, &moved),
                Writes::Product(_) => {
                    adds(text, &moved);
                    text.push_str("       (each product written straight onto a position that holds a uniform)\n");
                }
                Writes::Window(..) => {
                    adds(text, &moved);
                    text.push_str("       (the cotangent's window added in one pass, zeros around it)\n");
                }
                Writes::WholePrefix(_) => {
                    let _ = writeln!(text, "       adds into every position below %{p}");
                }
            }
            let _ = writeln!(text, "       frees the cotangent of %{p} (g{} is free for a later position)", buffer(p));
        }
        for (q, r) in sweep.inputs.to_vec().iter().enumerate().take(n_in) {
            let name = names.get(q).map_or("", String::as_str);
            let name = if name.contains('[') { format!(" ({name})") } else { String::new() };
            let _ = writeln!(text, "  input %{q}{name}: gradient = slot {}", pending(r));
        }
    }
}
