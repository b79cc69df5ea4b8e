//! The forward's levels (SEMANTICS §8.4), the rule the runtime's `compile` and the programs
//! `graph!` generates both schedule by: a node that reads exactly its parents (a built-in op) is
//! one level above the highest level among the nodes it reads (level 0 when it reads only
//! inputs); a node that receives its whole prefix (an opaque node, a user compact op) is one level
//! above every node before it. The nodes of one level then read only values of lower levels, so
//! they may be computed in any order, or at the same time, with the same results.
//!
//! ```
//! use exactgrad_spec::levels::node_levels;
//! // One input; nodes: 0 reads the input, 1 reads node 0, 2 reads its whole prefix, 3 the input.
//! let reads: [Option<&[usize]>; 4] = [Some(&[0]), Some(&[1]), None, Some(&[0])];
//! assert_eq!(node_levels(1, reads), [0, 1, 2, 0]);
//! ```

/// The level of every node, in node order. `reads` gives, per node, `Some(parents)` (positions:
/// the `inputs` inputs first, then the nodes) for a node that reads exactly its parents, `None` for
/// one that receives its whole prefix. A parent must be a position below the node.
pub fn node_levels<'a>(inputs: usize, reads: impl IntoIterator<Item = Option<&'a [usize]>>) -> Vec<usize> {
    let mut level: Vec<usize> = Vec::new();
    // One more than the highest level so far: where a node reading its whole prefix goes.
    let mut above_all = 0;
    for parents in reads {
        let l = match parents {
            Some(parents) => {
                parents.iter().filter_map(|&q| q.checked_sub(inputs)).map(|k| level[k] + 1).max().unwrap_or(0)
            }
            None => above_all,
        };
        above_all = above_all.max(l + 1);
        level.push(l);
    }
    level
}
