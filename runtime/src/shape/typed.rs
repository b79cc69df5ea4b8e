use core::fmt;
use core::marker::PhantomData;

use typenum::Unsigned;

use super::Dims;

/// A type-level shape: `()` (rank 0) or a tuple of typenum dims, rank 1 to 4.
///
/// ```
/// use exactgrad_runtime::{Shape, typenum::{U2, U3}};
/// assert_eq!(<(U2, U3) as Shape>::dims().as_slice(), &[2, 3]);
/// assert_eq!(<() as Shape>::NUMEL, 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor shape",
    label = "expected `()` or a tuple of 1 to 4 typenum dims",
    note = "a shape is written `(U2, U3)` with dims from `exactgrad::typenum`"
)]
pub trait Shape: 'static {
    /// Number of axes.
    const RANK: usize;
    /// Number of elements.
    const NUMEL: usize;
    /// The runtime dims of this shape.
    fn dims() -> Dims;
}

impl Shape for () {
    const RANK: usize = 0;
    const NUMEL: usize = 1;
    fn dims() -> Dims {
        Dims::scalar()
    }
}

macro_rules! tuple_shape {
    ($rank:literal; $($d:ident),+) => {
        impl<$($d: Unsigned + 'static),+> Shape for ($($d,)+) {
            const RANK: usize = $rank;
            const NUMEL: usize = 1 $(* $d::USIZE)+;
            fn dims() -> Dims {
                match Dims::new(&[$($d::USIZE),+]) {
                    Some(d) => d,
                    None => unreachable!("ranks 1 to 4 fit in Dims"),
                }
            }
        }
    };
}
tuple_shape!(1; D0);
tuple_shape!(2; D0, D1);
tuple_shape!(3; D0, D1, D2);
tuple_shape!(4; D0, D1, D2, D3);

/// The empty shape list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nil;

/// The shape list `L` followed by shape `S` (a snoc list: adding a node appends on the right, so
/// no type-level recursion as deep as the graph is ever needed).
pub struct Snoc<L, S>(PhantomData<fn() -> (L, S)>);

impl<L, S> Clone for Snoc<L, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L, S> Copy for Snoc<L, S> {}

impl<L, S> Default for Snoc<L, S> {
    fn default() -> Self {
        Snoc(PhantomData)
    }
}

/// `Snoc` (the list is in the type).
impl<L, S> fmt::Debug for Snoc<L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Snoc")
    }
}

/// An entry of an input list for a parameter array: `N` inputs of shape `S` in a row (`graph!`'s
/// `w: [[4, 4]; 3]`), one entry however long the array, so a list's length — and the work of
/// checking it — does not grow with the array's.
pub struct Array<S, const N: usize>(PhantomData<fn() -> S>);

/// `Array` (its shape and length are in the type).
impl<S, const N: usize> fmt::Debug for Array<S, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array<{N}>")
    }
}

/// Marker for shape lists ([`Nil`] and [`Snoc`]). Deliberately flat: it does not require the tail
/// to be a shape list, so proving it never recurses.
pub trait ShapeList: 'static {}
impl ShapeList for Nil {}
impl<L: 'static, S: Shape> ShapeList for Snoc<L, S> {}

/// A typed handle to a position of a graph's context: an input or a node output of shape `S`, in
/// a graph branded `Br`.
///
/// Handles are created by the graph builder, so the shape is right by construction. A graph made
/// by `graph!` has a brand of its own, so a handle of another graph is a compile error; for graphs
/// built by hand (brand `()`) the graph is checked at run time (a handle of another graph is an
/// error, never a wrong answer).
pub struct Position<S, Br = ()> {
    graph: u64,
    index: usize,
    marker: PhantomData<fn() -> (S, Br)>,
}

impl<S, Br> Position<S, Br> {
    pub(crate) fn new(graph: u64, index: usize) -> Self {
        Position { graph, index, marker: PhantomData }
    }

    /// Id of the graph the handle belongs to.
    pub(crate) fn graph_id(&self) -> u64 {
        self.graph
    }

    /// The position's index in the context (inputs first, then nodes in creation order).
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }
}

/// The untyped handle of a position of one [`RawGraph`](crate::RawGraph): its index, and the id
/// of the graph that handed it out.
///
/// [`RawGraph::push`](crate::RawGraph::push) returns one per node and
/// [`RawGraph::position`](crate::RawGraph::position) one per input (or any position, by index).
/// The raw entry points that take a position ([`RawSavedGraph::backprop_from`](crate::RawSavedGraph::backprop_from),
/// [`backprop_from_dense`](crate::RawSavedGraph::backprop_from_dense),
/// [`reached_from`](crate::RawSavedGraph::reached_from), [`RawSeeds::set`](crate::RawSeeds::set))
/// refuse a handle of another graph with [`Error::ForeignPosition`](crate::Error::ForeignPosition),
/// even when the other graph has the same shapes. Op constructors take the plain index
/// ([`index`](Self::index)): a node's parents are checked when it is pushed.
///
/// ```
/// use exactgrad_runtime::{ops::Sum, Dims, Error, RawNode, RawGraph, RawSavedGraph, RawTensor};
/// let graph = || {
///     let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
///     let s = g.push(RawNode::compact(Sum::new(0))).unwrap();
///     (g, s)
/// };
/// let (a, sum_a) = graph();
/// let (b, _) = graph(); // the same shapes, another graph
/// assert_eq!(sum_a.index(), 1);
/// let x = RawTensor::from_vec(Dims::vector(2), vec![1.0, 2.0]).unwrap();
/// let saved_b = RawSavedGraph::compile(&b, vec![x.clone()], ()).unwrap();
/// let one = RawTensor::full(Dims::scalar(), 1.0);
/// assert!(matches!(saved_b.backprop_from(sum_a, one.clone()), Err(Error::ForeignPosition { .. })));
/// let saved_a = RawSavedGraph::compile(&a, vec![x], ()).unwrap();
/// assert_eq!(saved_a.backprop_from(sum_a, one).unwrap()[0].data(), &[1.0, 1.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawPosition {
    graph: u64,
    index: usize,
}

impl RawPosition {
    pub(crate) fn new(graph: u64, index: usize) -> Self {
        RawPosition { graph, index }
    }

    /// Id of the graph the handle belongs to.
    pub(crate) fn graph_id(self) -> u64 {
        self.graph
    }

    /// The position's index in its graph's context (inputs first, then nodes in creation order):
    /// what op constructors take as parents.
    #[must_use]
    pub fn index(self) -> usize {
        self.index
    }
}

/// The untyped handle of a typed one (for the raw API under a typed graph,
/// [`SavedGraph::raw`](crate::SavedGraph::raw)).
impl<S, Br> From<Position<S, Br>> for RawPosition {
    fn from(p: Position<S, Br>) -> Self {
        RawPosition::new(p.graph, p.index)
    }
}

impl<S, Br> Clone for Position<S, Br> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, Br> Copy for Position<S, Br> {}

impl<S: Shape, Br> fmt::Debug for Position<S, Br> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Position({} : {})", self.index, S::dims())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typenum::{U0, U1000, U3, U7};

    #[test]
    fn tuple_shapes_report_dims() {
        assert_eq!(<(U3,) as Shape>::dims(), Dims::vector(3));
        assert_eq!(<(U3, U7, U1000) as Shape>::NUMEL, 21_000);
        assert_eq!(<(U3, U0) as Shape>::NUMEL, 0);
        assert_eq!(<(U3, U3, U3, U3) as Shape>::RANK, 4);
    }

    #[test]
    fn literal_sizes_outside_aliases_work() {
        use typenum::{UInt, UTerm, B0, B1};
        // 0b1011_0110_1001 = 2921, built structurally.
        type N = UInt<
            UInt<
                UInt<
                    UInt<UInt<UInt<UInt<UInt<UInt<UInt<UInt<UInt<UTerm, B1>, B0>, B1>, B1>, B0>, B1>, B1>, B0>, B1>,
                    B0,
                >,
                B0,
            >,
            B1,
        >;
        assert_eq!(<(N,) as Shape>::NUMEL, 2921);
    }
}
