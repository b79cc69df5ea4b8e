//! Graphs (SEMANTICS §2): nodes with a forward, a dense VJP over the whole prefix, a validation
//! and (for built-in and custom compact ops) a compact program; the untyped [`RawGraph`] and the
//! typed [`GraphData`] built by snoc.
//!
//! **Files.** This one: the op trait [`CompactOp`], what a VJP reads ([`SavedValues`]) and a
//! node's program; `graph/node.rs`: untyped and typed nodes and what can be pushed;
//! `graph/raw.rs`: the untyped [`RawGraph`]; `graph/typed.rs`: the typed [`GraphData`];
//! `graph/bind.rs`: run-time dims; `graph/levels.rs`: the forward's levels.

use crate::contributions::{Contrib, Contributions};
use crate::shape::Dims;
use crate::tensor::RawTensor;

mod bind;
pub(crate) mod buffers;
mod levels;
mod node;
mod raw;
mod typed;

pub(crate) use levels::{node_work, Levels};
pub use node::{Compact, ErasedPosition, FromParents, IntoNode, Node, RawNode};
pub use raw::RawGraph;
pub use typed::GraphData;

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
/// that: the shape rule runs first and its refusal is an [`Error::Node`](crate::Error::Node); a
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

    /// The op as a product a generated program computes onto a uniform
    /// ([`ProductVjp`](crate::ops::ProductVjp): `matmul`, `matmul_data`); `None` by default.
    #[doc(hidden)]
    fn as_product(&self) -> Option<&dyn crate::ops::ProductVjp<A, D>> {
        None
    }

    /// The op as an elementwise op whose read a generated program computes and adds in one loop
    /// ([`ElementwiseVjp`](crate::ops::ElementwiseVjp): `add`, `sub`, `mul`, the pointwise
    /// functions); `None` by default.
    #[doc(hidden)]
    fn as_elementwise(&self) -> Option<&dyn crate::ops::ElementwiseVjp<A>> {
        None
    }

    /// The op as a window a generated program adds in one pass
    /// ([`WindowVjp`](crate::ops::WindowVjp): `slice`); `None` by default.
    #[doc(hidden)]
    fn as_window(&self) -> Option<&dyn crate::ops::WindowVjp<A, D>> {
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
