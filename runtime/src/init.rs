//! Parameter initialisation from a seeded random generator: [`Init`].
//!
//! The generator is `ChaCha8` (`rand_chacha`), seeded by [`Init::seeded`] from a `u64`, so the
//! same seed gives the same tensors on every run. Each tensor takes its draws from one stream in
//! row-major order, and each sample is computed in `f64` from whole 64-bit draws (not through
//! `rand`'s distributions, whose algorithms may change between versions), then rounded once to
//! the scalar type.
//!
//! ```
//! use exactgrad_runtime::{Init, Tensor, typenum::{U3, U4}};
//!
//! let mut init = Init::seeded(42);
//! let w: Tensor<f32, (U3, U4)> = init.xavier_uniform();     // fan_in 3, fan_out 4
//! let b: Tensor<f32, (U4,)> = init.zeros();
//! let noise: Tensor<f64, (U3,)> = init.normal(0.0, 0.1).unwrap();
//! assert!(w.data().iter().all(|v| v.abs() <= (6.0f32 / 7.0).sqrt()));
//!
//! // Same seed, same sequence of calls: the same bits.
//! let mut again = Init::seeded(42);
//! let w2: Tensor<f32, (U3, U4)> = again.xavier_uniform();
//! assert_eq!(w.data(), w2.data());
//! # let _ = (b, noise);
//! ```

use num_traits::Float;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use typenum::Unsigned;

use crate::optim::{require, InvalidHyperparameter};
use crate::scalar::Scalar;
use crate::shape::{Dims, Shape};
use crate::tensor::{RawTensor, Tensor};

/// A seeded source of initial parameter tensors.
///
/// Every method that draws takes its samples from the same stream, one tensor after the other,
/// so a model's parameters are reproducible from one seed and the order of the calls. [`zeros`]
/// draws nothing.
///
/// Reproducibility is bit for bit for a seed on a given platform. [`uniform`], [`xavier_uniform`]
/// and [`kaiming_uniform`] use only correctly rounded operations, so they are bit-identical
/// across platforms too; [`normal`] uses `ln` and `cos` of the platform's math library, which
/// may differ in the last bit between libraries.
///
/// [`zeros`]: Init::zeros
/// [`uniform`]: Init::uniform
/// [`normal`]: Init::normal
/// [`xavier_uniform`]: Init::xavier_uniform
/// [`kaiming_uniform`]: Init::kaiming_uniform
///
/// ```
/// use exactgrad_runtime::{Init, Tensor, typenum::U8};
/// let a: Tensor<f64, (U8,)> = Init::seeded(1).uniform(-1.0, 1.0).unwrap();
/// let b: Tensor<f64, (U8,)> = Init::seeded(2).uniform(-1.0, 1.0).unwrap();
/// assert_ne!(a.data(), b.data());
/// ```
#[derive(Clone, Debug)]
pub struct Init {
    rng: ChaCha8Rng,
}

/// `2^-53`: a 53-bit integer times this is an `f64` in `[0, 1)`, exactly.
const UNIT: f64 = 1.0 / (1u64 << 53) as f64;

/// A bound on `|z|` of [`Init::normal`]'s Box–Muller samples: `sqrt(-2 ln u1) <= sqrt(-2 ln 2^-53)`
/// `≈ 8.572` for `u1 >= 2^-53`, `|cos| <= 1`; rounded up with room for the last bits of `ln`.
const Z_MAX: f64 = 8.6;

fn cast<A: Float>(x: f64) -> A {
    A::from(x).unwrap_or_else(A::nan)
}

impl Init {
    /// A generator seeded with `seed` (`ChaCha8`, `SeedableRng::seed_from_u64`).
    #[must_use]
    pub fn seeded(seed: u64) -> Self {
        Init { rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    /// A draw in `[0, 1)`: the top 53 bits of one 64-bit draw, times `2^-53` (exact).
    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * UNIT
    }

    /// A draw in `(0, 1]`: (top 53 bits + 1) times `2^-53` (exact).
    fn unit_open_below(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) + 1) as f64 * UNIT
    }

    fn uniform_f64<A: Float + Scalar, S: Shape>(&mut self, lo: f64, hi: f64) -> Tensor<A, S> {
        Tensor::from_raw_unchecked(self.uniform_raw(S::dims(), lo, hi))
    }

    /// [`Init::uniform_f64`] of `dims`: generic over the scalar only, so a model's crate compiles
    /// it once per scalar, not once per parameter shape.
    fn uniform_raw<A: Float + Scalar>(&mut self, dims: Dims, lo: f64, hi: f64) -> RawTensor<A> {
        let width = hi - lo;
        RawTensor::from_fn(dims, |_| cast(self.uniform_sample(lo, width)))
    }

    /// Independent samples of the uniform distribution on `[lo, hi)`, one draw per element:
    /// `lo + (hi - lo) * u` in `f64` with `u` in `[0, 1)`, rounded once to `A` (so a sample may
    /// round to `hi`).
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `lo` and `hi` are finite, `lo <= hi` and `hi - lo` is
    /// finite in `f64` (`uniform(-f64::MAX, f64::MAX)` would draw infinities and NaNs).
    ///
    /// ```
    /// use exactgrad_runtime::{Init, Tensor, typenum::{U2, U5}};
    /// let t: Tensor<f32, (U2, U5)> = Init::seeded(7).uniform(-0.5, 0.5).unwrap();
    /// assert!(t.data().iter().all(|v| (-0.5..=0.5).contains(v)));
    /// assert!(Init::seeded(7).uniform::<f32, (U2,)>(1.0, 0.0).is_err());
    /// ```
    pub fn uniform<A: Float + Scalar, S: Shape>(
        &mut self,
        lo: A,
        hi: A,
    ) -> Result<Tensor<A, S>, InvalidHyperparameter> {
        self.uniform_checked(S::dims(), lo, hi).map(Tensor::from_raw_unchecked)
    }

    /// [`Init::uniform`] of `dims` (generic over the scalar only, as [`Init::uniform_raw`]).
    fn uniform_checked<A: Float + Scalar>(
        &mut self,
        dims: Dims,
        lo: A,
        hi: A,
    ) -> Result<RawTensor<A>, InvalidHyperparameter> {
        require("lo", lo, lo.is_finite(), "must be finite")?;
        require("hi", hi, hi.is_finite() && hi >= lo, "must be finite and >= lo")?;
        let (lo64, hi64) = (lo.to_f64().unwrap_or(f64::NAN), hi.to_f64().unwrap_or(f64::NAN));
        require("hi", hi, (hi64 - lo64).is_finite(), "hi - lo must be finite")?;
        Ok(self.uniform_raw(dims, lo64, hi64))
    }

    /// Independent samples of the normal distribution `N(mean, std²)`, two draws per element
    /// (Box–Muller, cosine branch): `mean + std * sqrt(-2 ln u1) * cos(2π u2)` in `f64` with
    /// `u1` in `(0, 1]`, `u2` in `[0, 1)`, rounded once to `A`.
    ///
    /// # Errors
    /// [`InvalidHyperparameter`] unless `mean` is finite, `std` is finite and `>= 0`, and every
    /// sample is finite in `A`: `|mean| + Z_MAX * std` at most `A`'s largest value, where
    /// `Z_MAX = 8.6` bounds `|z|` (`sqrt(-2 ln 2^-53) ≈ 8.572` for the smallest `u1`).
    ///
    /// ```
    /// use exactgrad_runtime::{Init, Tensor, typenum::U4};
    /// let t: Tensor<f64, (U4,)> = Init::seeded(3).normal(1.0, 0.0).unwrap();
    /// assert_eq!(t.data(), &[1.0; 4]);
    /// assert!(Init::seeded(3).normal::<f64, (U4,)>(0.0, -1.0).is_err());
    /// ```
    pub fn normal<A: Float + Scalar, S: Shape>(
        &mut self,
        mean: A,
        std: A,
    ) -> Result<Tensor<A, S>, InvalidHyperparameter> {
        self.normal_checked(S::dims(), mean, std).map(Tensor::from_raw_unchecked)
    }

    /// [`Init::normal`] of `dims` (generic over the scalar only, as [`Init::uniform_raw`]).
    fn normal_checked<A: Float + Scalar>(
        &mut self,
        dims: Dims,
        mean: A,
        std: A,
    ) -> Result<RawTensor<A>, InvalidHyperparameter> {
        require("mean", mean, mean.is_finite(), "must be finite")?;
        require("std", std, std.is_finite() && std >= <A as Scalar>::zero(), "must be finite and >= 0")?;
        let (mean64, std64) = (mean.to_f64().unwrap_or(f64::NAN), std.to_f64().unwrap_or(f64::NAN));
        let largest = A::max_value().to_f64().unwrap_or(f64::MAX);
        let bound = mean64.abs() + Z_MAX * std64;
        require("std", std, bound <= largest, "mean ± 8.6 std must be finite in the scalar type")?;
        Ok(RawTensor::from_fn(dims, |_| cast(self.normal_f64(mean64, std64))))
    }

    /// One normal sample in `f64`: Box–Muller from two draws. Not generic, so the generator's
    /// code is compiled once, here, not per scalar and shape in every crate that initialises.
    fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        let u1 = self.unit_open_below();
        let u2 = self.unit();
        let z = (-2.0 * u1.ln()).sqrt() * (core::f64::consts::TAU * u2).cos();
        mean + std * z
    }

    /// One uniform sample on `[lo, lo + width)` in `f64` (not generic, as [`Init::normal_f64`]).
    fn uniform_sample(&mut self, lo: f64, width: f64) -> f64 {
        lo + width * self.unit()
    }

    /// Xavier (Glorot) uniform initialisation of an `R × C` weight matrix used as `x · w`, so
    /// `fan_in = R` and `fan_out = C`: uniform on `[-a, a)` with `a = sqrt(6 / (fan_in + fan_out))`
    /// (gain 1, as `PyTorch`'s `xavier_uniform_`; `PyTorch`'s `[out, in]` weights are the transpose).
    ///
    /// ```
    /// use exactgrad_runtime::{Init, Tensor, typenum::{U2, U4}};
    /// let w: Tensor<f64, (U4, U2)> = Init::seeded(0).xavier_uniform();
    /// assert!(w.data().iter().all(|v| v.abs() <= 1.0)); // a = sqrt(6 / 6)
    /// ```
    pub fn xavier_uniform<A: Float + Scalar, R: Unsigned + 'static, C: Unsigned + 'static>(
        &mut self,
    ) -> Tensor<A, (R, C)> {
        let a = (6.0 / (R::USIZE + C::USIZE) as f64).sqrt();
        self.uniform_f64(-a, a)
    }

    /// Kaiming (He) uniform initialisation for `ReLU` layers of an `R × C` weight matrix used as
    /// `x · w` (`fan_in = R`): uniform on `[-a, a)` with `a = sqrt(6 / fan_in)` (gain `√2`, as
    /// `PyTorch`'s `kaiming_uniform_(nonlinearity = "relu")`).
    ///
    /// ```
    /// use exactgrad_runtime::{Init, Tensor, typenum::{U6, U3}};
    /// let w: Tensor<f32, (U6, U3)> = Init::seeded(0).kaiming_uniform();
    /// assert!(w.data().iter().all(|v| v.abs() <= 1.0)); // a = sqrt(6 / 6)
    /// ```
    pub fn kaiming_uniform<A: Float + Scalar, R: Unsigned + 'static, C: Unsigned + 'static>(
        &mut self,
    ) -> Tensor<A, (R, C)> {
        let a = (6.0 / R::USIZE as f64).sqrt();
        self.uniform_f64(-a, a)
    }

    /// A tensor of zeros (`+0.0`); draws nothing, so the stream is not advanced.
    ///
    /// ```
    /// use exactgrad_runtime::{Init, Tensor, typenum::U3};
    /// let b: Tensor<f32, (U3,)> = Init::seeded(0).zeros();
    /// assert_eq!(b.data(), &[0.0; 3]);
    /// ```
    #[must_use]
    pub fn zeros<A: Scalar, S: Shape>(&self) -> Tensor<A, S> {
        Tensor::zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typenum::{U100, U3, U4, U50};

    fn mean_var(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        (mean, v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n)
    }

    fn bits(t: &Tensor<f64, (U100, U100)>) -> Vec<u64> {
        t.data().iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn same_seed_same_tensors_different_seeds_differ() {
        let draw = |seed| {
            let mut init = Init::seeded(seed);
            let u: Tensor<f64, (U100, U100)> = init.uniform(-1.0, 1.0).unwrap();
            let n: Tensor<f64, (U100, U100)> = init.normal(0.0, 1.0).unwrap();
            let x: Tensor<f64, (U100, U100)> = init.xavier_uniform();
            (bits(&u), bits(&n), bits(&x))
        };
        assert_eq!(draw(5), draw(5));
        let (a, b) = (draw(5), draw(6));
        assert_ne!(a.0, b.0);
        assert_ne!(a.1, b.1);
        assert_ne!(a.2, b.2);
        // Successive calls continue the stream.
        let mut init = Init::seeded(5);
        let first: Tensor<f32, (U4,)> = init.uniform(0.0, 1.0).unwrap();
        let second: Tensor<f32, (U4,)> = init.uniform(0.0, 1.0).unwrap();
        assert_ne!(first.data(), second.data());
        // zeros draws nothing.
        let mut a = Init::seeded(9);
        let mut b = Init::seeded(9);
        let _: Tensor<f32, (U4,)> = a.zeros();
        let ua: Tensor<f64, (U3,)> = a.uniform(0.0, 1.0).unwrap();
        let ub: Tensor<f64, (U3,)> = b.uniform(0.0, 1.0).unwrap();
        assert_eq!(ua.data(), ub.data());
    }

    #[test]
    fn the_stream_is_pinned() {
        // ChaCha8 seeded by `seed_from_u64(0)`: a change of generator or of the sample formula
        // changes every model's initial parameters, so it must be deliberate.
        let t: Tensor<f64, (U3,)> = Init::seeded(0).uniform(0.0, 1.0).unwrap();
        let got: Vec<u64> = t.data().iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, PINNED, "{:?}", t.data());
    }
    const PINNED: [u64; 3] = [4604562003098661703, 4602064919497455152, 4604472542039653460];

    #[test]
    fn uniform_moments_and_range() {
        let t: Tensor<f64, (U100, U100)> = Init::seeded(11).uniform(-1.0, 3.0).unwrap();
        assert!(t.data().iter().all(|v| (-1.0..3.0).contains(v)));
        let (m, v) = mean_var(t.data());
        assert!((m - 1.0).abs() < 0.05, "mean {m}"); // sd of the mean 0.0115
        assert!((v - 16.0 / 12.0).abs() < 0.05, "var {v}");
        let f: Tensor<f32, (U100, U100)> = Init::seeded(12).uniform(0.25, 0.5).unwrap();
        assert!(f.data().iter().all(|v| (0.25..=0.5).contains(v)));
    }

    #[test]
    fn normal_moments() {
        let t: Tensor<f64, (U100, U100)> = Init::seeded(13).normal(2.0, 0.5).unwrap();
        let (m, v) = mean_var(t.data());
        assert!((m - 2.0).abs() < 0.02, "mean {m}"); // sd of the mean 0.005
        assert!((v - 0.25).abs() < 0.015, "var {v}"); // sd of the variance ≈ 0.0035
        let within_one_sd = t.data().iter().filter(|x| (*x - 2.0).abs() < 0.5).count();
        assert!((6500..7150).contains(&within_one_sd), "{within_one_sd}"); // 68.3 %
    }

    #[test]
    fn xavier_and_kaiming_bounds_and_variance() {
        let x: Tensor<f64, (U100, U100)> = Init::seeded(14).xavier_uniform();
        let a = (6.0f64 / 200.0).sqrt();
        assert!(x.data().iter().all(|v| v.abs() <= a));
        let (m, v) = mean_var(x.data());
        assert!(m.abs() < 0.005 && (v - 0.01).abs() < 0.0005, "mean {m} var {v}"); // 2 / (in + out)
        let k: Tensor<f64, (U100, U100)> = Init::seeded(15).kaiming_uniform();
        let (m, v) = mean_var(k.data());
        assert!(m.abs() < 0.007 && (v - 0.02).abs() < 0.001, "mean {m} var {v}"); // 2 / fan_in
        let k: Tensor<f32, (U50, U4)> = Init::seeded(16).kaiming_uniform();
        assert!(k.data().iter().all(|v| v.abs() <= (6.0f32 / 50.0).sqrt()));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut init = Init::seeded(0);
        assert_eq!(init.uniform::<f64, (U3,)>(f64::NAN, 1.0).unwrap_err().name, "lo");
        assert_eq!(init.uniform::<f64, (U3,)>(0.0, f64::INFINITY).unwrap_err().name, "hi");
        assert_eq!(init.uniform::<f64, (U3,)>(1.0, 0.0).unwrap_err().name, "hi");
        assert_eq!(init.normal::<f32, (U3,)>(0.0, -1.0).unwrap_err().name, "std");
        assert_eq!(init.normal::<f32, (U3,)>(f32::NAN, 1.0).unwrap_err().name, "mean");
        // Bounds whose samples would overflow to inf or NaN.
        assert_eq!(init.uniform::<f64, (U3,)>(-f64::MAX, f64::MAX).unwrap_err().name, "hi");
        assert_eq!(init.normal::<f64, (U3,)>(f64::MAX, f64::MAX).unwrap_err().name, "std");
        assert_eq!(init.normal::<f64, (U3,)>(0.0, f64::MAX / 4.0).unwrap_err().name, "std");
        assert_eq!(init.normal::<f32, (U3,)>(3.0e38, 1.0e37).unwrap_err().name, "std");
        let big: Tensor<f32, (U100,)> = init.normal(0.0, 3.0e37).unwrap();
        assert!(big.data().iter().all(|v| v.is_finite()));
        let c: Tensor<f64, (U3,)> = init.uniform(2.0, 2.0).unwrap();
        assert_eq!(c.data(), &[2.0; 3]);
    }
}
