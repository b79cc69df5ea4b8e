//! `describe_backward`'s text: the planned forward (value buffers, what is kept and what is given
//! back) and each pass's reverse sweep (per step the node, its VJP, the saved values it reads, the
//! positions it adds into with their pending uniforms, and the gradient buffers).

use core::fmt::Write as _;
use exactgrad_spec::Direct;

use crate::ir::{Graph, NodeKind};
use crate::plan::memory::Values;
use crate::plan::{Sweep, Writes};

/// The schedules in words.
pub(super) fn describe(
    graph: &Graph,
    all: &Sweep,
    froms: &[Option<Sweep>],
    values: &Values,
    grads: &[(Vec<usize>, usize)],
) -> String {
    let mut text = String::new();
    describe_forward(graph, values, &mut text);
    let outputs: Vec<String> = graph.outputs.iter().map(|o| format!("%{o}")).collect();
    let _ = writeln!(text, "all-inputs pass (seeds at {}):", outputs.join(", "));
    describe_sweep(graph, all, &grads[0].0, &mut text);
    for (j, f) in froms.iter().enumerate() {
        let o = graph.outputs[j];
        match f {
            Some(f) => {
                let _ = writeln!(text, "single-output pass from output {j} (%{o}):");
                describe_sweep(graph, f, &grads[1 + j].0, &mut text);
            }
            None => {
                let _ = writeln!(text, "single-output pass from output {j} (%{o}): the runtime's backprop_from loop (user compact ops declare their supports at run time)");
            }
        }
    }
    text
}

fn pending(r: &core::ops::Range<usize>) -> String {
    match r.len() {
        0 => "nothing pending".to_owned(),
        1 => format!("+ the uniform of visit {}", r.start),
        _ => format!("+ the uniforms of visits {}..{}", r.start, r.end),
    }
}

/// The forward, level by level: each node's value buffer, whether it is kept, and what is given
/// back after each level.
fn describe_forward(graph: &Graph, values: &Values, text: &mut String) {
    let n_in = graph.inputs.len();
    let _ = writeln!(
        text,
        "forward ({} value buffers; kept: read by a VJP or a declared output; a level's nodes read only \
         lower levels and may run at the same time):",
        values.buffers
    );
    for (l, (nodes, freed)) in values.levels.iter().zip(&values.frees).enumerate() {
        let _ = writeln!(text, "  level {l}:");
        for &k in nodes {
            let node = &graph.nodes[k];
            let parents: Vec<String> = node.parents.iter().map(|q| format!("%{q}")).collect();
            let kept = if values.kept[k] { ", kept" } else { "" };
            let label = node.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
            text.push_str(&format!(
                "    node {k} %{}{label} = {}({}) : {} into value buffer v{}{kept}\n",
                n_in + k,
                node.op_name(),
                parents.join(", "),
                node.shape,
                values.buffer[k]
            ));
        }
        if !freed.is_empty() {
            let freed: Vec<String> = freed.iter().map(|q| format!("%{q}")).collect();
            let _ = writeln!(text, "    gives back the value buffers of {}", freed.join(", "));
        }
    }
}

fn describe_sweep(graph: &Graph, sweep: &Sweep, buffers: &[usize], text: &mut String) {
    let n_in = graph.inputs.len();
    for (t, st) in sweep.steps.iter().enumerate() {
        let node = &graph.nodes[st.node];
        let parents: Vec<String> = node.parents.iter().map(|q| format!("%{q}")).collect();
        let (vjp, reads) = match &node.kind {
            NodeKind::Builtin(op, _) => {
                let names: Vec<&str> = parents.iter().map(String::as_str).collect();
                let mut r: Vec<String> = op.reads.operands.iter().map(|&i| parents[i].clone()).collect();
                if op.reads.output {
                    r.push(format!("%{}", st.position));
                }
                if op.reads.data {
                    r.push("data".to_owned());
                }
                (op.vjp.describe(&names), r.join(", "))
            }
            NodeKind::Opaque { .. } => ("dense VJP (opaque)".to_owned(), "the whole prefix".to_owned()),
            NodeKind::Custom(_) => ("user compact op".to_owned(), "the whole prefix".to_owned()),
        };
        text.push_str(&format!(
            "  {t}: node {} %{} = {}({}) : {}; cotangent %{} (gradient buffer g{}) {}; VJP {vjp}, reads [{reads}]\n",
            st.node,
            st.position,
            node.op_name(),
            parents.join(", "),
            node.shape,
            st.position,
            buffers[st.position],
            pending(&st.cotangent)
        ));
        match &st.writes {
            Writes::Support(w) => {
                for (q, r) in w {
                    let _ = writeln!(text, "       adds into %{q} (g{}, {})", buffers[*q], pending(r));
                }
                match crate::plan::direct(graph, st.node) {
                    Direct::Product => {
                        text.push_str("       (each product written straight onto a position that holds a uniform)\n");
                    }
                    Direct::Window => {
                        text.push_str("       (the cotangent's window added in one pass, zeros around it)\n");
                    }
                    Direct::No => {}
                }
            }
            Writes::WholePrefix(_) => {
                let _ = writeln!(text, "       adds into every position below %{}", st.position);
            }
        }
        text.push_str(&format!(
            "       frees the cotangent of %{} (g{} is free for a later position)\n",
            st.position, buffers[st.position]
        ));
    }
    for (q, r) in sweep.inputs.iter().enumerate().take(n_in) {
        let name = graph.input_name(q);
        let name = if name.contains('[') { format!(" ({name})") } else { String::new() };
        let _ = writeln!(text, "  input %{q}{name}: gradient = slot {}", pending(r));
    }
}
