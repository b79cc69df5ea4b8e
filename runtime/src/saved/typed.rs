//! [`SavedGraph`], the typed face of a [`RawSavedGraph`], made by [`GraphData::compile`].

use super::RawSavedGraph;
use crate::error::Error;
use crate::gradients::Stored;
use crate::graph::GraphData;
use crate::pack::{ContextPack, Pack, RawPack, Seeds};
use crate::scalar::Scalar;
use crate::shape::{Position, Shape};
use crate::tensor::{RawTensor, Tensor};

/// A pack that fits a graph whose input list is `G`: exactly `Pack<A, G>`. (A trait rather than
/// the type itself, so a pack of the wrong shapes gets an error that says so in words.)
#[diagnostic::on_unimplemented(
    message = "the input pack does not fit this graph's inputs",
    label = "a pack with other shapes (or in another order) than the graph's inputs",
    note = "build the pack with the graph's handles, `handles.inputs(…)`, or push tensors in the order and shapes the inputs were declared"
)]
pub trait InputPack<A, G> {
    /// The pack.
    fn into_pack(self) -> Pack<A, G>;
}

#[diagnostic::do_not_recommend]
impl<A, G> InputPack<A, G> for Pack<A, G> {
    fn into_pack(self) -> Pack<A, G> {
        self
    }
}

/// A forward execution of a typed [`GraphData`], made by [`GraphData::compile`].
pub struct SavedGraph<'g, A, D, G, Ss, Br = ()> {
    raw: RawSavedGraph<'g, A, D>,
    graph: &'g GraphData<A, D, G, Ss, Br>,
}

impl<A: Clone, D: Clone, G, Ss, Br> Clone for SavedGraph<'_, A, D, G, Ss, Br> {
    fn clone(&self) -> Self {
        SavedGraph { raw: self.raw.clone(), graph: self.graph }
    }
}

/// The untyped saved graph: the graph, every value and the data.
impl<A: core::fmt::Debug + 'static, D: core::fmt::Debug + 'static, G, Ss, Br> core::fmt::Debug
    for SavedGraph<'_, A, D, G, Ss, Br>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("SavedGraph").field(&self.raw).finish()
    }
}

impl<A: Scalar, D: Sync + 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// Checked lowering of this graph on `inputs` and `data` (SEMANTICS §6 `compile`).
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] for an input whose shape cannot be a tensor; [`Error::Node`] for
    /// the first node that was built wrongly or fails validation.
    pub fn compile(&self, inputs: impl InputPack<A, G>, data: D) -> Result<SavedGraph<'_, A, D, G, Ss, Br>, Error> {
        if let Some(e) = self.first_build_error() {
            return Err(e);
        }
        let raw = RawSavedGraph::compile(self.raw(), inputs.into_pack().into_vec(), data)?;
        Ok(SavedGraph { raw, graph: self })
    }

    /// `eval`: every value of the context (inputs, then nodes), by checked lowering.
    ///
    /// # Errors
    /// As [`compile`](Self::compile).
    pub fn eval(&self, inputs: impl InputPack<A, G>, data: D) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        let saved = self.compile(inputs, data)?;
        Ok(ContextPack::from_raw(
            self.raw().id(),
            self.raw().num_inputs(),
            RawPack::from_tensors(saved.raw.into_values()),
        ))
    }
}

impl<'g, A: Scalar, D: 'static, G, Ss, Br> SavedGraph<'g, A, D, G, Ss, Br> {
    /// The untyped saved graph.
    pub fn raw(&self) -> &RawSavedGraph<'g, A, D> {
        &self.raw
    }

    /// The input pack and the data, consuming the saved graph: a training loop moves them into the
    /// next step's `compile` instead of cloning the parameters every step.
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, Pack, Seeds, Sgd, Optimizer, Tensor, typenum::U2};
    /// let g = GraphData::<f64, ()>::new();
    /// let (g, w) = g.input::<(U2,)>();
    /// let (g, sq) = g.push(ops::mul(w, w));
    /// let (g, loss) = g.push(ops::sum(sq));
    /// let mut params = Pack::new().push(Tensor::from_vec(vec![1.0, -2.0]).unwrap());
    /// let mut sgd = Sgd::new(0.25, 0.0).unwrap();
    /// for _ in 0..3 {
    ///     let saved = g.compile(params, ()).unwrap();
    ///     let grads = saved.backprop_inputs_array(Seeds::single(&g, loss, Tensor::full(1.0)).unwrap()).unwrap();
    ///     (params, ()) = saved.into_inputs_and_data();
    ///     sgd.step(&mut params, &grads).unwrap();
    /// }
    /// assert_eq!(params.get(w).unwrap().data(), &[0.125, -0.25]); // w ← w/2 each step
    /// ```
    pub fn into_inputs_and_data(self) -> (Pack<A, G>, D) {
        let id = self.graph.raw().id();
        let (inputs, data) = self.raw.into_inputs_and_data();
        (Pack::from_raw(Some(id), inputs), data)
    }

    /// The saved value at `pos`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn value<S: Shape>(&self, pos: Position<S, Br>) -> Result<&RawTensor<A>, Error> {
        if pos.graph_id() != self.graph.raw().id() {
            return Err(Error::ForeignPosition { index: pos.index(), len: self.raw.values().len() });
        }
        Ok(&self.raw.values()[pos.index()])
    }

    fn seeds(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Vec<Stored<A>>, Error> {
        if seeds.graph() != self.graph.raw().id() {
            return Err(Error::ForeignPosition { index: 0, len: self.raw.values().len() });
        }
        Ok(seeds.into_stored())
    }

    fn all(&self, v: RawPack<A>) -> ContextPack<A, G, Ss, Br> {
        ContextPack::from_raw(self.graph.raw().id(), self.graph.raw().num_inputs(), v)
    }

    fn inputs(&self, v: Vec<RawTensor<A>>) -> Pack<A, G> {
        Pack::from_raw(Some(self.graph.raw().id()), v)
    }

    /// §3 dense reference, all seeds.
    ///
    /// # Errors
    /// [`Error::Vjp`] for a malformed opaque VJP; [`Error::ForeignPosition`] for seeds of another graph.
    pub fn backprop_all_dense(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.all(RawPack::from_tensors(self.raw.with_view(|v| v.dense_loop(seeds, None, true))?)))
    }

    /// §6 array pass, all seeds.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense), and [`Error::NoStorageEquality`].
    pub fn backprop_all_array(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.all(self.raw.with_view(|v| v.array_loop(seeds, None, true))?))
    }

    /// §6 stored pass (array when the scalar has storage equality, else dense), all seeds.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_all_stored(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.all(self.raw.with_view(|v| v.all_stored(seeds, true))?))
    }

    /// §3 dense reference, input gradients only.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_dense(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.inputs(self.raw.with_view(|v| v.dense_loop(seeds, None, false))?))
    }

    /// §6 array pass, input gradients only; each intermediate gradient is freed once its node ran.
    ///
    /// # Errors
    /// As [`backprop_all_array`](Self::backprop_all_array).
    pub fn backprop_inputs_array(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.inputs(self.raw.with_view(|v| v.array_loop(seeds, None, false))?.into_vec()))
    }

    /// §6 stored pass, input gradients only.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_stored(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        let seeds = self.seeds(seeds)?;
        Ok(self.inputs(self.raw.with_view(|v| v.all_stored(seeds, false))?.into_vec()))
    }

    /// §7 single-output pass from `output` with cotangent `seed`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn backprop_from<S: Shape>(
        &self,
        output: Position<S, Br>,
        seed: Tensor<A, S>,
    ) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        Ok(self.all(self.raw.backprop_from(output.into(), seed.into_raw())?))
    }

    /// §7 reference of [`backprop_from`](Self::backprop_from).
    ///
    /// # Errors
    /// As [`backprop_from`](Self::backprop_from).
    pub fn backprop_from_dense<S: Shape>(
        &self,
        output: Position<S, Br>,
        seed: Tensor<A, S>,
    ) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        Ok(self.all(self.raw.backprop_from_dense(output.into(), seed.into_raw())?))
    }

    /// Which positions [`backprop_from(output, …)`](Self::backprop_from) reaches, one flag per
    /// position (see [`RawSavedGraph::reached_from`]).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn reached_from<S>(&self, output: Position<S, Br>) -> Result<Vec<bool>, Error> {
        self.raw.reached_from(output.into())
    }

    /// The indices (0 = first node) of the nodes whose VJP
    /// [`backprop_from(output, …)`](Self::backprop_from) runs, ascending; every other node is
    /// skipped. Same rule as [`reached_from`](Self::reached_from).
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, Pack, Tensor, typenum::U2};
    /// let g = GraphData::<f64, ()>::new();
    /// let (g, x) = g.input::<(U2,)>();
    /// let (g, y) = g.push(ops::mul(x, x)); // node 0
    /// let (g, s) = g.push(ops::sum(y)); // node 1
    /// let (g, _t) = g.push(ops::sum(x)); // node 2: another head
    /// let saved = g.compile(Pack::new().push(Tensor::full(1.0)), ()).unwrap();
    /// assert_eq!(saved.visited_from(s).unwrap(), vec![0, 1]);
    /// ```
    ///
    /// # Errors
    /// As [`reached_from`](Self::reached_from).
    pub fn visited_from<S>(&self, output: Position<S, Br>) -> Result<Vec<usize>, Error> {
        let inputs = self.graph.raw().num_inputs();
        let reached = self.reached_from(output)?;
        Ok(reached[inputs..].iter().enumerate().filter(|(_, &r)| r).map(|(k, _)| k).collect())
    }
}
