//! The typed graph [`GraphData`], built by snoc: its shape lists are types.

use core::fmt;
use core::marker::PhantomData;

use super::node::failed_program;
use super::{IntoNode, Node, RawGraph, RawNode};
use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{Dims, Nil, Position, Shape, Snoc};

/// A typed graph: `A` the scalar, `D` the non-differentiable data (Δ), `G` the input shape list
/// (Γ) and `Ss` the node shape list (ss), both built by snoc.
///
/// ```
/// use exactgrad_runtime::{ops, GraphData, Pack, Tensor, typenum::U2};
/// let g = GraphData::<f64, ()>::new();
/// let (g, x) = g.input::<(U2,)>();
/// let (g, y) = g.push(ops::mul(x, x));
/// let (g, s) = g.push(ops::sum(y));
/// let inputs = Pack::new().push(Tensor::from_vec(vec![3.0, 4.0]).unwrap());
/// let saved = g.compile(inputs, ()).unwrap();
/// assert_eq!(saved.value(s).unwrap().data(), &[25.0]);
/// let grads = saved.backprop_from(s, Tensor::full(1.0)).unwrap();
/// assert_eq!(grads.get(x).unwrap().data(), &[6.0, 8.0]);
/// ```
pub struct GraphData<A, D, G = Nil, Ss = Nil, Br = ()> {
    raw: RawGraph<A, D>,
    /// The first input whose shape cannot be a tensor (reported by `compile` before any node).
    input_error: Option<Error>,
    build_errors: Vec<(usize, String)>,
    marker: PhantomData<fn() -> (G, Ss, Br)>,
}

impl<A: Scalar, D: 'static> GraphData<A, D, Nil, Nil> {
    /// A graph with no input and no node.
    #[must_use]
    pub fn new() -> Self {
        GraphData { raw: RawGraph::new(Vec::new()), input_error: None, build_errors: Vec::new(), marker: PhantomData }
    }
}

impl<A: Scalar, D: 'static, Br> GraphData<A, D, Nil, Nil, Br> {
    /// A graph with no input and no node whose handles carry the brand `Br`: handles of graphs
    /// with other brands are rejected by the compiler. `graph!` gives every graph a brand.
    #[must_use]
    pub fn branded() -> Self {
        GraphData { raw: RawGraph::new(Vec::new()), input_error: None, build_errors: Vec::new(), marker: PhantomData }
    }
}

impl<A: Scalar, D: 'static, Br> GraphData<A, D, Nil, Nil, Br> {
    /// Declares the graph's run-time dims, by name: an input shape uses the `k`-th as the typenum
    /// number [`run_time_stand_in(k)`](crate::shape::run_time_stand_in), and `compile` takes its
    /// size from the inputs (see [`crate::shape::Binding`]). More than
    /// [`MAX_RUN_TIME_DIMS`](crate::shape::MAX_RUN_TIME_DIMS) names is an error of `compile`.
    #[must_use]
    pub fn with_run_time_dims(mut self, names: &[&str]) -> Self {
        self.set_run_time_dims(names, &[]);
        self
    }
}

impl<A: Scalar, D: 'static> Default for GraphData<A, D, Nil, Nil> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Scalar, D: 'static, G, Br> GraphData<A, D, G, Nil, Br> {
    /// Declares the next input, of shape `S` (inputs come before any node). Never fails here: a
    /// shape whose element count overflows `usize` is reported by [`compile`](Self::compile) as
    /// [`Error::ShapeOverflow`].
    #[must_use]
    pub fn input<S: Shape>(mut self) -> (GraphData<A, D, Snoc<G, S>, Nil, Br>, Position<S, Br>) {
        let pos = self.input_in_place::<S>();
        (self.retype(), pos)
    }
}

impl<A: Scalar, D: 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// Appends a node of shape `S`. Never fails here: a node built from another graph's handles,
    /// or whose shape rule disagrees with `S`, is recorded and reported by
    /// [`compile`](Self::compile) with the node index and op.
    #[allow(clippy::type_complexity)]
    pub fn push<N: IntoNode<A, D>>(
        mut self,
        node: N,
    ) -> (GraphData<A, D, G, Snoc<Ss, N::Shape>, Br>, Position<N::Shape, Br>) {
        let pos = self.push_in_place(node.into_node());
        (self.retype(), pos)
    }

    pub(crate) fn input_in_place<S: Shape>(&mut self) -> Position<S, Br> {
        let p = add_input(&mut self.raw.dims, &mut self.raw.inputs, &mut self.input_error, S::dims());
        self.raw.levels = std::sync::OnceLock::new();
        Position::new(self.raw.id, p)
    }

    pub(crate) fn push_in_place<S: Shape>(&mut self, node: Node<A, D, S>) -> Position<S, Br> {
        let Node { data, error, origins, .. } = node;
        let p = self.push_dims(data, error, &origins, S::dims());
        Position::new(self.raw.id, p)
    }

    /// [`push_in_place`](Self::push_in_place) without the shape type (one body per graph type,
    /// not per node shape): pushes `data` declared with `dims`, records its build errors, and
    /// returns its position.
    fn push_dims(&mut self, data: RawNode<A, D>, error: Option<String>, origins: &[u64], dims: Dims) -> usize {
        let k = self.raw.nodes.len();
        let p = self.raw.dims.len();
        if let Some(message) = error {
            self.build_errors.push((k, message));
        }
        if let Some(other) = origins.iter().find(|&&o| o != self.raw.id) {
            self.build_errors.push((k, format!("reads a handle of another graph (graph id {other})")));
        }
        // Kept for the placeholder if the push is refused (graph building, not a hot path).
        let (name, parents) = (data.name().to_owned(), data.parents().to_vec());
        match self.raw.push(data) {
            Ok(_) if self.raw.dims[p] != dims => {
                self.build_errors
                    .push((k, format!("its shape rule gives {}, but it was declared {dims}", self.raw.dims[p])));
                self.raw.dims[p] = dims;
            }
            Ok(_) => {}
            Err(e) => {
                let message = match e {
                    Error::Node { message, .. } => message,
                    other => other.to_string(),
                };
                self.build_errors.push((k, message));
                self.raw.dims.push(dims);
                // Parents at or above `p` are what made the push fail: keep only valid ones.
                let parents = parents.into_iter().filter(|&q| q < p).collect();
                self.raw.nodes.push(RawNode { program: failed_program(name, parents), dims, rule_checked: false });
                self.raw.levels = std::sync::OnceLock::new();
            }
        }
        p
    }

    /// The same graph under other type-level shape lists. Crate-private: only the typed builders
    /// (this one, and [`MacroBuilder`](crate::MacroBuilder), whose types grow with every push) use
    /// it, each with exactly the list it recorded.
    pub(crate) fn retype<G2, Ss2>(self) -> GraphData<A, D, G2, Ss2, Br> {
        GraphData { raw: self.raw, input_error: self.input_error, build_errors: self.build_errors, marker: PhantomData }
    }

    /// The untyped graph.
    #[must_use]
    pub fn raw(&self) -> &RawGraph<A, D> {
        &self.raw
    }

    #[cfg(test)]
    pub(crate) fn build_errors(&self) -> &[(usize, String)] {
        &self.build_errors
    }

    /// The first error recorded while building, as `compile` reports it: an input whose shape
    /// overflows, else the first node's.
    pub(crate) fn first_build_error(&self) -> Option<Error> {
        if let Some(e) = &self.input_error {
            return Some(e.clone());
        }
        self.build_errors.first().map(|(k, m)| crate::saved::node_error(&self.raw, *k, m.clone()))
    }

    /// The untyped graph, consuming the typed one.
    pub(crate) fn into_raw(self) -> RawGraph<A, D> {
        self.raw
    }

    /// Declares the run-time dims (see [`RawGraph::set_run_time_dims`]) and names the inputs; an
    /// error is recorded and reported by `compile`.
    pub(crate) fn set_run_time_dims(&mut self, dims: &[&str], inputs: &[&str]) {
        if let Err(e) = self.raw.set_run_time_dims(dims.iter().map(|&d| d.to_owned()).collect()) {
            self.input_error.get_or_insert(e);
        }
        self.raw.set_input_names(inputs.iter().map(|&n| n.to_owned()).collect());
    }

    /// Records an error of the graph as a whole (reported by `compile` with the last node).
    pub(crate) fn record_build_error(&mut self, message: String) {
        let k = self.raw.nodes.len().saturating_sub(1);
        self.build_errors.push((k, message));
    }

    /// A listing of the graph (see [`RawGraph::describe`]).
    #[must_use]
    pub fn describe(&self) -> String {
        self.raw.describe()
    }
}

/// The untyped graph and the errors recorded while building it.
impl<A: 'static, D: 'static, G, Ss, Br> fmt::Debug for GraphData<A, D, G, Ss, Br> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphData")
            .field("raw", &self.raw)
            .field("input_error", &self.input_error)
            .field("build_errors", &self.build_errors)
            .finish()
    }
}

impl<A: 'static, D: 'static, G, Ss, Br> fmt::Display for GraphData<A, D, G, Ss, Br> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.raw, f)
    }
}

/// Records an input of `dims` (the next position) in a graph's dims and input count, and the
/// first input whose element count overflows `usize` in `input_error`; its position. Not generic,
/// so compiled once, here (an input of every shape calls it).
fn add_input(all: &mut Vec<Dims>, inputs: &mut usize, input_error: &mut Option<Error>, dims: Dims) -> usize {
    let p = all.len();
    if dims.checked_numel().is_none() && input_error.is_none() {
        *input_error = Some(Error::ShapeOverflow { what: format!("input {p}"), dims });
    }
    all.push(dims);
    *inputs += 1;
    p
}

#[cfg(test)]
mod build_error_tests {
    use crate::ops;
    use crate::typenum::{U0, U1, U2};
    use crate::{Error, GraphData, Pack, Tensor};

    #[test]
    fn a_node_refused_at_push_is_reported_by_compile_with_its_op_name() {
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2,)>();
        // The type is right ([1]), but the range 5..6 is not inside the axis of size 2.
        let (g, _) = g.push(ops::slice(x, U0::new(), 5, U1::new()));
        let err = g.compile(Pack::new().push(Tensor::zeros()), ()).err().unwrap();
        let Error::Node { node, op, message, .. } = err else { panic!("a node error") };
        assert_eq!((node, op.as_str()), (0, "slice"));
        assert!(message.contains("[2]") && message.contains("from 5"), "{message}");
    }
}
