//! Optimizers: in-place updates of a parameter [`Pack`] from a gradient pack of the same shapes.
//!
//! * [`Sgd`]: stochastic gradient descent with optional (classic, `PyTorch`) momentum;
//! * [`Adam`]: Adam with bias correction (`PyTorch`'s `torch.optim.Adam`, no weight decay, no
//!   `AMSGrad`);
//! * [`Trainable`]: which positions of the pack a step updates. A graph's inputs are usually a mix
//!   of parameters (weights, biases) and data-like tensors (features, targets) that must not be
//!   trained: [`step`](Optimizer::step) updates every position, [`step_only`](Optimizer::step_only)
//!   only the positions of a [`Trainable`] set, named by the graph's typed handles;
//! * [`Optimizer`]: the trait both implement, for training loops generic over the optimizer.
//!
//! The parameter pack and the gradient pack have the same type `Pack<A, L>` — exactly the input
//! pack a graph compiles from and the pack `backprop_inputs_*` returns — so a gradient pack of
//! other shapes is a compile error. Untyped tensors go through `step_raw` (on [`Sgd`] and [`Adam`]),
//! which checks the shapes at run time.
//!
//! # Determinism
//!
//! Every update is elementwise, with plain `+`, `-`, `*`, `/` and `sqrt` (all correctly rounded
//! IEEE operations for `f32`/`f64`), in the order written in each optimizer's docs: no fused
//! multiply-add, no reduction, no parallelism. The same parameters, gradients and state give the
//! same bits on every run and every platform.
//!
//! # Errors, all or nothing
//!
//! A step checks everything before it writes anything: the gradient pack against the parameter
//! pack, the [`Trainable`] positions against the pack, and the optimizer's state against the
//! pack's shapes (an optimizer's state belongs to the pack it first stepped; [`reset`](Sgd::reset)
//! forgets it). A failed step is a typed [`Error`] and leaves parameters and state untouched.
//! Hyper-parameters are checked when an optimizer is built: an [`InvalidHyperparameter`].
//!
//! ```
//! use exactgrad_runtime::{Optimizer, Pack, Sgd, Tensor, typenum::U2};
//!
//! let mut params = Pack::new().push(Tensor::<f64, (U2,)>::from_vec(vec![1.0, -1.0]).unwrap());
//! let grads = Pack::new().push(Tensor::<f64, (U2,)>::from_vec(vec![0.5, 0.25]).unwrap());
//! let mut sgd = Sgd::new(0.1, 0.0).unwrap();
//! sgd.step(&mut params, &grads).unwrap();
//! assert_eq!(params.as_slice()[0].data(), &[1.0 - 0.1 * 0.5, -1.0 - 0.1 * 0.25]);
//! ```

use num_traits::Float;

use crate::error::Error;
use crate::pack::Pack;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

mod adam;
mod sgd;
#[cfg(test)]
mod tests;

pub use adam::Adam;
pub use sgd::Sgd;

/// A hyper-parameter out of its range (a negative learning rate, `beta1 >= 1`, a NaN, …).
///
/// ```
/// use exactgrad_runtime::Adam;
/// let e = Adam::new(1e-3f32, 1.0, 0.999, 1e-8).unwrap_err();
/// assert_eq!(e.name, "beta1");
/// assert_eq!(e.to_string(), "invalid hyper-parameter beta1 = 1: must be in [0, 1)");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid hyper-parameter {name} = {value}: {requirement}")]
pub struct InvalidHyperparameter {
    /// The parameter's name (`lr`, `momentum`, `beta1`, `beta2`, `eps`, `lo`, `hi`, `mean`, `std`).
    pub name: &'static str,
    /// Its value, converted to `f64` (NaN when it does not convert).
    pub value: f64,
    /// What it must be.
    pub requirement: &'static str,
}

/// `Ok` when `ok`, else an [`InvalidHyperparameter`] naming `name`, `value` and `requirement`.
pub(crate) fn require<A: Float>(
    name: &'static str,
    value: A,
    ok: bool,
    requirement: &'static str,
) -> Result<(), InvalidHyperparameter> {
    if ok {
        Ok(())
    } else {
        Err(InvalidHyperparameter { name, value: value.to_f64().unwrap_or(f64::NAN), requirement })
    }
}

fn non_negative<A: Float>(name: &'static str, value: A) -> Result<(), InvalidHyperparameter> {
    require(name, value, value.is_finite() && value >= A::zero(), "must be finite and >= 0")
}

fn unit_interval<A: Float>(name: &'static str, value: A) -> Result<(), InvalidHyperparameter> {
    require(name, value, value >= A::zero() && value < A::one(), "must be in [0, 1)")
}

/// The positions of a pack that an optimizer updates in [`step_only`](Optimizer::step_only);
/// every other position (data, targets, frozen layers) is left as it is, and its optimizer state
/// is neither created nor advanced.
///
/// Positions are named by the graph's typed handles ([`with`](Self::with)), which also records
/// the position's shape and graph so that a handle of another graph, a node (not an input) or a
/// handle of the wrong shape is an [`Error`] at the step; or by index in the pack
/// ([`with_index`](Self::with_index)) for packs built by hand. Naming a position twice is the
/// same as naming it once.
///
/// ```
/// use exactgrad_runtime::{ops, GraphData, Optimizer, Pack, Seeds, Sgd, Tensor, Trainable};
/// use exactgrad_runtime::typenum::{U1, U2};
///
/// // loss = sum(x · w): x is data, w is the parameter.
/// let (g, x) = GraphData::<f64, ()>::new().input::<(U1, U2)>();
/// let (g, w) = g.input::<(U2, U1)>();
/// let (g, xw) = g.push(ops::matmul(x, w));
/// let (g, loss) = g.push(ops::sum(xw));
///
/// let mut params = Pack::new()
///     .push(Tensor::from_vec(vec![1.0, 2.0]).unwrap())
///     .push(Tensor::from_vec(vec![0.0, 0.0]).unwrap());
/// let saved = g.compile(params.clone(), ()).unwrap();
/// let grads = saved.backprop_inputs_stored(Seeds::single(&g, loss, Tensor::full(1.0)).unwrap()).unwrap();
///
/// let mut sgd = Sgd::new(0.5, 0.0).unwrap();
/// sgd.step_only(&mut params, &grads, &Trainable::new().with(w)).unwrap();
/// assert_eq!(params.as_slice()[0].data(), &[1.0, 2.0]);      // x untouched
/// assert_eq!(params.as_slice()[1].data(), &[-0.5, -1.0]);    // w -= 0.5 · x^T
///
/// // A node is not an input: an error, and nothing is updated.
/// assert!(sgd.step_only(&mut params, &grads, &Trainable::new().with(w).with(loss)).is_err());
/// assert_eq!(params.as_slice()[1].data(), &[-0.5, -1.0]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Trainable {
    entries: Vec<Entry>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    index: usize,
    dims: Option<Dims>,
    graph: Option<u64>,
}

impl Trainable {
    /// The empty set: a step updates nothing.
    #[must_use]
    pub fn new() -> Self {
        Trainable { entries: Vec::new() }
    }

    /// Adds the position `pos` (an input handle of the graph whose input pack is trained).
    #[must_use]
    pub fn with<S: Shape, Br>(mut self, pos: Position<S, Br>) -> Self {
        self.entries.push(Entry { index: pos.index(), dims: Some(S::dims()), graph: Some(pos.graph_id()) });
        self
    }

    /// Adds the position at `index` in the pack (push order), with no shape or graph to check.
    ///
    /// ```
    /// use exactgrad_runtime::Trainable;
    /// let t = Trainable::new().with_index(2).with_index(0).with_index(2);
    /// assert_eq!(t.indices(), vec![0, 2]);
    /// assert!(t.contains(0) && !t.contains(1));
    /// ```
    #[must_use]
    pub fn with_index(mut self, index: usize) -> Self {
        self.entries.push(Entry { index, dims: None, graph: None });
        self
    }

    /// `true` when the position at `index` is in the set.
    #[must_use]
    pub fn contains(&self, index: usize) -> bool {
        self.entries.iter().any(|e| e.index == index)
    }

    /// The indices in the set, ascending, each once.
    #[must_use]
    pub fn indices(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.entries.iter().map(|e| e.index).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Checks every entry against the pack's dims and the graph ids the packs came from (if any),
    /// and returns [`indices`](Self::indices).
    fn resolve(&self, dims: &[Dims], graphs: [Option<u64>; 2]) -> Result<Vec<usize>, Error> {
        let len = dims.len();
        for e in &self.entries {
            let foreign = Error::ForeignPosition { index: e.index, len };
            let actual = *dims.get(e.index).ok_or(foreign.clone())?;
            if let Some(g) = e.graph {
                if graphs.iter().flatten().any(|&h| h != g) {
                    return Err(foreign);
                }
            }
            if let Some(expected) = e.dims {
                if expected != actual {
                    return Err(Error::ShapeMismatch { expected, actual });
                }
            }
        }
        Ok(self.indices())
    }
}

/// What every optimizer does: update a parameter pack in place from a gradient pack of the same
/// shape list `L`.
///
/// ```
/// use exactgrad_runtime::{Adam, Optimizer, Pack, Sgd, Tensor, typenum::U3};
///
/// fn train<O: Optimizer<f32>>(opt: &mut O) -> Vec<f32> {
///     let mut p = Pack::new().push(Tensor::<f32, (U3,)>::full(1.0));
///     let g = Pack::new().push(Tensor::<f32, (U3,)>::full(0.5));
///     for _ in 0..3 {
///         opt.step(&mut p, &g).unwrap();
///     }
///     p.as_slice()[0].data().to_vec()
/// }
/// assert!(train(&mut Sgd::new(0.1, 0.9).unwrap())[0] < 1.0);
/// assert!(train(&mut Adam::with_lr(0.1).unwrap())[0] < 1.0);
/// ```
pub trait Optimizer<A> {
    /// Updates every position of `params` from the same position of `grads`.
    ///
    /// # Errors
    /// [`Error::PackShapes`] when the optimizer's state belongs to a pack of other shapes (or
    /// `grads` has other shapes than `params`, for packs the type system cannot tell apart).
    fn step<L>(&mut self, params: &mut Pack<A, L>, grads: &Pack<A, L>) -> Result<(), Error>;

    /// Updates only the positions in `trainable`; the others keep their values and state.
    ///
    /// # Errors
    /// As [`step`](Self::step); [`Error::ForeignPosition`] for a position out of range or of
    /// another graph; [`Error::ShapeMismatch`] for a handle whose shape is not the position's.
    fn step_only<L>(&mut self, params: &mut Pack<A, L>, grads: &Pack<A, L>, trainable: &Trainable)
        -> Result<(), Error>;

    /// Forgets all state (momentum buffers, moments, step counts).
    fn reset(&mut self);
}

/// Checks a step and returns the positions to update; records the pack's dims as the state's
/// on the first step.
fn prepare<A>(
    state_dims: &mut Option<Vec<Dims>>,
    params: &[RawTensor<A>],
    grads: &[RawTensor<A>],
    trainable: Option<(&Trainable, [Option<u64>; 2])>,
) -> Result<Vec<usize>, Error> {
    let dims: Vec<Dims> = params.iter().map(RawTensor::dims).collect();
    let grad_dims: Vec<Dims> = grads.iter().map(RawTensor::dims).collect();
    if dims != grad_dims {
        return Err(Error::PackShapes {
            what: "gradient pack (it must have the parameter pack's shapes)",
            expected: dims,
            actual: grad_dims,
        });
    }
    if let Some(state) = state_dims.as_ref() {
        if *state != dims {
            return Err(Error::PackShapes {
                what: "optimizer state (it belongs to a pack of other shapes; call reset first)",
                expected: state.clone(),
                actual: dims,
            });
        }
    }
    let indices = match trainable {
        Some((t, graphs)) => t.resolve(&dims, graphs)?,
        None => (0..dims.len()).collect(),
    };
    if state_dims.is_none() {
        *state_dims = Some(dims);
    }
    Ok(indices)
}
