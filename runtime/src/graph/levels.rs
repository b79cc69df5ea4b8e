//! The forward's levels (SEMANTICS §8.4): which nodes of a graph may be computed at the same time.
//!
//! The rule is `exactgrad_spec::levels` (the generated programs schedule by it too): a node's
//! level is one more than the highest level among the nodes it reads (a node reading only inputs
//! is at level 0), so the nodes of one level read only values of lower levels and
//! can be computed in any order, or at once, with the same results: each node's value is a
//! function of its parents' values alone. That holds for the built-in ops, which read exactly
//! their parents. An opaque node or a user's compact op receives the whole prefix and may read
//! any of it, so it is placed one level above every node before it (all of its prefix is
//! computed when it runs).
//!
//! The levels depend only on the graph's structure; [`RawGraph::levels`] computes them once and
//! keeps them until a node or an input is added.

use super::{Program, RawGraph};
use crate::shape::Dims;

/// The nodes of a graph grouped by level: `nodes()[starts[l]..starts[l + 1]]` is level `l`, in
/// increasing node index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Levels {
    nodes: Vec<usize>,
    starts: Vec<usize>,
    /// The most nodes any one level holds.
    widest: usize,
}

impl Levels {
    /// The levels of `graph`'s nodes.
    pub(crate) fn of<A: 'static, D: 'static>(graph: &RawGraph<A, D>) -> Self {
        let reads: Vec<Option<&[usize]>> = graph
            .nodes()
            .iter()
            .map(|node| {
                let reads_only_parents = match node.program() {
                    Program::Compact(op) => op.reference().is_some(),
                    Program::Opaque { .. } => false,
                };
                reads_only_parents.then(|| node.parents())
            })
            .collect();
        Self::from_reads(graph.num_inputs(), &reads)
    }

    /// The levels of nodes that read, each, only its parents (`Some`) or its whole prefix
    /// (`None`), after `inputs` inputs: not generic, so compiled once, here (`Self::of` is the
    /// part a model's crate compiles).
    fn from_reads(inputs: usize, reads: &[Option<&[usize]>]) -> Self {
        let level = exactgrad_spec::levels::node_levels(inputs, reads.iter().copied());
        let above_all = level.iter().max().map_or(0, |l| l + 1);
        // Counting sort by level, stable in node index.
        let mut starts = vec![0usize; above_all + 1];
        for &l in &level {
            starts[l + 1] += 1;
        }
        let widest = starts.iter().copied().max().unwrap_or(0);
        for l in 1..starts.len() {
            starts[l] += starts[l - 1];
        }
        let mut next = starts.clone();
        let mut nodes = vec![0usize; level.len()];
        for (k, &l) in level.iter().enumerate() {
            nodes[next[l]] = k;
            next[l] += 1;
        }
        Levels { nodes, starts, widest }
    }

    /// The most nodes one level holds (`1` for a chain: nothing to run at the same time).
    pub(crate) fn widest(&self) -> usize {
        self.widest
    }

    /// Every level's nodes, lowest level first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[usize]> + '_ {
        self.starts.windows(2).map(|w| &self.nodes[w[0]..w[1]])
    }
}

/// What one node of a level costs, for [`parallel::concurrent`](crate::parallel::concurrent): the
/// elements it reads (its `parents`) and writes (position `output`), by `dims` (a position not in
/// `dims` counts 0). The same measure for `compile`'s levels and a generated program's.
pub(crate) fn node_work(parents: &[usize], output: usize, dims: &[Dims]) -> usize {
    let numel = |q: usize| dims.get(q).map_or(0, Dims::numel);
    parents.iter().fold(numel(output), |w, &q| w.saturating_add(numel(q)))
}

#[cfg(test)]
mod tests {
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::{Add, Tanh};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    fn levels_of(graph: &RawGraph<f64, ()>) -> Vec<Vec<usize>> {
        graph.levels().iter().map(<[usize]>::to_vec).collect()
    }

    #[test]
    fn independent_nodes_share_a_level_and_readers_of_the_whole_prefix_wait_for_it() {
        let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2); 2]);
        g.push(RawNode::compact(Tanh::new(0))).unwrap(); // node 0, level 0
        g.push(RawNode::compact(Tanh::new(1))).unwrap(); // node 1, level 0
        g.push(RawNode::compact(Add::new(2, 3))).unwrap(); // node 2, level 1
        g.push(RawNode::compact(Tanh::new(0))).unwrap(); // node 3, level 0
        assert_eq!(levels_of(&g), [vec![0, 1, 3], vec![2]]);
        assert_eq!(g.levels().widest(), 3);
        // An opaque node reads its whole prefix: one level above everything before it; a
        // built-in node after it that does not read it may still run early.
        g.push(RawNode::opaque(
            "copy",
            Dims::vector(2),
            vec![0],
            |ctx: &[RawTensor<f64>], _: &()| ctx[0].clone(),
            |ctx: &[RawTensor<f64>], _: &(), _: &RawTensor<f64>| {
                ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect()
            },
        ))
        .unwrap(); // node 4, level 2
        g.push(RawNode::compact(Tanh::new(1))).unwrap(); // node 5, level 0
        g.push(RawNode::compact(Tanh::new(6))).unwrap(); // node 6 reads node 4: level 3
        assert_eq!(levels_of(&g), [vec![0, 1, 3, 5], vec![2], vec![4], vec![6]]);
    }

    #[test]
    fn a_chain_has_one_node_per_level() {
        let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(3)]);
        for p in 0..5 {
            g.push(RawNode::compact(Tanh::new(p))).unwrap();
        }
        assert_eq!(g.levels().widest(), 1);
        assert_eq!(levels_of(&g), (0..5).map(|k| vec![k]).collect::<Vec<_>>());
    }
}
