//! [`Plan::describe`]: a plan's tables in words — the forward (value buffers, what is kept and
//! what is given back) and each pass's reverse sweep (per step the node, its VJP, the saved values
//! it reads, the positions it adds into with their pending uniforms, and the gradient buffers).

use core::fmt::Write as _;
use core::ops::Range;

use super::plan::{PassPlan, Plan, PlannedKind, Sweep, Writes};

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

impl Plan {
    /// The planned schedules in words, one line per step: the forward level by level (each
    /// node's value buffer, whether it is kept, what is given back after each level), then each
    /// pass's sweep (which node runs, its VJP and the saved values it reads, the uniforms pending
    /// on each position it writes, and what it frees).
    #[must_use]
    pub fn describe(&self) -> String {
        let mut text = String::new();
        self.describe_forward(&mut text);
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
                let buffers = self.memory.gradients.get(index).copied().unwrap_or(&[]);
                self.describe_sweep(sweep, buffers, &mut text);
            }
        }
        text
    }

    fn describe_forward(&self, text: &mut String) {
        let n_in = self.inputs.len();
        let memory = &self.memory;
        let _ = writeln!(
            text,
            "forward ({} value buffers; kept: read by a VJP or a declared output; a level's nodes read only \
             lower levels and may run at the same time):",
            memory.value_buffers
        );
        for (l, level) in self.forward.iter().enumerate() {
            let _ = writeln!(text, "  level {l}:");
            for &k in level.nodes {
                let Some(node) = self.nodes.get(k) else { continue };
                let kept = if memory.kept.get(k).copied().unwrap_or(false) { ", kept" } else { "" };
                let label = if node.label.is_empty() { String::new() } else { format!(" ({})", node.label) };
                let buffer = memory.values.get(k).copied().unwrap_or(0);
                let _ = writeln!(
                    text,
                    "    node {k} %{}{label} = {}({}) : {} into value buffer v{buffer}{kept}",
                    n_in + k,
                    node.op,
                    positions(node.parents),
                    node.shape,
                );
            }
            if !level.frees.is_empty() {
                let _ = writeln!(text, "    gives back the value buffers of {}", positions(level.frees));
            }
        }
    }

    fn describe_sweep(&self, sweep: &Sweep, buffers: &[usize], text: &mut String) {
        let n_in = self.inputs.len();
        let buffer = |q: usize| buffers.get(q).copied().unwrap_or(0);
        for (t, step) in sweep.steps.iter().enumerate() {
            let Some(node) = self.nodes.get(step.node) else { continue };
            let p = n_in + step.node;
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
                "  {t}: node {} %{p} = {}({}) : {}; cotangent %{p} (gradient buffer g{}) {}; VJP {vjp}, reads [{reads}]",
                step.node,
                node.op,
                names.join(", "),
                node.shape,
                buffer(p),
                pending(&step.cotangent)
            );
            let adds = |text: &mut String, writes: &[(usize, Range<usize>)]| {
                for (q, r) in writes {
                    let _ = writeln!(text, "       adds into %{q} (g{}, {})", buffer(*q), pending(r));
                }
            };
            match &step.writes {
                Writes::Built(w) => adds(text, w),
                Writes::Product(w) => {
                    adds(text, w);
                    text.push_str("       (each product written straight onto a position that holds a uniform)\n");
                }
                Writes::Window(q, r) => {
                    adds(text, &[(*q, r.clone())]);
                    text.push_str("       (the cotangent's window added in one pass, zeros around it)\n");
                }
                Writes::WholePrefix(_) => {
                    let _ = writeln!(text, "       adds into every position below %{p}");
                }
            }
            let _ = writeln!(text, "       frees the cotangent of %{p} (g{} is free for a later position)", buffer(p));
        }
        for (q, r) in sweep.inputs.iter().enumerate().take(n_in) {
            let name = self.inputs.get(q).copied().unwrap_or("");
            let name = if name.contains('[') { format!(" ({name})") } else { String::new() };
            let _ = writeln!(text, "  input %{q}{name}: gradient = slot {}", pending(r));
        }
    }
}
