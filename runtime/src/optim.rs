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
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

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

/// Stochastic gradient descent with classic momentum (`PyTorch`'s `torch.optim.SGD` with
/// `dampening = 0`, `nesterov = false`, `weight_decay = 0`).
///
/// For each element, with learning rate `lr` and momentum `μ`, in this order of operations:
///
/// * `μ == 0` (plain SGD, no buffer): `p = p - lr * g`;
/// * `μ != 0`: on the position's first step the buffer is `v = g` (a copy, as `PyTorch` does), then
///   `v = μ * v + g`; and `p = p - lr * v`.
///
/// ```
/// use exactgrad_runtime::{Optimizer, Pack, Sgd, Tensor, typenum::U1};
/// let mut p = Pack::new().push(Tensor::<f64, (U1,)>::full(1.0));
/// let g = Pack::new().push(Tensor::<f64, (U1,)>::full(1.0));
/// let mut sgd = Sgd::new(0.5, 0.5).unwrap();
/// sgd.step(&mut p, &g).unwrap(); // v = 1;              p = 1 - 0.5 = 0.5
/// sgd.step(&mut p, &g).unwrap(); // v = 0.5 * 1 + 1;    p = 0.5 - 0.75 = -0.25
/// assert_eq!(p.as_slice()[0].data(), &[-0.25]);
/// assert_eq!(sgd.velocity(0), Some(&[1.5][..]));
/// ```
#[derive(Clone, Debug)]
pub struct Sgd<A> {
    lr: A,
    momentum: A,
    dims: Option<Vec<Dims>>,
    velocity: Vec<Option<Vec<A>>>,
}

impl<A: Float + Scalar> Sgd<A> {
    /// SGD with learning rate `lr` and momentum `momentum` (`0` for plain SGD).
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless both are finite and `>= 0`.
    pub fn new(lr: A, momentum: A) -> Result<Self, InvalidHyperparameter> {
        non_negative("lr", lr)?;
        non_negative("momentum", momentum)?;
        Ok(Sgd { lr, momentum, dims: None, velocity: Vec::new() })
    }

    /// The learning rate.
    pub fn lr(&self) -> A {
        self.lr
    }

    /// Changes the learning rate (a schedule); the momentum buffers are kept.
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `lr` is finite and `>= 0`.
    pub fn set_lr(&mut self, lr: A) -> Result<(), InvalidHyperparameter> {
        non_negative("lr", lr)?;
        self.lr = lr;
        Ok(())
    }

    /// The momentum `μ`.
    pub fn momentum(&self) -> A {
        self.momentum
    }

    /// The momentum buffer of the position at `index`: `None` before its first step and always
    /// for plain SGD.
    pub fn velocity(&self, index: usize) -> Option<&[A]> {
        self.velocity.get(index)?.as_deref()
    }

    /// Forgets the momentum buffers (and which pack they belong to).
    pub fn reset(&mut self) {
        self.dims = None;
        self.velocity.clear();
    }

    /// [`Optimizer::step`] on untyped tensors: `params[i]` from `grads[i]` for every `i` in
    /// `trainable` (every position for `None`; handles in it are checked for shape, not graph).
    ///
    /// # Errors
    /// [`Error::PackShapes`] when `grads` does not have the shapes of `params` or the state
    /// belongs to other shapes; as [`Optimizer::step_only`] for `trainable`.
    ///
    /// ```
    /// use exactgrad_runtime::{Dims, Error, RawTensor, Sgd};
    /// let mut params = vec![RawTensor::full(Dims::vector(2), 1.0f64)];
    /// let mut sgd = Sgd::new(0.5, 0.0).unwrap();
    /// sgd.step_raw(&mut params, &[RawTensor::full(Dims::vector(2), 1.0)], None).unwrap();
    /// assert_eq!(params[0].data(), &[0.5, 0.5]);
    /// let e = sgd.step_raw(&mut params, &[RawTensor::full(Dims::vector(3), 1.0)], None).unwrap_err();
    /// assert!(matches!(e, Error::PackShapes { .. }));
    /// assert_eq!(params[0].data(), &[0.5, 0.5]); // nothing written
    /// ```
    pub fn step_raw(
        &mut self,
        params: &mut [RawTensor<A>],
        grads: &[RawTensor<A>],
        trainable: Option<&Trainable>,
    ) -> Result<(), Error> {
        self.run(params, grads, trainable.map(|t| (t, [None, None])))
    }

    fn run(
        &mut self,
        params: &mut [RawTensor<A>],
        grads: &[RawTensor<A>],
        trainable: Option<(&Trainable, [Option<u64>; 2])>,
    ) -> Result<(), Error> {
        let indices = prepare(&mut self.dims, params, grads, trainable)?;
        self.velocity.resize(params.len(), None);
        let (lr, mu) = (self.lr, self.momentum);
        for i in indices {
            let (p, g) = (params[i].data_mut(), grads[i].data());
            if mu == <A as Scalar>::zero() {
                for (p, &g) in p.iter_mut().zip(g) {
                    *p = *p - lr * g;
                }
                continue;
            }
            match &mut self.velocity[i] {
                slot @ None => *slot = Some(g.to_vec()),
                Some(v) => {
                    for (v, &g) in v.iter_mut().zip(g) {
                        *v = mu * *v + g;
                    }
                }
            }
            if let Some(v) = &self.velocity[i] {
                for (p, &v) in p.iter_mut().zip(v) {
                    *p = *p - lr * v;
                }
            }
        }
        Ok(())
    }
}

impl<A: Float + Scalar> Optimizer<A> for Sgd<A> {
    fn step<L>(&mut self, params: &mut Pack<A, L>, grads: &Pack<A, L>) -> Result<(), Error> {
        self.run(params.tensors_mut(), grads.as_slice(), None)
    }

    fn step_only<L>(
        &mut self,
        params: &mut Pack<A, L>,
        grads: &Pack<A, L>,
        trainable: &Trainable,
    ) -> Result<(), Error> {
        let graphs = [params.graph_id(), grads.graph_id()];
        self.run(params.tensors_mut(), grads.as_slice(), Some((trainable, graphs)))
    }

    fn reset(&mut self) {
        Sgd::reset(self);
    }
}

/// Adam (Kingma & Ba) with bias correction, as `PyTorch`'s `torch.optim.Adam` (no weight decay, no
/// `AMSGrad`).
///
/// Each position keeps its own step count `t`, first moment `m` and second moment `v` (zeros
/// before its first step) and the running products `β1^t`, `β2^t` (multiplied by `β1`, `β2` once
/// per step, never `powi`). One step of a position computes, in this order of operations:
///
/// ```text
/// t   = t + 1;   b1t = b1t * β1;   b2t = b2t * β2
/// step_size = lr / (1 - b1t)
/// c2  = sqrt(1 - b2t)
/// for each element:
///     m = β1 * m + (1 - β1) * g
///     v = β2 * v + (1 - β2) * (g * g)
///     p = p - step_size * (m / (sqrt(v) / c2 + eps))
/// ```
///
/// This is `PyTorch`'s algorithm; the roundings are this crate's own (`PyTorch` forms `m` by `lerp`
/// and the bias corrections in `f64`), so results agree with `PyTorch` to a few ulps, not bit for
/// bit.
///
/// ```
/// use exactgrad_runtime::{Adam, Optimizer, Pack, Tensor, typenum::U1};
/// let mut p = Pack::new().push(Tensor::<f64, (U1,)>::full(1.0));
/// let g = Pack::new().push(Tensor::<f64, (U1,)>::full(3.0));
/// let mut adam = Adam::new(0.1, 0.9, 0.999, 0.0).unwrap();
/// adam.step(&mut p, &g).unwrap();
/// // The first bias-corrected step moves by lr · sign(g), whatever |g|.
/// assert!((p.as_slice()[0].data()[0] - 0.9).abs() < 1e-12);
/// assert_eq!(adam.steps(0), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Adam<A> {
    lr: A,
    beta1: A,
    beta2: A,
    eps: A,
    dims: Option<Vec<Dims>>,
    slots: Vec<Option<AdamSlot<A>>>,
}

#[derive(Clone, Debug)]
struct AdamSlot<A> {
    steps: u64,
    beta1_pow: A,
    beta2_pow: A,
    m: Vec<A>,
    v: Vec<A>,
}

impl<A: Float + Scalar> Adam<A> {
    /// Adam with learning rate `lr`, moment decays `beta1`, `beta2` and `eps` (added to the
    /// denominator).
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `lr` and `eps` are finite and `>= 0` and `beta1`, `beta2`
    /// are in `[0, 1)`.
    pub fn new(lr: A, beta1: A, beta2: A, eps: A) -> Result<Self, InvalidHyperparameter> {
        non_negative("lr", lr)?;
        unit_interval("beta1", beta1)?;
        unit_interval("beta2", beta2)?;
        non_negative("eps", eps)?;
        Ok(Adam { lr, beta1, beta2, eps, dims: None, slots: Vec::new() })
    }

    /// Adam with `PyTorch`'s defaults `beta1 = 0.9`, `beta2 = 0.999`, `eps = 1e-8` (each rounded to
    /// `A`; for a type in which `1e-8` rounds to zero, `eps` is zero).
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `lr` is finite and `>= 0` (or a default does not fit `A`).
    pub fn with_lr(lr: A) -> Result<Self, InvalidHyperparameter> {
        let c = |x: f64| A::from(x).unwrap_or_else(A::nan);
        Self::new(lr, c(0.9), c(0.999), c(1e-8))
    }

    /// The learning rate.
    pub fn lr(&self) -> A {
        self.lr
    }

    /// Changes the learning rate (a schedule); moments and step counts are kept.
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `lr` is finite and `>= 0`.
    ///
    /// ```
    /// use exactgrad_runtime::Adam;
    /// let mut adam = Adam::<f32>::with_lr(1e-3).unwrap();
    /// adam.set_lr(adam.lr() * 0.5).unwrap();
    /// assert_eq!(adam.lr(), 5e-4);
    /// assert!(adam.set_lr(f32::NAN).is_err());
    /// ```
    pub fn set_lr(&mut self, lr: A) -> Result<(), InvalidHyperparameter> {
        non_negative("lr", lr)?;
        self.lr = lr;
        Ok(())
    }

    /// `(beta1, beta2)`.
    pub fn betas(&self) -> (A, A) {
        (self.beta1, self.beta2)
    }

    /// `eps`.
    pub fn eps(&self) -> A {
        self.eps
    }

    /// How many steps updated the position at `index` (0 before its first).
    pub fn steps(&self, index: usize) -> u64 {
        self.slots.get(index).and_then(Option::as_ref).map_or(0, |s| s.steps)
    }

    /// The moments `(m, v)` of the position at `index`; `None` before its first step.
    ///
    /// ```
    /// use exactgrad_runtime::{Adam, Dims, RawTensor};
    /// let mut p = vec![RawTensor::full(Dims::scalar(), 0.0f64)];
    /// let mut adam = Adam::new(0.1, 0.5, 0.75, 0.0).unwrap();
    /// assert!(adam.moments(0).is_none());
    /// adam.step_raw(&mut p, &[RawTensor::full(Dims::scalar(), 2.0)], None).unwrap();
    /// assert_eq!(adam.moments(0), Some((&[1.0][..], &[1.0][..]))); // (1 - β1) g, (1 - β2) g²
    /// ```
    pub fn moments(&self, index: usize) -> Option<(&[A], &[A])> {
        self.slots.get(index)?.as_ref().map(|s| (&s.m[..], &s.v[..]))
    }

    /// Forgets moments and step counts (and which pack they belong to).
    pub fn reset(&mut self) {
        self.dims = None;
        self.slots.clear();
    }

    /// [`Optimizer::step`] on untyped tensors; as [`Sgd::step_raw`].
    ///
    /// # Errors
    /// As [`Sgd::step_raw`].
    pub fn step_raw(
        &mut self,
        params: &mut [RawTensor<A>],
        grads: &[RawTensor<A>],
        trainable: Option<&Trainable>,
    ) -> Result<(), Error> {
        self.run(params, grads, trainable.map(|t| (t, [None, None])))
    }

    fn run(
        &mut self,
        params: &mut [RawTensor<A>],
        grads: &[RawTensor<A>],
        trainable: Option<(&Trainable, [Option<u64>; 2])>,
    ) -> Result<(), Error> {
        let indices = prepare(&mut self.dims, params, grads, trainable)?;
        self.slots.resize(params.len(), None);
        let one = A::one();
        let (lr, b1, b2, eps) = (self.lr, self.beta1, self.beta2, self.eps);
        let (one_minus_b1, one_minus_b2) = (one - b1, one - b2);
        for i in indices {
            let (p, g) = (params[i].data_mut(), grads[i].data());
            let s = self.slots[i].get_or_insert_with(|| AdamSlot {
                steps: 0,
                beta1_pow: one,
                beta2_pow: one,
                m: vec![<A as Scalar>::zero(); g.len()],
                v: vec![<A as Scalar>::zero(); g.len()],
            });
            s.steps += 1;
            s.beta1_pow = s.beta1_pow * b1;
            s.beta2_pow = s.beta2_pow * b2;
            let step_size = lr / (one - s.beta1_pow);
            let c2 = (one - s.beta2_pow).sqrt();
            for (((p, &g), m), v) in p.iter_mut().zip(g).zip(s.m.iter_mut()).zip(s.v.iter_mut()) {
                *m = b1 * *m + one_minus_b1 * g;
                *v = b2 * *v + one_minus_b2 * (g * g);
                *p = *p - step_size * (*m / (v.sqrt() / c2 + eps));
            }
        }
        Ok(())
    }
}

impl<A: Float + Scalar> Optimizer<A> for Adam<A> {
    fn step<L>(&mut self, params: &mut Pack<A, L>, grads: &Pack<A, L>) -> Result<(), Error> {
        self.run(params.tensors_mut(), grads.as_slice(), None)
    }

    fn step_only<L>(
        &mut self,
        params: &mut Pack<A, L>,
        grads: &Pack<A, L>,
        trainable: &Trainable,
    ) -> Result<(), Error> {
        let graphs = [params.graph_id(), grads.graph_id()];
        self.run(params.tensors_mut(), grads.as_slice(), Some((trainable, graphs)))
    }

    fn reset(&mut self) {
        Adam::reset(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphData;
    use crate::tensor::Tensor;
    use typenum::{U1, U2, U3};

    fn raw(v: &[f64]) -> RawTensor<f64> {
        RawTensor::from_fn(Dims::vector(v.len()), |i| v[i])
    }

    fn bits(t: &RawTensor<f64>) -> Vec<u64> {
        t.data().iter().map(|v| v.to_bits()).collect()
    }

    fn pack2(
        a: [f64; 2],
        b: [f64; 3],
    ) -> Pack<f64, crate::shape::Snoc<crate::shape::Snoc<crate::shape::Nil, (U2,)>, (U3,)>> {
        Pack::new().push(Tensor::<f64, (U2,)>::from_fn(|i| a[i])).push(Tensor::<f64, (U3,)>::from_fn(|i| b[i]))
    }

    #[test]
    fn plain_sgd_matches_hand_values() {
        let (lr, p0, g1, g2) = (0.1f64, [1.0, -2.0], [0.5, -0.25], [3.0, 7.0]);
        let mut p = vec![raw(&p0)];
        let mut sgd = Sgd::new(lr, 0.0).unwrap();
        sgd.step_raw(&mut p, &[raw(&g1)], None).unwrap();
        sgd.step_raw(&mut p, &[raw(&g2)], None).unwrap();
        let expected: Vec<f64> = (0..2).map(|i| (p0[i] - lr * g1[i]) - lr * g2[i]).collect();
        assert_eq!(bits(&p[0]), bits(&raw(&expected)));
        assert_eq!(sgd.velocity(0), None, "plain SGD keeps no buffer");
    }

    #[test]
    fn momentum_sgd_matches_hand_values_and_keeps_buffers() {
        let (lr, mu) = (0.05f64, 0.9f64);
        let gs = [[1.0, -2.0], [0.5, 0.5], [-3.0, 0.125]];
        let mut p = pack2([0.3, -0.7], [0.0; 3]);
        let mut sgd = Sgd::new(lr, mu).unwrap();
        // Hand computation, PyTorch's formulas written out per element.
        let (mut hp, mut hv) = ([0.3f64, -0.7], [0.0f64; 2]);
        for (k, g) in gs.iter().enumerate() {
            let grads = pack2(*g, [1.0; 3]);
            sgd.step_only(&mut p, &grads, &Trainable::new().with_index(0)).unwrap();
            for i in 0..2 {
                hv[i] = if k == 0 { g[i] } else { mu * hv[i] + g[i] };
                hp[i] -= lr * hv[i];
            }
            assert_eq!(bits(&p.as_slice()[0]), bits(&raw(&hp)), "step {k}");
            assert_eq!(sgd.velocity(0).map(<[f64]>::to_vec), Some(hv.to_vec()), "buffer at step {k}");
        }
        // Step 2 by hand, as numbers: v = 0.9 · 1 + 0.5 = 1.4 and 0.9 · -2 + 0.5 = -1.3.
        assert!((0.3 - 0.05 * 1.0 - 0.05 * 1.4 - 0.05 * (0.9 * 1.4 - 3.0) - hp[0]).abs() < 1e-15);
        assert_eq!(p.as_slice()[1].data(), &[0.0; 3], "untrained position untouched");
        assert_eq!(sgd.velocity(1), None, "no buffer for an untrained position");
    }

    /// Adam written out per element in f64 with `powi` bias corrections.
    fn adam_by_hand(lr: f64, b1: f64, b2: f64, eps: f64, p0: f64, gs: &[f64]) -> (f64, f64, f64) {
        let (mut p, mut m, mut v) = (p0, 0.0, 0.0);
        for (k, &g) in gs.iter().enumerate() {
            let t = k as i32 + 1;
            m = b1 * m + (1.0 - b1) * g;
            v = b2 * v + (1.0 - b2) * g * g;
            let m_hat = m / (1.0 - b1.powi(t));
            let v_hat = v / (1.0 - b2.powi(t));
            p -= lr * m_hat / (v_hat.sqrt() + eps);
        }
        (p, m, v)
    }

    #[test]
    fn adam_matches_hand_values_for_three_steps() {
        let (lr, b1, b2, eps) = (0.01, 0.9, 0.999, 1e-8);
        let gs = [[0.5, -4.0], [0.25, 1.0], [-1.5, 2e-3]];
        let p0 = [1.0, 2.0];
        let mut p = vec![raw(&p0)];
        let mut adam = Adam::new(lr, b1, b2, eps).unwrap();
        for (k, g) in gs.iter().enumerate() {
            adam.step_raw(&mut p, &[raw(g)], None).unwrap();
            assert_eq!(adam.steps(0), k as u64 + 1);
            for i in 0..2 {
                let col: Vec<f64> = gs[..=k].iter().map(|g| g[i]).collect();
                let (hp, hm, hv) = adam_by_hand(lr, b1, b2, eps, p0[i], &col);
                let (m, v) = adam.moments(0).unwrap();
                assert!((p[0].data()[i] - hp).abs() <= 1e-14, "p step {k}: {} vs {hp}", p[0].data()[i]);
                assert!((m[i] - hm).abs() <= 1e-15 && (v[i] - hv).abs() <= 1e-15, "moments step {k}");
            }
        }
        // Numbers for the first element after step 1: m = 0.05, v = 0.00025, p = 1 - 0.01 · 0.5 / (0.5 + 1e-8).
        let mut q = vec![raw(&[1.0])];
        let mut a = Adam::new(lr, b1, b2, eps).unwrap();
        a.step_raw(&mut q, &[raw(&[0.5])], None).unwrap();
        assert!((q[0].data()[0] - (1.0 - 0.01 * 0.5 / (0.5 + 1e-8))).abs() < 1e-15);
    }

    #[test]
    fn adam_f32_follows_the_documented_order_bit_for_bit() {
        let (lr, b1, b2, eps) = (0.1f32, 0.8f32, 0.99f32, 1e-6f32);
        let gs = [0.7f32, -0.2, 0.05];
        let mut p = vec![RawTensor::from_fn(Dims::vector(1), |_| 0.5f32)];
        let mut adam = Adam::new(lr, b1, b2, eps).unwrap();
        let (mut hp, mut m, mut v, mut b1t, mut b2t) = (0.5f32, 0.0f32, 0.0f32, 1.0f32, 1.0f32);
        for g in gs {
            adam.step_raw(&mut p, &[RawTensor::from_fn(Dims::vector(1), |_| g)], None).unwrap();
            b1t *= b1;
            b2t *= b2;
            let step_size = lr / (1.0 - b1t);
            let c2 = (1.0 - b2t).sqrt();
            m = b1 * m + (1.0 - b1) * g;
            v = b2 * v + (1.0 - b2) * (g * g);
            hp -= step_size * (m / (v.sqrt() / c2 + eps));
            assert_eq!(p[0].data()[0].to_bits(), hp.to_bits());
        }
    }

    #[test]
    fn adam_bias_correction_makes_the_first_step_lr_times_sign() {
        for g in [1e-3, 0.5, -7.0, 1e3] {
            let mut p = vec![raw(&[0.0])];
            let mut adam = Adam::new(0.01, 0.9, 0.999, 0.0).unwrap();
            adam.step_raw(&mut p, &[raw(&[g])], None).unwrap();
            // Without correction the step would be lr · (1 - β1) / sqrt(1 - β2) ≈ 3.16 · lr.
            assert!((p[0].data()[0] + 0.01 * g.signum()).abs() < 1e-15, "g = {g}: {}", p[0].data()[0]);
        }
        // The second step with the same gradient is also lr · sign (m̂ = g, v̂ = g²).
        let mut p = vec![raw(&[0.0])];
        let mut adam = Adam::new(0.01, 0.9, 0.999, 0.0).unwrap();
        for _ in 0..2 {
            adam.step_raw(&mut p, &[raw(&[3.0])], None).unwrap();
        }
        assert!((p[0].data()[0] + 0.02).abs() < 1e-15);
    }

    #[test]
    fn adam_counts_steps_per_position() {
        let mut p = pack2([0.0; 2], [0.0; 3]);
        let g = pack2([1.0; 2], [1.0; 3]);
        let mut adam = Adam::with_lr(0.1).unwrap();
        adam.step(&mut p, &g).unwrap();
        adam.step_only(&mut p, &g, &Trainable::new().with_index(1).with_index(1)).unwrap();
        assert_eq!((adam.steps(0), adam.steps(1)), (1, 2));
        // Position 1 ran two bias-corrected steps of lr each; position 0 one.
        // (each off by about lr · eps / |g| = 1e-9)
        assert!((p.as_slice()[1].data()[0] + 0.2).abs() < 1e-8);
        assert!((p.as_slice()[0].data()[0] + 0.1).abs() < 1e-8);
        assert_eq!(p.as_slice()[1].data()[1..], p.as_slice()[1].data()[..2]);
        Optimizer::reset(&mut adam);
        assert_eq!(adam.steps(1), 0);
        assert!(adam.moments(1).is_none());
    }

    #[test]
    fn wrong_shapes_are_errors_and_change_nothing() {
        let mut p = vec![raw(&[1.0, 2.0])];
        let mut sgd = Sgd::new(0.1, 0.9).unwrap();
        let e = sgd.step_raw(&mut p, &[raw(&[1.0, 2.0, 3.0])], None).unwrap_err();
        assert!(matches!(e, Error::PackShapes { .. }), "{e}");
        let e = sgd.step_raw(&mut p, &[], None).unwrap_err();
        assert!(matches!(e, Error::PackShapes { .. }), "{e}");
        assert_eq!(p[0].data(), &[1.0, 2.0]);
        assert_eq!(sgd.velocity(0), None);

        // State belongs to the first pack; another pack's shapes are an error until reset.
        let mut adam = Adam::with_lr(0.1).unwrap();
        let mut q = vec![raw(&[1.0, 2.0])];
        adam.step_raw(&mut q, &[raw(&[1.0, 1.0])], None).unwrap();
        let before = q[0].clone();
        let mut other = vec![raw(&[1.0, 2.0, 3.0])];
        let e = adam.step_raw(&mut other, &[raw(&[1.0, 1.0, 1.0])], None).unwrap_err();
        assert!(e.to_string().contains("optimizer state"), "{e}");
        assert_eq!(other[0].data(), &[1.0, 2.0, 3.0]);
        adam.reset();
        adam.step_raw(&mut other, &[raw(&[1.0, 1.0, 1.0])], None).unwrap();
        assert_eq!(q[0], before);

        // Trainable positions: out of range, wrong shape.
        let e = sgd.step_raw(&mut p, &[raw(&[1.0, 1.0])], Some(&Trainable::new().with_index(1))).unwrap_err();
        assert_eq!(e, Error::ForeignPosition { index: 1, len: 1 });
        let wrong = Position::<(U3,)>::new(0, 0);
        let e = sgd.step_raw(&mut p, &[raw(&[1.0, 1.0])], Some(&Trainable::new().with(wrong))).unwrap_err();
        assert_eq!(e, Error::ShapeMismatch { expected: Dims::vector(3), actual: Dims::vector(2) });
        assert_eq!(p[0].data(), &[1.0, 2.0]);
        assert_eq!(sgd.velocity(0), None, "a failed step creates no state");
    }

    #[test]
    fn handles_of_another_graph_are_errors() {
        let (g, x) = GraphData::<f64, ()>::new().input::<(U1,)>();
        let (g, y) = g.push(crate::ops::sum(x));
        let (other, x_other) = GraphData::<f64, ()>::new().input::<(U1,)>();
        let _ = other;
        let mut params = Pack::new().push(Tensor::<f64, (U1,)>::full(2.0));
        let saved = g.compile(params.clone(), ()).unwrap();
        let grads =
            saved.backprop_inputs_stored(crate::pack::Seeds::single(&g, y, Tensor::full(1.0)).unwrap()).unwrap();
        let mut sgd = Sgd::new(0.5, 0.0).unwrap();
        let e = sgd.step_only(&mut params, &grads, &Trainable::new().with(x_other)).unwrap_err();
        assert!(matches!(e, Error::ForeignPosition { index: 0, .. }), "{e}");
        assert_eq!(params.as_slice()[0].data(), &[2.0]);
        sgd.step_only(&mut params, &grads, &Trainable::new().with(x)).unwrap();
        assert_eq!(params.as_slice()[0].data(), &[1.5]);
    }

    #[cfg(feature = "half")]
    #[test]
    fn half_precision_scalars_train() {
        use half::f16;
        let d = Dims::vector(1);
        let mut p = vec![RawTensor::full(d, f16::from_f32(1.0))];
        let g = [RawTensor::full(d, f16::from_f32(0.5))];
        let mut sgd = Sgd::new(f16::from_f32(0.5), f16::from_f32(0.0)).unwrap();
        sgd.step_raw(&mut p, &g, None).unwrap();
        assert_eq!(p[0].data()[0], f16::from_f32(0.75));
        let mut adam = Adam::<f16>::with_lr(f16::from_f32(0.125)).unwrap();
        adam.step_raw(&mut p, &g, None).unwrap();
        assert!((p[0].data()[0].to_f32() - 0.625).abs() < 1e-3);
    }

    #[test]
    fn hyperparameters_are_checked() {
        assert_eq!(Sgd::new(-0.1f64, 0.0).unwrap_err().name, "lr");
        assert_eq!(Sgd::new(0.1f64, f64::NAN).unwrap_err().name, "momentum");
        assert_eq!(Sgd::new(f64::INFINITY, 0.0).unwrap_err().name, "lr");
        assert_eq!(Adam::new(0.1f32, 0.9, 1.0, 1e-8).unwrap_err().name, "beta2");
        assert_eq!(Adam::new(0.1f32, -0.1, 0.9, 1e-8).unwrap_err().name, "beta1");
        assert_eq!(Adam::new(0.1f32, 0.9, 0.9, -1.0).unwrap_err().name, "eps");
        let mut sgd = Sgd::new(0.1f64, 0.0).unwrap();
        assert!(sgd.set_lr(-1.0).is_err());
        assert_eq!(sgd.lr(), 0.1);
        let adam = Adam::<f64>::with_lr(1e-3).unwrap();
        assert_eq!((adam.betas(), adam.eps()), ((0.9, 0.999), 1e-8));
        assert_eq!(
            Sgd::new(-1.0f32, 0.0).unwrap_err().to_string(),
            "invalid hyper-parameter lr = -1: must be finite and >= 0"
        );
    }
}
