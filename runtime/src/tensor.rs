//! Dense row-major tensors: the untyped [`RawTensor`] the engine works on, and the typed
//! [`Tensor`] wrapper whose shape is a type.

use core::fmt;
use core::marker::PhantomData;

use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{Dims, Shape};

/// An untyped, dense, row-major tensor: runtime [`Dims`] and a `Vec` of elements.
#[derive(Clone, PartialEq)]
pub struct RawTensor<A> {
    dims: Dims,
    data: Vec<A>,
}

impl<A> RawTensor<A> {
    /// A tensor from its dims and row-major data.
    ///
    /// # Errors
    /// [`Error::DataLength`] when `data.len()` is not the number of elements of `dims`.
    ///
    /// ```
    /// use exactgrad_runtime::{Dims, RawTensor};
    /// let t = RawTensor::from_vec(Dims::matrix(2, 2), vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    /// assert_eq!(t.data()[3], 4.0);
    /// let e = RawTensor::from_vec(Dims::matrix(2, 2), vec![1.0]).unwrap_err();
    /// assert_eq!(e.to_string(), "a tensor of shape [2, 2] needs 4 elements, got 1");
    /// ```
    ///
    /// [`Error::ShapeOverflow`] when the element count of `dims` overflows `usize`.
    pub fn from_vec(dims: Dims, data: Vec<A>) -> Result<Self, Error> {
        let expected = count(dims)?;
        if data.len() != expected {
            return Err(Error::DataLength { dims, expected, actual: data.len() });
        }
        Ok(RawTensor { dims, data })
    }

    /// A tensor whose element `i` is `f(i)`.
    ///
    /// # Panics
    /// When the element count of `dims` overflows `usize`; [`try_from_fn`](Self::try_from_fn)
    /// returns an error instead.
    pub fn from_fn(dims: Dims, f: impl FnMut(usize) -> A) -> Self {
        RawTensor { dims, data: (0..dims.numel()).map(f).collect() }
    }

    /// [`from_fn`](Self::from_fn), or an error for dims whose element count overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    ///
    /// ```
    /// use exactgrad_runtime::{Dims, RawTensor};
    /// let e = RawTensor::try_from_fn(Dims::matrix(usize::MAX, 2), |i| i).unwrap_err();
    /// assert_eq!(e.to_string(), format!("a tensor has shape [{}, 2], whose element count overflows usize", usize::MAX));
    /// ```
    pub fn try_from_fn(dims: Dims, f: impl FnMut(usize) -> A) -> Result<Self, Error> {
        Ok(RawTensor { dims, data: (0..count(dims)?).map(f).collect() })
    }

    /// Builds a tensor from a buffer the caller has already filled with exactly `numel` elements.
    pub(crate) fn from_parts(dims: Dims, data: Vec<A>) -> Self {
        debug_assert_eq!(data.len(), dims.numel());
        RawTensor { dims, data }
    }

    /// A tensor of `dims` holding no buffer: a place a program's plan has not filled yet or has
    /// given back (never read while vacant).
    pub(crate) fn vacant(dims: Dims) -> Self {
        RawTensor { dims, data: Vec::new() }
    }

    /// Moves the elements out, leaving an empty buffer (the engine's in-place reuse of a
    /// contribution; the tensor is not read again).
    pub(crate) fn take_data(&mut self) -> Vec<A> {
        core::mem::take(&mut self.data)
    }

    /// The dims.
    #[must_use]
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// The elements, row-major.
    #[must_use]
    pub fn data(&self) -> &[A] {
        &self.data
    }

    /// The elements, row-major, mutably (the shape cannot change).
    pub fn data_mut(&mut self) -> &mut [A] {
        &mut self.data
    }

    /// The elements, consuming the tensor.
    #[must_use]
    pub fn into_vec(self) -> Vec<A> {
        self.data
    }

    /// Number of elements.
    #[must_use]
    pub fn numel(&self) -> usize {
        self.data.len()
    }
}

/// The element count of `dims`, or [`Error::ShapeOverflow`].
fn count(dims: Dims) -> Result<usize, Error> {
    dims.checked_numel().ok_or_else(|| Error::ShapeOverflow { what: "a tensor".to_owned(), dims })
}

impl<A: Clone> RawTensor<A> {
    /// `full(dims, v)`: every element `v`.
    ///
    /// # Panics
    /// When the element count of `dims` overflows `usize`; [`try_full`](Self::try_full) returns an
    /// error instead.
    pub fn full(dims: Dims, v: A) -> Self {
        RawTensor { dims, data: vec![v; dims.numel()] }
    }

    /// [`full`](Self::full), or an error for dims whose element count overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    pub fn try_full(dims: Dims, v: A) -> Result<Self, Error> {
        Ok(RawTensor { dims, data: vec![v; count(dims)?] })
    }

    /// The same dims with `f` applied to every element.
    pub fn map<B>(&self, f: impl FnMut(&A) -> B) -> RawTensor<B> {
        RawTensor { dims: self.dims, data: self.data.iter().map(f).collect() }
    }
}

impl<A: Scalar> RawTensor<A> {
    /// `zeros(dims)` = `full(dims, 0)`.
    ///
    /// # Panics
    /// As [`full`](Self::full); [`try_zeros`](Self::try_zeros) returns an error instead.
    #[must_use]
    pub fn zeros(dims: Dims) -> Self {
        Self::full(dims, A::zero())
    }

    /// [`zeros`](Self::zeros), or an error for dims whose element count overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    pub fn try_zeros(dims: Dims) -> Result<Self, Error> {
        Self::try_full(dims, A::zero())
    }

    /// Elementwise `self[i] + other[i]`, `self` on the left.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the dims differ (`expected` is `self`'s).
    pub fn add(&self, other: &Self) -> Result<Self, Error> {
        self.same_dims(other)?;
        Ok(RawTensor {
            dims: self.dims,
            data: self.data.iter().zip(&other.data).map(|(a, b)| A::pinned_add(a.clone(), b.clone())).collect(),
        })
    }

    /// In place: `self[i] = self[i] + other[i]`, `self` on the left.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the dims differ (`expected` is `self`'s); `self` is unchanged.
    pub fn add_assign(&mut self, other: &Self) -> Result<(), Error> {
        self.same_dims(other)?;
        for (a, b) in self.data.iter_mut().zip(&other.data) {
            *a = A::pinned_add(a.clone(), b.clone());
        }
        Ok(())
    }

    fn same_dims(&self, other: &Self) -> Result<(), Error> {
        if self.dims != other.dims {
            return Err(Error::ShapeMismatch { expected: self.dims, actual: other.dims });
        }
        Ok(())
    }

    /// Storage equality of every element (same dims, same encodings).
    #[must_use]
    pub fn storage_eq(&self, other: &Self) -> bool {
        self.dims == other.dims && self.data.iter().zip(&other.data).all(|(a, b)| a.storage_eq(b))
    }
}

impl<A: fmt::Debug> fmt::Debug for RawTensor<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawTensor{} {:?}", self.dims, self.data)
    }
}

/// A tensor whose shape is the type `S` (a [`Shape`]): a typed wrapper over [`RawTensor`].
///
/// ```
/// use exactgrad_runtime::{Tensor, typenum::{U2, U3}};
/// let t = Tensor::<f32, (U2, U3)>::from_vec(vec![0.0; 6]).unwrap();
/// assert_eq!(t.raw().dims().as_slice(), &[2, 3]);
/// let err = Tensor::<f32, (U2, U3)>::from_vec(vec![0.0; 5]).unwrap_err();
/// assert_eq!(err.to_string(), "a tensor of shape [2, 3] needs 6 elements, got 5");
/// ```
pub struct Tensor<A, S> {
    raw: RawTensor<A>,
    shape: PhantomData<fn() -> S>,
}

impl<A, S: Shape> Tensor<A, S> {
    /// A tensor of shape `S` from row-major data.
    ///
    /// # Errors
    /// [`Error::DataLength`] naming the expected and actual sizes; [`Error::ShapeOverflow`] for a
    /// shape whose element count overflows `usize`.
    pub fn from_vec(data: Vec<A>) -> Result<Self, Error> {
        RawTensor::from_vec(S::dims(), data).map(|raw| Tensor { raw, shape: PhantomData })
    }

    /// Wraps an untyped tensor after checking its dims are `S`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the dims differ.
    pub fn try_from_raw(raw: RawTensor<A>) -> Result<Self, Error> {
        if raw.dims() != S::dims() {
            return Err(Error::ShapeMismatch { expected: S::dims(), actual: raw.dims() });
        }
        Ok(Tensor { raw, shape: PhantomData })
    }

    /// Wraps `raw`, whose dims the caller made `S::dims()` (the typed layer over a routine
    /// generic over the scalar only, e.g. `Init`'s samplers).
    pub(crate) fn from_raw_unchecked(raw: RawTensor<A>) -> Self {
        debug_assert!(raw.dims() == S::dims());
        Tensor { raw, shape: PhantomData }
    }

    /// A tensor whose element `i` (row-major) is `f(i)`.
    ///
    /// # Panics
    /// When the element count of `S` overflows `usize`; [`try_from_fn`](Self::try_from_fn) returns
    /// an error instead.
    pub fn from_fn(f: impl FnMut(usize) -> A) -> Self {
        Tensor { raw: RawTensor::from_fn(S::dims(), f), shape: PhantomData }
    }

    /// [`from_fn`](Self::from_fn), or an error when the element count of `S` overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    pub fn try_from_fn(f: impl FnMut(usize) -> A) -> Result<Self, Error> {
        Ok(Tensor { raw: RawTensor::try_from_fn(S::dims(), f)?, shape: PhantomData })
    }

    /// The untyped tensor.
    #[must_use]
    pub fn raw(&self) -> &RawTensor<A> {
        &self.raw
    }

    /// The untyped tensor, consuming the wrapper.
    #[must_use]
    pub fn into_raw(self) -> RawTensor<A> {
        self.raw
    }

    /// The elements, row-major.
    #[must_use]
    pub fn data(&self) -> &[A] {
        self.raw.data()
    }
}

impl<A: Clone, S: Shape> Tensor<A, S> {
    /// Every element `v`.
    ///
    /// # Panics
    /// When the element count of `S` overflows `usize`; [`try_full`](Self::try_full) returns an
    /// error instead.
    pub fn full(v: A) -> Self {
        Tensor { raw: RawTensor::full(S::dims(), v), shape: PhantomData }
    }

    /// [`full`](Self::full), or an error when the element count of `S` overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    pub fn try_full(v: A) -> Result<Self, Error> {
        Ok(Tensor { raw: RawTensor::try_full(S::dims(), v)?, shape: PhantomData })
    }
}

impl<A: Scalar, S: Shape> Tensor<A, S> {
    /// Every element zero.
    ///
    /// # Panics
    /// As [`full`](Self::full); [`try_zeros`](Self::try_zeros) returns an error instead.
    #[must_use]
    pub fn zeros() -> Self {
        Self::full(A::zero())
    }

    /// [`zeros`](Self::zeros), or an error when the element count of `S` overflows `usize`.
    ///
    /// # Errors
    /// [`Error::ShapeOverflow`] naming the shape.
    pub fn try_zeros() -> Result<Self, Error> {
        Self::try_full(A::zero())
    }
}

impl<A: Clone, S> Clone for Tensor<A, S> {
    fn clone(&self) -> Self {
        Tensor { raw: self.raw.clone(), shape: PhantomData }
    }
}

impl<A: fmt::Debug, S> fmt::Debug for Tensor<A, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_left_operand_first() {
        let a = RawTensor::from_vec(Dims::vector(2), vec![-0.0f64, 1.0]).unwrap();
        let z = RawTensor::zeros(Dims::vector(2));
        let s = a.add(&z).unwrap();
        assert_eq!(s.data()[0].to_bits(), 0.0f64.to_bits());
        assert!(!s.storage_eq(&a));
    }

    #[test]
    fn adding_tensors_of_different_shapes_is_an_error() {
        let (mut a, b) = (RawTensor::<f64>::zeros(Dims::vector(2)), RawTensor::zeros(Dims::matrix(1, 2)));
        let e = Error::ShapeMismatch { expected: Dims::vector(2), actual: Dims::matrix(1, 2) };
        assert_eq!(a.add(&b), Err(e.clone()));
        assert_eq!(a.add_assign(&b), Err(e));
        assert_eq!(a.data(), &[0.0, 0.0]);
    }

    #[test]
    fn wrong_length_is_an_error_not_a_panic() {
        let e = RawTensor::<f32>::from_vec(Dims::vector(3), vec![]).unwrap_err();
        assert!(matches!(e, Error::DataLength { expected: 3, actual: 0, .. }));
    }
}
