//! `exp` for `f32` and `f64` (see the parent module for accuracy and special values), the generic
//! dispatcher [`exp`] and its slice form [`exp_in_place`].
//!
//! Both kernels take `k = round(x·log₂e)`, evaluate the rest by a polynomial (`exp_f32`: `2ʳ`
//! with `r = x·log₂e - k`, `|r| ≤ 1/2`; `exp_f64`: `eʳ` with `r = x - k·ln2`, `|r| ≤ ln2/2`, as a
//! double-double) and multiply by `2ᵏ` built from bits. Inputs are clamped first
//! to a range whose ends already overflow to `+∞` and underflow to `+0`, which also keeps `±∞` and
//! NaN out of the arithmetic (a NaN is put back by the final select).

use num_traits::Float;

use super::{
    fast_two_sum, pow2_bits, round_and_scale, two_sum, F32_QUIET, F64_QUIET, LN2_HI, LN2_LO, LOG2E, ROUND_MAGIC,
};

/// Inputs above it are clamped to it: `exp(89) > f32::MAX`, so it rounds to `+∞` like them.
const F32_EXP_HIGH: f64 = 89.0;
/// Inputs below it are clamped to it: `exp(-104) < 2⁻¹⁵⁰`, half the least subnormal `f32`, so it
/// rounds to `+0` like them.
const F32_EXP_LOW: f64 = -104.0;
/// Inputs above it are clamped to it: `exp(710) > f64::MAX`.
const F64_EXP_HIGH: f64 = 710.0;
/// Inputs below it are clamped to it: `exp(-746) < 2⁻¹⁰⁷⁵`, half the least subnormal `f64`.
const F64_EXP_LOW: f64 = -746.0;

/// `(2ʳ - 1) / r` on `|r| ≤ 1/2`: the degree-6 Chebyshev fit of it (coefficients rounded to
/// `f64`, highest degree first), so that `1 + r · q(r)` is `2ʳ` within 1.1·10⁻¹⁰ relative (and
/// exactly `1` at `r = 0`).
const EXP2_Q: [f64; 7] = [
    f64::from_bits(0x3EF0_0A58_1594_758E),
    f64::from_bits(0x3F24_43FF_FC90_DB59),
    f64::from_bits(0x3F55_D879_EAD0_6A82),
    f64::from_bits(0x3F83_B2A1_B715_2BEF),
    f64::from_bits(0x3FAC_6B08_D883_DCA1),
    f64::from_bits(0x3FCE_BFBE_045F_4D3C),
    f64::from_bits(0x3FE6_2E42_FEFA_39EF),
];

/// `exp(x)` for `f32`, within 1 ulp of `f64` `exp` rounded to `f32` (exhaustively tested; the
/// overflow to `+∞` happens exactly where the reference's does, past `88.72283`): computed in
/// `f64` as `2ᵗ` with `t = x · log₂e = k + r` (`k` an integer, `|r| ≤ 1/2`, `r = t - k` exact,
/// `t` within 2⁻⁴⁶ of `x · log₂e`), `2ʳ` by the polynomial `EXP2_Q` and `2ᵏ` from bits (relative
/// error below 1.2·10⁻¹⁰ in all), then rounded once to `f32`, so subnormal results come from that
/// one rounding. Branch-free: loops over it vectorise.
#[inline]
#[must_use]
pub fn exp_f32(x: f32) -> f32 {
    let xd = f64::from(x);
    let xd = if xd < F32_EXP_HIGH { xd } else { F32_EXP_HIGH };
    let xd = if xd > F32_EXP_LOW { xd } else { F32_EXP_LOW };
    // k ∈ [-150, 128]: 2ᵏ is a normal f64.
    let t = xd * LOG2E;
    let (k, scale) = round_and_scale(t);
    let r = t - k;
    let q = EXP2_Q[1] + r * EXP2_Q[0];
    let q = EXP2_Q[2] + r * q;
    let q = EXP2_Q[3] + r * q;
    let q = EXP2_Q[4] + r * q;
    let q = EXP2_Q[5] + r * q;
    let q = EXP2_Q[6] + r * q;
    let y = (scale * (1.0 + r * q)) as f32;
    if x.is_nan() {
        f32::from_bits(x.to_bits() | F32_QUIET)
    } else {
        y
    }
}

/// `exp(x)` for `f64`, within 1 ulp of the exact value on the tested samples (by construction
/// about 0.65 ulp before the scaling; a subnormal result is rounded once more, still within 1
/// ulp). The reduced argument is a double-double `r + rc`; `exp(r + rc) = 1 + r + s` with `1 + r`
/// kept exact (two-sum) and rounded once together with `s` (Taylor to r¹³/13!, truncation below
/// 4.3·10⁻¹⁸). `2ᵏ` is applied as two factors `2^k₁ · 2^k₂`, so results near overflow and in the
/// subnormal range are rounded once, by the last product. Branch-free: loops over it vectorise.
#[inline]
#[must_use]
pub fn exp_f64(x: f64) -> f64 {
    let xc = if x < F64_EXP_HIGH { x } else { F64_EXP_HIGH };
    let xc = if xc > F64_EXP_LOW { xc } else { F64_EXP_LOW };
    // k ∈ [-1076, 1024].
    let big = xc * LOG2E + ROUND_MAGIC;
    let k = big - ROUND_MAGIC;
    // x - k·ln2 as a double-double: `k · LN2_HI` is exact and so is the subtraction (Sterbenz).
    let rh = xc - k * LN2_HI;
    let (r, rc) = two_sum(rh, -(k * LN2_LO));
    // (exp(r) - 1 - r - r²/2) / r³.
    let p = 1.0 / 479_001_600.0 + r * (1.0 / 6_227_020_800.0);
    let p = 1.0 / 39_916_800.0 + r * p;
    let p = 1.0 / 3_628_800.0 + r * p;
    let p = 1.0 / 362_880.0 + r * p;
    let p = 1.0 / 40_320.0 + r * p;
    let p = 1.0 / 5_040.0 + r * p;
    let p = 1.0 / 720.0 + r * p;
    let p = 1.0 / 120.0 + r * p;
    let p = 1.0 / 24.0 + r * p;
    let p = 1.0 / 6.0 + r * p;
    let r2 = r * r;
    // exp(r + rc) ≈ exp(r) + rc·(1 + r).
    let s = (r2 * 0.5 + (r2 * r) * p) + (rc + rc * r);
    let (h, l) = fast_two_sum(1.0, r);
    let e = h + (l + s);
    // 2ᵏ = 2^k₁ · 2^k₂ with k₁ = round(k/2), both in [-538, 512]; `e · 2^k₁` is exact.
    let big1 = k * 0.5 + ROUND_MAGIC;
    let k1 = big1 - ROUND_MAGIC;
    let y = (e * pow2_bits(big1)) * pow2_bits((k - k1) + ROUND_MAGIC);
    if x.is_nan() {
        f64::from_bits(x.to_bits() | F64_QUIET)
    } else {
        y
    }
}

/// `out[i] = exp_f32(x[i])`. Panics if the lengths differ.
pub fn exp_f32_slice(x: &[f32], out: &mut [f32]) {
    super::map_slice(x, out, exp_f32);
}

/// `out[i] = exp_f64(x[i])`. Panics if the lengths differ.
pub fn exp_f64_slice(x: &[f64], out: &mut [f64]) {
    super::map_slice(x, out, exp_f64);
}

/// `exp` of any [`Float`]: [`exp_f32`] for `f32`, [`exp_f64`] for `f64`, `Float::exp` for every
/// other type. The type test is resolved at compile time.
#[inline(always)]
pub fn exp<A: Float + 'static>(x: A) -> A {
    super::dispatch(x, exp_f32, exp_f64, num_traits::Float::exp)
}

/// `v[i] = exp(v[i])` for every element: the slice form of [`exp`], the same bits element by
/// element; for `f32` and `f64` the loop vectorises.
#[inline]
pub fn exp_in_place<A: Float + 'static>(v: &mut [A]) {
    crate::ops::elementwise(|| {
        for x in v {
            *x = exp(*x);
        }
    });
}
