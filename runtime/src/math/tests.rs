//! Accuracy and special-value tests of the `math` kernels.
//!
//! The exhaustive `f32` checks and the 10⁷-sample `f64` checks of `tanh` (here) and `exp`
//! (`tests/exp.rs`) are `#[ignore]`d (in release, about a minute each for `tanh`, 85 s for the
//! exhaustive `exp_f32` one, 40 s for `exp_f64`):
//!
//! ```text
//! CARGO_TARGET_DIR=… cargo test -p exactgrad-runtime --release math::tests -- --ignored --nocapture
//! ```

use super::*;

/// Distance in ulps between two finite `f32`s (0 when equal bits), via the monotone integer
/// order of their encodings.
fn ulps_f32(a: f32, b: f32) -> u64 {
    let key = |v: f32| {
        let b = v.to_bits() as i32;
        i64::from(if b < 0 { i32::MIN - b } else { b })
    };
    (key(a) - key(b)).unsigned_abs()
}

/// The reference: `f64` `tanh` (error below 1 ulp of `f64`) rounded to `f32`.
fn reference_f32(x: f32) -> f32 {
    f64::from(x).tanh() as f32
}

/// Checks `tanh_f32` on every `stride`-th bit pattern (starting at `start`); returns the largest
/// ulp error and how many results differ from the reference.
fn sweep_f32(start: u64, stride: u64) -> (u64, u64) {
    let (mut worst, mut differ) = (0u64, 0u64);
    let mut b = start;
    while u32::try_from(b).is_ok() {
        let x = f32::from_bits(b as u32);
        let y = tanh_f32(x);
        if x.is_nan() {
            assert_eq!(y.to_bits(), x.to_bits() | F32_QUIET, "NaN payload at {b:#010x}");
        } else {
            let r = reference_f32(x);
            let d = ulps_f32(y, r);
            assert!(d <= 1, "tanh_f32({x:e}) = {y:e}, reference {r:e}: {d} ulp");
            worst = worst.max(d);
            differ += u64::from(d != 0);
        }
        b += stride;
    }
    (worst, differ)
}

#[test]
fn tanh_f32_special_values() {
    assert_eq!(tanh_f32(0.0).to_bits(), 0);
    assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanh_f32(f32::MAX), 1.0);
    assert_eq!(tanh_f32(-f32::MAX), -1.0);
    for nan in [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0xff80_1234, 0x7fbf_ffff, 0x7fc0_0123] {
        assert_eq!(tanh_f32(f32::from_bits(nan)).to_bits(), nan | F32_QUIET, "{nan:#x}");
    }
    // Subnormals and the smallest normals: tanh(x) = x.
    for b in (1u32..0x0080_0000).step_by(4099).chain([1, 0x007f_ffff, 0x0080_0000, 0x0080_0001]) {
        for x in [f32::from_bits(b), -f32::from_bits(b)] {
            assert_eq!(tanh_f32(x).to_bits(), x.to_bits(), "{x:e}");
        }
    }
    // Odd symmetry, bit for bit.
    for b in (0u32..0x7f80_0000).step_by(65_537) {
        let x = f32::from_bits(b);
        assert_eq!(tanh_f32(-x).to_bits(), (-tanh_f32(x)).to_bits());
    }
}

#[test]
fn tanh_f32_within_one_ulp_sampled() {
    let (worst, differ) = sweep_f32(0, 97);
    assert!(worst <= 1);
    // Almost always correctly rounded (exhaustively: 37 186 of 2³² differ from the reference).
    assert!(differ < (1u64 << 32) / 97 / 50_000, "{differ} results differ from the reference");
}

/// Every one of the 2³² inputs. About a minute in release.
#[test]
#[ignore = "exhaustive: run with --release -- --ignored"]
fn tanh_f32_within_one_ulp_exhaustive() {
    let (worst, differ) = sweep_f32(0, 1);
    println!("tanh_f32 exhaustive: max {worst} ulp, {differ} of 2^32 results differ from the reference");
    assert!(worst <= 1);
}

// ---- f64: a double-double reference ----

/// A double-double `h + l`, `|l| ≤ ulp(h)/2`.
#[derive(Clone, Copy, Debug)]
struct Dd(f64, f64);

impl Dd {
    fn add(self, o: Dd) -> Dd {
        let (s, e) = two_sum(self.0, o.0);
        let (t, f) = two_sum(self.1, o.1);
        let (s, e) = fast_two_sum(s, e + t);
        let (s, e) = fast_two_sum(s, e + f);
        Dd(s, e)
    }
    fn mul(self, o: Dd) -> Dd {
        let (p, e) = two_prod(self.0, o.0);
        let (p, e) = fast_two_sum(p, e + (self.0 * o.1 + self.1 * o.0));
        Dd(p, e)
    }
    fn div(self, o: Dd) -> Dd {
        let q1 = self.0 / o.0;
        let r = self.add(o.mul(Dd(-q1, 0.0)));
        let q2 = r.0 / o.0;
        let r = r.add(o.mul(Dd(-q2, 0.0)));
        let q3 = r.0 / o.0;
        let (q, e) = fast_two_sum(q1, q2);
        Dd(q, e).add(Dd(q3, 0.0))
    }
    fn scale(self, s: f64) -> Dd {
        Dd(self.0 * s, self.1 * s)
    }
}

/// `ln 2` as a double-double.
const LN2_DD: Dd = Dd(f64::from_bits(0x3FE6_2E42_FEFA_39EF), f64::from_bits(0x3C7A_BC9E_3B39_803F));

/// `expm1(y)` for `0 ≤ y ≤ 60` in double-double: `y = k ln2 + r`, `r/2⁸` by Taylor, then eight
/// doublings `m ↦ m(m + 2)`, then `2ᵏ(1 + m) - 1`.
fn expm1_reference(y: f64) -> Dd {
    let k = (y / LN2_DD.0).round();
    let r = Dd(y, 0.0).add(LN2_DD.mul(Dd(-k, 0.0))).scale(1.0 / 256.0);
    let mut term = r;
    let mut sum = r;
    for n in 2..=16 {
        term = term.mul(r).div(Dd(f64::from(n), 0.0));
        sum = sum.add(term);
    }
    for _ in 0..8 {
        sum = sum.mul(sum.add(Dd(2.0, 0.0)));
    }
    let p = 2f64.powi(k as i32);
    sum.scale(p).add(Dd(p - 1.0, 0.0))
}

/// `tanh(x)` for finite `x ≥ 0` in double-double.
fn tanh_reference(x: f64) -> Dd {
    if x > 30.0 {
        return Dd(1.0, 0.0);
    }
    let e = expm1_reference(x + x);
    e.div(e.add(Dd(2.0, 0.0)))
}

/// The error of `y` against the double-double `r` in ulps of `r`.
fn ulp_error_f64(y: f64, r: Dd) -> f64 {
    let ulp = if r.0 == 0.0 {
        f64::from_bits(1)
    } else {
        let e = (r.0.abs().to_bits() >> 52) as i32 - 1023;
        2f64.powi((e - 52).max(-1074))
    };
    ((y - r.0) - r.1).abs() / ulp
}

/// A deterministic generator (splitmix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` samples (a third uniform on `[-20, 20]`, a third uniform on `[-1, 1]`, a third with a
/// random significand and an exponent in `[2⁻⁶⁰, 2⁵]`); returns the largest ulp error.
fn sweep_f64(n: usize) -> f64 {
    let mut rng = Mix(0x5EED);
    let mut worst = 0.0f64;
    let mut worst_x = 0.0;
    for i in 0..n {
        let x = match i % 3 {
            0 => rng.unit() * 40.0 - 20.0,
            1 => rng.unit() * 2.0 - 1.0,
            _ => {
                let e = rng.next() % 66;
                let bits = ((1023 - 60 + e) << 52) | (rng.next() >> 12) | (rng.next() & (1 << 63));
                f64::from_bits(bits)
            }
        };
        let y = tanh_f64(x);
        let r = tanh_reference(x.abs());
        let err = ulp_error_f64(y.abs(), r);
        assert_eq!(y.is_sign_negative(), x.is_sign_negative(), "sign at {x:e}");
        if err > worst {
            worst = err;
            worst_x = x;
        }
    }
    println!("tanh_f64: max error {worst:.4} ulp at {worst_x:e} over {n} samples");
    worst
}

#[test]
fn tanh_f64_special_values() {
    assert_eq!(tanh_f64(0.0).to_bits(), 0);
    assert_eq!(tanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(tanh_f64(f64::INFINITY), 1.0);
    assert_eq!(tanh_f64(f64::NEG_INFINITY), -1.0);
    assert_eq!(tanh_f64(f64::MAX), 1.0);
    assert_eq!(tanh_f64(-30.0), -1.0);
    for nan in [0x7ff8_0000_0000_0000u64, 0xfff8_0000_0000_0000, 0x7ff0_0000_0000_0001, 0xfff4_0000_0000_0abc] {
        assert_eq!(tanh_f64(f64::from_bits(nan)).to_bits(), nan | F64_QUIET, "{nan:#x}");
    }
    for b in [1u64, 2, 3, 0x000f_ffff_ffff_ffff, 0x0010_0000_0000_0000, 0x0000_1234_5678_9abc] {
        for x in [f64::from_bits(b), -f64::from_bits(b)] {
            assert_eq!(tanh_f64(x).to_bits(), x.to_bits(), "{x:e}");
        }
    }
    // Tiny normals: tanh(x) = x too (x³/3 is far below half an ulp).
    for x in [1e-300, 1e-200, 1e-100, 1e-20, 1e-9] {
        assert_eq!(tanh_f64(x), x);
    }
}

#[test]
fn tanh_f64_reference_agrees_with_known_values() {
    // tanh(1) = 0.76159415595576488811945828260479359041276859725793655...
    let r = tanh_reference(1.0);
    assert_eq!(r.0, 0.761_594_155_955_764_9);
    assert!(ulp_error_f64(0.761_594_155_955_764_9, r) < 0.5);
    // tanh(0.5) = 0.46211715726000975850231848364367254873028928033011...
    assert!(ulp_error_f64(0.462_117_157_260_009_76, tanh_reference(0.5)) < 0.5);
}

#[test]
fn tanh_f64_within_one_ulp_sampled() {
    assert!(sweep_f64(300_000) <= 1.0);
}

/// 10⁷ samples against the double-double reference.
#[test]
#[ignore = "10^7 samples: run with --release -- --ignored"]
fn tanh_f64_within_one_ulp_10m() {
    assert!(sweep_f64(10_000_000) <= 1.0);
}

#[test]
fn slices_and_dispatch_match_the_scalar_kernels() {
    let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 37.0).collect();
    let mut out = vec![0.0; xs.len()];
    tanh_f32_slice(&xs, &mut out);
    for (&x, &y) in xs.iter().zip(&out) {
        assert_eq!(y.to_bits(), tanh_f32(x).to_bits());
        assert_eq!(tanh(x).to_bits(), y.to_bits());
    }
    let xd: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
    let mut od = vec![0.0; xd.len()];
    tanh_f64_slice(&xd, &mut od);
    for (&x, &y) in xd.iter().zip(&od) {
        assert_eq!(y.to_bits(), tanh_f64(x).to_bits());
        assert_eq!(tanh(x).to_bits(), y.to_bits());
    }
}

mod exp;
