//! A graph bound to one run's data, seen without the data's type: what a program's steps and the
//! saved graph's forward and passes call ([`BoundGraph`]; `+ Sync` where its nodes may run on
//! several threads). The steps and the routine that runs a plan are then generic over the scalar
//! only, so for `f32` and `f64` they are compiled once, in this crate (`crate::compiled`); a
//! model's crate compiles only [`Bound`], which forwards each call to the node's op with the data.

use crate::contributions::{Contrib, Contributions};
use crate::graph::buffers::BufferPool;
use crate::graph::{CompactOp, Program as NodeProgram, RawGraph, RawNode, SavedValues};
use crate::ops::{ElementwiseVjp, Window};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The nodes of a graph with the data of one run, by node index (`k`, 0 = the first node). A
/// node that is not a compact op answers the compact methods as an op that does nothing (never
/// asked by a plan of the same expansion).
pub trait BoundGraph<A> {
    /// Number of inputs.
    fn inputs(&self) -> usize;
    /// Number of nodes.
    fn nodes(&self) -> usize;
    /// The declared dims of every position (run-time dims at their stand-ins).
    fn declared_dims(&self) -> &[Dims];
    /// Whether the graph has run-time dims.
    fn has_run_time_dims(&self) -> bool;
    /// Node `k`'s op name (an opaque node: its name).
    fn name(&self, k: usize) -> &str;
    /// The positions node `k` reads.
    fn parents(&self, k: usize) -> &[usize];
    /// Whether node `k` is a compact op (built-in or a user's).
    fn is_compact(&self, k: usize) -> bool;
    /// Node `k`'s declared support (`None` for an opaque node: its whole prefix).
    fn support(&self, k: usize) -> Option<&[usize]>;
    /// Whether node `k`'s shape rule already gave `dims` when it was pushed (so `compile` need not
    /// run it again).
    fn rule_checked_on(&self, k: usize, dims: Dims) -> bool;
    /// Node `k`'s shape rule on the dims of its prefix (a compact op; `Ok(dims)` of no node).
    ///
    /// # Errors
    /// The rule's message.
    fn output_dims(&self, k: usize, prefix: &[Dims]) -> Result<Dims, String>;
    /// Node `k`'s checks on `ctx` (the values below it) and the data.
    ///
    /// # Errors
    /// The op's message.
    fn validate(&self, k: usize, ctx: &[RawTensor<A>]) -> Result<(), String>;
    /// Whether node `k` is a built-in op (its [`forward_into`](Self::forward_into) writes into
    /// the buffer it is given).
    fn is_built_in(&self, k: usize) -> bool;
    /// Node `k`'s value appended to `out` (a compact op's; nothing for an opaque node).
    fn forward_into(&self, k: usize, ctx: &[RawTensor<A>], out: &mut Vec<A>);
    /// The graph's spare buffers (`graph::buffers`).
    fn buffers(&self) -> &BufferPool<A>;
    /// Node `k`'s checks on `ctx` (as [`validate`](Self::validate)), then its value appended to
    /// `out`: one call per node of a program's forward.
    ///
    /// # Errors
    /// The op's validation message (`out` untouched).
    fn checked_forward_into(&self, k: usize, ctx: &[RawTensor<A>], out: &mut Vec<A>) -> Result<(), String>;
    /// Node `k`'s value by its own code: a compact op's `forward` (validated before), an opaque
    /// node's forward closure (an empty tensor for no node).
    fn forward(&self, k: usize, ctx: &[RawTensor<A>]) -> RawTensor<A>;
    /// Node `k`'s contributions at cotangent `g` (its saved prefix and output).
    fn contributions(
        &self,
        k: usize,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
    ) -> Contrib;
    /// The uniform of node `k`'s contributions when it is a product written onto a uniform
    /// ([`ProductVjp`](crate::ops::ProductVjp)), else `None`.
    fn product_uniform(&self, k: usize) -> Option<A>;
    /// [`ProductVjp::product_onto`](crate::ops::ProductVjp::product_onto) of node `k`.
    #[allow(clippy::too_many_arguments)] // the node, its saved values, the cotangent and the write
    fn product_onto(
        &self,
        k: usize,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        operand: usize,
        stored: &A,
        out: &mut Vec<A>,
    );
    /// Node `k` as an elementwise op ([`ElementwiseVjp`]), else `None`.
    fn elementwise(&self, k: usize) -> Option<&dyn ElementwiseVjp<A>>;
    /// Node `k`'s window in an operand of dims `operand` when it is a window op
    /// ([`WindowVjp`](crate::ops::WindowVjp)), else `None`.
    fn window(&self, k: usize, operand: Dims) -> Option<Window>;
    /// An opaque node's dense VJP at `g` (one tensor per position of `prefix`); `None` for a
    /// compact op.
    fn opaque_vjp(&self, k: usize, prefix: &[RawTensor<A>], g: &RawTensor<A>) -> Option<Vec<RawTensor<A>>>;
}

/// `graph` bound to `data` (see [`BoundGraph`]).
pub struct Bound<'a, A: 'static, D: 'static> {
    /// The graph.
    pub graph: &'a RawGraph<A, D>,
    /// The run's data.
    pub data: &'a D,
}

impl<A, D> core::fmt::Debug for Bound<'_, A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Bound").field("nodes", &self.graph.nodes().len()).finish_non_exhaustive()
    }
}

impl<A: 'static, D: 'static> Bound<'_, A, D> {
    fn compact(&self, k: usize) -> Option<&dyn CompactOp<A, D>> {
        match self.graph.nodes().get(k).map(|n| n.program()) {
            Some(NodeProgram::Compact(op)) => Some(&**op),
            _ => None,
        }
    }
}

impl<A: Scalar, D: 'static> BoundGraph<A> for Bound<'_, A, D> {
    fn inputs(&self) -> usize {
        self.graph.num_inputs()
    }
    fn nodes(&self) -> usize {
        self.graph.nodes().len()
    }
    fn declared_dims(&self) -> &[Dims] {
        self.graph.dims()
    }
    fn has_run_time_dims(&self) -> bool {
        !self.graph.run_time_dims().is_empty()
    }
    fn support(&self, k: usize) -> Option<&[usize]> {
        self.graph.nodes().get(k).and_then(|n| n.support())
    }
    fn rule_checked_on(&self, k: usize, dims: Dims) -> bool {
        self.graph.nodes().get(k).is_some_and(|n| n.rule_checked_on(dims))
    }
    fn output_dims(&self, k: usize, prefix: &[Dims]) -> Result<Dims, String> {
        match self.compact(k) {
            Some(op) => op.output_dims(prefix),
            None => Ok(self.graph.dims().get(self.graph.num_inputs() + k).copied().unwrap_or(Dims::scalar())),
        }
    }
    fn name(&self, k: usize) -> &str {
        self.graph.nodes().get(k).map_or("graph", |n| n.name())
    }
    fn parents(&self, k: usize) -> &[usize] {
        self.graph.nodes().get(k).map_or(&[], |n| n.parents())
    }
    fn is_compact(&self, k: usize) -> bool {
        self.compact(k).is_some()
    }
    fn validate(&self, k: usize, ctx: &[RawTensor<A>]) -> Result<(), String> {
        self.compact(k).map_or(Ok(()), |op| op.validate(ctx, self.data))
    }
    fn is_built_in(&self, k: usize) -> bool {
        self.graph.nodes().get(k).is_some_and(RawNode::is_built_in)
    }
    fn forward_into(&self, k: usize, ctx: &[RawTensor<A>], out: &mut Vec<A>) {
        if let Some(op) = self.compact(k) {
            op.forward_into(ctx, self.data, out);
        }
    }
    fn buffers(&self) -> &BufferPool<A> {
        self.graph.buffers()
    }
    fn checked_forward_into(&self, k: usize, ctx: &[RawTensor<A>], out: &mut Vec<A>) -> Result<(), String> {
        if let Some(op) = self.compact(k) {
            op.validate(ctx, self.data)?;
            op.forward_into(ctx, self.data, out);
        }
        Ok(())
    }
    fn forward(&self, k: usize, ctx: &[RawTensor<A>]) -> RawTensor<A> {
        match self.graph.nodes().get(k).map(|n| n.program()) {
            Some(NodeProgram::Compact(op)) => op.forward(ctx, self.data),
            Some(NodeProgram::Opaque { forward, .. }) => forward(ctx, self.data),
            None => RawTensor::vacant(Dims::vector(0)),
        }
    }
    fn contributions(
        &self,
        k: usize,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
    ) -> Contrib {
        let saved = SavedValues { prefix, output, data: self.data };
        match self.compact(k) {
            Some(op) => op.contributions(&saved, g, c),
            None => c.zero(),
        }
    }
    fn product_uniform(&self, k: usize) -> Option<A> {
        self.compact(k)?.as_product().map(|p| p.product_uniform())
    }
    fn product_onto(
        &self,
        k: usize,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        operand: usize,
        stored: &A,
        out: &mut Vec<A>,
    ) {
        if let Some(p) = self.compact(k).and_then(|op| op.as_product()) {
            let saved = SavedValues { prefix, output, data: self.data };
            p.product_onto(&saved, g, operand, stored, out);
        }
    }
    fn elementwise(&self, k: usize) -> Option<&dyn ElementwiseVjp<A>> {
        self.compact(k)?.as_elementwise()
    }
    fn window(&self, k: usize, operand: Dims) -> Option<Window> {
        self.compact(k)?.as_window().map(|w| w.window(operand))
    }
    fn opaque_vjp(&self, k: usize, prefix: &[RawTensor<A>], g: &RawTensor<A>) -> Option<Vec<RawTensor<A>>> {
        match self.graph.nodes().get(k).map(|n| n.program()) {
            Some(NodeProgram::Opaque { vjp, .. }) => Some(vjp(prefix, self.data, g)),
            _ => None,
        }
    }
}
