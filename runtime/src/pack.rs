//! Packs: one tensor per position of a shape list, typed by that list over an erased `Vec`.
//!
//! * [`Pack<A, L>`]: a pack over the shape list `L` — graph inputs, or input gradients;
//! * [`ContextPack<A, G, Ss>`]: a pack over the whole context Γ ++ ss — all-seeds results;
//! * [`Seeds<A, G, Ss>`]: a seed pack over Γ ++ ss, where positions left unset are zeros that cost
//!   no buffer.

use core::marker::PhantomData;
use std::sync::OnceLock;

use crate::error::Error;
use crate::gradients::Stored;
use crate::graph::GraphData;
use crate::scalar::Scalar;
use crate::shape::{Array, Dims, Nil, Position, RawPosition, Shape, Snoc};
use crate::tensor::{RawTensor, Tensor};

fn lookup<A, S: Shape, Br>(
    graph: Option<u64>,
    tensors: &[RawTensor<A>],
    pos: Position<S, Br>,
) -> Result<&RawTensor<A>, Error> {
    let foreign = Error::ForeignPosition { index: pos.index(), len: tensors.len() };
    if graph.is_some_and(|g| g != pos.graph_id()) {
        return Err(foreign);
    }
    let t = tensors.get(pos.index()).ok_or(foreign)?;
    // A run-time axis (its stand-in in `S`) has the size the execution bound it to.
    if !crate::shape::fits_declared(S::dims(), t.dims()) {
        return Err(Error::ShapeMismatch { expected: S::dims(), actual: t.dims() });
    }
    Ok(t)
}

/// A pack over the shape list `L`, built by snoc.
///
/// ```
/// use exactgrad_runtime::{Pack, Tensor, typenum::{U1, U2}};
/// let p = Pack::new()
///     .push(Tensor::<f32, (U2,)>::from_vec(vec![1.0, 2.0]).unwrap())
///     .push(Tensor::<f32, (U1, U2)>::zeros());
/// assert_eq!(p.len(), 2);
/// ```
pub struct Pack<A, L> {
    graph: Option<u64>,
    tensors: Vec<RawTensor<A>>,
    marker: PhantomData<fn() -> L>,
}

impl<A> Pack<A, Nil> {
    /// The empty pack.
    #[must_use]
    pub fn new() -> Self {
        Pack { graph: None, tensors: Vec::new(), marker: PhantomData }
    }
}

impl<A> Default for Pack<A, Nil> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A, L> Pack<A, L> {
    /// Appends a tensor of shape `S`.
    #[must_use]
    pub fn push<S: Shape>(mut self, t: Tensor<A, S>) -> Pack<A, Snoc<L, S>> {
        self.tensors.push(t.into_raw());
        Pack { graph: self.graph, tensors: self.tensors, marker: PhantomData }
    }

    /// Appends a tensor for an input of shape `S` with run-time dims (`graph!`'s `batch: dyn`),
    /// whose size along those axes is known only at run time: its dims are checked by `compile`
    /// (every static axis of `S`, and one size per run-time dim across the inputs), which reports
    /// a mismatch as an error.
    #[must_use]
    pub fn push_run_time<S: Shape>(mut self, t: RawTensor<A>) -> Pack<A, Snoc<L, S>> {
        self.tensors.push(t);
        Pack { graph: self.graph, tensors: self.tensors, marker: PhantomData }
    }

    /// Appends the `N` tensors of a parameter array of shape `S` (one list entry, [`Array`]).
    #[must_use]
    pub fn push_array<S: Shape, const N: usize>(mut self, ts: [Tensor<A, S>; N]) -> Pack<A, Snoc<L, Array<S, N>>> {
        self.tensors.extend(ts.into_iter().map(Tensor::into_raw));
        Pack { graph: self.graph, tensors: self.tensors, marker: PhantomData }
    }

    /// [`push_array`](Self::push_array) for an array whose shape has run-time dims (checked by
    /// `compile`, as [`push_run_time`](Self::push_run_time)).
    #[must_use]
    pub fn push_run_time_array<S: Shape, const N: usize>(
        mut self,
        ts: [RawTensor<A>; N],
    ) -> Pack<A, Snoc<L, Array<S, N>>> {
        self.tensors.extend(ts);
        Pack { graph: self.graph, tensors: self.tensors, marker: PhantomData }
    }

    pub(crate) fn from_raw(graph: Option<u64>, tensors: Vec<RawTensor<A>>) -> Self {
        Pack { graph, tensors, marker: PhantomData }
    }

    /// The tensor at `pos`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph or out of range.
    pub fn get<S: Shape, Br>(&self, pos: Position<S, Br>) -> Result<&RawTensor<A>, Error> {
        lookup(self.graph, &self.tensors, pos)
    }

    /// Number of tensors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// `true` for the empty pack.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The tensors in order.
    #[must_use]
    pub fn as_slice(&self) -> &[RawTensor<A>] {
        &self.tensors
    }

    /// The tensors, consuming the pack.
    #[must_use]
    pub fn into_vec(self) -> Vec<RawTensor<A>> {
        self.tensors
    }

    /// The elements of the tensor at `index` (push order), mutably, or `None` out of range. Only
    /// the elements can change, never a shape, so the pack stays well typed; this is how
    /// optimizers ([`crate::optim`]) update parameters in place.
    ///
    /// ```
    /// use exactgrad_runtime::{Pack, Tensor, typenum::U2};
    /// let mut p = Pack::new().push(Tensor::<f32, (U2,)>::zeros());
    /// p.data_mut(0).unwrap()[1] = 3.0;
    /// assert_eq!(p.as_slice()[0].data(), &[0.0, 3.0]);
    /// assert!(p.data_mut(1).is_none());
    /// ```
    pub fn data_mut(&mut self, index: usize) -> Option<&mut [A]> {
        self.tensors.get_mut(index).map(RawTensor::data_mut)
    }

    /// The id of the graph the pack came from (`None` for a pack built by [`push`](Self::push)).
    pub(crate) fn graph_id(&self) -> Option<u64> {
        self.graph
    }

    /// The tensors, mutably, for in-place updates that keep every shape (the optimizers).
    pub(crate) fn tensors_mut(&mut self) -> &mut [RawTensor<A>] {
        &mut self.tensors
    }
}

/// Cloning keeps the shape list and the graph the pack came from; a training loop clones its
/// parameter pack into each `compile`.
impl<A: Clone, L> Clone for Pack<A, L> {
    fn clone(&self) -> Self {
        Pack { graph: self.graph, tensors: self.tensors.clone(), marker: PhantomData }
    }
}

/// The tensors in order (the shape list is in the type).
impl<A: core::fmt::Debug, L> core::fmt::Debug for Pack<A, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Pack").field(&self.tensors).finish()
    }
}

/// An untyped pack over a graph's whole context (Γ ++ ss): one tensor per input and per node, in
/// context order — the gradients a pass returns, or the values of [`GraphData::eval`].
///
/// A position the pass never wrote element by element — a node the single-output pass skipped, an
/// input no reached node contributes to, a zero seed nobody added to — holds `full(dims, v)` as
/// the one scalar `v` ([`uniform`](Self::uniform)); its tensor is built on first access
/// ([`get`](Self::get), indexing, [`iter`](Self::iter)) and kept. The values are the same either
/// way: this only saves building, say, 63 zero weight gradients when one head of 64 is
/// differentiated.
///
/// ```
/// use exactgrad_runtime::{ops::{Mul, Sum}, Dims, RawNode, RawGraph, RawSavedGraph, RawTensor};
///
/// // Two heads `sum(a * a)` and `sum(b * b)`; differentiate the first only.
/// let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2), Dims::vector(2)]);
/// let sq_a = g.push(RawNode::compact(Mul::new(0, 0))).unwrap();
/// let head_a = g.push(RawNode::compact(Sum::new(sq_a.index()))).unwrap();
/// let sq_b = g.push(RawNode::compact(Mul::new(1, 1))).unwrap();
/// let _head_b = g.push(RawNode::compact(Sum::new(sq_b.index()))).unwrap();
/// let x = |v: [f64; 2]| RawTensor::from_vec(Dims::vector(2), v.to_vec()).unwrap();
/// let saved = RawSavedGraph::compile(&g, vec![x([1.0, 2.0]), x([3.0, 4.0])], ()).unwrap();
/// let grads = saved.backprop_from(head_a, RawTensor::full(Dims::scalar(), 1.0)).unwrap();
/// assert_eq!(grads[0].data(), &[2.0, 4.0]);
/// assert_eq!(grads.uniform(1), Some(&0.0)); // b: never written, no buffer built yet
/// assert_eq!(grads[1].data(), &[0.0, 0.0]); // built on access
/// ```
#[derive(Clone, Debug)]
pub struct RawPack<A> {
    /// Per position, the stored tensor or uniform, and the tensor built from a uniform on first
    /// read (never set for a stored tensor).
    entries: Vec<(Stored<A>, OnceLock<RawTensor<A>>)>,
}

/// The tensor of one entry of a [`RawPack`], building a uniform's on first read.
fn read<A: Clone>((stored, built): &(Stored<A>, OnceLock<RawTensor<A>>)) -> &RawTensor<A> {
    match stored {
        Stored::Tensor(t) => t,
        Stored::Uniform(value, dims) => built.get_or_init(|| RawTensor::full(*dims, value.clone())),
    }
}

impl<A: Clone> RawPack<A> {
    pub(crate) fn from_tensors(tensors: Vec<RawTensor<A>>) -> Self {
        Self::from_stored(tensors.into_iter().map(Stored::Tensor))
    }

    pub(crate) fn from_stored(stored: impl IntoIterator<Item = Stored<A>>) -> Self {
        RawPack { entries: stored.into_iter().map(|s| (s, OnceLock::new())).collect() }
    }

    pub(crate) fn into_stored(self) -> Vec<Stored<A>> {
        self.entries.into_iter().map(|(s, _)| s).collect()
    }

    /// Number of positions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` for a graph without positions.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The gradient at position `i` (built on first access if it is a uniform), or `None` past
    /// the end.
    pub fn get(&self, i: usize) -> Option<&RawTensor<A>> {
        self.entries.get(i).map(read)
    }

    /// `Some(v)` when the gradient at `i` is `full(v)` and was never written element by element
    /// (no tensor is built by asking); `None` otherwise or past the end.
    #[must_use]
    pub fn uniform(&self, i: usize) -> Option<&A> {
        match self.entries.get(i) {
            Some((Stored::Uniform(value, _), _)) => Some(value),
            _ => None,
        }
    }

    /// The shape of the gradient at `i`, without building it.
    #[must_use]
    pub fn dims(&self, i: usize) -> Option<Dims> {
        self.entries.get(i).map(|(s, _)| s.dims())
    }

    /// The gradients in context order (uniform ones built as they are reached).
    #[must_use]
    pub fn iter(&self) -> RawPackIter<'_, A> {
        self.into_iter()
    }

    /// Every gradient as a tensor, consuming the list.
    #[must_use]
    pub fn into_vec(self) -> Vec<RawTensor<A>> {
        self.entries
            .into_iter()
            .map(|(stored, built)| match stored {
                Stored::Tensor(t) => t,
                Stored::Uniform(value, dims) => built.into_inner().unwrap_or_else(|| RawTensor::full(dims, value)),
            })
            .collect()
    }
}

impl<A: Clone> core::ops::Index<usize> for RawPack<A> {
    type Output = RawTensor<A>;

    /// The gradient at `i`.
    ///
    /// # Panics
    /// When `i` is out of range, as for a slice; [`RawPack::get`] returns `None` instead.
    fn index(&self, i: usize) -> &RawTensor<A> {
        read(&self.entries[i])
    }
}

impl<'a, A: Clone> IntoIterator for &'a RawPack<A> {
    type Item = &'a RawTensor<A>;
    type IntoIter = RawPackIter<'a, A>;

    fn into_iter(self) -> RawPackIter<'a, A> {
        RawPackIter(self.entries.iter())
    }
}

/// Iterator over the tensors of a [`RawPack`] (uniform positions built as they are reached).
#[derive(Clone, Debug)]
pub struct RawPackIter<'a, A>(core::slice::Iter<'a, (Stored<A>, OnceLock<RawTensor<A>>)>);

impl<'a, A: Clone> Iterator for RawPackIter<'a, A> {
    type Item = &'a RawTensor<A>;

    fn next(&mut self) -> Option<&'a RawTensor<A>> {
        self.0.next().map(read)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<A: Clone> ExactSizeIterator for RawPackIter<'_, A> {}

impl<'a, A: Clone, G, Ss, Br> IntoIterator for &'a ContextPack<A, G, Ss, Br> {
    type Item = &'a RawTensor<A>;
    type IntoIter = RawPackIter<'a, A>;

    fn into_iter(self) -> RawPackIter<'a, A> {
        self.tensors.into_iter()
    }
}

/// A pack over the whole context Γ ++ ss of a graph: one tensor per input and per node — values
/// ([`GraphData::eval`]) or gradients (see [`RawPack`] for positions kept as a uniform until
/// read).
pub struct ContextPack<A, G, Ss, Br = ()> {
    graph: u64,
    /// Number of graph inputs (|Γ|).
    inputs: usize,
    /// One tensor per position: values ([`GraphData::eval`]) or gradients (the passes).
    tensors: RawPack<A>,
    marker: PhantomData<fn() -> (G, Ss, Br)>,
}

impl<A: Clone, G, Ss, Br> Clone for ContextPack<A, G, Ss, Br> {
    fn clone(&self) -> Self {
        ContextPack { graph: self.graph, inputs: self.inputs, tensors: self.tensors.clone(), marker: PhantomData }
    }
}

/// The number of inputs and the tensors in context order (uniform positions as their scalar).
impl<A: core::fmt::Debug, G, Ss, Br> core::fmt::Debug for ContextPack<A, G, Ss, Br> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ContextPack").field("inputs", &self.inputs).field("tensors", &self.tensors).finish()
    }
}

impl<A: Clone, G, Ss, Br> ContextPack<A, G, Ss, Br> {
    pub(crate) fn from_raw(graph: u64, inputs: usize, tensors: RawPack<A>) -> Self {
        ContextPack { graph, inputs, tensors, marker: PhantomData }
    }

    /// The tensor at `pos` (an input or a node).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn get<S: Shape>(&self, pos: Position<S, Br>) -> Result<&RawTensor<A>, Error> {
        let foreign = Error::ForeignPosition { index: pos.index(), len: self.tensors.len() };
        if self.graph != pos.graph_id() {
            return Err(foreign);
        }
        let t = self.tensors.get(pos.index()).ok_or(foreign)?;
        if !crate::shape::fits_declared(S::dims(), t.dims()) {
            return Err(Error::ShapeMismatch { expected: S::dims(), actual: t.dims() });
        }
        Ok(t)
    }

    /// The tensors, untyped, in context order.
    #[must_use]
    pub fn raw(&self) -> &RawPack<A> {
        &self.tensors
    }

    /// The tensors in context order (uniform positions built as they are reached).
    #[must_use]
    pub fn iter(&self) -> RawPackIter<'_, A> {
        self.tensors.iter()
    }

    /// The tensors, consuming the pack.
    #[must_use]
    pub fn into_vec(self) -> Vec<RawTensor<A>> {
        self.tensors.into_vec()
    }

    /// The tensors, untyped, consuming the pack.
    #[must_use]
    pub fn into_raw(self) -> RawPack<A> {
        self.tensors
    }

    /// The tensors of the graph's inputs (Γ), as a pack over its input list, consuming the pack:
    /// what an [`Optimizer`](crate::Optimizer) steps the parameters with, e.g. after
    /// `backprop_from` (the node positions are dropped).
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, Pack, Tensor, typenum::U2};
    /// let g = GraphData::<f64, ()>::new();
    /// let (g, x) = g.input::<(U2,)>();
    /// let (g, sq) = g.push(ops::mul(x, x));
    /// let (g, s) = g.push(ops::sum(sq));
    /// let saved = g.compile(Pack::new().push(Tensor::full(3.0)), ()).unwrap();
    /// let grads = saved.backprop_from(s, Tensor::full(1.0)).unwrap().into_inputs();
    /// assert_eq!(grads.as_slice()[0].data(), &[6.0, 6.0]);
    /// ```
    #[must_use]
    pub fn into_inputs(self) -> Pack<A, G> {
        let mut tensors = self.tensors.into_vec();
        tensors.truncate(self.inputs);
        Pack::from_raw(Some(self.graph), tensors)
    }
}

/// An untyped seed pack: one seed per position; positions never set are `zeros` and cost no
/// buffer. A `Vec<RawTensor<A>>` converts into one (every position dense).
///
/// A pack made by [`RawSavedGraph::zero_seeds`](crate::RawSavedGraph::zero_seeds) belongs to that
/// saved graph's graph; one made by [`zeros`](Self::zeros) or from a `Vec` belongs to the graph of
/// the first position [`set`](Self::set) in it. The passes refuse a pack that belongs to another
/// graph ([`Error::ForeignPosition`]), and every pass checks the shapes.
///
/// ```
/// use exactgrad_runtime::{ops::Sum, Dims, RawNode, RawGraph, RawSeeds, RawTensor};
/// let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
/// let s = g.push(RawNode::compact(Sum::new(0))).unwrap();
/// let mut seeds = RawSeeds::<f64>::zeros(g.dims());
/// seeds.set(s, RawTensor::full(Dims::scalar(), 1.0)).unwrap();
/// assert!(seeds.set(s, RawTensor::full(Dims::vector(3), 1.0)).is_err()); // wrong shape
/// let mut other = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
/// let t = other.push(RawNode::compact(Sum::new(0))).unwrap();
/// assert!(seeds.set(t, RawTensor::full(Dims::scalar(), 1.0)).is_err()); // another graph
/// ```
#[derive(Clone, Debug)]
pub struct RawSeeds<A> {
    /// The graph the pack belongs to, once known.
    graph: Option<u64>,
    slots: Vec<Stored<A>>,
}

impl<A: Scalar> RawSeeds<A> {
    /// Zero seeds for positions of the given dims (a graph's [`dims`](crate::RawGraph::dims)).
    #[must_use]
    pub fn zeros(dims: &[Dims]) -> Self {
        RawSeeds { graph: None, slots: dims.iter().map(|&d| Stored::Uniform(A::zero(), d)).collect() }
    }

    /// Zero seeds for `dims`, belonging to the graph of id `graph`.
    pub(crate) fn zeros_for(graph: u64, dims: &[Dims]) -> Self {
        RawSeeds { graph: Some(graph), ..Self::zeros(dims) }
    }

    /// Sets the seed at position `p`; the pack then belongs to `p`'s graph.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] when `p` is a handle of another graph than the pack's (or out of
    /// its range), [`Error::ShapeMismatch`] when `t` has another shape than the position.
    pub fn set(&mut self, p: RawPosition, t: RawTensor<A>) -> Result<(), Error> {
        let len = self.slots.len();
        let foreign = Error::ForeignPosition { index: p.index(), len };
        if self.graph.is_some_and(|g| g != p.graph_id()) {
            return Err(foreign);
        }
        let slot = self.slots.get_mut(p.index()).ok_or(foreign)?;
        if slot.dims() != t.dims() {
            return Err(Error::ShapeMismatch { expected: slot.dims(), actual: t.dims() });
        }
        *slot = Stored::Tensor(t);
        self.graph = Some(p.graph_id());
        Ok(())
    }

    /// Number of positions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// `true` when there is no position.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The seeds of a pass over the graph of id `graph`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] when the pack belongs to another graph (its shapes are checked
    /// by the pass).
    pub(crate) fn into_slots_for(self, graph: u64) -> Result<Vec<Stored<A>>, Error> {
        match self.graph {
            Some(g) if g != graph => Err(Error::ForeignPosition { index: 0, len: self.slots.len() }),
            _ => Ok(self.slots),
        }
    }
}

impl<A> From<Vec<RawTensor<A>>> for RawSeeds<A> {
    fn from(tensors: Vec<RawTensor<A>>) -> Self {
        RawSeeds { graph: None, slots: tensors.into_iter().map(Stored::Tensor).collect() }
    }
}

/// A seed pack over Γ ++ ss. Positions never set are `zeros` and cost no buffer.
///
/// ```
/// use exactgrad_runtime::{ops, GraphData, Seeds, Tensor, typenum::U2};
/// let (g, x) = GraphData::<f32, ()>::new().input::<(U2,)>();
/// let (g, y) = g.push(ops::neg(x));
/// let mut seeds = Seeds::zeros(&g);
/// seeds.set(y, Tensor::full(1.0)).unwrap();
/// ```
pub struct Seeds<A, G, Ss, Br = ()> {
    graph: u64,
    slots: Vec<Stored<A>>,
    marker: PhantomData<fn() -> (G, Ss, Br)>,
}

impl<A: Scalar, G, Ss, Br> Seeds<A, G, Ss, Br> {
    /// All-zero seeds for `graph`.
    #[must_use]
    pub fn zeros<D: 'static>(graph: &GraphData<A, D, G, Ss, Br>) -> Self {
        let raw = graph.raw();
        Seeds {
            graph: raw.id(),
            slots: raw.dims().iter().map(|&d| Stored::Uniform(A::zero(), d)).collect(),
            marker: PhantomData,
        }
    }

    /// `single(pos, t)`: `t` at `pos`, zeros elsewhere.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn single<D: 'static, S: Shape>(
        graph: &GraphData<A, D, G, Ss, Br>,
        pos: Position<S, Br>,
        t: Tensor<A, S>,
    ) -> Result<Self, Error> {
        let mut s = Self::zeros(graph);
        s.set(pos, t)?;
        Ok(s)
    }

    /// Sets the seed at `pos`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn set<S: Shape>(&mut self, pos: Position<S, Br>, t: Tensor<A, S>) -> Result<(), Error> {
        if pos.graph_id() != self.graph || pos.index() >= self.slots.len() {
            return Err(Error::ForeignPosition { index: pos.index(), len: self.slots.len() });
        }
        let expected = self.slots[pos.index()].dims();
        if expected != S::dims() {
            return Err(Error::ShapeMismatch { expected, actual: S::dims() });
        }
        self.slots[pos.index()] = Stored::Tensor(t.into_raw());
        Ok(())
    }

    /// Seeds from a dense pack over the context.
    #[must_use]
    pub fn from_context_pack(p: ContextPack<A, G, Ss, Br>) -> Self {
        Seeds { graph: p.graph, slots: p.tensors.into_stored(), marker: PhantomData }
    }

    pub(crate) fn graph(&self) -> u64 {
        self.graph
    }

    pub(crate) fn into_stored(self) -> Vec<Stored<A>> {
        self.slots
    }
}

impl<A: Clone, G, Ss, Br> Clone for Seeds<A, G, Ss, Br> {
    fn clone(&self) -> Self {
        Seeds { graph: self.graph, slots: self.slots.clone(), marker: PhantomData }
    }
}

/// The seed of every position (unset ones as their uniform zero).
impl<A: core::fmt::Debug, G, Ss, Br> core::fmt::Debug for Seeds<A, G, Ss, Br> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Seeds").field(&self.slots).finish()
    }
}
