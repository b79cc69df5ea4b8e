//! Scalars: what the engine needs ([`Scalar`]) and storage equality ([`Storage`]).
//!
//! The engine only clones scalars, adds them (`a + b`, `a` on the left) and builds a zero. It never
//! assumes a law about `+`: not associativity, not commutativity, not `x + 0 == x`. Ops need more
//! arithmetic and ask for it through `num-traits` bounds on their own constructors.

use core::num::Wrapping;
use core::ops::Add;

/// Storage (bit-level) equality of a scalar's encoding — *not* numeric `==`.
///
/// For floats two values are storage-equal when their bit patterns are identical, so `-0.0` and
/// `+0.0` differ and a NaN equals only a NaN with the same payload. For integers it is `==`.
///
/// A type that cannot decide storage equality (symbolic scalars without interning, intervals,
/// dual numbers, …) sets [`HAS_STORAGE_EQUALITY`](Storage::HAS_STORAGE_EQUALITY) to `false`;
/// every pass then runs the dense reference program for it (SEMANTICS §1).
///
/// ```
/// use exactgrad_runtime::Storage;
/// assert!(!Storage::storage_eq(&-0.0f32, &0.0f32));
/// assert!(Storage::storage_eq(&f64::NAN, &f64::NAN));
/// ```
pub trait Storage {
    /// Whether [`storage_eq`](Storage::storage_eq) decides equality of encodings.
    const HAS_STORAGE_EQUALITY: bool;

    /// `true` when `self` and `other` have the same encoding. Only meaningful when
    /// [`HAS_STORAGE_EQUALITY`](Storage::HAS_STORAGE_EQUALITY) is `true`; the engine never calls it
    /// otherwise.
    fn storage_eq(&self, other: &Self) -> bool;

    /// Whether the value is a NaN (a float's; `false` for every other type): the only values for
    /// which [`pinned_add`](Self::pinned_add) can differ from a plain `+`. A sum whose plain result
    /// is not a NaN had no NaN along the way, so it equals the pinned sum and needs no second pass.
    #[inline]
    fn is_nan(&self) -> bool {
        false
    }

    /// Whether adding zero settles after one step: `pinned_add(0, 0)` is storage-equal to `0`
    /// and, for every `x`, `pinned_add(pinned_add(x, 0), 0)` is storage-equal to
    /// `pinned_add(x, 0)` (`0` the scalar's zero). True for floats (`x + 0` only turns `-0` into
    /// `+0` and quiets a NaN, and does nothing more a second time), integers and rationals. The
    /// generated programs then apply a run of built-in ops' uniforms (all sums of zeros) as one
    /// addition; for a type that says `false` (the default) they add every uniform in order. Both
    /// are the dense sequence of additions; this only decides how much of it must run.
    const ZERO_ADD_IDEMPOTENT: bool = false;

    /// Whether this crate compiled its kernels for the type (`f32`, `f64`): the generic kernel
    /// entries then call [`compiled`](Self::compiled)'s table instead of instantiating their
    /// bodies in the caller's crate ([`crate::compiled`]). Set only by this crate.
    #[doc(hidden)]
    const COMPILED: bool = false;

    /// The kernels this crate compiled for the type; called only when
    /// [`COMPILED`](Self::COMPILED) is `true`. Overridden only by this crate.
    #[doc(hidden)]
    #[must_use]
    fn compiled() -> &'static crate::compiled::Compiled<Self>
    where
        Self: Sized + 'static,
    {
        unimplemented!("only exactgrad-runtime's own scalars have compiled kernels")
    }

    /// Whether `numerator / divisor` panics for this type: Rust's integer division by zero (and,
    /// for the signed primitive integers, `MIN / -1`); a rational's division by zero. `false` by
    /// default and for floats, whose division never panics (`1 / 0` is `inf`). The `div` op checks
    /// it on every pair before dividing, so a zero divisor is an error naming the node
    /// ([`Error::Node`](crate::Error::Node)), not a panic. A scalar type whose `/` can panic
    /// should say so here.
    ///
    /// ```
    /// use exactgrad_runtime::Storage;
    /// use core::num::Wrapping;
    /// assert!(Storage::division_panics(&Wrapping(3i64), &Wrapping(0)));
    /// assert!(!Storage::division_panics(&Wrapping(i64::MIN), &Wrapping(-1)));
    /// assert!(Storage::division_panics(&i64::MIN, &-1));
    /// assert!(!Storage::division_panics(&1.0f64, &0.0));
    /// ```
    #[inline]
    fn division_panics(numerator: &Self, divisor: &Self) -> bool {
        let _ = (numerator, divisor);
        false
    }

    /// The engine's `a + b` (`a` left). For floats it pins the NaN payload of a NaN result: the
    /// left operand's NaN (quieted) if it is one, else the right one's, else the hardware's
    /// default NaN (`inf + -inf`). Rust lets the compiler pick either operand's payload when both
    /// are NaN (and it does pick differently in differently optimised loops), so without this the
    /// same additions in two passes could differ in payload bits. Other types: plain `a + b`.
    #[inline]
    fn pinned_add(a: Self, b: Self) -> Self
    where
        Self: Sized + core::ops::Add<Output = Self>,
    {
        a + b
    }

    /// The engine's `a * b` of two values that may both be NaNs (`a` left), with the NaN rule of
    /// [`pinned_add`](Self::pinned_add): `*` commutes, so the compiler may hand either operand's
    /// payload to the result. Products of a value and a finite constant need no pinning. Other
    /// types: plain `a * b`.
    #[inline]
    fn pinned_mul(a: Self, b: Self) -> Self
    where
        Self: Sized + core::ops::Mul<Output = Self>,
    {
        a * b
    }

    /// The engine's fused multiply-add `a·b + acc` (SEMANTICS §8): the one step of every dot
    /// product of a matrix product (`acc ← mul_add(a_k, b_k, acc)`, `k` ascending from `+0`).
    ///
    /// For `f32` and `f64` it is IEEE 754 fusedMultiplyAdd — the exact `a·b + acc` rounded once
    /// (Rust's `mul_add`: the hardware instruction where there is one, the correctly rounded
    /// library call where not) — with the NaN payload of a NaN result pinned: `acc`'s (quieted) if
    /// it is a NaN, else `a`'s, else `b`'s, else the hardware's default NaN (`0 · ∞`, `∞ - ∞`).
    /// That is the precedence of `pinned_add(acc, pinned_mul(a, b))`, the unfused form.
    ///
    /// Every other type (the default): `pinned_add(acc, pinned_mul(a, b))` — `acc + a·b`, the
    /// accumulated value on the left, which for integers and rationals is exactly `a·b + acc`, and
    /// for `f16`/`bf16` the two-rounding form. A scalar with a fused operation of its own (or a
    /// symbolic scalar that records it as one node) overrides it.
    ///
    /// ```
    /// use exactgrad_runtime::Storage;
    /// // 1 - 2⁻⁶⁰ is not an f64: the unfused product rounds it to 1 first.
    /// let (a, b) = (1.0 + 2f64.powi(-30), 1.0 - 2f64.powi(-30));
    /// assert_eq!(f64::pinned_mul_add(a, b, -1.0), -(2f64.powi(-60)));
    /// assert_eq!(f64::pinned_add(-1.0, f64::pinned_mul(a, b)), 0.0);
    /// assert_eq!(i64::pinned_mul_add(3, 4, 5), 17);
    /// ```
    #[inline]
    fn pinned_mul_add(a: Self, b: Self, acc: Self) -> Self
    where
        Self: Sized + core::ops::Add<Output = Self> + core::ops::Mul<Output = Self>,
    {
        Self::pinned_add(acc, Self::pinned_mul(a, b))
    }
}

/// A scalar the reverse engine can work with: `Clone`, `Add` (left operand first), a zero, and a
/// [`Storage`] declaration.
///
/// `zero` is the value of `zeros(shape)`; for floats it is `+0.0`. A scalar is `Send + Sync`, so
/// tensors, graphs and saved graphs over it can be shared by threads.
pub trait Scalar: Clone + Add<Output = Self> + Storage + Send + Sync + 'static {
    /// The scalar that fills `zeros(shape)`.
    fn zero() -> Self;
}

impl<T: Clone + Add<Output = T> + num_traits::Zero + Storage + Send + Sync + 'static> Scalar for T {
    #[inline]
    fn zero() -> Self {
        <T as num_traits::Zero>::zero()
    }
}

macro_rules! float_storage {
    // `fused`: the type's `mul_add` is IEEE fusedMultiplyAdd (else `pinned_mul_add` is the
    // two-rounding default); `compiled`: this crate's kernel table for it (`crate::compiled`).
    ($($t:ty => $quiet:expr $(, fused, compiled $compiled:ident)?);*) => {$(
        impl Storage for $t {
            const HAS_STORAGE_EQUALITY: bool = true;
            const ZERO_ADD_IDEMPOTENT: bool = true;
            $(
            const COMPILED: bool = true;
            // Not inlined into a caller's crate: the table's entries stay this crate's.
            #[inline(never)]
            fn compiled() -> &'static crate::compiled::Compiled<Self> {
                &crate::compiled::$compiled
            }
            #[inline]
            fn pinned_mul_add(a: Self, b: Self, acc: Self) -> Self {
                let r = a.mul_add(b, acc);
                let r = if b.is_nan() { <$t>::from_bits(b.to_bits() | $quiet) } else { r };
                let r = if a.is_nan() { <$t>::from_bits(a.to_bits() | $quiet) } else { r };
                if acc.is_nan() { <$t>::from_bits(acc.to_bits() | $quiet) } else { r }
            }
            )?
            #[inline]
            fn storage_eq(&self, other: &Self) -> bool {
                self.to_bits() == other.to_bits()
            }
            #[inline]
            fn is_nan(&self) -> bool {
                <$t>::is_nan(*self)
            }
            #[inline]
            fn pinned_add(a: Self, b: Self) -> Self {
                // Two selects, no branch, so loops of additions vectorise: when neither operand
                // is a NaN the hardware sum stands (its NaN for `inf + -inf` included).
                let r = a + b;
                let r = if b.is_nan() { <$t>::from_bits(b.to_bits() | $quiet) } else { r };
                if a.is_nan() { <$t>::from_bits(a.to_bits() | $quiet) } else { r }
            }
            #[inline]
            fn pinned_mul(a: Self, b: Self) -> Self {
                let r = a * b;
                let r = if b.is_nan() { <$t>::from_bits(b.to_bits() | $quiet) } else { r };
                if a.is_nan() { <$t>::from_bits(a.to_bits() | $quiet) } else { r }
            }
        }
    )*};
}
float_storage!(f32 => 0x0040_0000, fused, compiled F32; f64 => 0x0008_0000_0000_0000, fused, compiled F64);

#[cfg(feature = "half")]
float_storage!(half::f16 => 0x0200; half::bf16 => 0x0040);

macro_rules! int_storage {
    ($($t:ty),*) => {$(
        impl Storage for $t {
            const HAS_STORAGE_EQUALITY: bool = true;
            const ZERO_ADD_IDEMPOTENT: bool = true;
            #[inline]
            fn storage_eq(&self, other: &Self) -> bool {
                self == other
            }
            #[inline]
            fn division_panics(numerator: &Self, divisor: &Self) -> bool {
                numerator.checked_div(*divisor).is_none()
            }
        }
        impl Storage for Wrapping<$t> {
            const HAS_STORAGE_EQUALITY: bool = true;
            const ZERO_ADD_IDEMPOTENT: bool = true;
            #[inline]
            fn storage_eq(&self, other: &Self) -> bool {
                self == other
            }
            #[inline]
            fn division_panics(_: &Self, divisor: &Self) -> bool {
                // `Wrapping` divides with `wrapping_div`: only a zero divisor panics.
                divisor.0 == 0
            }
        }
    )*};
}
int_storage!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, isize, usize);

/// Exact rationals (`rational` feature): storage-equal when numerator and denominator are, so a
/// reduced ratio (what every `num-rational` operation returns) is storage-equal exactly to the
/// ratios `==` to it that are also reduced.
///
/// ```
/// # #[cfg(feature = "rational")] {
/// use exactgrad_runtime::Storage;
/// use num_rational::Ratio;
/// assert!(Ratio::new(2i64, 4).storage_eq(&Ratio::new(1, 2)));
/// assert!(!Ratio::new_raw(2i64, 4).storage_eq(&Ratio::new(1, 2)));
/// # }
/// ```
#[cfg(feature = "rational")]
impl<T: Storage + num_traits::Zero> Storage for num_rational::Ratio<T> {
    const HAS_STORAGE_EQUALITY: bool = T::HAS_STORAGE_EQUALITY;
    const ZERO_ADD_IDEMPOTENT: bool = T::ZERO_ADD_IDEMPOTENT;
    #[inline]
    fn storage_eq(&self, other: &Self) -> bool {
        self.numer().storage_eq(other.numer()) && self.denom().storage_eq(other.denom())
    }
    #[inline]
    fn division_panics(_: &Self, divisor: &Self) -> bool {
        divisor.numer().is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_storage_distinguishes_signed_zero_and_payloads() {
        assert!(!(-0.0f64).storage_eq(&0.0));
        assert!((-0.0f64).storage_eq(&-0.0));
        let a = f64::from_bits(0x7ff8_0000_0000_0001);
        let b = f64::from_bits(0x7ff8_0000_0000_0002);
        assert!(a.storage_eq(&a));
        assert!(!a.storage_eq(&b));
        assert!(!f32::from_bits(0x7fc0_0001).storage_eq(&f32::from_bits(0x7fc0_0002)));
    }

    #[test]
    fn integers_use_equality() {
        assert!(3i64.storage_eq(&3));
        assert!(!Wrapping(3i64).storage_eq(&Wrapping(4)));
        assert_eq!(<i32 as Scalar>::zero(), 0);
    }

    #[test]
    fn pinned_add_takes_the_left_nan_quieted() {
        let (n1, n2) = (f32::from_bits(0x7fa0_0001), f32::from_bits(0xffc0_0002));
        assert_eq!(f32::pinned_add(n1, n2).to_bits(), 0x7fe0_0001);
        assert_eq!(f32::pinned_add(n2, n1).to_bits(), 0xffc0_0002);
        assert_eq!(f32::pinned_add(1.0, n2).to_bits(), 0xffc0_0002);
        assert_eq!(f64::pinned_add(-0.0, 0.0).to_bits(), 0);
        assert!(f64::pinned_add(f64::INFINITY, f64::NEG_INFINITY).is_nan());
        assert_eq!(i32::pinned_add(2, 3), 5);
    }

    #[test]
    fn float_zero_is_positive() {
        assert_eq!(<f32 as Scalar>::zero().to_bits(), 0);
    }

    #[cfg(feature = "rational")]
    #[test]
    fn rationals_compare_numerator_and_denominator() {
        use num_rational::Ratio;
        assert!(Ratio::new(3i64, 6).storage_eq(&Ratio::new(1, 2)));
        assert!(!Ratio::new(1i64, 3).storage_eq(&Ratio::new(1, 2)));
        assert!(!Ratio::new_raw(3i64, 6).storage_eq(&Ratio::new(1, 2)));
        assert_eq!(<Ratio<i64> as Scalar>::zero(), Ratio::from_integer(0));
    }

    #[cfg(feature = "half")]
    #[test]
    fn half_storage_is_bitwise() {
        use half::{bf16, f16};
        assert!(!f16::NEG_ZERO.storage_eq(&f16::ZERO));
        assert!(bf16::NAN.storage_eq(&bf16::NAN));
    }
}
