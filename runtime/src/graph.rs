//! Graphs (SEMANTICS §2): nodes with a forward, a dense VJP over the whole prefix, a validation
//! and (for built-in and custom compact ops) a compact program; the untyped [`RawGraph`] and the
//! typed [`GraphData`] built by snoc.

use core::fmt;
use core::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::contributions::{Contrib, Contributions};
use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{Dims, Nil, Position, RawPosition, Shape, Snoc};
use crate::tensor::RawTensor;

mod bind;
mod levels;

pub(crate) use levels::Levels;

/// An op with a compact program: forward, shape rule, validation and contributions.
///
/// Built-in ops implement it; so can users, with the same [`Contributions`] combinators
/// (see `examples/` and the `ops` module for models). `ctx` is always the saved context prefix
/// before the node: inputs first, then earlier nodes.
///
/// # Contract of `ctx` (and why the engine never panics on it)
/// The engine calls [`validate`](Self::validate), [`forward`](Self::forward),
/// [`forward_into`](Self::forward_into) and [`contributions`](Self::contributions) only on a
/// **validated prefix**: the values of every position below the node, whose dims
/// [`output_dims`](Self::output_dims) accepted (at push, and again at `compile` unless the op has
/// a [`reference`](Self::reference) and the graph no run-time dims). The built-in ops
/// rely on it — they index `ctx` at their parents and read its shapes without checking again — so
/// calling one of these methods directly, on a prefix its shape rule would refuse, may panic
/// (an index out of bounds, a shape the kernel cannot take). The engine's own calls cannot reach
/// that: the shape rule runs first and its refusal is an [`Error::Node`]; a
/// user op that panics anyway is caught at the node and reported as an error
/// (`tests/no_panic.rs`).
///
/// # Threads
/// An op is `Send + Sync`, like the graph that holds it: one compiled model (its [`GraphData`],
/// a [`SavedGraph`](crate::SavedGraph) of it) can serve several threads at once. An op that needs
/// shared mutable state keeps it behind a `Mutex` or an atomic.
pub trait CompactOp<A, D>: Send + Sync + 'static {
    /// The op's name, as shown in errors and descriptions.
    fn name(&self) -> &str;

    /// Positions the op reads.
    fn parents(&self) -> &[usize];

    /// Static support: positions that may receive a contribution. Defaults to the parents.
    fn support(&self) -> &[usize] {
        self.parents()
    }

    /// The shape rule: the output dims from the dims of the whole prefix.
    ///
    /// # Errors
    /// A message saying which rule is broken, with the shapes in decimal.
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String>;

    /// Checks that depend on values or data (e.g. labels in range). Runs before `forward`.
    ///
    /// # Errors
    /// A message saying what is wrong.
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        let _ = (ctx, data);
        Ok(())
    }

    /// For an op whose output size comes from the data (`data_tensor`, `gather_rows`): the dims it
    /// declares for that data (with the stand-ins of run-time dims, see [`crate::shape::Binding`])
    /// and the dims the data actually has. `compile` binds the run-time dims from them, as from
    /// the inputs. Defaults to `Ok(None)` (the op's output size comes from its parents).
    ///
    /// # Errors
    /// A message saying why the data fits no size of the declared dims (a lookup whose id count
    /// does not fill its leading dims); `compile` reports it at the node.
    fn data_dims(&self, data: &D) -> Result<Option<(Dims, Dims)>, String> {
        let _ = data;
        Ok(None)
    }

    /// The node's value.
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A>;

    /// The node's value appended to `out` (empty on entry), so a caller can reuse one buffer run
    /// after run (the programs `graph!` generates do). Defaults to [`forward`](Self::forward)'s
    /// elements; ops on hot paths write directly.
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>)
    where
        A: Clone,
    {
        out.extend_from_slice(self.forward(ctx, data).data());
    }

    /// The VJP at cotangent `g`, described with `c`; returns the root description.
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib;

    /// The op as the independent reference knows it ([`crate::reference`]): its name, positions
    /// and parameters, from which the reference computes its value and dense VJP by its own
    /// code. Every built-in op returns one; the default `None` (user ops) makes the reference
    /// trust the op's own `forward` and the dense form of its contributions. An op that returns
    /// one is taken to have a pure shape rule, a function of its parents' dims alone: on a graph
    /// without run-time dims, `compile` keeps the dims it gave at push instead of running it again.
    fn reference(&self) -> Option<crate::reference::RefOp<A, D>> {
        None
    }
}

/// What a node's VJP may read: the saved prefix (inputs and earlier nodes), the node's own saved
/// output, and the data.
#[derive(Debug)]
pub struct SavedValues<'a, A, D> {
    /// Values of every position before the node.
    pub prefix: &'a [RawTensor<A>],
    /// The node's own value.
    pub output: &'a RawTensor<A>,
    /// The graph's non-differentiable data.
    pub data: &'a D,
}

impl<A, D> Clone for SavedValues<'_, A, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A, D> Copy for SavedValues<'_, A, D> {}

/// Forward closure of an opaque node (`Send + Sync`, so the graph holding it can be shared by
/// threads).
pub type OpaqueForward<A, D> = Box<dyn Fn(&[RawTensor<A>], &D) -> RawTensor<A> + Send + Sync>;
/// Dense-VJP closure of an opaque node: one tensor per earlier position (`Send + Sync`, as
/// [`OpaqueForward`]).
pub type OpaqueVjp<A, D> = Box<dyn Fn(&[RawTensor<A>], &D, &RawTensor<A>) -> Vec<RawTensor<A>> + Send + Sync>;

/// The program of a node.
pub(crate) enum Program<A, D> {
    Compact(Box<dyn CompactOp<A, D>>),
    Opaque { name: String, parents: Vec<usize>, forward: OpaqueForward<A, D>, vjp: OpaqueVjp<A, D> },
}

/// One untyped node: its program and output dims (plus an error found while building, reported by
/// `compile`).
pub struct RawNode<A, D> {
    program: Program<A, D>,
    dims: Dims,
    /// Set by [`RawGraph::push`] for a built-in compact op (one with a
    /// [`reference`](CompactOp::reference)): its shape rule, a pure function of its parents' dims,
    /// gave `dims` there, so `compile` need not run it again while the graph's dims are the ones it
    /// was pushed with (no run-time dims, `dims` still the position's).
    rule_checked: bool,
}

impl<A: Scalar, D: 'static> RawNode<A, D> {
    /// A node running a compact op; the dims come from its shape rule when pushed.
    pub fn compact(op: impl CompactOp<A, D>) -> Self {
        RawNode { program: Program::Compact(Box::new(op)), dims: Dims::scalar(), rule_checked: false }
    }

    /// An opaque node of output dims `dims`: a forward closure and a dense VJP closure that returns
    /// one tensor per earlier position (zeros where it has nothing to say). `parents` is only
    /// informational (descriptions); reachability treats an opaque node as reading its whole prefix.
    /// The closures are `Send + Sync` (see [`OpaqueForward`]): state they share goes behind a
    /// `Mutex` or an atomic, not an `Rc<RefCell<…>>`.
    pub fn opaque(
        name: impl Into<String>,
        dims: Dims,
        parents: Vec<usize>,
        forward: impl Fn(&[RawTensor<A>], &D) -> RawTensor<A> + Send + Sync + 'static,
        vjp: impl Fn(&[RawTensor<A>], &D, &RawTensor<A>) -> Vec<RawTensor<A>> + Send + Sync + 'static,
    ) -> Self {
        RawNode {
            program: Program::Opaque { name: name.into(), parents, forward: Box::new(forward), vjp: Box::new(vjp) },
            dims,
            rule_checked: false,
        }
    }
}

impl<A: 'static, D: 'static> RawNode<A, D> {
    /// The op's name.
    #[must_use]
    pub fn name(&self) -> &str {
        match &self.program {
            Program::Compact(op) => op.name(),
            Program::Opaque { name, .. } => name,
        }
    }

    /// Positions the node reads (for an opaque node: the ones it declared).
    #[must_use]
    pub fn parents(&self) -> &[usize] {
        match &self.program {
            Program::Compact(op) => op.parents(),
            Program::Opaque { parents, .. } => parents,
        }
    }

    /// Static support for a compact node; `None` for an opaque node (its whole prefix).
    #[must_use]
    pub fn support(&self) -> Option<&[usize]> {
        match &self.program {
            Program::Compact(op) => Some(op.support()),
            Program::Opaque { .. } => None,
        }
    }

    /// `true` for a node without a compact program.
    #[must_use]
    pub fn is_opaque(&self) -> bool {
        matches!(self.program, Program::Opaque { .. })
    }

    /// Output dims.
    #[must_use]
    pub fn dims(&self) -> Dims {
        self.dims
    }

    pub(crate) fn program(&self) -> &Program<A, D> {
        &self.program
    }

    /// `true` when the node's shape rule need not run again on `dims`, the graph's declared
    /// dims (no run-time dims): a built-in op whose rule gave `self.dims` at push, and `dims` still
    /// gives the node that shape (the typed builder may have overridden it after a mismatch).
    pub(crate) fn rule_checked_on(&self, dims: Dims) -> bool {
        self.rule_checked && self.dims == dims
    }
}

/// The op's name, parents, dims and support (`None`: opaque); the closures and op are not shown.
impl<A: 'static, D: 'static> fmt::Debug for RawNode<A, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawNode")
            .field("name", &self.name())
            .field("parents", &self.parents())
            .field("dims", &self.dims)
            .field("support", &self.support())
            .finish()
    }
}

/// A compact op that can be built from its parent positions alone, so `graph!` can call it like a
/// built-in: `let y: [3] = MyOp(a, b);` builds `MyOp::from_parents(&[a, b])`.
pub trait FromParents {
    /// The op reading `parents` (context positions, in call order).
    fn from_parents(parents: &[usize]) -> Self;
}

/// A typed node of output shape `S`, ready to be pushed on a [`GraphData`].
pub struct Node<A, D, S> {
    data: RawNode<A, D>,
    /// An error found while building the node, reported by `compile`.
    error: Option<String>,
    /// Graph ids of the handles the node was built from.
    origins: Vec<u64>,
    shape: PhantomData<fn() -> S>,
}

impl<A: Scalar, D: 'static, S: Shape> Node<A, D, S> {
    /// A node running a compact op built from the handles `reads` (used to check they belong to the
    /// graph the node is pushed on).
    pub fn compact(op: impl CompactOp<A, D>, reads: &[&dyn ErasedPosition]) -> Self {
        Node {
            data: RawNode::compact(op),
            error: None,
            origins: reads.iter().map(ErasedPosition::graph).collect(),
            shape: PhantomData,
        }
    }

    /// A node that could not be built (e.g. a constant not representable in the scalar type):
    /// pushing it works, and `compile` reports `message` with the node index and `name`.
    pub fn failed(name: &str, reads: &[&dyn ErasedPosition], message: &str) -> Self {
        let parents = reads.iter().map(ErasedPosition::index).collect();
        Node {
            data: RawNode { program: failed_program(name.to_owned(), parents), dims: S::dims(), rule_checked: false },
            error: Some(message.to_owned()),
            origins: reads.iter().map(ErasedPosition::graph).collect(),
            shape: PhantomData,
        }
    }

    /// An opaque node (see [`RawNode::opaque`]), of output shape `S`.
    pub fn opaque(
        name: impl Into<String>,
        reads: &[&dyn ErasedPosition],
        forward: impl Fn(&[RawTensor<A>], &D) -> RawTensor<A> + Send + Sync + 'static,
        vjp: impl Fn(&[RawTensor<A>], &D, &RawTensor<A>) -> Vec<RawTensor<A>> + Send + Sync + 'static,
    ) -> Self {
        let parents = reads.iter().map(ErasedPosition::index).collect();
        Node {
            data: RawNode::opaque(name, S::dims(), parents, forward, vjp),
            error: None,
            origins: reads.iter().map(ErasedPosition::graph).collect(),
            shape: PhantomData,
        }
    }
}

/// The untyped node and the error recorded while building it, if any.
impl<A: 'static, D: 'static, S> fmt::Debug for Node<A, D, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node").field("node", &self.data).field("error", &self.error).finish()
    }
}

/// A typed node running the compact op `Op`, as the typed op constructors (`ops::matmul`, …) return
/// it: push it on a graph like a [`Node`], or take the op back with [`into_op`](Self::into_op) to
/// run it directly (the programs `graph!` generates call their ops without dynamic dispatch).
pub struct Compact<Op, A, D, S> {
    op: Op,
    /// Graph ids of the handles the node was built from.
    origins: Vec<u64>,
    marker: PhantomData<fn() -> (A, D, S)>,
}

impl<Op: CompactOp<A, D>, A: Scalar, D: 'static, S: Shape> Compact<Op, A, D, S> {
    /// The node running `op`, built from the handles `reads` (used to check they belong to the
    /// graph the node is pushed on).
    pub fn new(op: Op, reads: &[&dyn ErasedPosition]) -> Self {
        Compact { op, origins: reads.iter().map(ErasedPosition::graph).collect(), marker: PhantomData }
    }

    /// The op.
    pub fn op(&self) -> &Op {
        &self.op
    }

    /// The op, consuming the node.
    pub fn into_op(self) -> Op {
        self.op
    }
}

impl<Op: Clone, A, D, S> Clone for Compact<Op, A, D, S> {
    fn clone(&self) -> Self {
        Compact { op: self.op.clone(), origins: self.origins.clone(), marker: PhantomData }
    }
}

impl<Op: fmt::Debug, A, D, S> fmt::Debug for Compact<Op, A, D, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Compact").field(&self.op).finish()
    }
}

/// A node of shape [`Shape`](Self::Shape) that a graph can take: a [`Node`] or a [`Compact`].
pub trait IntoNode<A, D> {
    /// The node's output shape.
    type Shape: Shape;
    /// The type-erased node.
    fn into_node(self) -> Node<A, D, Self::Shape>;
}

impl<A, D, S: Shape> IntoNode<A, D> for Node<A, D, S> {
    type Shape = S;
    fn into_node(self) -> Node<A, D, S> {
        self
    }
}

impl<Op: CompactOp<A, D>, A: Scalar, D: 'static, S: Shape> IntoNode<A, D> for Compact<Op, A, D, S> {
    type Shape = S;
    fn into_node(self) -> Node<A, D, S> {
        Node { data: RawNode::compact(self.op), error: None, origins: self.origins, shape: PhantomData }
    }
}

/// A node whose op could not be built (`Err`, e.g. a constant the scalar type cannot represent)
/// is pushed as is and reported by `compile`.
impl<Op: CompactOp<A, D>, A: Scalar, D: 'static, S: Shape> IntoNode<A, D>
    for Result<Compact<Op, A, D, S>, Node<A, D, S>>
{
    type Shape = S;
    fn into_node(self) -> Node<A, D, S> {
        match self {
            Ok(c) => c.into_node(),
            Err(failed) => failed,
        }
    }
}

/// A node whose concrete op a generated program keeps (to call without dynamic dispatch).
pub trait KeepOp {
    /// The op.
    type Op;
    /// A copy of the op, `None` for a node that could not be built.
    fn kept(&self) -> Option<Self::Op>;
}

impl<Op: CompactOp<A, D> + Clone, A: Scalar, D: 'static, S: Shape> KeepOp for Compact<Op, A, D, S> {
    type Op = Op;
    fn kept(&self) -> Option<Op> {
        Some(self.op.clone())
    }
}

impl<Op: CompactOp<A, D> + Clone, A: Scalar, D: 'static, S: Shape> KeepOp
    for Result<Compact<Op, A, D, S>, Node<A, D, S>>
{
    type Op = Op;
    fn kept(&self) -> Option<Op> {
        self.as_ref().ok().map(|c| c.op.clone())
    }
}

/// A position handle with its shape erased (to pass handles of several shapes in one slice).
pub trait ErasedPosition {
    /// Id of the graph the handle belongs to.
    fn graph(&self) -> u64;
    /// Index in that graph's context.
    fn index(&self) -> usize;
}

impl<S, Br> ErasedPosition for Position<S, Br> {
    fn graph(&self) -> u64 {
        self.graph_id()
    }
    fn index(&self) -> usize {
        Position::index(self)
    }
}

impl<P: ErasedPosition + ?Sized> ErasedPosition for &P {
    fn graph(&self) -> u64 {
        (**self).graph()
    }
    fn index(&self) -> usize {
        (**self).index()
    }
}

/// An untyped graph: input dims and nodes. Node `k` sits at position `inputs.len() + k` and reads
/// only positions below it.
pub struct RawGraph<A, D> {
    id: u64,
    dims: Vec<Dims>,
    inputs: usize,
    nodes: Vec<RawNode<A, D>>,
    /// Names of the run-time dims: the `k`-th stands in the dims as `run_time_stand_in(k)`.
    run_time: Vec<String>,
    /// Names of the inputs, for messages (empty: `input {i}`).
    input_names: Vec<String>,
    /// The forward's levels, computed on first use and dropped when a node or input is added.
    levels: std::sync::OnceLock<Levels>,
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
        for (p, d) in self.dims[..self.inputs].iter().enumerate() {
            writeln!(f, "%{p} = input {}", self.named(*d))?;
        }
        for (k, node) in self.nodes.iter().enumerate() {
            let p = self.inputs + k;
            let parents: Vec<String> = node.parents().iter().map(|q| format!("%{q}")).collect();
            write!(f, "%{p} = {}({}) : {}", node.name(), parents.join(", "), self.named(node.dims))?;
            match node.support() {
                Some(s) => {
                    let s: Vec<String> = s.iter().map(|q| format!("%{q}")).collect();
                    writeln!(f, "  support [{}]", s.join(", "))?;
                }
                None => writeln!(f, "  opaque (support: all of %0..%{})", p.saturating_sub(1))?,
            }
        }
        Ok(())
    }
}

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
        let p = self.raw.dims.len();
        if S::dims().checked_numel().is_none() && self.input_error.is_none() {
            self.input_error = Some(Error::ShapeOverflow { what: format!("input {p}"), dims: S::dims() });
        }
        self.raw.dims.push(S::dims());
        self.raw.inputs += 1;
        self.raw.levels = std::sync::OnceLock::new();
        Position::new(self.raw.id, p)
    }

    pub(crate) fn push_in_place<S: Shape>(&mut self, node: Node<A, D, S>) -> Position<S, Br> {
        let k = self.raw.nodes.len();
        let p = self.raw.dims.len();
        if let Some(message) = node.error {
            self.build_errors.push((k, message));
        }
        if let Some(other) = node.origins.iter().find(|&&o| o != self.raw.id) {
            self.build_errors.push((k, format!("reads a handle of another graph (graph id {other})")));
        }
        // Kept for the placeholder if the push is refused (graph building, not a hot path).
        let (name, parents) = (node.data.name().to_owned(), node.data.parents().to_vec());
        match self.raw.push(node.data) {
            Ok(_) if self.raw.dims[p] != S::dims() => {
                self.build_errors
                    .push((k, format!("its shape rule gives {}, but it was declared {}", self.raw.dims[p], S::dims())));
                self.raw.dims[p] = S::dims();
            }
            Ok(_) => {}
            Err(e) => {
                let message = match e {
                    Error::Node { message, .. } => message,
                    other => other.to_string(),
                };
                self.build_errors.push((k, message));
                self.raw.dims.push(S::dims());
                // Parents at or above `p` are what made the push fail: keep only valid ones.
                let parents = parents.into_iter().filter(|&q| q < p).collect();
                self.raw.nodes.push(RawNode {
                    program: failed_program(name, parents),
                    dims: S::dims(),
                    rule_checked: false,
                });
                self.raw.levels = std::sync::OnceLock::new();
            }
        }
        Position::new(self.raw.id, p)
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

/// Placeholder program of a node that could not be built (keeping its name and valid parents for
/// messages); `compile` reports the node's error before anything could run it.
fn failed_program<A: Scalar, D: 'static>(name: String, parents: Vec<usize>) -> Program<A, D> {
    Program::Opaque {
        name,
        parents,
        forward: Box::new(|_, _| unreachable!("compile rejects invalid nodes before running them")),
        vjp: Box::new(|_, _, _| unreachable!("compile rejects invalid nodes before running them")),
    }
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
