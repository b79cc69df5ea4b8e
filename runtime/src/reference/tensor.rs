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

/// A product of a matrix product (SEMANTICS §8): `mul(a, b)` with the same NaN rule as [`plus`] for
/// `f32` and `f64`, plain `mul(a, b)` for every other scalar.
pub fn times<A: Scalar>(a: A, b: A, mul: fn(A, A) -> A) -> A {
    let float = (&a as &dyn Any).is::<f32>() || (&a as &dyn Any).is::<f64>();
    match float.then(|| pinned(&a, &b, false)).flatten() {
        Some(r) => r,
        None => mul(a, b),
    }
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
        let m = f64::from_bits(0x7ff0_0000_0000_0001);
        assert_eq!(times(2.0, m, |a, b| a * b).to_bits(), 0x7ff8_0000_0000_0001);
        assert_eq!(times(3i64, 4, |a, b| a * b), 12);
    }
}
