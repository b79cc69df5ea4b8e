//! The builder `graph!` expands to: a typed builder whose type records the shapes it is given, so
//! the [`GraphData`] it finishes has exactly the input and node shape lists that were pushed — the
//! compiler checks that they equal the lists the macro names (`NameInputs`, `NameNodes`), and every
//! node's shape is its rule trait's `Output` (`shape::rules`): no list is retyped unchecked.
//!
//! Inputs grow a plain snoc list (`Snoc<Snoc<Nil, S0>, S1>`, the list input packs are built on).
//! Nodes are pushed without changing the builder's type; every [`CHUNK`] nodes (and at the end)
//! [`chunk`](MacroBuilder::chunk) takes the tuple of their positions, whose types are the shapes
//! the typed constructors computed, and appends that tuple of shapes to the node list: the list is
//! `Snoc<…Snoc<Nil, (S0, …, S31)>…, (S32, …)>`. The builder's type changes once per chunk, so a
//! 1 000-node graph has 32 builder types, not 1 000 (each a distinct type to check, name and
//! describe in debug info), and no type nests deeper than `nodes / CHUNK` levels.
//!
//! Not for hand-written code: use [`GraphData`]'s typed builder.

use core::marker::PhantomData;

use crate::graph::{GraphData, IntoNode};
use crate::scalar::Scalar;
use crate::shape::{Array, Nil, Position, Shape, Snoc};

/// Node shapes per chunk of a `graph!` node list (`exactgrad_spec::NODE_CHUNK`).
pub const CHUNK: usize = exactgrad_spec::NODE_CHUNK;

/// A tuple of 1 to [`CHUNK`] positions: its shapes as a tuple type, and its indices.
pub trait PositionChunk<Br> {
    /// `(S0, …, Sk)` for `(Position<S0, Br>, …, Position<Sk, Br>)`.
    type Shapes;
    /// The positions' indices, in order.
    fn indices(&self) -> Vec<usize>;
}

macro_rules! position_chunk {
    () => {};
    ($last:ident $(, $s:ident)*) => {
        impl<Br, $($s: Shape,)* $last: Shape> PositionChunk<Br> for ($(Position<$s, Br>,)* Position<$last, Br>,) {
            type Shapes = ($($s,)* $last,);
            #[allow(non_snake_case)]
            fn indices(&self) -> Vec<usize> {
                let ($($s,)* $last,) = self;
                vec![$($s.index(),)* $last.index()]
            }
        }
        position_chunk!($($s),*);
    };
}
// Arities CHUNK down to 1 (each line's first name is the tuple's last element).
position_chunk!(
    S31, S30, S29, S28, S27, S26, S25, S24, S23, S22, S21, S20, S19, S18, S17, S16, S15, S14, S13, S12, S11, S10, S9,
    S8, S7, S6, S5, S4, S3, S2, S1, S0
);

/// A tuple of 1 to 8 [`PositionChunk`]s (a rolled loop's body of up to 8 · [`CHUNK`] nodes):
/// its shapes as a tuple of the chunks' shape tuples, and its indices in order.
pub trait PositionChunks<Br> {
    /// `(C0::Shapes, …)`.
    type Shapes;
    /// The positions' indices, in order.
    fn indices(&self) -> Vec<usize>;
}

macro_rules! position_chunks {
    ($($c:ident . $i:tt),+) => {
        impl<Br, $($c: PositionChunk<Br>),+> PositionChunks<Br> for ($($c,)+) {
            type Shapes = ($($c::Shapes,)+);
            fn indices(&self) -> Vec<usize> {
                let mut out = Vec::new();
                $(out.extend(self.$i.indices());)+
                out
            }
        }
    };
}
position_chunks!(C0.0);
position_chunks!(C0.0, C1.1);
position_chunks!(C0.0, C1.1, C2.2);
position_chunks!(C0.0, C1.1, C2.2, C3.3);
position_chunks!(C0.0, C1.1, C2.2, C3.3, C4.4);
position_chunks!(C0.0, C1.1, C2.2, C3.3, C4.4, C5.5);
position_chunks!(C0.0, C1.1, C2.2, C3.3, C4.4, C5.5, C6.6);
position_chunks!(C0.0, C1.1, C2.2, C3.3, C4.4, C5.5, C6.6, C7.7);

/// A node-list entry of `N` repetitions of a body whose node shapes are the tuple `Body`: the
/// nodes of a `for` loop `graph!` writes as a loop ([`MacroBuilder::repeat`]).
#[derive(Debug)]
pub struct Repeat<Body, const N: usize>(PhantomData<fn() -> Body>);

/// Pushes the nodes of a rolled loop's body ([`MacroBuilder::nodes`]).
pub struct Nodes<'b, A: 'static, D: 'static, Br> {
    graph: &'b mut GraphData<A, D, Nil, Nil, Br>,
}

impl<A, D, Br> core::fmt::Debug for Nodes<'_, A, D, Br> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Nodes").finish_non_exhaustive()
    }
}

impl<A: Scalar, D: 'static, Br> Nodes<'_, A, D, Br> {
    /// Appends a node of shape `S`.
    pub fn push<N: IntoNode<A, D>>(&mut self, node: N) -> Position<N::Shape, Br> {
        self.graph.push_in_place(node.into_node())
    }
}

/// The builder: the graph so far, the input list `G` and the node list `Done` of closed chunks.
#[doc(hidden)]
pub struct MacroBuilder<A, D, Br, G = Nil, Done = Nil> {
    graph: GraphData<A, D, Nil, Nil, Br>,
    /// Nodes in closed chunks.
    chunked: usize,
    lists: PhantomData<fn() -> (G, Done)>,
}

impl<A: Scalar, D: 'static, Br> MacroBuilder<A, D, Br> {
    /// An empty graph.
    #[allow(clippy::new_without_default)]
    #[must_use]
    pub fn new() -> Self {
        MacroBuilder { graph: GraphData::branded(), chunked: 0, lists: PhantomData }
    }
}

impl<A: Scalar, D: 'static, Br> MacroBuilder<A, D, Br> {
    /// Declares the graph's run-time dims and names its inputs (see
    /// [`RawGraph::set_run_time_dims`](crate::RawGraph::set_run_time_dims)); a graph with too many
    /// run-time dims gets a build error.
    #[must_use]
    pub fn run_time_dims(mut self, dims: &[&str], inputs: &[&str]) -> Self {
        self.graph.set_run_time_dims(dims, inputs);
        self
    }
}

impl<A: Scalar, D: 'static, Br, G> MacroBuilder<A, D, Br, G> {
    /// Declares the next input (inputs come before any node).
    #[must_use]
    pub fn input<S: Shape>(mut self) -> (MacroBuilder<A, D, Br, Snoc<G, S>>, Position<S, Br>) {
        let pos = self.graph.input_in_place::<S>();
        (MacroBuilder { graph: self.graph, chunked: self.chunked, lists: PhantomData }, pos)
    }
}

impl<A: Scalar, D: 'static, Br, G> MacroBuilder<A, D, Br, G> {
    /// Declares the next `N` inputs, a parameter array of shape `S` (one list entry, [`Array`]).
    #[must_use]
    #[allow(clippy::type_complexity)] // the builder with the longer list, and the positions
    pub fn input_array<S: Shape, const N: usize>(
        mut self,
    ) -> (MacroBuilder<A, D, Br, Snoc<G, Array<S, N>>>, [Position<S, Br>; N]) {
        let positions = core::array::from_fn(|_| self.graph.input_in_place::<S>());
        (MacroBuilder { graph: self.graph, chunked: self.chunked, lists: PhantomData }, positions)
    }
}

impl<A: Scalar, D: 'static, Br, G, Done> MacroBuilder<A, D, Br, G, Done> {
    /// Appends a node of shape `S`.
    pub fn push<N: IntoNode<A, D>>(&mut self, node: N) -> Position<N::Shape, Br> {
        self.graph.push_in_place(node.into_node())
    }

    /// Closes a chunk: `positions` are the nodes pushed since the last chunk, in order, and their
    /// shapes become the next entry of the node list. (Other positions are recorded as a build
    /// error, reported by `compile`.)
    pub fn chunk<C: PositionChunk<Br>>(mut self, positions: C) -> MacroBuilder<A, D, Br, G, Snoc<Done, C::Shapes>> {
        let start = self.graph.raw().num_inputs() + self.chunked;
        let indices = positions.indices();
        let expected = start..start + indices.len();
        if !indices.iter().copied().eq(expected.clone()) || expected.end > self.graph.raw().dims().len() {
            self.graph.record_build_error(format!(
                "graph!: a node-list chunk names positions {indices:?}, but the next nodes are {expected:?}"
            ));
        }
        let chunked = self.chunked + indices.len();
        MacroBuilder { graph: self.graph, chunked, lists: PhantomData }
    }

    /// The nodes of a rolled loop's body are pushed through this handle (a closure called once
    /// per iteration, whose type must not name the builder's lists).
    pub fn nodes(&mut self) -> Nodes<'_, A, D, Br> {
        Nodes { graph: &mut self.graph }
    }

    /// Closes a rolled loop: the nodes pushed since the last chunk are `N` iterations of one body,
    /// `last` the positions of the last iteration's nodes (in order, in chunks); the node list gets
    /// one entry, [`Repeat`] of the body's shapes — so the list's length, and the work of checking
    /// it, do not grow with `N`. (A count or positions that do not match are recorded as a build
    /// error.)
    pub fn repeat<const N: usize, C: PositionChunks<Br>>(
        mut self,
        last: C,
    ) -> MacroBuilder<A, D, Br, G, Snoc<Done, Repeat<C::Shapes, N>>> {
        let start = self.graph.raw().num_inputs() + self.chunked;
        let end = self.graph.raw().dims().len();
        let indices = last.indices();
        let body = indices.len();
        let fits = N >= 1 && body.checked_mul(N) == Some(end - start) && indices.iter().copied().eq(end - body..end);
        if !fits {
            self.graph.record_build_error(format!(
                "graph!: a rolled loop of {N} iterations names positions {indices:?} as its last, but positions \
                 {start}..{end} were pushed"
            ));
        }
        let chunked = self.chunked + (end - start);
        MacroBuilder { graph: self.graph, chunked, lists: PhantomData }
    }

    /// The typed graph. (Nodes left out of every chunk are recorded as a build error.)
    #[must_use]
    pub fn finish(mut self) -> GraphData<A, D, G, Done, Br> {
        let nodes = self.graph.raw().nodes().len();
        if self.chunked != nodes {
            self.graph.record_build_error(format!(
                "graph!: the node list names {} nodes, but {nodes} were pushed",
                self.chunked
            ));
        }
        self.graph.retype()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;
    use crate::typenum::{U1, U2, U3};
    use crate::{Error, Pack, Tensor};

    #[test]
    fn the_lists_are_the_shapes_pushed() {
        let b = MacroBuilder::<f64, (), ()>::new();
        let (mut b, x) = b.input::<(U2, U3)>();
        let y = b.push(ops::tanh(x));
        let s = b.push(ops::sum(y));
        let mut b = b.chunk((y, s));
        let t = b.push(ops::tanh(s));
        let b = b.chunk((t,));
        type Nodes = Snoc<Snoc<Nil, ((U2, U3), ())>, ((),)>;
        let g: GraphData<f64, (), Snoc<Nil, (U2, U3)>, Nodes, ()> = b.finish();
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims().len(), 4);
        let (e, _) = MacroBuilder::<f64, (), ()>::new().input::<(U1,)>();
        let _: GraphData<f64, (), Snoc<Nil, (U1,)>, Nil, ()> = e.finish();
    }

    #[test]
    fn chunks_must_name_the_next_nodes_in_order() {
        let (mut b, x) = MacroBuilder::<f64, (), ()>::new().input::<(U2,)>();
        let y = b.push(ops::tanh(x));
        let z = b.push(ops::tanh(y));
        let g = b.chunk((z, y)).finish();
        let err = g.compile(Pack::new().push(Tensor::zeros()), ()).err();
        assert!(matches!(err, Some(Error::Node { .. })), "{err:?}");
        let (mut b, x) = MacroBuilder::<f64, (), ()>::new().input::<(U2,)>();
        let _ = b.push(ops::tanh(x));
        assert_eq!(b.finish().build_errors().len(), 1);
    }
}
