//! The buffers of a generated program, planned by liveness when `graph!` expands.
//!
//! **Values.** The forward keeps a node's value to the end of the run only when a VJP of the
//! all-inputs pass reads it (the spec's saved reads; an opaque node or a user op reads its whole
//! prefix) or when it is a declared output. Any other value is given back right after the last
//! forward that reads it, and a later node computes into that buffer.
//!
//! **Gradients.** In each pass a position's gradient buffer is live from its first write (its
//! seed, its first contribution, or its own cotangent when nothing wrote it) to the end of its
//! node's step; a later position takes it over. Inputs keep their own buffers: their gradients are
//! handed back to the caller and come back on the next run, so sharing them would make buffers
//! change size from run to run.
//!
//! A buffer is an index into the program's pool; the plan fixes which positions use it and in
//! which order, so the same buffers serve every run (none is allocated after the first run, and
//! with generic dims none after the first run of a batch size). Among free buffers one last used
//! by a position of the same shape is preferred, so buffers keep their size.

use crate::ir::{Graph, NodeKind, Shape};
use crate::plan::{Sweep, Writes};

/// Where the forward's values live.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Values {
    /// The forward's schedule ([`super::levels`]): per level, its nodes in index order.
    pub(crate) levels: Vec<Vec<usize>>,
    /// Per node, the value buffer it computes into.
    pub(crate) buffer: Vec<usize>,
    /// Per node, whether its value is kept to the end of the run.
    pub(crate) kept: Vec<bool>,
    /// Per level, the positions whose value buffers are given back right after it (ascending).
    pub(crate) frees: Vec<Vec<usize>>,
    /// Number of value buffers.
    pub(crate) buffers: usize,
}

/// Free buffers, each with the shape of its last user.
struct Pool<'g> {
    free: Vec<(usize, &'g Shape)>,
    count: usize,
}

impl<'g> Pool<'g> {
    fn new(first: usize) -> Self {
        Pool { free: Vec::new(), count: first }
    }

    /// A free buffer, preferably one last used at `shape`; else a new one.
    fn take(&mut self, shape: &Shape) -> usize {
        let at = self.free.iter().position(|(_, s)| *s == shape).or(if self.free.is_empty() { None } else { Some(0) });
        if let Some(i) = at {
            self.free.remove(i).0
        } else {
            self.count += 1;
            self.count - 1
        }
    }

    fn give(&mut self, buffer: usize, shape: &'g Shape) {
        self.free.push((buffer, shape));
    }
}

/// The value plan: `all` is the all-inputs sweep (every node's VJP runs in it). The forward runs
/// by levels ([`super::levels`]), so a value's buffer is given back after the *level* of its last
/// reader, and a level's nodes take their buffers from what earlier levels gave back: no two
/// nodes of one level share a buffer, and none writes a buffer a node of its own level reads.
pub(crate) fn values(graph: &Graph, all: &Sweep) -> Values {
    let n_in = graph.inputs.len();
    let n = graph.nodes.len();
    let len = n_in + n;
    let levels = super::levels::levels(graph);
    let mut kept = vec![false; len];
    for &o in &graph.outputs {
        kept[o] = true;
    }
    for st in &all.steps {
        for q in super::reads(graph, st.node) {
            kept[q] = true;
        }
    }
    let mut level_of = vec![0; n];
    for (l, nodes) in levels.iter().enumerate() {
        for &k in nodes {
            level_of[k] = l;
        }
    }
    // `last[p]`: the level of the last node whose forward reads `p`. An opaque node or a user op
    // reads its whole prefix: `whole[p]` is the highest level among those above `p` (a suffix
    // maximum, so many of them cost one pass).
    let mut last: Vec<Option<usize>> = vec![None; len];
    let mut whole: Vec<Option<usize>> = vec![None; len + 1];
    for (k, node) in graph.nodes.iter().enumerate() {
        match node.kind {
            NodeKind::Builtin(..) => {
                for &q in &node.parents {
                    last[q] = last[q].max(Some(level_of[k]));
                }
            }
            NodeKind::Opaque { .. } | NodeKind::Custom(_) => whole[n_in + k] = Some(level_of[k]),
        }
    }
    for p in (0..len).rev() {
        whole[p] = whole[p].max(whole[p + 1]);
        // `whole[p + 1]`: a whole-prefix reader above `p` (the one at `p` itself does not read `p`).
        last[p] = last[p].max(whole[p + 1]);
    }
    let mut frees = vec![Vec::new(); levels.len()];
    for p in n_in..len {
        if !kept[p] {
            // A value nothing reads is given back right after its own level.
            frees[last[p].unwrap_or(level_of[p - n_in])].push(p);
        }
    }
    let mut pool = Pool::new(0);
    let mut buffer = vec![0; n];
    for (nodes, freed) in levels.iter().zip(&frees) {
        for &k in nodes {
            buffer[k] = pool.take(&graph.nodes[k].shape);
        }
        for &p in freed {
            pool.give(buffer[p - n_in], graph.shape_of(p));
        }
    }
    Values { levels, buffer, kept: kept[n_in..].to_vec(), frees, buffers: pool.count }
}

/// The gradient buffer of every position in one pass (inputs: buffers `0..inputs`), and how many
/// buffers the pass uses. `seeded` are the positions seeded before the sweep.
pub(crate) fn gradients(graph: &Graph, sweep: &Sweep, seeded: &[usize]) -> (Vec<usize>, usize) {
    let n_in = graph.inputs.len();
    let len = n_in + graph.nodes.len();
    let mut buffer: Vec<Option<usize>> = (0..len).map(|q| (q < n_in).then_some(q)).collect();
    let mut pool = Pool::new(n_in);
    let acquire = |q: usize, buffer: &mut Vec<Option<usize>>, pool: &mut Pool<'_>| {
        if buffer[q].is_none() {
            buffer[q] = Some(pool.take(graph.shape_of(q)));
        }
    };
    for &o in seeded {
        acquire(o, &mut buffer, &mut pool);
    }
    for st in &sweep.steps {
        acquire(st.position, &mut buffer, &mut pool);
        match &st.writes {
            Writes::Support(w) => w.iter().for_each(|&(q, _)| acquire(q, &mut buffer, &mut pool)),
            Writes::WholePrefix(_) => (0..st.position).for_each(|q| acquire(q, &mut buffer, &mut pool)),
        }
        // Free from the next step on.
        if let Some(b) = buffer[st.position] {
            pool.give(b, graph.shape_of(st.position));
        }
    }
    // A position no step touches never takes its buffer; any index will do.
    (buffer.into_iter().map(|b| b.unwrap_or(0)).collect(), pool.count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep;
    use crate::plan::tests::graph;

    #[test]
    fn values_no_vjp_reads_are_given_back_after_their_last_reader() {
        // %1 = x*2 (node 0), %2 = %1*2, %3 = %2*2, %4 = sum(%3): no VJP reads a value.
        let g = graph("fn f(x: [3]) -> [] { sum(x * 2.0 * 2.0 * 2.0) }");
        let v = values(&g, &sweep(&g, None));
        assert_eq!(v.kept, [false, false, false, true]);
        assert_eq!(v.frees, [vec![], vec![1], vec![2], vec![3]]);
        // Two buffers ping-pong for the [3]s; the scalar takes the free one (no [] buffer free).
        assert_eq!(v.buffer, [0, 1, 0, 1]);
        assert_eq!(v.buffers, 2);
    }

    #[test]
    fn values_a_vjp_reads_are_kept() {
        // tanh reads its output, mul reads both operands.
        let g = graph("fn f(x: [3], w: [3]) -> [] { sum(tanh(x * 2.0) * w) }");
        let v = values(&g, &sweep(&g, None));
        // %2 = x*2 (read by tanh's forward only), %3 = tanh (its own VJP, and mul's), %4 = mul, %5 = sum.
        assert_eq!(v.kept, [false, true, false, true]);
        assert_eq!(v.frees, [vec![], vec![2], vec![], vec![4]]);
        assert_eq!(v.buffers, 3);
    }

    #[test]
    fn values_given_back_in_a_level_serve_only_later_levels() {
        // Levels: {0 w0*x, 3 w1*x}, {1 tanh, 4 tanh}, {2 sum, 5 sum}. The products are read only by
        // the tanh forwards: given back after level 1, so the tanh nodes (running beside their
        // readers) take new buffers and the sums take the products' buffers.
        let g = graph("fn f(x: [3], w0: [3], w1: [3]) -> ([], []) { (sum(tanh(w0 * x)), sum(tanh(w1 * x))) }");
        let v = values(&g, &sweep(&g, None));
        assert_eq!(v.levels, [vec![0, 3], vec![1, 4], vec![2, 5]]);
        assert_eq!(v.kept, [false, true, true, false, true, true]);
        assert_eq!(v.frees, [vec![], vec![3, 6], vec![]]);
        assert_eq!(v.buffer, [0, 2, 0, 1, 3, 1]);
        assert_eq!(v.buffers, 4);
    }

    #[test]
    fn values_below_an_opaque_node_are_kept() {
        let g = graph(
            "fn f(x: [3]) -> [] {
                let a = x * 2.0;
                let o: [3] = opaque(x, forward = |x| x.clone(), vjp = |x, g| [g.clone()]);
                sum(o + a)
            }",
        );
        let v = values(&g, &sweep(&g, None));
        assert!(v.kept[0]);
    }

    #[test]
    fn gradient_buffers_are_reused_down_a_chain() {
        let g = graph("fn f(x: [3]) -> [3] { x * 2.0 * 2.0 * 2.0 }");
        let s = sweep(&g, None);
        let (b, count) = gradients(&g, &s, &g.outputs);
        // x keeps buffer 0; %3 (seeded) and %2 overlap at step 0, %1 takes %3's after it.
        assert_eq!(b, [0, 1, 2, 1]);
        assert_eq!(count, 3);
    }
}
