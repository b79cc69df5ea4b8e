//! Shared float helpers of the integration tests: the float scalars under test ([`TestFloat`]) with
//! their adversarial values, deterministic tensors that mix those values with ordinary ones
//! ([`adversarial`], [`adv`]), and tensors as bits ([`Bits`], [`bits`], [`all_bits`]) so that every
//! comparison is on the encoding.
// Each test crate that says `mod floats;` compiles this module on its own and uses only a subset
// of it; the rest would be reported as dead code (and, being `pub` in a private module, as
// unreachable `pub`) in that crate.
#![allow(dead_code, unreachable_pub)]

use core::fmt::Debug;

use exactgrad::{Dims, GraphData, Pack, Position, RawTensor, Scalar, Shape, Tensor};
use num_traits::{Float, FromPrimitive};

/// The float scalars under test.
pub trait TestFloat: Scalar + Float + FromPrimitive + Debug {
    /// The encoding (storage equality is equality of this).
    fn bits(self) -> u64;
    /// Adversarial values: signed zeros, NaN payloads, infinities, subnormals, extremes.
    fn specials() -> Vec<Self>;
    /// An arbitrary encoding.
    fn from_raw_bits(b: u64) -> Self;
}

impl TestFloat for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn specials() -> Vec<Self> {
        vec![
            0.0,
            -0.0,
            f64::from_bits(0x7ff8_0000_0000_0001), // quiet NaN, payload 1
            f64::from_bits(0xfff8_0000_dead_beef), // negative quiet NaN
            f64::from_bits(0x7ff0_0000_0000_0002), // signalling NaN
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(1),                      // smallest subnormal
            -f64::from_bits(0x000f_ffff_ffff_ffff), // largest subnormal, negative
            f64::MIN_POSITIVE,
            f64::MAX,
            -f64::MAX,
            f64::powi(2.0, -53),
            1.0,
            -1.0,
        ]
    }
    fn from_raw_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}

impl TestFloat for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn specials() -> Vec<Self> {
        vec![
            0.0,
            -0.0,
            f32::from_bits(0x7fc0_0001), // quiet NaN, payload 1
            f32::from_bits(0xffc0_beef), // negative quiet NaN
            f32::from_bits(0x7f80_0002), // signalling NaN
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),            // smallest subnormal
            -f32::from_bits(0x007f_ffff), // largest subnormal, negative
            f32::MIN_POSITIVE,
            f32::MAX,
            -f32::MAX,
            f32::powi(2.0, -24),
            1.0,
            -1.0,
        ]
    }
    fn from_raw_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}

/// The `SplitMix64` finaliser: a deterministic hash of `x`, well spread over all 64 bits.
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// How many mixes [`adversarial`] draws from; salts that differ by a multiple of this get the
/// same mix, so `0..MODES` covers every mix once.
pub const MODES: u64 = 8;

/// A deterministic tensor of `dims`. The salt's residue mod [`MODES`] picks the mix: 0 ordinary
/// values in `[-3, 3)` only (no NaN, no infinity), 1 to 5 about a third adversarial values, 6 and
/// 7 adversarial values only (so NaNs with different payloads meet in one operation).
pub fn adversarial<A: TestFloat>(dims: Dims, salt: u64) -> RawTensor<A> {
    let specials = A::specials();
    let mode = salt % MODES;
    RawTensor::from_fn(dims, |i| {
        let h = splitmix(salt.wrapping_mul(0x1_0000_0001).wrapping_add(i as u64));
        if mode >= 6 || (mode != 0 && h.is_multiple_of(3)) {
            specials[(h / 3) as usize % specials.len()]
        } else {
            let unit = (h >> 11) as f64 / (1u64 << 53) as f64;
            A::from_f64(unit * 6.0 - 3.0).unwrap()
        }
    })
}

/// A typed adversarial tensor with the mix of `salt`; `k` tells apart the tensors of one run.
pub fn adv<A: TestFloat, S: Shape>(salt: u64, k: u64) -> Tensor<A, S> {
    Tensor::try_from_raw(adversarial(S::dims(), salt + MODES * (k + 1) * 1009)).unwrap()
}

/// Dims and element bits of a tensor.
pub type Bits = (Vec<usize>, Vec<u64>);

/// The dims and element bits of `t`.
pub fn bits<A: TestFloat>(t: &RawTensor<A>) -> Bits {
    (t.dims().as_slice().to_vec(), t.data().iter().map(|x| x.bits()).collect())
}

/// The dims and element bits of each tensor of `ts`, in order.
pub fn all_bits<'t, A: TestFloat>(ts: impl IntoIterator<Item = &'t RawTensor<A>>) -> Vec<Bits> {
    ts.into_iter().map(bits).collect()
}

/// Asserts that every variant in `xs` has the bits of `xs[0]` (the dense reference).
pub fn assert_all_eq(what: &str, xs: &[Vec<Bits>]) {
    for (k, x) in xs.iter().enumerate().skip(1) {
        assert_eq!(x, &xs[0], "{what}: variant {k} differs from the dense reference (variant 0)");
    }
}

/// Values and every pass of `g` (all positions seeded by adversarial tensors, inputs only,
/// `backprop_from` every position — each pass by every engine, checked equal — and the typed
/// `backprop_from(output)`), as bits: two graphs written differently but meaning the same have
/// equal outcomes.
pub fn outcome<A: TestFloat, G, Ss, Br, S: Shape>(
    g: &GraphData<A, (), G, Ss, Br>,
    inputs: Pack<A, G>,
    output: Position<S, Br>,
    salt: u64,
) -> Vec<Vec<Bits>> {
    let saved = g.compile(inputs, ()).unwrap();
    let raw = saved.raw();
    let dims = g.raw().dims().to_vec();
    let seeds: Vec<RawTensor<A>> = (0..dims.len()).map(|p| adversarial::<A>(dims[p], salt + 97 * p as u64)).collect();
    let mut out = vec![all_bits(raw.values())];
    let all = [
        all_bits(&raw.backprop_all_dense(seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_array(seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_stored(seeds.clone()).unwrap()),
    ];
    assert_all_eq("backprop_all", &all);
    let inputs = [
        all_bits(&raw.backprop_inputs_dense(seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_array(seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_stored(seeds.clone()).unwrap()),
    ];
    assert_all_eq("backprop_inputs", &inputs);
    out.extend(all);
    out.extend(inputs);
    for (p, seed) in seeds.iter().enumerate() {
        let at = raw.graph().position(p).unwrap();
        let r = [
            all_bits(&raw.backprop_from_dense(at, seed.clone()).unwrap()),
            all_bits(&raw.backprop_from(at, seed.clone()).unwrap()),
        ];
        assert_all_eq("backprop_from", &r);
        out.extend(r);
    }
    let typed: Tensor<A, S> = Tensor::try_from_raw(seeds[output.index()].clone()).unwrap();
    out.push(all_bits(saved.backprop_from(output, typed).unwrap().iter()));
    out
}
