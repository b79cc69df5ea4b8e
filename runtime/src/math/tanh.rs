//! `tanh` for `f32` and `f64` (see the parent module for accuracy and special values).

use num_traits::Float;

use super::{fast_two_sum, round_and_scale, two_prod, two_sum, F32_QUIET, F64_QUIET, LN2_HI, LN2_LO, LOG2E};

/// Past this `|x|`, `tanh(x)` rounds to `1` in `f32` (`1 - tanh(9.1) < 2⁻²⁵`); inputs are
/// clamped to it, which also keeps `∞` out of the arithmetic.
const F32_SATURATION: f64 = 9.5;
/// Past this `|x|`, `tanh(x)` rounds to `1` in `f64` (`1 - tanh(19.1) < 2⁻⁵⁴`).
const F64_SATURATION: f64 = 22.0;

/// `expm1(y)` for `0 ≤ y ≤ 2 · F32_SATURATION`, relative error below 2⁻³⁰.
#[inline(always)]
fn expm1_for_f32(y: f64) -> f64 {
    let (k, scale) = round_and_scale(y * LOG2E);
    // |r| ≤ ln2/2 (+ rounding).
    let r = (y - k * LN2_HI) - k * LN2_LO;
    // expm1(r), Taylor to r⁸/8! (truncation < 6e-10 · |r|, a hundredth of an f32 ulp).
    let p = 1.0 / 5_040.0 + r * (1.0 / 40_320.0);
    let p = 1.0 / 720.0 + r * p;
    let p = 1.0 / 120.0 + r * p;
    let p = 1.0 / 24.0 + r * p;
    let p = 1.0 / 6.0 + r * p;
    let p = 0.5 + r * p;
    let e = r + (r * r) * p;
    // 2ᵏ(1 + e) - 1, with 2ᵏ - 1 exact; no cancellation (e > -0.3, 2ᵏ - 1 ≥ 2ᵏ⁻¹ when k ≥ 1).
    scale * e + (scale - 1.0)
}

/// `tanh(x)` for `f32`, within 1 ulp of the correctly rounded value (exhaustively tested); see
/// the module docs for special values. Branch-free: loops over it vectorise.
#[inline]
#[must_use]
pub fn tanh_f32(x: f32) -> f32 {
    let bits = x.to_bits();
    let a = f64::from(f32::from_bits(bits & 0x7FFF_FFFF));
    // `!(a < S)` also sends a NaN to the clamp; it is replaced at the end.
    let a = if a < F32_SATURATION { a } else { F32_SATURATION };
    let e = expm1_for_f32(a + a);
    let t = (e / (e + 2.0)) as f32;
    let y = f32::from_bits(t.to_bits() | (bits & 0x8000_0000));
    if x.is_nan() {
        f32::from_bits(bits | F32_QUIET)
    } else {
        y
    }
}

/// `expm1(y)` for `0 ≤ y ≤ 2 · F64_SATURATION` as a double-double `(h, l)`, `h = fl(h + l)`,
/// relative error about 2⁻⁵⁵.
#[inline(always)]
fn expm1_dd(y: f64) -> (f64, f64) {
    let (k, scale) = round_and_scale(y * LOG2E);
    // y - k·ln2 as a double-double: `k · LN2_HI` is exact and so is the subtraction (Sterbenz).
    let rh = y - k * LN2_HI;
    let (r, rc) = two_sum(rh, -(k * LN2_LO));
    // expm1(r) - r - r²/2, Taylor to r¹³/13! (truncation < 1.3e-17 · |r|).
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
    // expm1(r + rc) ≈ expm1(r) + rc·(1 + r).
    let s = (r2 * 0.5 + (r2 * r) * p) + (rc + rc * r);
    let (eh, el) = fast_two_sum(r, s);
    // 2ᵏ(1 + e) - 1 = (2ᵏ - 1) + 2ᵏ·e; `2ᵏ - 1` is exact for k ≤ 53, and for larger k its
    // rounding is below 2⁻⁵³ of the result.
    let (h, l) = two_sum(scale - 1.0, scale * eh);
    fast_two_sum(h, l + scale * el)
}

/// `tanh(x)` for `f64`, within 1 ulp of the exact value on the tested samples; see the module
/// docs for special values. Branch-free: loops over it vectorise.
#[inline]
#[must_use]
pub fn tanh_f64(x: f64) -> f64 {
    let bits = x.to_bits();
    let a = f64::from_bits(bits & 0x7FFF_FFFF_FFFF_FFFF);
    let a = if a < F64_SATURATION { a } else { F64_SATURATION };
    let (eh, el) = expm1_dd(a + a);
    // tanh = e / (e + 2) with e = eh + el: one quotient, corrected once by its exact residual.
    let (dh, dl) = two_sum(eh, 2.0);
    let dl = dl + el;
    let q = eh / dh;
    let (p, pe) = two_prod(q, dh);
    let residual = (((eh - p) - pe) + el) - q * dl;
    let t = q + residual / dh;
    let y = f64::from_bits(t.to_bits() | (bits & 0x8000_0000_0000_0000));
    if x.is_nan() {
        f64::from_bits(bits | F64_QUIET)
    } else {
        y
    }
}

/// `out[i] = tanh_f32(x[i])`. Panics if the lengths differ.
pub fn tanh_f32_slice(x: &[f32], out: &mut [f32]) {
    super::map_slice(x, out, tanh_f32);
}

/// `out[i] = tanh_f64(x[i])`. Panics if the lengths differ.
pub fn tanh_f64_slice(x: &[f64], out: &mut [f64]) {
    super::map_slice(x, out, tanh_f64);
}

/// `tanh` of any [`Float`]: [`tanh_f32`] for `f32`, [`tanh_f64`] for `f64`, `Float::tanh` for
/// every other type. The type test is resolved at compile time.
#[inline(always)]
pub fn tanh<A: Float + 'static>(x: A) -> A {
    super::dispatch(x, tanh_f32, tanh_f64, num_traits::Float::tanh)
}
