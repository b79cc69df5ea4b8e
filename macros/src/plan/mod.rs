//! The backward schedule, planned from the ops' support patterns (`exactgrad_spec`): for each
//! pass, which nodes run in which order (a *visit* each), and for every write to a gradient
//! position which visits' uniforms are still pending on it. The generated sweep is this plan
//! spelled out; `describe_backward` prints it.
//!
//! The rules are SEMANTICS §3–§7: a visited node contributes to its support (distinct positions,
//! first occurrence first) and adds its uniform to every other position below it; a node whose
//! structure is known only at run time (an opaque node or a user compact op) touches its whole
//! prefix. The all-inputs pass visits every node; a single-output pass visits only the nodes the
//! output reaches (§7), and a skipped node pushes no uniform.

use core::ops::Range;

use exactgrad_spec::Direct;

pub(crate) mod levels;
pub(crate) mod memory;
pub(crate) mod rolled;

use crate::ir::{Graph, NodeKind};

/// What a visited node writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Writes {
    /// A built-in op: each distinct support position, with the visits pending on it.
    Support(Vec<(usize, Range<usize>)>),
    /// An opaque node or a user compact op: every position below it, with its pending visits.
    WholePrefix(Vec<Range<usize>>),
}

/// One visited node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// The node (0 = first node).
    pub(crate) node: usize,
    /// Its position (inputs first).
    pub(crate) position: usize,
    /// The visits pending on its own position when its cotangent is taken.
    pub(crate) cotangent: Range<usize>,
    pub(crate) writes: Writes,
}

/// One pass's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Visit `t` is `steps[t]`.
    pub(crate) steps: Vec<Step>,
    /// Per input, the visits pending on it at the end.
    pub(crate) inputs: Vec<Range<usize>>,
}

/// The static support of node `k` (duplicates kept), or `None` when it touches its whole prefix.
pub(crate) fn support(graph: &Graph, k: usize) -> Option<Vec<usize>> {
    let node = &graph.nodes[k];
    match &node.kind {
        NodeKind::Builtin(op, _) => {
            Some(op.vjp.support(node.parents.len()).iter().filter_map(|&i| node.parents.get(i).copied()).collect())
        }
        NodeKind::Opaque { .. } | NodeKind::Custom(_) => None,
    }
}

/// The positions whose saved values the VJP of node `k` reads (its own position: its output); an
/// opaque node or a user op reads its whole prefix and its output.
pub(crate) fn reads(graph: &Graph, k: usize) -> Vec<usize> {
    let n_in = graph.inputs.len();
    let node = &graph.nodes[k];
    match &node.kind {
        NodeKind::Builtin(op, _) => {
            let mut q: Vec<usize> = op.reads.operands.iter().filter_map(|&i| node.parents.get(i).copied()).collect();
            if op.reads.output {
                q.push(n_in + k);
            }
            q
        }
        NodeKind::Opaque { .. } | NodeKind::Custom(_) => (0..=n_in + k).collect(),
    }
}

/// How node `k`'s contributions are written when a generated program skips building them
/// (`exactgrad_spec::Direct`): products straight onto their positions (`ProgramState::vjp_product`,
/// for distinct operands), a window of the cotangent in one pass (`ProgramState::vjp_window`), or
/// built and added (`Direct::No`, and every opaque node or user op).
pub(crate) fn direct(graph: &Graph, k: usize) -> Direct {
    match &graph.nodes[k].kind {
        NodeKind::Builtin(op, _) => match op.direct {
            Direct::Product if support(graph, k).is_some_and(|s| dedup(&s).len() == s.len()) => Direct::Product,
            Direct::Window => Direct::Window,
            _ => Direct::No,
        },
        NodeKind::Opaque { .. } | NodeKind::Custom(_) => Direct::No,
    }
}

/// The schedule of the all-inputs pass (`from = None`) or of the single-output pass from the
/// position `from`.
pub(crate) fn sweep(graph: &Graph, from: Option<usize>) -> Sweep {
    let n_in = graph.inputs.len();
    let len = n_in + graph.nodes.len();
    // `last[q]`: the visit after the last write to `q` (its pending visits are `last[q]..now`).
    let mut last = vec![0usize; len];
    let mut reached = vec![from.is_none(); len];
    let mut below = 0;
    if let Some(o) = from {
        reached[o] = true;
    }
    let mut steps = Vec::new();
    for k in (0..graph.nodes.len()).rev() {
        let p = n_in + k;
        if !(reached[p] || p < below) {
            continue;
        }
        let t = steps.len();
        let cotangent = last[p]..t;
        let writes = if let Some(s) = support(graph, k) {
            let w = dedup(&s)
                .into_iter()
                .map(|q| {
                    let pending = last[q]..t;
                    last[q] = t + 1;
                    reached[q] = true;
                    (q, pending)
                })
                .collect();
            Writes::Support(w)
        } else {
            let w = (0..p)
                .map(|q| {
                    let pending = last[q]..t;
                    last[q] = t + 1;
                    pending
                })
                .collect();
            below = below.max(p);
            Writes::WholePrefix(w)
        };
        steps.push(Step { node: k, position: p, cotangent, writes });
    }
    let visits = steps.len();
    let inputs = (0..n_in).map(|q| last[q]..visits).collect();
    Sweep { steps, inputs }
}

/// First occurrences, in order.
fn dedup(v: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &q in v {
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
}

/// Whether the graph has a node whose support is known only at run time from its own code (a
/// user compact op): its single-output pass cannot be planned here.
pub(crate) fn has_custom(graph: &Graph) -> bool {
    graph.nodes.iter().any(|n| matches!(n.kind, NodeKind::Custom(_)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::parse::GraphDef;

    /// The graph `graph!` lowers `src` to (the plan modules' tests share it).
    pub(super) fn graph(src: &str) -> Graph {
        let def: GraphDef = syn::parse_str(src).expect("parses");
        crate::lower::lower(&def).map_err(|e| e.to_string()).expect("lowers")
    }

    #[test]
    fn the_all_inputs_pass_visits_every_node_and_tracks_pending_uniforms() {
        // %0 x, %1 w; %2 = x * w (node 0), %3 = tanh(%2) (node 1), %4 = sum(x) (node 2).
        let g = graph("fn f(x: [3], w: [3]) -> ([3], []) { (tanh(x * w), sum(x)) }");
        let s = sweep(&g, None);
        assert_eq!(s.steps.iter().map(|st| st.node).collect::<Vec<_>>(), [2, 1, 0]);
        // sum(x) writes x at visit 0; tanh writes %2 at visit 1 (pending: visit 0); mul writes x
        // (pending: visit 1, after its write at visit 0) and w (pending: visits 0 and 1).
        assert_eq!(s.steps[0].writes, Writes::Support(vec![(0, 0..0)]));
        assert_eq!(s.steps[1].writes, Writes::Support(vec![(2, 0..1)]));
        assert_eq!(s.steps[2].cotangent, 2..2);
        assert_eq!(s.steps[2].writes, Writes::Support(vec![(0, 1..2), (1, 0..2)]));
        assert_eq!(s.inputs, [3..3, 3..3]);
    }

    #[test]
    fn a_single_output_pass_skips_what_the_output_does_not_reach() {
        let g = graph("fn f(x: [3], w: [3]) -> ([3], []) { (tanh(x * w), sum(x)) }");
        let s = sweep(&g, Some(4));
        assert_eq!(s.steps.iter().map(|st| st.node).collect::<Vec<_>>(), [2]);
        assert_eq!(s.inputs, [1..1, 0..1]);
        let s = sweep(&g, Some(3));
        assert_eq!(s.steps.iter().map(|st| st.node).collect::<Vec<_>>(), [1, 0]);
    }

    #[test]
    fn a_repeated_parent_is_written_once_and_opaque_nodes_reach_their_prefix() {
        let g = graph("fn f(x: [3]) -> [] { sum(square(x) + x * x) }");
        let s = sweep(&g, None);
        let mul = s.steps.iter().find(|st| st.node == 1).expect("x * x is visited");
        assert_eq!(mul.writes, Writes::Support(vec![(0, 0..2)]));
        assert_eq!(support(&g, 1), Some(vec![0, 0]));
        let g = graph(
            "fn f(x: [3], y: [3]) -> [] {
                let o: [3] = opaque(x, forward = |x| x.clone(), vjp = |x, g| [g.clone()]);
                sum(o)
            }",
        );
        let s = sweep(&g, Some(3));
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[1].writes, Writes::WholePrefix(vec![0..1, 0..1]));
    }

    #[test]
    fn products_are_written_onto_distinct_operands_only() {
        let g = graph("fn f(x: [2, 2], w: [2, 2]) -> [] { sum(tanh(x.matmul(w)) + x.matmul(x)) }");
        // node 0: x·w, node 1: tanh, node 2: x·x.
        assert_eq!(direct(&g, 0), Direct::Product);
        assert_eq!(direct(&g, 1), Direct::No);
        assert_eq!(direct(&g, 2), Direct::No);
    }

    #[test]
    fn slices_write_their_window() {
        let g = graph("fn f(x: [2, 4]) -> [] { sum(slice(x, 1, 1, 2)) }");
        assert_eq!(direct(&g, 0), Direct::Window);
        assert_eq!(direct(&g, 1), Direct::No);
    }
}
