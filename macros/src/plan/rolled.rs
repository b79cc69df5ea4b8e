//! Which `for` loops the graph function writes as loops: a loop whose iterations have one
//! structure is built by one body called once per iteration (what `jax.lax.scan` is to JAX), so
//! its typed constructors — and the compiler's checks of its shapes — appear once, whatever the
//! trip count. Lowering unrolled every loop ([`crate::ir::Loop`] records where each iteration's
//! nodes are); here the iterations are compared node by node.
//!
//! Iterations have one structure when each has the same number of nodes and, node for node, the
//! same op with the same constants, the same shape, and parents that each iteration reads the same
//! way ([`Parent`]): a node of its own iteration, the previous iteration's node (the first
//! iteration: a value from before the loop), one value from before the loop, or a value from
//! before the loop that changes with the iteration (`a[i]`, read from a table). The one constant
//! that may change with the iteration is a `slice`'s start (`slice(e, 0, t * B, B)`, an RNN's
//! step `t` of a time-major batch): its shape does not depend on it, and the builder reads it from
//! a table of the starts ([`Rolled::slice_starts`]). Nodes after the loop may read only the last
//! iteration's nodes. Other loops stay unrolled.

use core::ops::Range;

use exactgrad_spec::NODE_CHUNK;
use quote::ToTokens;

use crate::ir::{ExtraArg, Fill, Graph, Node, NodeKind};

/// The most nodes of a body written as a loop (`MacroBuilder::repeat` takes up to 8 chunks).
pub(crate) const MAX_BODY: usize = 8 * NODE_CHUNK;

/// How one parent of a body node is read in every iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Parent {
    /// Body node `j` of the same iteration.
    Local(usize),
    /// Body node `j` of the previous iteration; in the first, the value `init` from before the
    /// loop.
    Carried { init: usize, from: usize },
    /// The value `v` from before the loop, in every iteration.
    Fixed(usize),
    /// Per iteration, a value from before the loop (all of one shape).
    Table(Vec<usize>),
}

/// A loop written as a loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rolled {
    /// Its first node.
    pub(crate) start: usize,
    /// Nodes per iteration.
    pub(crate) body: usize,
    /// Iterations (at least 2).
    pub(crate) count: usize,
    /// Per body node, how each of its parents is read.
    pub(crate) parents: Vec<Vec<Parent>>,
    /// Per body node, a `slice`'s start in every iteration, where it changes with the iteration
    /// (`None`: the same in every iteration, or not a `slice`).
    pub(crate) slice_starts: Vec<Option<Vec<usize>>>,
}

impl Rolled {
    /// The node after the last iteration.
    pub(crate) fn end(&self) -> usize {
        self.start + self.body * self.count
    }
}

/// A run of nodes as the graph function builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Nodes pushed one by one, then closed as one chunk of the node list (at most
    /// `NODE_CHUNK`).
    Chunk(Range<usize>),
    /// A loop written as a loop.
    Rolled(Rolled),
}

/// The graph's nodes in segments: its rolled loops, and chunks of `NODE_CHUNK` nodes between.
pub(crate) fn segments(graph: &Graph) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut k = 0;
    let n = graph.nodes.len();
    let mut rolled = rolled(graph).into_iter().peekable();
    while k < n {
        if let Some(r) = rolled.next_if(|r| r.start == k) {
            k = r.end();
            out.push(Segment::Rolled(r));
            continue;
        }
        let next = rolled.peek().map_or(n, |r| r.start);
        let end = next.min(k + NODE_CHUNK);
        out.push(Segment::Chunk(k..end));
        k = end;
    }
    out
}

/// The loops of `graph` to write as loops, in node order, none inside another.
pub(crate) fn rolled(graph: &Graph) -> Vec<Rolled> {
    let mut out: Vec<Rolled> = Vec::new();
    // Outer loops first (their records come first), so an inner loop of a rolled one is skipped.
    for lp in &graph.loops {
        let Some(&start) = lp.starts.first() else { continue };
        if out.iter().any(|r| start < r.end() && r.start < lp.end) {
            continue;
        }
        if let Some(r) = roll(graph, &lp.starts, lp.end) {
            out.push(r);
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

/// The loop whose iterations start at `starts` and end at `end`, if its iterations have one
/// structure and the rest of the graph reads only its last iteration.
fn roll(graph: &Graph, starts: &[usize], end: usize) -> Option<Rolled> {
    let (&start, count) = (starts.first()?, starts.len());
    let body = end.checked_sub(start)? / count;
    // A body is at most 8 chunks of the node list (`Repeat` of a tuple of chunks' shapes).
    if count < 2 || body == 0 || body > MAX_BODY || start + body * count != end {
        return None;
    }
    if starts.iter().enumerate().any(|(i, &s)| s != start + i * body) {
        return None;
    }
    let n_in = graph.inputs.len();
    // Values: inputs `0..n_in`, node `k` at `n_in + k`.
    let (first, last_iteration) = (n_in + start, n_in + start + body * (count - 1));
    let value = |i: usize, j: usize| n_in + start + i * body + j;
    let mut parents = Vec::with_capacity(body);
    let mut slice_starts = Vec::with_capacity(body);
    for j in 0..body {
        let node = &graph.nodes[start + j];
        if !matches!(node.kind, NodeKind::Builtin(..)) {
            return None;
        }
        for i in 1..count {
            if !same(node, &graph.nodes[start + i * body + j]) {
                return None;
            }
        }
        let starts: Vec<usize> = (0..count)
            .filter_map(|i| match &graph.nodes[start + i * body + j].kind {
                NodeKind::Builtin(_, ExtraArg::Slice(_, s, _)) => Some(*s),
                _ => None,
            })
            .collect();
        slice_starts.push((starts.len() == count && starts.iter().any(|&s| s != starts[0])).then_some(starts));
        let mut slots = Vec::with_capacity(node.parents.len());
        for (slot, &p0) in node.parents.iter().enumerate() {
            let of = |i: usize| graph.nodes[start + i * body + j].parents[slot];
            let parent = if let Some(l) = (0..j).find(|&l| p0 == value(0, l)) {
                (1..count).all(|i| of(i) == value(i, l)).then_some(Parent::Local(l))
            } else if p0 >= first {
                None
            } else if let Some(from) = (0..body).find(|&f| of(1) == value(0, f)) {
                let same_shape = graph.shape_of(p0) == &graph.nodes[start + from].shape;
                (same_shape && (2..count).all(|i| of(i) == value(i - 1, from)))
                    .then_some(Parent::Carried { init: p0, from })
            } else if (1..count).all(|i| of(i) == p0) {
                Some(Parent::Fixed(p0))
            } else {
                let table: Vec<usize> = (0..count).map(of).collect();
                let shape = graph.shape_of(p0);
                table.iter().all(|&v| v < first && graph.shape_of(v) == shape).then_some(Parent::Table(table))
            }?;
            slots.push(parent);
        }
        parents.push(slots);
    }
    // After the loop, only the last iteration's nodes are read (they are the loop's results).
    let inside = |v: usize| (first..n_in + end).contains(&v) && v < last_iteration;
    let later = graph.nodes[end..].iter().flat_map(|n| n.parents.iter());
    if later.chain(&graph.outputs).any(|&v| inside(v)) {
        return None;
    }
    Some(Rolled { start, body, count, parents, slice_starts })
}

/// Whether two nodes are the same op with the same constants (a `slice`'s start aside) and shape
/// (their parents are compared by [`roll`]).
fn same(a: &Node, b: &Node) -> bool {
    a.shape == b.shape
        && a.parents.len() == b.parents.len()
        && match (&a.kind, &b.kind) {
            (NodeKind::Builtin(x, ex), NodeKind::Builtin(y, ey)) => x.name == y.name && same_extra(ex, ey),
            _ => false,
        }
}

fn same_extra(a: &ExtraArg, b: &ExtraArg) -> bool {
    let tokens = |e: &syn::Expr| e.to_token_stream().to_string();
    let fill = |f: &Fill| match f {
        Fill::Const(e) => tokens(e),
        Fill::Infinity(negative) => format!("inf{negative}"),
    };
    match (a, b) {
        (ExtraArg::None, ExtraArg::None) => true,
        (ExtraArg::Axis(x), ExtraArg::Axis(y)) => x == y,
        (ExtraArg::Eps(x), ExtraArg::Eps(y)) | (ExtraArg::Factor(x), ExtraArg::Factor(y)) => tokens(x) == tokens(y),
        (ExtraArg::Labels(x), ExtraArg::Labels(y)) | (ExtraArg::Data(x), ExtraArg::Data(y)) => x == y,
        // The start may change with the iteration (`Rolled::slice_starts`); the output's shape
        // is the same (it is compared with the node's).
        (ExtraArg::Slice(axis, _, len), ExtraArg::Slice(axis_b, _, len_b)) => (axis, len) == (axis_b, len_b),
        (ExtraArg::Perm(x), ExtraArg::Perm(y)) => x == y,
        (ExtraArg::Window(x), ExtraArg::Window(y)) => x == y,
        (ExtraArg::Dropout(px, sx), ExtraArg::Dropout(py, sy)) => px.to_bits() == py.to_bits() && sx == sy,
        (ExtraArg::Mask(mx, fx), ExtraArg::Mask(my, fy)) => mx == my && fill(fx) == fill(fy),
        (ExtraArg::Fill(x), ExtraArg::Fill(y)) => fill(x) == fill(y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::graph;

    #[test]
    fn a_chain_rolls_with_carried_and_tabled_parents() {
        let g = graph(
            "fn f(x: [4], a: [[4]; 3], b: [[4]; 3]) -> [] {
                let mut h = x;
                for i in 0..3 { h = tanh(h * a[i] + b[i]); }
                sum(h)
            }",
        );
        let r = rolled(&g);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!((r.start, r.body, r.count), (0, 3, 3));
        // mul(h, a[i]): h carried from tanh (body node 2), x at first; a[i] from a table.
        assert_eq!(r.parents[0], [Parent::Carried { init: 0, from: 2 }, Parent::Table(vec![1, 2, 3])]);
        assert_eq!(r.parents[1], [Parent::Local(0), Parent::Table(vec![4, 5, 6])]);
        assert_eq!(r.parents[2], [Parent::Local(1)]);
    }

    #[test]
    fn a_slice_whose_start_changes_with_the_iteration_rolls_with_its_starts() {
        let g = graph(
            "fn f(x: [6], w: [2]) -> [] {
                let mut t = sum(w);
                for i in 0..3 { t = t + sum(slice(x, 0, 2 * i, 2) * w); }
                t
            }",
        );
        let r = rolled(&g);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].start, r[0].body, r[0].count), (1, 4, 3));
        assert_eq!(r[0].slice_starts, [Some(vec![0, 2, 4]), None, None, None]);
        // A start the same in every iteration is a constant of the body.
        let g = graph(
            "fn f(x: [6], w: [2]) -> [] {
                let mut t = sum(w);
                for i in 0..3 { t = t + sum(slice(x, 0, 2, 2) * w); }
                t
            }",
        );
        assert_eq!(rolled(&g)[0].slice_starts, [None, None, None, None]);
    }

    #[test]
    fn iterations_that_differ_stay_unrolled() {
        // The slice's length changes with `i`.
        let g = graph(
            "fn f(x: [6]) -> [] {
                let mut t = sum(x);
                for i in 1..4 { t = t + sum(slice(x, 0, 0, i)); }
                t
            }",
        );
        assert!(rolled(&g).is_empty());
        // A factor that changes with `i`.
        let g = graph(
            "fn f(x: [2]) -> [2] {
                let mut h = x;
                for i in 0..3 { h = h * (i as f64); }
                h
            }",
        );
        assert!(rolled(&g).is_empty());
    }

    #[test]
    fn a_loop_read_after_it_only_at_its_end_rolls() {
        // `prev` is the second-to-last iteration's `tanh` after the loop: unrolled.
        let g = graph(
            "fn f(x: [2]) -> ([2], [2]) {
                let mut h = x;
                let mut prev = x;
                for i in 0..3 { prev = h; h = tanh(h); }
                (h, prev)
            }",
        );
        assert!(rolled(&g).is_empty());
        let g = graph(
            "fn f(x: [2]) -> [2] {
                let mut h = tanh(x);
                let mut s = h;
                for i in 0..2 { s = s + h; h = tanh(h); }
                s + h
            }",
        );
        let r = rolled(&g);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].parents[0], [Parent::Carried { init: 1, from: 0 }, Parent::Carried { init: 1, from: 1 }]);
    }

    #[test]
    fn consecutive_calls_of_one_helper_roll_like_a_loop() {
        let g = graph(
            "fn f(x: [4], w0: [4], w1: [4], w2: [4]) -> [] {
                let h = block(x, w0);
                let h = block(h, w1);
                let h = block(h, w2);
                sum(h)
            }
            fn block(h, w) { tanh(h * w) }",
        );
        let r = rolled(&g);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].start, r[0].body, r[0].count), (0, 2, 3));
        assert_eq!(r[0].parents[0], [Parent::Carried { init: 0, from: 1 }, Parent::Table(vec![1, 2, 3])]);
        // Calls with a node between them stay inlined one by one.
        let g = graph(
            "fn f(x: [4], w0: [4], w1: [4]) -> [] {
                let h = block(x, w0) * 2.0;
                let h = block(h, w1);
                sum(h)
            }
            fn block(h, w) { tanh(h * w) }",
        );
        assert!(rolled(&g).is_empty());
    }

    #[test]
    fn a_loop_of_one_iteration_or_inside_a_rolled_one_is_not_rolled_again() {
        let g = graph("fn f(x: [2]) -> [2] { let mut h = x; for i in 0..1 { h = tanh(h); } h }");
        assert!(rolled(&g).is_empty());
        let g = graph(
            "fn f(x: [2]) -> [2] {
                let mut h = x;
                for i in 0..3 { for j in 0..2 { h = tanh(h); } }
                h
            }",
        );
        let r = rolled(&g);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].body, r[0].count), (2, 3));
    }
}
