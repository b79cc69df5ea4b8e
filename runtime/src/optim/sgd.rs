//! [`Sgd`]: stochastic gradient descent with optional classic momentum.

use num_traits::Float;

use super::{non_negative, prepare, InvalidHyperparameter, Optimizer, Trainable};
use crate::error::Error;
use crate::pack::Pack;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

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
