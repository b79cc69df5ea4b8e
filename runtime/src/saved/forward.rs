//! The forward of checked lowering (SEMANTICS §6 `compile`, §8.4): node by node in index order,
//! or, on two or more threads, level by level with the nodes of a wide level computed at the
//! same time ([`Levels`]).
//!
//! Both give every value bit for bit: a node's value is computed by the same code from the same
//! parent values whatever else runs beside it. Errors are the sequential order's: when a node
//! fails on the level path, the forward is run again node by node, which stops at the first
//! failing node in index order (the one the contract names).

use rayon::prelude::*;

use crate::error::Error;
use crate::graph::{node_work, Levels, RawGraph};
use crate::guard::guarded;
use crate::parallel;
use crate::program::bound::{Bound, BoundGraph};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Appends the value of every node of `graph` to `values` (the inputs, checked against `dims`).
pub(super) fn run<A: Scalar, D: Sync + 'static>(
    graph: &RawGraph<A, D>,
    dims: &[Dims],
    values: &mut Vec<RawTensor<A>>,
    data: &D,
) -> Result<(), Error> {
    // On one thread the levels are never computed (nor cached).
    let levels = (parallel::threads() >= 2 && graph.levels().widest() >= 2).then(|| graph.levels());
    let bound = Bound { graph, data };
    if A::COMPILED {
        return (A::compiled().forward)(&bound, levels, dims, values);
    }
    run_body(&bound, levels, dims, values)
}

/// [`run`]'s body over the graph bound to its data (compiled in this crate for `f32` and `f64`:
/// `crate::compiled`), by `levels` when given.
pub(crate) fn run_body<A: Scalar>(
    graph: &(dyn BoundGraph<A> + Sync),
    levels: Option<&Levels>,
    dims: &[Dims],
    values: &mut Vec<RawTensor<A>>,
) -> Result<(), Error> {
    if let Some(levels) = levels {
        if by_levels(graph, levels, dims, values) {
            return Ok(());
        }
        values.truncate(graph.inputs());
    }
    values.reserve(graph.nodes());
    for k in 0..graph.nodes() {
        let value = node_value(graph, dims, k, values)?;
        values.push(value);
    }
    Ok(())
}

/// The level path: `false` (values partly filled) when a node fails.
fn by_levels<A: Scalar>(
    graph: &(dyn BoundGraph<A> + Sync),
    levels: &Levels,
    dims: &[Dims],
    values: &mut Vec<RawTensor<A>>,
) -> bool {
    let inputs = graph.inputs();
    values.extend(dims[inputs..].iter().map(|&d| RawTensor::vacant(d)));
    for level in levels.iter() {
        // The elements the level reads and writes: what its nodes cost, roughly.
        let work =
            || level.iter().fold(0usize, |w, &k| w.saturating_add(node_work(graph.parents(k), inputs + k, dims)));
        if parallel::concurrent(level.len(), work) {
            let prefix = &values[..];
            let computed: Vec<Option<RawTensor<A>>> = parallel::split(|| {
                level
                    .par_iter()
                    .map(|&k| parallel::piece(level.len(), || node_value(graph, dims, k, &prefix[..inputs + k]).ok()))
                    .collect()
            });
            for (&k, value) in level.iter().zip(computed) {
                let Some(value) = value else { return false };
                values[inputs + k] = value;
            }
        } else {
            for &k in level {
                let Ok(value) = node_value(graph, dims, k, &values[..inputs + k]) else { return false };
                values[inputs + k] = value;
            }
        }
    }
    true
}

/// The error at node `k` of `graph`, with its parent shapes from `dims`.
pub(crate) fn bound_node_error<A>(
    graph: &(dyn BoundGraph<A> + Sync),
    dims: &[Dims],
    k: usize,
    message: String,
) -> Error {
    if k < graph.nodes() {
        Error::Node {
            node: k,
            op: graph.name(k).to_owned(),
            parent_shapes: graph.parents(k).iter().filter_map(|&q| dims.get(q).copied()).collect(),
            message,
        }
    } else {
        Error::Node { node: k, op: "graph".to_owned(), parent_shapes: Vec::new(), message }
    }
}

/// Node `k`'s value from `prefix` (the values of every position below it; on the level path,
/// positions the node does not read may still be vacant — only nodes reading exactly their
/// parents run before their whole prefix is computed): its shape rule, validation and forward,
/// each failure or panic an error at the node.
fn node_value<A: Scalar>(
    graph: &(dyn BoundGraph<A> + Sync),
    dims: &[Dims],
    k: usize,
    prefix: &[RawTensor<A>],
) -> Result<RawTensor<A>, Error> {
    let fail = |m| bound_node_error(graph, dims, k, m);
    let p = prefix.len();
    let node_dims = dims[p];
    let value = if graph.is_compact(k) {
        // The values so far have exactly these dims: the inputs were checked by `bound_dims` and
        // every node's value is checked below. A built-in op's rule already gave these dims at
        // push, from the same parent dims (`RawNode::rule_checked_on`).
        if !graph.has_run_time_dims() && !graph.rule_checked_on(k, node_dims) {
            match guarded("its shape rule", || graph.output_dims(k, &dims[..p])).map_err(fail)? {
                Ok(d) if d == node_dims => {}
                Ok(d) => return Err(fail(format!("shape rule gives {d}, node declares {node_dims}"))),
                Err(m) => return Err(fail(m)),
            }
        }
        guarded("its validation", || graph.validate(k, prefix)).map_err(fail)?.map_err(fail)?;
        if graph.is_built_in(k) {
            // Written into a spare buffer of the graph (`graph::buffers`): no allocation once a
            // dropped saved graph has given its values back.
            let n = node_dims.numel();
            let mut buf = graph.buffers().take(n);
            guarded("the forward", || graph.forward_into(k, prefix, &mut buf)).map_err(fail)?;
            if buf.len() != n {
                return Err(fail(format!("forward gave {} elements, the node's shape {node_dims} has {n}", buf.len())));
            }
            RawTensor::from_parts(node_dims, buf)
        } else {
            guarded("the forward", || graph.forward(k, prefix)).map_err(fail)?
        }
    } else {
        guarded("the forward", || graph.forward(k, prefix)).map_err(fail)?
    };
    if value.dims() != node_dims {
        return Err(fail(format!("forward returned shape {}, the node's shape is {node_dims}", value.dims())));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::contributions::{Contrib, Contributions};
    use crate::graph::{CompactOp, GraphData, Node, RawNode, SavedValues};
    use crate::saved::RawSavedGraph;
    use crate::typenum::{U2, U3};

    fn shape_error(e: Error) -> String {
        match e {
            Error::Node { message, .. } => message,
            other => panic!("expected a node error, got {other}"),
        }
    }

    /// A built-in op whose dims the typed builder overrode (its declared shape breaks its rule)
    /// has its rule run again: compiling the raw graph names the mismatch.
    #[test]
    fn a_built_in_op_with_overridden_dims_is_checked_again() {
        let (g, x) = GraphData::<f64, ()>::new().input::<(U3,)>();
        let (g, _) = g.push(Node::<f64, (), (U2,)>::compact(crate::ops::Add::new(x.index(), x.index()), &[&x]));
        let e = RawSavedGraph::compile(g.raw(), vec![RawTensor::zeros(Dims::vector(3))], ()).unwrap_err();
        assert_eq!(shape_error(e), "shape rule gives [3], node declares [2]");
    }

    /// A user op whose rule gives another shape at `compile` than at push (an impure rule).
    struct Drifting(AtomicUsize, [usize; 1]);

    impl CompactOp<f64, ()> for Drifting {
        fn name(&self) -> &str {
            "drifting"
        }
        fn parents(&self) -> &[usize] {
            &self.1
        }
        fn output_dims(&self, _: &[Dims]) -> Result<Dims, String> {
            Ok(Dims::vector(2 + self.0.fetch_add(1, Ordering::Relaxed)))
        }
        fn forward(&self, _: &[RawTensor<f64>], (): &()) -> RawTensor<f64> {
            RawTensor::zeros(Dims::vector(2))
        }
        fn contributions(
            &self,
            _: &SavedValues<'_, f64, ()>,
            _: &RawTensor<f64>,
            c: &mut Contributions<f64>,
        ) -> Contrib {
            c.zero()
        }
    }

    #[test]
    fn a_user_op_has_its_rule_run_again() {
        let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
        g.push(RawNode::compact(Drifting(AtomicUsize::new(0), [0]))).unwrap();
        let e = RawSavedGraph::compile(&g, vec![RawTensor::zeros(Dims::vector(2))], ()).unwrap_err();
        assert_eq!(shape_error(e), "shape rule gives [3], node declares [2]");
    }
}
