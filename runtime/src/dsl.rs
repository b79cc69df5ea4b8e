//! Small helpers the `graph!` macro's generated code calls (also usable by hand).

use num_traits::Num;

use crate::scalar::Scalar;
use crate::tensor::RawTensor;

/// The constant written `literal` (decimal, optional sign) in the scalar type, parsed directly
/// (so an `f32` constant is rounded once, not via `f64`), or `None` when the scalar type cannot
/// represent it: `0.5` for an integer type, and a value that is not finite in the scalar type
/// (`1e39` overflows `f32` to infinity; `inf` and `NaN` are not constants either).
///
/// ```
/// use exactgrad_runtime::dsl::constant;
/// assert_eq!(constant::<f32>("1.0000000596046448").map(f32::to_bits), Some(0x3f80_0001));
/// assert_eq!(constant::<i64>("-3"), Some(-3));
/// assert_eq!(constant::<i64>("0.5"), None);
/// assert_eq!(constant::<f64>("-0.0").map(f64::to_bits), Some((-0.0f64).to_bits()));
/// assert_eq!(constant::<f32>("1e39"), None);
/// assert_eq!(constant::<f64>("1e39"), Some(1e39));
/// ```
///
/// Types that parse only fractions (`num_rational::Ratio`) get the literal as an exact fraction:
/// `0.25` becomes `25/100`, `3` becomes `3/1`.
pub fn constant<A: Num + Clone>(literal: &str) -> Option<A> {
    A::from_str_radix(literal, 10).ok().or_else(|| A::from_str_radix(&as_fraction(literal)?, 10).ok()).filter(is_finite)
}

/// `v * 0 == 0`: `false` exactly for a NaN or an infinity (`NaN * 0` and `inf * 0` are NaN),
/// `true` for every value of a type without them. Needs only `Num` (and cannot overflow), so it
/// applies to any scalar type the macro's constants are made in.
fn is_finite<A: Num + Clone>(v: &A) -> bool {
    v.clone() * A::zero() == A::zero()
}

/// A decimal literal `[-]digits[.digits][e[±]digits]` as the exact fraction `n/d` (for types such
/// as rationals that parse only that form); `None` for anything else.
fn as_fraction(literal: &str) -> Option<String> {
    let (sign, rest) = match literal.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", literal),
    };
    let (mantissa, exp) = match rest.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = [int, frac].concat();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = i32::try_from(frac.len()).ok()? - exp;
    let zeros = |n: i32| "0".repeat(usize::try_from(n).unwrap_or(0));
    Some(if scale >= 0 {
        format!("{sign}{digits}/1{}", zeros(scale))
    } else {
        format!("{sign}{digits}{}/1", zeros(-scale))
    })
}

/// A constant computed in `f64` (e.g. `0.25 * 4.0`) in the scalar type: integral values as
/// integers, others through their shortest decimal form; `None` when not representable or not
/// finite (in `f64` or in the scalar type).
///
/// ```
/// use exactgrad_runtime::dsl::constant_f64;
/// assert_eq!(constant_f64::<i32>(1.0), Some(1));
/// assert_eq!(constant_f64::<i32>(0.5), None);
/// assert_eq!(constant_f64::<f32>(0.5), Some(0.5));
/// assert_eq!(constant_f64::<f32>(1e39), None);
/// assert_eq!(constant_f64::<f64>(1.0 / 0.0), None);
/// ```
#[must_use]
pub fn constant_f64<A: Num + Clone>(v: f64) -> Option<A> {
    if !v.is_finite() {
        None
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 && !(v == 0.0 && v.is_sign_negative()) {
        constant(&format!("{v:.0}"))
    } else {
        constant(&format!("{v:?}"))
    }
}

/// An infinity of the scalar type (`-∞` when `negative`), for the fill value of `masked_fill` and
/// `causal_mask` written `f64::NEG_INFINITY` or `-f64::INFINITY`: the scalar's own parse of
/// `"inf"`/`"-inf"`, `None` for a type without infinities.
///
/// ```
/// use exactgrad_runtime::dsl::infinity;
/// assert_eq!(infinity::<f32>(true), Some(f32::NEG_INFINITY));
/// assert_eq!(infinity::<f64>(false), Some(f64::INFINITY));
/// assert_eq!(infinity::<i64>(true), None);
/// ```
#[must_use]
pub fn infinity<A: Num + Clone>(negative: bool) -> Option<A> {
    A::from_str_radix(if negative { "-inf" } else { "inf" }, 10).ok()
}

/// The dense VJP pack of an opaque node that returned one gradient per value it read: `zeros` at
/// every position of the prefix, the gradient at each read position, and at a position read
/// several times the gradients added in read order (`(g1 + g2) + …`, first one left).
///
/// ```
/// use exactgrad_runtime::{dsl::opaque_pack, Dims, RawTensor};
/// let ctx = vec![RawTensor::full(Dims::vector(1), 5.0), RawTensor::full(Dims::vector(1), 6.0)];
/// let g = |v| RawTensor::full(Dims::vector(1), v);
/// let pack = opaque_pack(&ctx, &[1, 1], [g(1.0), g(2.0)]);
/// assert_eq!(pack[0].data(), &[0.0]);
/// assert_eq!(pack[1].data(), &[3.0]);
/// ```
pub fn opaque_pack<A: Scalar>(
    ctx: &[RawTensor<A>],
    reads: &[usize],
    grads: impl IntoIterator<Item = RawTensor<A>>,
) -> Vec<RawTensor<A>> {
    let mut out: Vec<Option<RawTensor<A>>> = ctx.iter().map(|_| None).collect();
    for (&p, g) in reads.iter().zip(grads) {
        out[p] = Some(match out[p].take() {
            None => g,
            // A gradient of the wrong shape: keep it, so the pass reports the shape error.
            Some(prev) => prev.add(&g).unwrap_or(g),
        });
    }
    out.into_iter().zip(ctx).map(|(g, t)| g.unwrap_or_else(|| RawTensor::zeros(t.dims()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_literals_become_exact_fractions() {
        assert_eq!(as_fraction("3").as_deref(), Some("3/1"));
        assert_eq!(as_fraction("-0.25").as_deref(), Some("-025/100"));
        assert_eq!(as_fraction("1.5e2").as_deref(), Some("150/1"));
        assert_eq!(as_fraction("2e-3").as_deref(), Some("2/1000"));
        assert_eq!(as_fraction("x"), None);
        assert_eq!(constant::<i64>("0.5"), None);
        assert_eq!(constant::<i64>("3"), Some(3));
    }

    #[test]
    fn constants_that_are_not_finite_in_the_scalar_type_are_refused() {
        assert_eq!(constant::<f32>("1e39"), None);
        assert_eq!(constant::<f32>("-1e39"), None);
        assert_eq!(constant::<f32>("3.4e38"), Some(3.4e38));
        assert_eq!(constant::<f64>("1e309"), None);
        assert_eq!(constant::<f64>("inf"), None);
        assert_eq!(constant::<f64>("NaN"), None);
        assert_eq!(constant::<i64>("0"), Some(0));
        assert_eq!(constant::<i64>("9223372036854775807"), Some(i64::MAX));
        assert_eq!(constant_f64::<f32>(1e39), None);
        assert_eq!(constant_f64::<f64>(f64::NAN), None);
        assert_eq!(constant_f64::<i64>(f64::INFINITY), None);
    }

    #[cfg(feature = "rational")]
    #[test]
    fn rationals_take_decimal_constants_exactly() {
        use num_rational::Ratio;
        assert_eq!(constant::<Ratio<i64>>("0.25"), Some(Ratio::new(1, 4)));
        assert_eq!(constant::<Ratio<i64>>("-3"), Some(Ratio::from_integer(-3)));
        assert_eq!(constant::<Ratio<i64>>("1e-2"), Some(Ratio::new(1, 100)));
    }
}
