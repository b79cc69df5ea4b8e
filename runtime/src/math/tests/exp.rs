//! Accuracy and special-value tests of `exp_f32` and `exp_f64` (the exhaustive `f32` check and the
//! 10⁷-sample `f64` check are `#[ignore]`d; see the parent module for the command).

use super::*;

// ---- exp_f32 ----

/// What a sweep of `exp_f32` found.
#[derive(Default)]
struct ExpSweep {
    /// The largest ulp error against `f64` `exp` rounded to `f32`.
    worst: u64,
    /// How many results differ from that reference.
    differ: u64,
    /// How many results are `+0` where the reference is the least subnormal or the other way.
    zero_mismatches: u64,
}

/// Checks `exp_f32` on every `stride`-th bit pattern (starting at `start`) against `f64` `exp`
/// rounded to `f32`: within 1 ulp, `+∞` exactly where the reference overflows, NaNs quieted.
fn sweep_exp_f32(start: u64, stride: u64) -> ExpSweep {
    let mut s = ExpSweep::default();
    let mut b = start;
    while u32::try_from(b).is_ok() {
        let x = f32::from_bits(b as u32);
        let y = exp_f32(x);
        if x.is_nan() {
            assert_eq!(y.to_bits(), x.to_bits() | F32_QUIET, "NaN payload at {b:#010x}");
        } else {
            let r = f64::from(x).exp() as f32;
            let d = ulps_f32(y, r);
            assert!(d <= 1, "exp_f32({x:e}) = {y:e}, reference {r:e}: {d} ulp");
            assert_eq!(y.is_infinite(), r.is_infinite(), "overflow differs at {x:e}: {y:e} vs {r:e}");
            assert!(y >= 0.0 && y.is_sign_positive(), "exp_f32({x:e}) = {y:e}");
            s.worst = s.worst.max(d);
            s.differ += u64::from(d != 0);
            s.zero_mismatches += u64::from((y == 0.0) != (r == 0.0));
        }
        b += stride;
    }
    s
}

#[test]
fn exp_f32_special_values() {
    assert_eq!(exp_f32(0.0).to_bits(), 1.0f32.to_bits());
    assert_eq!(exp_f32(-0.0).to_bits(), 1.0f32.to_bits());
    assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp_f32(f32::NEG_INFINITY).to_bits(), 0);
    assert_eq!(exp_f32(f32::MAX), f32::INFINITY);
    assert_eq!(exp_f32(f32::MIN).to_bits(), 0);
    assert_eq!(exp_f32(89.0), f32::INFINITY);
    assert_eq!(exp_f32(-104.0).to_bits(), 0);
    assert_eq!(exp_f32(1.0), core::f32::consts::E);
    // The overflow threshold: exp(88.72283) < f32::MAX rounds to f32::MAX's neighbourhood, the
    // next f32 overflows (as in correctly rounded `expf`).
    let last = f32::from_bits(0x42b1_7217);
    assert!(exp_f32(last).is_finite());
    assert_eq!(exp_f32(f32::from_bits(0x42b1_7218)), f32::INFINITY);
    for nan in [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0xff80_1234, 0x7fbf_ffff, 0x7fc0_0123] {
        assert_eq!(exp_f32(f32::from_bits(nan)).to_bits(), nan | F32_QUIET, "{nan:#x}");
    }
    // Subnormal inputs give 1; subnormal outputs are rounded once.
    for b in [1u32, 0x007f_ffff, 0x8000_0001, 0x807f_ffff] {
        assert_eq!(exp_f32(f32::from_bits(b)), 1.0);
    }
    for x in [-87.5f32, -100.0, -103.0, -103.9] {
        assert_eq!(exp_f32(x).to_bits(), (f64::from(x).exp() as f32).to_bits(), "{x}");
    }
}

#[test]
fn exp_f32_within_one_ulp_sampled() {
    let s = sweep_exp_f32(13, 97);
    assert!(s.worst <= 1);
    assert_eq!(s.zero_mismatches, 0);
    // Almost always the reference's bits (exhaustively: see `exp_f32_within_one_ulp_exhaustive`).
    assert!(s.differ < (1u64 << 32) / 97 / 10_000, "{} results differ from the reference", s.differ);
}

/// Every one of the 2³² inputs. About half a minute in release.
#[test]
#[ignore = "exhaustive: run with --release -- --ignored"]
fn exp_f32_within_one_ulp_exhaustive() {
    let s = sweep_exp_f32(0, 1);
    println!(
        "exp_f32 exhaustive: max {} ulp, {} of 2^32 results differ from the reference, {} zero/subnormal mismatches",
        s.worst, s.differ, s.zero_mismatches
    );
    assert!(s.worst <= 1);
}

// ---- exp_f64: a double-double reference ----

/// `2ⁿ` for `|n| ≤ 1022`.
fn pow2(n: i32) -> f64 {
    f64::from_bits(((n + 1023) as u64) << 52)
}

/// `exp(x)` as `(k, m)` with `exp(x) = m · 2ᵏ`, `m` a double-double in `[0.7, 1.42]`:
/// `x = k ln2 + r`, `expm1(r/2⁸)` by Taylor, eight doublings `m ↦ m(m + 2)`, then `1 + m`.
fn exp_reference(x: f64) -> (i32, Dd) {
    let k = (x / LN2_DD.0).round();
    let r = Dd(x, 0.0).add(LN2_DD.mul(Dd(-k, 0.0))).scale(1.0 / 256.0);
    let mut term = r;
    let mut sum = r;
    for n in 2..=16 {
        term = term.mul(r).div(Dd(f64::from(n), 0.0));
        sum = sum.add(term);
    }
    for _ in 0..8 {
        sum = sum.mul(sum.add(Dd(2.0, 0.0)));
    }
    (k as i32, sum.add(Dd(1.0, 0.0)))
}

/// The error of `y = exp_f64(x)` against the reference, in ulps of the exact value (subnormal
/// ulps below `2⁻¹⁰²²`), computed on the scaled values `y · 2⁻ᵏ` and `m` (exact scalings).
fn exp_ulp_error(x: f64, y: f64) -> f64 {
    let (k, m) = exp_reference(x);
    let k1 = k / 2;
    let ys = (y * pow2(-k1)) * pow2(-(k - k1));
    let e_true = k + if m.0 < 1.0 { -1 } else { 0 };
    let ulp_exp = (e_true - 52).max(-1074);
    let ulp_scaled = 2f64.powi(ulp_exp - k);
    ((ys - m.0) - m.1).abs() / ulp_scaled
}

/// `n` samples (a quarter uniform on `[-745, 709.7]`, a quarter uniform on `[-30, 30]`, a quarter
/// with a random significand and an exponent in `[2⁻⁶⁰, 2⁵]` and either sign, a quarter in the
/// subnormal range `[-745, -708]`); returns the largest ulp error.
fn sweep_exp_f64(n: usize) -> f64 {
    let mut rng = Mix(0xE49);
    let mut worst = 0.0f64;
    let mut worst_x = 0.0;
    for i in 0..n {
        let x = match i % 4 {
            0 => rng.unit() * 1454.7 - 745.0,
            1 => rng.unit() * 60.0 - 30.0,
            2 => {
                let e = rng.next() % 66;
                let bits = ((1023 - 60 + e) << 52) | (rng.next() >> 12) | (rng.next() & (1 << 63));
                f64::from_bits(bits)
            }
            _ => rng.unit() * -37.0 - 708.0,
        };
        let err = exp_ulp_error(x, exp_f64(x));
        if err > worst {
            worst = err;
            worst_x = x;
        }
    }
    println!("exp_f64: max error {worst:.4} ulp at {worst_x:e} over {n} samples");
    worst
}

#[test]
fn exp_f64_special_values() {
    assert_eq!(exp_f64(0.0).to_bits(), 1.0f64.to_bits());
    assert_eq!(exp_f64(-0.0).to_bits(), 1.0f64.to_bits());
    assert_eq!(exp_f64(f64::INFINITY), f64::INFINITY);
    assert_eq!(exp_f64(f64::NEG_INFINITY).to_bits(), 0);
    assert_eq!(exp_f64(f64::MAX), f64::INFINITY);
    assert_eq!(exp_f64(f64::MIN).to_bits(), 0);
    assert_eq!(exp_f64(710.0), f64::INFINITY);
    assert_eq!(exp_f64(-746.0).to_bits(), 0);
    assert_eq!(exp_f64(1.0), core::f64::consts::E);
    // The overflow threshold: exp(709.782712893384) = 1.797693134862273e308 is finite, the next
    // double overflows.
    let last = 709.782_712_893_384f64;
    assert!(exp_f64(last).is_finite());
    assert_eq!(exp_f64(f64::from_bits(last.to_bits() + 1)), f64::INFINITY);
    // The least subnormal: exp(-744.44) ≈ 2⁻¹⁰⁷⁴; exp(-745.2) rounds to +0.
    assert_eq!(exp_f64(-744.44).to_bits(), 1);
    assert_eq!(exp_f64(-745.2).to_bits(), 0);
    for nan in [0x7ff8_0000_0000_0000u64, 0xfff8_0000_0000_0000, 0x7ff0_0000_0000_0001, 0xfff4_0000_0000_0abc] {
        assert_eq!(exp_f64(f64::from_bits(nan)).to_bits(), nan | F64_QUIET, "{nan:#x}");
    }
    for b in [1u64, 0x000f_ffff_ffff_ffff, 0x8000_0000_0000_0001, 1u64 << 62 >> 9] {
        assert_eq!(exp_f64(f64::from_bits(b)), 1.0, "{:e}", f64::from_bits(b));
    }
}

#[test]
fn exp_f64_reference_agrees_with_known_values() {
    // e = 2.71828182845904523536028747135266249775724709369995...
    let (k, m) = exp_reference(1.0);
    assert_eq!(k, 1);
    assert_eq!(m.0 * 2.0, core::f64::consts::E);
    assert!(exp_ulp_error(1.0, core::f64::consts::E) < 0.5);
    // exp(-1) = 0.36787944117144232159552377016146086744581113103176...
    assert!(exp_ulp_error(-1.0, 0.367_879_441_171_442_33) < 0.5);
}

#[test]
fn exp_f64_within_one_ulp_sampled() {
    assert!(sweep_exp_f64(200_000) <= 1.0);
}

/// 10⁷ samples against the double-double reference.
#[test]
#[ignore = "10^7 samples: run with --release -- --ignored"]
fn exp_f64_within_one_ulp_10m() {
    assert!(sweep_exp_f64(10_000_000) <= 1.0);
}

#[test]
fn exp_slices_and_dispatch_match_the_scalar_kernels() {
    let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 5.0).collect();
    let mut out = vec![0.0; xs.len()];
    exp_f32_slice(&xs, &mut out);
    let mut inplace = xs.clone();
    exp_in_place(&mut inplace);
    for ((&x, &y), &z) in xs.iter().zip(&out).zip(&inplace) {
        assert_eq!(y.to_bits(), exp_f32(x).to_bits());
        assert_eq!(exp(x).to_bits(), y.to_bits());
        assert_eq!(z.to_bits(), y.to_bits());
    }
    let xd: Vec<f64> = xs.iter().map(|&x| f64::from(x) * 7.0).collect();
    let mut od = vec![0.0; xd.len()];
    exp_f64_slice(&xd, &mut od);
    let mut inplace = xd.clone();
    exp_in_place(&mut inplace);
    for ((&x, &y), &z) in xd.iter().zip(&od).zip(&inplace) {
        assert_eq!(y.to_bits(), exp_f64(x).to_bits());
        assert_eq!(exp(x).to_bits(), y.to_bits());
        assert_eq!(z.to_bits(), y.to_bits());
    }
}
