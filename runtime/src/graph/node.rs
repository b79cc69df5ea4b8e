//! Nodes: the untyped [`RawNode`], the typed [`Node`] and [`Compact`], and what a graph can take
//! ([`IntoNode`], [`KeepOp`]).

use core::fmt;
use core::marker::PhantomData;

use super::{CompactOp, Program};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// One untyped node: its program and output dims (plus an error found while building, reported by
/// `compile`).
pub struct RawNode<A, D> {
    pub(super) program: Program<A, D>,
    pub(super) dims: Dims,
    /// Set by [`RawGraph::push`] for a built-in compact op (one with a
    /// [`reference`](CompactOp::reference)): its shape rule, a pure function of its parents' dims,
    /// gave `dims` there, so `compile` need not run it again while the graph's dims are the ones it
    /// was pushed with (no run-time dims, `dims` still the position's).
    pub(super) rule_checked: bool,
}

impl<A: Scalar, D: 'static> RawNode<A, D> {
    /// A node running a compact op; the dims come from its shape rule when pushed.
    pub fn compact(op: impl CompactOp<A, D>) -> Self {
        RawNode { program: Program::Compact(Box::new(op)), dims: Dims::scalar(), rule_checked: false }
    }

    /// An opaque node of output dims `dims`: a forward closure and a dense VJP closure that returns
    /// one tensor per earlier position (zeros where it has nothing to say). `parents` is only
    /// informational (descriptions); reachability treats an opaque node as reading its whole prefix.
    /// The closures are `Send + Sync` (see [`OpaqueForward`](super::OpaqueForward)): state they share goes behind a
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

    /// `true` for a built-in op (one the independent reference knows), whose `forward_into`
    /// writes its value straight into a given buffer.
    pub(crate) fn is_built_in(&self) -> bool {
        self.rule_checked
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

/// A typed node of output shape `S`, ready to be pushed on a [`GraphData`](super::GraphData).
pub struct Node<A, D, S> {
    pub(super) data: RawNode<A, D>,
    /// An error found while building the node, reported by `compile`.
    pub(super) error: Option<String>,
    /// Graph ids of the handles the node was built from.
    pub(super) origins: Vec<u64>,
    pub(super) shape: PhantomData<fn() -> S>,
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

/// Placeholder program of a node that could not be built (keeping its name and valid parents for
/// messages); `compile` reports the node's error before anything could run it.
pub(super) fn failed_program<A: Scalar, D: 'static>(name: String, parents: Vec<usize>) -> Program<A, D> {
    Program::Opaque {
        name,
        parents,
        forward: Box::new(|_, _| unreachable!("compile rejects invalid nodes before running them")),
        vjp: Box::new(|_, _, _| unreachable!("compile rejects invalid nodes before running them")),
    }
}
