//! The untyped graph [`RawGraph`]: input dims and nodes, each checked when pushed.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::buffers::BufferPool;
use super::{Levels, Program, RawNode};
use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{Dims, RawPosition};

/// An untyped graph: input dims and nodes. Node `k` sits at position `inputs.len() + k` and reads
/// only positions below it.
pub struct RawGraph<A, D> {
    pub(super) id: u64,
    pub(super) dims: Vec<Dims>,
    pub(super) inputs: usize,
    pub(super) nodes: Vec<RawNode<A, D>>,
    /// Names of the run-time dims: the `k`-th stands in the dims as `run_time_stand_in(k)`.
    pub(super) run_time: Vec<String>,
    /// Names of the inputs, for messages (empty: `input {i}`).
    pub(super) input_names: Vec<String>,
    /// The forward's levels, computed on first use and dropped when a node or input is added.
    pub(super) levels: std::sync::OnceLock<Levels>,
    /// Spare buffers for the values and gradients of its compiles and passes.
    pub(super) buffers: std::sync::Arc<BufferPool<A>>,
}

fn next_graph_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl<A: Scalar, D: 'static> RawGraph<A, D> {
    /// A graph with inputs of the given dims and no node.
    #[must_use]
    pub fn new(inputs: Vec<Dims>) -> Self {
        RawGraph {
            id: next_graph_id(),
            inputs: inputs.len(),
            dims: inputs,
            nodes: Vec::new(),
            run_time: Vec::new(),
            input_names: Vec::new(),
            levels: std::sync::OnceLock::new(),
            buffers: std::sync::Arc::new(BufferPool::new(0)),
        }
    }

    /// Appends a node, returning its position (a handle of this graph; the op constructors of
    /// later nodes take its [`index`](RawPosition::index)). A compact node's output dims come from
    /// its shape rule.
    ///
    /// # Errors
    /// [`Error::Node`] when the node reads a position not below it, breaks its shape rule or has
    /// a shape whose element count overflows `usize`; the graph is unchanged.
    pub fn push(&mut self, mut node: RawNode<A, D>) -> Result<RawPosition, Error> {
        let p = self.dims.len();
        let err = |node: &RawNode<A, D>, dims: &[Dims], message: String| Error::Node {
            node: p - self.inputs,
            op: node.name().to_owned(),
            parent_shapes: node.parents().iter().filter_map(|&q| dims.get(q).copied()).collect(),
            message,
        };
        if let Some(&q) = node.parents().iter().chain(node.support().unwrap_or(&[])).find(|&&q| q >= p) {
            return Err(err(&node, &self.dims, format!("reads position {q}, but may only read positions below {p}")));
        }
        if let Program::Compact(op) = &node.program {
            match crate::guard::guarded("its shape rule", || op.output_dims(&self.dims)) {
                Ok(Ok(d)) => {
                    node.dims = d;
                    node.rule_checked = op.reference().is_some();
                }
                Ok(Err(m)) | Err(m) => return Err(err(&node, &self.dims, m)),
            }
        }
        if node.dims.checked_numel().is_none() {
            let message = format!("its shape {} has more elements than fit in usize", node.dims);
            return Err(err(&node, &self.dims, message));
        }
        self.dims.push(node.dims);
        self.nodes.push(node);
        self.levels = std::sync::OnceLock::new();
        Ok(RawPosition::new(self.id, p))
    }
}

impl<A: 'static, D: 'static> RawGraph<A, D> {
    /// The handle of position `index` of this graph: an input for `index < num_inputs()`, else
    /// node `index - num_inputs()`. (Nodes' handles are also returned by [`push`](Self::push).)
    ///
    /// ```
    /// use exactgrad_runtime::{Dims, RawGraph};
    /// let g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    /// assert_eq!(g.position(0).unwrap().index(), 0);
    /// assert!(g.position(1).is_err());
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for an `index` outside the graph.
    pub fn position(&self, index: usize) -> Result<RawPosition, Error> {
        let len = self.dims.len();
        if index >= len {
            return Err(Error::ForeignPosition { index, len });
        }
        Ok(RawPosition::new(self.id, index))
    }

    /// Checks that `p` is a handle of this graph, returning its index.
    pub(crate) fn check_position(&self, p: RawPosition) -> Result<usize, Error> {
        if p.graph_id() != self.id || p.index() >= self.dims.len() {
            return Err(Error::ForeignPosition { index: p.index(), len: self.dims.len() });
        }
        Ok(p.index())
    }

    /// Gives the buffers of `tensors` to this graph's spare buffers, for its later compiles and
    /// passes: a training loop gives back the gradients of the last step once it has applied them
    /// (a saved graph gives back its values when dropped), and a step then allocates no buffer
    /// per node. Any tensors may be given; the graph keeps at most about two buffers per
    /// position and drops the rest. Buffers only change hands, so results are the same bits.
    ///
    /// ```
    /// use exactgrad_runtime::{ops::Tanh, Dims, RawGraph, RawNode, RawSavedGraph, RawSeeds, RawTensor};
    /// let mut g = RawGraph::<f32, ()>::new(vec![Dims::vector(3)]);
    /// let y = g.push(RawNode::compact(Tanh::new(0))).unwrap();
    /// let mut seeds = RawSeeds::zeros(g.dims());
    /// seeds.set(y, RawTensor::full(Dims::vector(3), 1.0)).unwrap();
    /// for _ in 0..3 {
    ///     let saved = RawSavedGraph::compile(&g, vec![RawTensor::full(Dims::vector(3), 0.5)], ()).unwrap();
    ///     let gradients = saved.backprop_inputs_array(seeds.clone()).unwrap();
    ///     assert!((gradients[0].data()[0] - 0.786_448_3).abs() < 1e-6);
    ///     g.recycle(gradients); // the next step's gradients reuse these buffers
    /// }
    /// ```
    pub fn recycle(&self, tensors: impl IntoIterator<Item = crate::tensor::RawTensor<A>>) {
        self.buffers.give_all(tensors.into_iter().map(crate::tensor::RawTensor::into_vec));
    }

    /// The graph's spare buffers (shared, so that a saved graph gives its values back when
    /// dropped without borrowing the graph for its drop).
    pub(crate) fn buffers(&self) -> &std::sync::Arc<BufferPool<A>> {
        &self.buffers
    }

    /// Number of inputs (|Γ|).
    #[must_use]
    pub fn num_inputs(&self) -> usize {
        self.inputs
    }

    /// The nodes in creation order.
    #[must_use]
    pub fn nodes(&self) -> &[RawNode<A, D>] {
        &self.nodes
    }

    /// The forward's levels ([`Levels`]), computed once.
    pub(crate) fn levels(&self) -> &Levels {
        self.levels.get_or_init(|| Levels::of(self))
    }

    /// Dims of every position (Γ ++ ss).
    #[must_use]
    pub fn dims(&self) -> &[Dims] {
        &self.dims
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A listing of the graph: one line per input and node with op, parents, shape, support and
    /// opaque marker. Same as the `Display` output.
    #[must_use]
    pub fn describe(&self) -> String {
        self.to_string()
    }
}

/// The dims of every position, the number of inputs and the nodes.
impl<A: 'static, D: 'static> fmt::Debug for RawGraph<A, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawGraph")
            .field("dims", &self.dims)
            .field("inputs", &self.inputs)
            .field("nodes", &self.nodes)
            .finish()
    }
}

impl<A: 'static, D: 'static> fmt::Display for RawGraph<A, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<Listed<'_>> =
            self.nodes.iter().map(|node| (node.name(), node.parents(), node.dims, node.support())).collect();
        write_listing(f, &self.dims[..self.inputs], &self.run_time, &nodes)
    }
}

/// A node as the listing prints it: op name, parents, dims, support (`None`: opaque).
type Listed<'a> = (&'a str, &'a [usize], Dims, Option<&'a [usize]>);

/// The listing of a graph with inputs of dims `inputs` and these nodes ([`RawGraph`]'s
/// `Display`): not generic, so compiled once, here.
fn write_listing(
    f: &mut fmt::Formatter<'_>,
    inputs: &[Dims],
    run_time: &[String],
    nodes: &[Listed<'_>],
) -> fmt::Result {
    for (p, d) in inputs.iter().enumerate() {
        writeln!(f, "%{p} = input {}", crate::shape::named_dims(*d, run_time))?;
    }
    for (k, &(name, parents, dims, support)) in nodes.iter().enumerate() {
        let p = inputs.len() + k;
        let parents: Vec<String> = parents.iter().map(|q| format!("%{q}")).collect();
        write!(f, "%{p} = {name}({}) : {}", parents.join(", "), crate::shape::named_dims(dims, run_time))?;
        match support {
            Some(s) => {
                let s: Vec<String> = s.iter().map(|q| format!("%{q}")).collect();
                writeln!(f, "  support [{}]", s.join(", "))?;
            }
            None => writeln!(f, "  opaque (support: all of %0..%{})", p.saturating_sub(1))?,
        }
    }
    Ok(())
}
