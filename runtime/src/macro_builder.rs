//! The builder `graph!` expands to: a typed builder whose type records every shape it is given, so
//! the [`GraphData`] it finishes has exactly the input and node shape lists that were pushed — the
//! compiler checks that they equal the lists the macro names (`NameInputs`, `NameNodes`), and every
//! node's shape is its rule trait's `Output` (`shape::rules`): no list is retyped unchecked.
//!
//! Inputs grow a plain snoc list (`Snoc<Snoc<Nil, S0>, S1>`, the list input packs are built on).
//! Nodes grow in chunks of [`CHUNK`] shapes: the current chunk is a tuple `(S0, …, Sk)` that each
//! push extends, and [`flush`](MacroBuilder::flush) moves a full chunk onto the snoc list of
//! chunks. So a type never nests deeper than `nodes / CHUNK` levels (rustc slows sharply on types
//! nested several hundred levels deep), and no trait recursion is needed to check a list.
//!
//! Not for hand-written code: use [`GraphData`]'s typed builder.

use core::marker::PhantomData;

use crate::graph::{GraphData, Node};
use crate::scalar::Scalar;
use crate::shape::{Nil, Position, Shape, Snoc};

/// Node shapes per chunk of a `graph!` node list.
pub const CHUNK: usize = 32;

/// A tuple of fewer than [`CHUNK`] shapes that can take one more: `(S0, …, Sk)` + `S`.
pub trait Append<S> {
    /// The longer tuple.
    type Output;
}

macro_rules! append {
    () => {};
    ($last:ident $(, $s:ident)*) => {
        impl<$($s,)* $last> Append<$last> for ($($s,)*) {
            type Output = ($($s,)* $last,);
        }
        append!($($s),*);
    };
}
// Arities 0..CHUNK-1 (listed last to first: each line appends the first name to the others).
append!(
    S31, S30, S29, S28, S27, S26, S25, S24, S23, S22, S21, S20, S19, S18, S17, S16, S15, S14, S13, S12, S11, S10, S9,
    S8, S7, S6, S5, S4, S3, S2, S1, S0
);

/// The builder: the graph so far, the input list `G`, the full node chunks `Done` and the current
/// chunk `Part`.
#[doc(hidden)]
pub struct MacroBuilder<A, D, Br, G = Nil, Done = Nil, Part = ()> {
    graph: GraphData<A, D, Nil, Nil, Br>,
    lists: PhantomData<fn() -> (G, Done, Part)>,
}

impl<A: Scalar, D: 'static, Br> MacroBuilder<A, D, Br> {
    /// An empty graph.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        MacroBuilder { graph: GraphData::branded(), lists: PhantomData }
    }
}

impl<A: Scalar, D: 'static, Br, G> MacroBuilder<A, D, Br, G> {
    /// Declares the next input (inputs come before any node).
    pub fn input<S: Shape>(mut self) -> (MacroBuilder<A, D, Br, Snoc<G, S>>, Position<S, Br>) {
        let pos = self.graph.input_in_place::<S>();
        (MacroBuilder { graph: self.graph, lists: PhantomData }, pos)
    }
}

impl<A: Scalar, D: 'static, Br, G, Done, Part> MacroBuilder<A, D, Br, G, Done, Part> {
    /// Appends a node of shape `S` to the current chunk (which has fewer than [`CHUNK`] shapes).
    #[allow(clippy::type_complexity)]
    pub fn push<S: Shape>(
        mut self,
        node: Node<A, D, S>,
    ) -> (MacroBuilder<A, D, Br, G, Done, <Part as Append<S>>::Output>, Position<S, Br>)
    where
        Part: Append<S>,
    {
        let pos = self.graph.push_in_place(node);
        (MacroBuilder { graph: self.graph, lists: PhantomData }, pos)
    }

    /// Closes the current (full) chunk: it becomes the last entry of the chunk list.
    pub fn flush(self) -> MacroBuilder<A, D, Br, G, Snoc<Done, Part>, ()> {
        MacroBuilder { graph: self.graph, lists: PhantomData }
    }

    /// The typed graph, its node list ending with the current chunk.
    pub fn finish(self) -> GraphData<A, D, G, Snoc<Done, Part>, Br> {
        self.graph.retype()
    }
}

impl<A: Scalar, D: 'static, Br, G> MacroBuilder<A, D, Br, G> {
    /// The typed graph of a graph without nodes.
    pub fn finish_empty(self) -> GraphData<A, D, G, Nil, Br> {
        self.graph.retype()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;
    use crate::typenum::{U1, U2, U3};

    #[test]
    fn the_lists_are_the_shapes_pushed() {
        let b = MacroBuilder::<f64, (), ()>::new();
        let (b, x) = b.input::<(U2, U3)>();
        let (b, y) = b.push(ops::tanh(x));
        let (b, s) = b.push(ops::sum(y));
        let b = b.flush();
        let (b, t) = b.push(ops::tanh(s));
        type Nodes = Snoc<Snoc<Nil, ((U2, U3), ())>, ((),)>;
        let g: GraphData<f64, (), Snoc<Nil, (U2, U3)>, Nodes, ()> = b.finish();
        assert_eq!(g.raw().dims().len(), 4);
        assert_eq!(t.index(), 3);
        let (e, _) = MacroBuilder::<f64, (), ()>::new().input::<(U1,)>();
        let _: GraphData<f64, (), Snoc<Nil, (U1,)>, Nil, ()> = e.finish_empty();
    }
}
