//! `exp` for `f32` and `f64` (see the parent module for accuracy and special values), the generic
//! dispatcher [`exp`] and its slice form [`exp_in_place`].
//!
//! Both kernels write `x = k·ln2 + r` with `k = round(x·log₂e)` (so `|r| ≤ ln2/2`), evaluate
//! `exp(r)` by its Taylor series and multiply by `2ᵏ` built from bits. Inputs are clamped first
//! to a range whose ends already overflow to `+∞` and underflow to `+0`, which also keeps `±∞` and
//! NaN out of the arithmetic (a NaN is put back by the final select).

use num_traits::Float;

use super::{
    fast_two_sum, pow2_bits, round_and_scale, same, two_sum, F32_QUIET, F64_QUIET, LN2_HI, LN2_LO, LOG2E, ROUND_MAGIC,
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

/// `exp(x)` for `f32`, within 1 ulp of `f64` `exp` rounded to `f32` (exhaustively tested; the
/// overflow to `+∞` happens exactly where the reference's does, past `88.72283`): computed in
/// `f64` (Taylor to r⁸/8!, truncation below 2.1·10⁻¹⁰ relative) and rounded once, so subnormal
/// results come from that one rounding. Branch-free: loops over it vectorise.
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    let xd = f64::from(x);
    let xd = if xd < F32_EXP_HIGH { xd } else { F32_EXP_HIGH };
    let xd = if xd > F32_EXP_LOW { xd } else { F32_EXP_LOW };
    // k ∈ [-150, 128]: 2ᵏ is a normal f64.
    let (k, scale) = round_and_scale(xd * LOG2E);
    // |r| ≤ ln2/2 (+ rounding); `k · LN2_HI` and the first subtraction are exact.
    let r = (xd - k * LN2_HI) - k * LN2_LO;
    let p = 1.0 / 5_040.0 + r * (1.0 / 40_320.0);
    let p = 1.0 / 720.0 + r * p;
    let p = 1.0 / 120.0 + r * p;
    let p = 1.0 / 24.0 + r * p;
    let p = 1.0 / 6.0 + r * p;
    let p = 0.5 + r * p;
    let e = 1.0 + (r + (r * r) * p);
    let y = (scale * e) as f32;
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
    assert_eq!(x.len(), out.len(), "exp_f32_slice needs equal lengths");
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp_f32(v);
    }
}

/// `out[i] = exp_f64(x[i])`. Panics if the lengths differ.
pub fn exp_f64_slice(x: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "exp_f64_slice needs equal lengths");
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp_f64(v);
    }
}

/// `exp` of any [`Float`]: [`exp_f32`] for `f32`, [`exp_f64`] for `f64`, `Float::exp` for every
/// other type. The type test is resolved at compile time.
#[inline(always)]
pub fn exp<A: Float + 'static>(x: A) -> A {
    if let Some(v) = same::<A, f32>(&x) {
        if let Some(y) = same::<f32, A>(&exp_f32(v)) {
            return y;
        }
    }
    if let Some(v) = same::<A, f64>(&x) {
        if let Some(y) = same::<f64, A>(&exp_f64(v)) {
            return y;
        }
    }
    x.exp()
}

/// `v[i] = exp(v[i])` for every element: the slice form of [`exp`], the same bits element by
/// element; for `f32` and `f64` the loop vectorises.
#[inline]
pub fn exp_in_place<A: Float + 'static>(v: &mut [A]) {
    for x in v {
        *x = exp(*x);
    }
}
