//! The reference's own tensor ([`RefTensor`]: dims and row-major elements in two `Vec`s) and its
//! own scalar rules: the NaN-pinning addition of SEMANTICS §0–§1 ([`plus`]) and the pinned product
//! of the matrix products ([`times`]), written here again rather than taken from
//! `Storage::pinned_add` or the GEMM kernels.

use core::any::Any;

use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// A dense row-major tensor of the reference: its dims and its elements, nothing else.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor<A> {
    /// The size of every axis (rank 0: a scalar).
    pub dims: Vec<usize>,
    /// The elements, row-major; `data.len()` is the product of `dims`.
    pub data: Vec<A>,
}

/// The number of elements of `dims` (1 for a scalar).
pub(crate) fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

impl<A: Clone> RefTensor<A> {
    /// Every element `v`.
    pub fn full(dims: &[usize], v: A) -> Self {
        RefTensor { dims: dims.to_vec(), data: vec![v; numel(dims)] }
    }

    /// Element `i` is `f(i)`.
    pub fn from_fn(dims: &[usize], f: impl FnMut(usize) -> A) -> Self {
        RefTensor { dims: dims.to_vec(), data: (0..numel(dims)).map(f).collect() }
    }

    /// A copy of an engine tensor.
    #[must_use]
    pub fn of_raw(t: &RawTensor<A>) -> Self {
        RefTensor { dims: t.dims().as_slice().to_vec(), data: t.data().to_vec() }
    }

    /// The engine tensor with the same dims and elements.
    ///
    /// # Errors
    /// [`Error::DataLength`] when the dims have a rank the engine cannot hold or do not fit the
    /// elements.
    pub fn to_raw(&self) -> Result<RawTensor<A>, Error> {
        let dims = Dims::new(&self.dims).ok_or(Error::DataLength {
            dims: Dims::scalar(),
            expected: 1,
            actual: self.data.len(),
        })?;
        RawTensor::from_vec(dims, self.data.clone())
    }
}

impl<A: Scalar> RefTensor<A> {
    /// Every element the scalar's zero.
    #[must_use]
    pub fn zeros(dims: &[usize]) -> Self {
        Self::full(dims, A::zero())
    }

    /// Elementwise `self[i] + other[i]` with [`plus`], `self` on the left (same dims assumed).
    #[must_use]
    pub fn plus(&self, other: &Self) -> Self {
        let data = self.data.iter().zip(&other.data).map(|(a, b)| plus(a.clone(), b.clone())).collect();
        RefTensor { dims: self.dims.clone(), data }
    }
}

/// `op` on two `f32`/`f64` (or, with the `half` feature, `f16`/`bf16`) operands with the NaN rule
/// of SEMANTICS §1: the left operand quieted if it is a NaN, else the right one quieted if it is a
/// NaN, else the hardware result. `None` for every other scalar type.
fn pinned<A: Clone + 'static>(a: &A, b: &A, add: bool) -> Option<A> {
    macro_rules! rule {
        ($($t:ty => $quiet:expr),*) => {$(
            if let (Some(&x), Some(&y)) = ((a as &dyn Any).downcast_ref::<$t>(), (b as &dyn Any).downcast_ref::<$t>()) {
                let r: $t = if x.is_nan() {
                    <$t>::from_bits(x.to_bits() | $quiet)
                } else if y.is_nan() {
                    <$t>::from_bits(y.to_bits() | $quiet)
                } else if add {
                    x + y
                } else {
                    x * y
                };
                return (&r as &dyn Any).downcast_ref::<A>().cloned();
            }
        )*};
    }
    rule!(f32 => 0x0040_0000, f64 => 0x0008_0000_0000_0000);
    #[cfg(feature = "half")]
    rule!(half::f16 => 0x0200, half::bf16 => 0x0040);
    None
}

/// The engine's `a + b` (SEMANTICS §0–§1), `a` on the left: for floats the hardware sum with the
/// NaN payload of a NaN result pinned (left operand's NaN quieted, else the right one's), for every
/// other scalar plain `a + b`.
pub fn plus<A: Scalar>(a: A, b: A) -> A {
    match pinned(&a, &b, true) {
        Some(r) => r,
        None => a + b,
    }
}

/// `a * b` with the NaN rule of [`plus`] for the float types (plain `a * b` for the others): `*`
/// commutes, so without it the compiler could hand either NaN operand's payload to the result.
pub(crate) fn pinned_product<A: Clone + 'static + core::ops::Mul<Output = A>>(a: A, b: A) -> A {
    match pinned(&a, &b, false) {
        Some(r) => r,
        None => a * b,
    }
}

/// One step of a matrix product's dot product (SEMANTICS §8), `acc ← mul_add(a, b, acc)`: for
/// `f32` and `f64` the standard library's `mul_add` (IEEE fusedMultiplyAdd, one rounding) with the
/// NaN rule of [`plus`] extended to three operands — `acc`'s NaN quieted if it is one, else `a`'s,
/// else `b`'s, else the hardware result — written here, not taken from the engine; for every
/// other scalar `mul_add(a, b, acc)`, the scalar's own operation (the op's constructor passes
/// [`Storage::pinned_mul_add`](crate::Storage::pinned_mul_add)).
///
/// ```
/// use exactgrad_runtime::reference::fused;
/// use exactgrad_runtime::Storage;
/// let (a, b) = (1.0 + 2f64.powi(-30), 1.0 - 2f64.powi(-30));
/// assert_eq!(fused(a, b, -1.0, f64::pinned_mul_add), -(2f64.powi(-60)));
/// assert_eq!(fused(3i64, 4, 5, |a, b, c| a * b + c), 17);
/// ```
pub fn fused<A: Scalar>(a: A, b: A, acc: A, mul_add: fn(A, A, A) -> A) -> A {
    macro_rules! rule {
        ($($t:ty => $quiet:expr),*) => {$(
            let any = |v: &A| (v as &dyn Any).downcast_ref::<$t>().copied();
            if let (Some(x), Some(y), Some(z)) = (any(&a), any(&b), any(&acc)) {
                let quiet = |v: $t| <$t>::from_bits(v.to_bits() | $quiet);
                let r: $t = if z.is_nan() {
                    quiet(z)
                } else if x.is_nan() {
                    quiet(x)
                } else if y.is_nan() {
                    quiet(y)
                } else {
                    x.mul_add(y, z)
                };
                if let Some(r) = (&r as &dyn Any).downcast_ref::<A>() {
                    return r.clone();
                }
            }
        )*};
    }
    rule!(f32 => 0x0040_0000, f64 => 0x0008_0000_0000_0000);
    mul_add(a, b, acc)
}

/// `(outer, n, inner)`: the sizes before, at and after `axis` (which must be below the rank).
pub(crate) fn around(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (numel(&dims[..axis]), dims[axis], numel(&dims[axis + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_pins_the_left_nan_then_the_right_one() {
        let (n1, n2) = (f32::from_bits(0x7fa0_0001), f32::from_bits(0xffc0_0002));
        assert_eq!(plus(n1, n2).to_bits(), 0x7fe0_0001);
        assert_eq!(plus(1.0, n2).to_bits(), 0xffc0_0002);
        assert_eq!(plus(-0.0f64, 0.0).to_bits(), 0);
        assert_eq!(plus(2i32, 3), 5);
    }

    /// The fused step's NaN precedence: the accumulator, then the left factor, then the right one
    /// (each quieted); `0 · ∞` alone gives the hardware's default NaN; other scalars call theirs.
    #[test]
    fn fused_pins_the_accumulator_then_the_factors() {
        let (n1, n2, n3) = (
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff0_0000_0000_0002),
            f64::from_bits(0x7ff8_0000_0000_0003),
        );
        let unused = |_: f64, _: f64, _: f64| -> f64 { unreachable!("f64 takes the reference's own rule") };
        assert_eq!(fused(n1, n2, n3, unused).to_bits(), 0x7ff8_0000_0000_0003);
        assert_eq!(fused(n1, n2, 1.0, unused).to_bits(), 0x7ff8_0000_0000_0001);
        assert_eq!(fused(2.0, n2, 1.0, unused).to_bits(), 0xfff8_0000_0000_0002);
        assert!(fused(0.0, f64::INFINITY, 1.0, unused).is_nan());
        assert_eq!(fused(2.0f32, 3.0, 1.0, |_, _, _| unreachable!()), 7.0);
        assert_eq!(fused(3i64, 4, 5, |a, b, c| a * b + c), 17);
    }
}
