//! `dropout(x, p, seed)`: every element of `x` kept with probability `1 − p` and scaled by
//! `1 / (1 − p)`, or dropped, by a mask drawn from `seed` (a `u64` of the data); SEMANTICS §8.3.
//!
//! * The **mask** is a pure function of `(seed, i)` for element `i` (row-major): element `i` is
//!   dropped iff `u_i < p`, where `u_i = (z_i >> 11) · 2⁻⁵³` and `z_i` is output `i` (from 0) of
//!   SplitMix64 seeded with `seed` ([`splitmix64`]: Steele, Lea and Flood, 2014 — Java's
//!   `SplittableRandom`). It depends on nothing else (no thread count, no pass, no state), so
//!   every pass of one saved forward — which keeps its data, the seed included — sees the same
//!   mask, and a new seed draws a new one.
//! * The **factor** `k` is the `f64` quotient `1.0 / (1.0 − p)` (IEEE division, `p` as an `f64`)
//!   converted once by the scalar's `FromPrimitive::from_f64` (`f32`: rounded to nearest;
//!   `Wrapping<i64>`: truncated toward zero, so `k = 1` for `p < 0.5`). `p` outside `[0, 1)` or a
//!   `k` the scalar cannot hold is a shape-rule error of the node (reported by `compile`).
//! * **Forward**: `y[i] = x[i] * m[i]` with `m[i] = k` (kept) or the scalar's `0` (dropped): a
//!   product in both cases, so a dropped NaN or infinity gives NaN and a dropped negative gives
//!   `-0.0` in the float types; `p = 0` keeps everything with `k = 1`, the identity in value.
//! * **VJP**: `single(x, δ ⊙ m)`, `t[i] = δ[i] * m[i]` (δ left), the same mask read again from the
//!   seed.

use num_traits::FromPrimitive;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Reads the dropout mask's seed from the data.
pub type SeedAccessor<D> = fn(&D) -> u64;

/// Output `i` (from 0) of the SplitMix64 generator seeded with `seed`: the state after `i + 1`
/// steps of `+ 0x9E37_79B9_7F4A_7C15`, mixed by the generator's finaliser.
#[must_use]
pub fn splitmix64(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Whether `dropout` with probability `p` and seed `seed` keeps element `i`: `u_i ≥ p` with
/// `u_i = (splitmix64(seed, i) >> 11) · 2⁻⁵³`, uniform on the multiples of `2⁻⁵³` in `[0, 1)`.
#[must_use]
pub fn keeps(seed: u64, i: usize, p: f64) -> bool {
    let u = (splitmix64(seed, i as u64) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    u >= p
}

/// Dropout with a seeded mask.
pub struct Dropout<A, D> {
    parents: [usize; 1],
    p: f64,
    /// `1 / (1 − p)` in the scalar type; `None` when `p` is out of range or the scalar cannot
    /// hold it (the shape rule reports it).
    factor: Option<A>,
    seed: SeedAccessor<D>,
}

impl<A: Clone, D> Clone for Dropout<A, D> {
    fn clone(&self) -> Self {
        Dropout { parents: self.parents, p: self.p, factor: self.factor.clone(), seed: self.seed }
    }
}

impl<A: core::fmt::Debug, D> core::fmt::Debug for Dropout<A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dropout")
            .field("parents", &self.parents)
            .field("p", &self.p)
            .field("factor", &self.factor)
            .finish()
    }
}

impl<A: FromPrimitive, D> Dropout<A, D> {
    /// `dropout(x, p, seed)` for the position `x`, the seed read from the data by `seed`.
    pub fn new(x: usize, p: f64, seed: SeedAccessor<D>) -> Self {
        let factor = exactgrad_spec::rules::dropout_probability(p).ok().and_then(|()| A::from_f64(1.0 / (1.0 - p)));
        Dropout { parents: [x], p, factor, seed }
    }
}

impl<A: Scalar + core::ops::Mul<Output = A>, D> Dropout<A, D> {
    /// `m[i]`: the factor or the scalar's 0.
    fn mask(&self, factor: &A, seed: u64, i: usize) -> A {
        if keeps(seed, i, self.p) {
            factor.clone()
        } else {
            A::zero()
        }
    }
}

impl<A: Scalar + core::ops::Mul<Output = A> + FromPrimitive, D: 'static> CompactOp<A, D> for Dropout<A, D> {
    fn name(&self) -> &'static str {
        "dropout"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        exactgrad_spec::rules::dropout_probability(self.p)?;
        if self.factor.is_none() {
            return Err(format!(
                "dropout's factor 1 / (1 - p) = {} is not representable in the scalar type",
                1.0 / (1.0 - self.p)
            ));
        }
        super::dims_at("dropout", prefix, self.parents[0])
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        let Some(k) = &self.factor else { return };
        let seed = (self.seed)(data);
        let x = ctx[self.parents[0]].data();
        out.extend(x.iter().enumerate().map(|(i, v)| v.clone() * self.mask(k, seed, i)));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let Some(k) = self.factor.clone() else { return c.zero() };
        let seed = (self.seed)(saved.data);
        let gd = g.data();
        let t = c.tensor(g.dims(), |i| gd[i].clone() * self.mask(&k, seed, i));
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Dropout { a: self.parents[0], p: self.p, seed: self.seed, factor: A::from_f64, mul: |x, y| x * y })
    }
}

typed_op!(dropout(x: S; p: f64, seed: SeedAccessor<D>) -> Dropout<A, D>: Unary, "the shape of `x`, each element kept with probability `1 − p` and scaled by `1 / (1 − p)`, the mask drawn from the seed the data gives; `p` and the factor are checked when the node is pushed (reported by `compile`)" where A: FromPrimitive);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::RawGraph;
    use crate::graph::RawNode;
    use crate::ops::testing::{bits, sample};
    use crate::saved::RawSavedGraph;

    fn run(op: Dropout<f64, u64>, x: &RawTensor<f64>, seed: u64) -> (RawTensor<f64>, RawTensor<f64>) {
        let mut graph = RawGraph::new(vec![x.dims()]);
        graph.push(RawNode::compact(op)).unwrap();
        let saved = RawSavedGraph::compile(&graph, vec![x.clone()], seed).unwrap();
        let y = saved.values()[1].clone();
        let g = RawTensor::from_fn(y.dims(), |i| 0.25 + i as f64);
        let mut c = Contributions::new();
        let node = saved.prepared_nodes().next().unwrap();
        let t = node.vjp_dense(&g, &mut c).unwrap().remove(0);
        (y, t)
    }

    fn seed(d: &u64) -> u64 {
        *d
    }

    #[test]
    fn splitmix64_is_the_sequential_generator_indexed() {
        // The textbook form: a state advanced by the golden gamma, each output the mixed state.
        let mut state = 0x0123_4567_89AB_CDEFu64;
        for i in 0..100 {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            assert_eq!(splitmix64(0x0123_4567_89AB_CDEF, i), z ^ (z >> 31));
        }
    }

    #[test]
    fn kept_elements_are_scaled_dropped_ones_multiplied_by_zero() {
        let x = sample(&[4, 25], 7);
        let (y, t) = run(Dropout::new(0, 0.5, seed), &x, 42);
        let mut dropped = 0;
        for i in 0..x.numel() {
            let (keep, xi) = (keeps(42, i, 0.5), x.data()[i]);
            let m = if keep { 2.0 } else { 0.0 };
            assert_eq!(y.data()[i].to_bits(), (xi * m).to_bits());
            assert_eq!(t.data()[i].to_bits(), ((0.25 + i as f64) * m).to_bits());
            dropped += usize::from(!keep);
        }
        assert!(dropped > 20 && dropped < 80, "{dropped} of 100 dropped at p = 0.5");
    }

    #[test]
    fn p_zero_is_the_identity_in_value() {
        let x = sample(&[3, 5], 8);
        let (y, t) = run(Dropout::new(0, 0.0, seed), &x, 9);
        assert_eq!(bits(&y), bits(&x));
        assert_eq!(t.data(), RawTensor::from_fn(x.dims(), |i| 0.25 + i as f64).data());
    }

    #[test]
    fn special_values() {
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let x = RawTensor::from_fn(Dims::vector(64), |i| [nan, f64::INFINITY, -1.0, -0.0][i % 4]);
        let (y, _) = run(Dropout::new(0, 0.5, seed), &x, 3);
        for i in 0..64 {
            let m = if keeps(3, i, 0.5) { 2.0 } else { 0.0 };
            assert_eq!(y.data()[i].to_bits(), (x.data()[i] * m).to_bits(), "element {i}");
        }
    }

    #[test]
    fn bad_probabilities_and_factors_are_errors_not_panics() {
        let rule =
            |op: Dropout<f64, u64>| <Dropout<f64, u64> as CompactOp<f64, u64>>::output_dims(&op, &[Dims::vector(2)]);
        assert_eq!(rule(Dropout::new(0, 1.0, seed)).unwrap_err(), "dropout needs a probability p in [0, 1), got 1");
        assert_eq!(rule(Dropout::new(0, -0.5, seed)).unwrap_err(), "dropout needs a probability p in [0, 1), got -0.5");
        assert!(rule(Dropout::new(0, f64::NAN, seed)).is_err());
        // The largest p below 1 is 1 - 2^-53: its factor 2^53 fits every float type.
        let largest = Dropout::<f32, u64>::new(0, 1.0 - f64::EPSILON / 2.0, seed);
        assert_eq!(largest.factor, Some(2f32.powi(53)));
        let wrapped = Dropout::<core::num::Wrapping<i64>, u64>::new(0, 0.3, seed);
        assert_eq!(wrapped.factor, Some(core::num::Wrapping(1)));
    }

    #[test]
    fn gradient_matches_finite_differences() {
        // The mask does not depend on x, so the op is linear in x for a fixed seed.
        let x = sample(&[3, 4], 11);
        let (_, t) = run(Dropout::new(0, 0.25, seed), &x, 5);
        let k = 1.0 / 0.75;
        for i in 0..x.numel() {
            let m = if keeps(5, i, 0.25) { k } else { 0.0 };
            assert!((t.data()[i] - (0.25 + i as f64) * m).abs() <= 1e-12);
        }
    }
}
