//! The forward's schedule: the nodes grouped into *levels*, run level after level, a level's
//! nodes in index order (SEMANTICS §8.4), by the rule the runtime's `compile` uses too
//! (`exactgrad_spec::levels`): a built-in node reads exactly its parents, an opaque node or a
//! user compact op receives its whole prefix. A level's nodes therefore read only values of lower
//! levels: each value is the same function of its parents in
//! any order the level runs in, and the generated program may compute a level's built-in nodes at
//! the same time (`ProgramState::forward_level`). The value buffers are planned in this order
//! ([`super::memory::values`]).

use crate::ir::{Graph, NodeKind};

/// Every node's level, grouped: `levels[l]` holds the nodes of level `l`, ascending.
pub(crate) fn levels(graph: &Graph) -> Vec<Vec<usize>> {
    let level = exactgrad_spec::levels::node_levels(
        graph.inputs.len(),
        graph.nodes.iter().map(|node| match node.kind {
            NodeKind::Builtin(..) => Some(&node.parents[..]),
            NodeKind::Opaque { .. } | NodeKind::Custom(_) => None,
        }),
    );
    let mut levels = vec![Vec::new(); level.iter().max().map_or(0, |l| l + 1)];
    for (k, &l) in level.iter().enumerate() {
        levels[l].push(k);
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::graph;

    #[test]
    fn a_chain_is_one_node_per_level() {
        let g = graph("fn f(x: [3]) -> [] { sum(tanh(x * 2.0)) }");
        assert_eq!(levels(&g), [vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn independent_heads_share_levels() {
        // Nodes: 0 w0*x, 1 tanh, 2 sum, 3 w1*x, 4 tanh, 5 sum.
        let g = graph("fn f(x: [3], w0: [3], w1: [3]) -> ([], []) { (sum(tanh(w0 * x)), sum(tanh(w1 * x))) }");
        assert_eq!(levels(&g), [vec![0, 3], vec![1, 4], vec![2, 5]]);
    }

    #[test]
    fn an_opaque_node_sits_above_everything_before_it() {
        // Nodes: 0 x*2, 1 tanh, 2 the opaque node (reads x, receives its whole prefix), 3 x*3,
        // then the additions and the sum.
        let g = graph(
            "fn f(x: [3]) -> [] {
                let a = tanh(x * 2.0);
                let o: [3] = opaque(x, forward = |x| x.clone(), vjp = |x, g| [g.clone()]);
                sum(o + x * 3.0 + a)
            }",
        );
        let l = levels(&g);
        let level_of = |k: usize| l.iter().position(|v| v.contains(&k)).expect("every node has a level");
        assert_eq!(level_of(2), 2, "{l:?}");
        // A later node reading only an input still runs at level 0.
        assert_eq!(level_of(3), 0, "{l:?}");
        assert_eq!(l.iter().map(Vec::len).sum::<usize>(), g.nodes.len());
    }
}
