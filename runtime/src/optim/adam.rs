//! [`Adam`]: Adam with bias correction.

use num_traits::Float;

use super::{non_negative, prepare, unit_interval, InvalidHyperparameter, Optimizer, Trainable};
use crate::error::Error;
use crate::pack::Pack;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

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
    moments: Vec<Option<AdamMoments<A>>>,
}

#[derive(Clone, Debug)]
struct AdamMoments<A> {
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
        Ok(Adam { lr, beta1, beta2, eps, dims: None, moments: Vec::new() })
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
        self.moments.get(index).and_then(Option::as_ref).map_or(0, |s| s.steps)
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
        self.moments.get(index)?.as_ref().map(|s| (&s.m[..], &s.v[..]))
    }

    /// Forgets moments and step counts (and which pack they belong to).
    pub fn reset(&mut self) {
        self.dims = None;
        self.moments.clear();
    }

    /// [`Optimizer::step`] on untyped tensors; as [`Sgd::step_raw`](crate::optim::Sgd::step_raw).
    ///
    /// # Errors
    /// As [`Sgd::step_raw`](crate::optim::Sgd::step_raw).
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
        self.moments.resize(params.len(), None);
        let one = A::one();
        let (lr, b1, b2, eps) = (self.lr, self.beta1, self.beta2, self.eps);
        let (one_minus_b1, one_minus_b2) = (one - b1, one - b2);
        for i in indices {
            let (p, g) = (params[i].data_mut(), grads[i].data());
            let s = self.moments[i].get_or_insert_with(|| AdamMoments {
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
