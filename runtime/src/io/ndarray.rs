//! Conversions between tensors and [`ndarray`] arrays (feature `ndarray`; the crate is
//! re-exported as [`crate::ndarray`]).
//!
//! * [`RawTensor<A>`] ⇄ [`ArrayD<A>`] (any rank up to [`MAX_RANK`](crate::MAX_RANK)), by
//!   `TryFrom` both ways, and [`RawTensor::from_ndarray`] from a borrowed array or view of any
//!   dimension type;
//! * [`Tensor<A, S>`] ⇄ the array of its rank: `Array0` for `()`, `Array1` for `(D0,)`, …,
//!   `Array4`, by `TryFrom` both ways (the array's shape is checked against `S`).
//!
//! Elements keep their row-major (logical) order, whatever the array's memory layout; an owned
//! array in standard layout hands its buffer over without copying, and so does a tensor. The
//! conversions are fallible only at the edges of either side: an array of rank above 4
//! ([`Error::Rank`]), an array of another shape than a typed tensor's ([`Error::ShapeMismatch`]),
//! and a tensor shape `ndarray` refuses ([`Error::Ndarray`]: an axis above `isize::MAX` beside an
//! empty one, which a tensor of no elements can have).
//!
//! ```
//! use exactgrad_runtime::ndarray::{array, Array2, ArrayD};
//! use exactgrad_runtime::{RawTensor, Tensor, typenum::{U2, U3}};
//!
//! let a: Array2<f64> = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
//! let t = Tensor::<f64, (U2, U3)>::try_from(a.clone()).unwrap();
//! assert_eq!(t.data(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! assert_eq!(Array2::try_from(t.clone()).unwrap(), a);
//!
//! // A transposed view keeps its logical order.
//! let tt = RawTensor::from_ndarray(&a.t()).unwrap();
//! assert_eq!(tt.data(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! assert_eq!(ArrayD::try_from(tt).unwrap().shape(), &[3, 2]);
//!
//! // The shape of a typed tensor is checked.
//! assert!(Tensor::<f64, (U3, U2)>::try_from(a).is_err());
//! ```

use ::ndarray::{Array, ArrayBase, ArrayD, Data, Dimension, Ix0, Ix1, Ix2, Ix3, Ix4, IxDyn, ShapeError};
use typenum::Unsigned;

use crate::error::Error;
use crate::shape::{Dims, Shape};
use crate::tensor::{RawTensor, Tensor};

fn ndarray_error(e: &ShapeError) -> Error {
    Error::Ndarray { message: e.to_string() }
}

/// The dims of an array's shape, or [`Error::Rank`].
fn dims_of(shape: &[usize]) -> Result<Dims, Error> {
    Dims::new(shape).ok_or_else(|| Error::Rank { what: "an array", shape: shape.to_vec() })
}

/// The elements of an owned array in logical (row-major) order: its buffer when it is in
/// standard layout, else a copy.
fn into_row_major<A: Clone, D: Dimension>(a: Array<A, D>) -> Vec<A> {
    if !a.is_standard_layout() {
        return a.iter().cloned().collect();
    }
    let numel = a.len();
    // Standard layout: the elements are `numel` consecutive ones of the buffer from the offset.
    let (mut v, offset) = a.into_raw_vec_and_offset();
    v.drain(..offset.unwrap_or(0).min(v.len()));
    v.truncate(numel);
    v
}

impl<A> RawTensor<A> {
    /// A tensor of the elements of `a` (a borrowed array or a view of any dimension type), in
    /// logical order, cloned.
    ///
    /// # Errors
    /// [`Error::Rank`] for an array of rank above [`MAX_RANK`](crate::MAX_RANK).
    ///
    /// ```
    /// use exactgrad_runtime::{ndarray::{s, Array3}, RawTensor};
    /// let a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (100 * i + 10 * j + k) as f32);
    /// let t = RawTensor::from_ndarray(&a.slice(s![.., 1, ..])).unwrap();
    /// assert_eq!(t.dims().as_slice(), &[2, 4]);
    /// assert_eq!(t.data()[..4], [10.0, 11.0, 12.0, 13.0]);
    /// ```
    pub fn from_ndarray<S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> Result<Self, Error>
    where
        A: Clone,
    {
        RawTensor::from_vec(dims_of(a.shape())?, a.iter().cloned().collect())
    }

    /// The tensor as an array of dynamic dimension, without copying the elements.
    ///
    /// # Errors
    /// [`Error::Ndarray`] for a shape `ndarray` refuses (an axis above `isize::MAX` beside an
    /// empty one).
    pub fn into_ndarray(self) -> Result<ArrayD<A>, Error> {
        let dims = self.dims();
        Array::from_shape_vec(IxDyn(dims.as_slice()), self.into_vec()).map_err(|e| ndarray_error(&e))
    }
}

impl<A> TryFrom<RawTensor<A>> for ArrayD<A> {
    type Error = Error;

    /// [`RawTensor::into_ndarray`].
    fn try_from(t: RawTensor<A>) -> Result<Self, Error> {
        t.into_ndarray()
    }
}

impl<A: Clone> TryFrom<ArrayD<A>> for RawTensor<A> {
    type Error = Error;

    /// The array's elements in logical order (its buffer, when it is in standard layout).
    ///
    /// # Errors
    /// [`Error::Rank`] for an array of rank above [`MAX_RANK`](crate::MAX_RANK).
    fn try_from(a: ArrayD<A>) -> Result<Self, Error> {
        let dims = dims_of(a.shape())?;
        RawTensor::from_vec(dims, into_row_major(a))
    }
}

macro_rules! fixed_rank {
    ($ix:ident; $($d:ident),*) => {
        impl<A $(, $d: Unsigned + 'static)*> TryFrom<Tensor<A, ($($d,)*)>> for Array<A, $ix> {
            type Error = Error;

            /// The tensor as the array of its rank, without copying the elements.
            ///
            /// # Errors
            /// [`Error::Ndarray`] for a shape `ndarray` refuses (an axis above `isize::MAX`
            /// beside an empty one).
            fn try_from(t: Tensor<A, ($($d,)*)>) -> Result<Self, Error> {
                let shape = <($($d,)*) as Shape>::dims();
                let mut ix = $ix::zeros(shape.rank());
                ix.slice_mut().copy_from_slice(shape.as_slice());
                Array::from_shape_vec(ix, t.into_raw().into_vec()).map_err(|e| ndarray_error(&e))
            }
        }

        impl<A: Clone $(, $d: Unsigned + 'static)*> TryFrom<Array<A, $ix>> for Tensor<A, ($($d,)*)> {
            type Error = Error;

            /// The array's elements in logical order (its buffer, when it is in standard layout).
            ///
            /// # Errors
            /// [`Error::ShapeMismatch`] when the array's shape is not the tensor's.
            fn try_from(a: Array<A, $ix>) -> Result<Self, Error> {
                let expected = <($($d,)*) as Shape>::dims();
                let actual = dims_of(a.shape())?;
                if actual != expected {
                    return Err(Error::ShapeMismatch { expected, actual });
                }
                Tensor::from_vec(into_row_major(a))
            }
        }
    };
}
fixed_rank!(Ix0;);
fixed_rank!(Ix1; D0);
fixed_rank!(Ix2; D0, D1);
fixed_rank!(Ix3; D0, D1, D2);
fixed_rank!(Ix4; D0, D1, D2, D3);

#[cfg(test)]
mod tests {
    use ::ndarray::{arr0, s, Array1, Array3, Array4, ArrayD, IxDyn};
    use typenum::{U0, U2, U3, U4};

    use super::*;

    #[test]
    fn every_rank_round_trips_with_its_bits() {
        let t0 = Tensor::<f64, ()>::full(-0.0);
        let a0 = Array::<f64, Ix0>::try_from(t0.clone()).unwrap();
        assert_eq!(a0, arr0(-0.0));
        assert!(Tensor::<f64, ()>::try_from(a0).unwrap().raw().storage_eq(t0.raw()));
        let nan = f32::from_bits(0x7f80_0001); // a signalling NaN survives
        let t1 = Tensor::<f32, (U3,)>::from_vec(vec![nan, -0.0, 1e-45]).unwrap();
        let a1 = Array1::try_from(t1.clone()).unwrap();
        assert!(Tensor::<f32, (U3,)>::try_from(a1).unwrap().raw().storage_eq(t1.raw()));
        let t4 = Tensor::<i64, (U2, U3, U2, U2)>::from_fn(|i| i as i64);
        let a4 = Array4::try_from(t4.clone()).unwrap();
        assert_eq!(a4[[1, 2, 1, 0]], 12 + 2 * 4 + 2);
        assert_eq!(Tensor::<i64, (U2, U3, U2, U2)>::try_from(a4).unwrap().data(), t4.data());
        let raw = t4.into_raw();
        let d = ArrayD::try_from(raw.clone()).unwrap();
        assert_eq!(RawTensor::try_from(d).unwrap(), raw);
    }

    #[test]
    fn layouts_other_than_standard_keep_the_logical_order() {
        let a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| 100 * i + 10 * j + k);
        // Reversed axes (Fortran order), a sliced owned array with an offset, a stepped view.
        let f = a.clone().reversed_axes();
        let t = RawTensor::try_from(f.clone().into_dyn()).unwrap();
        assert_eq!(t.dims().as_slice(), &[4, 3, 2]);
        assert_eq!(t.data(), f.iter().copied().collect::<Vec<_>>());
        let mut sliced = a.clone();
        sliced.slice_collapse(s![1.., 1.., ..]);
        assert!(sliced.is_standard_layout());
        let t = Tensor::<usize, (typenum::U1, U2, U4)>::try_from(sliced.clone()).unwrap();
        assert_eq!(t.data(), sliced.iter().copied().collect::<Vec<_>>());
        assert_eq!(t.data()[0], 110);
        let stepped = RawTensor::from_ndarray(&a.slice(s![.., ..;2, ..;3])).unwrap();
        assert_eq!(stepped.data(), &[0, 3, 20, 23, 100, 103, 120, 123]);
    }

    #[test]
    fn shapes_are_checked() {
        let a = Array::<f64, Ix2>::zeros((3, 2));
        let e = Tensor::<f64, (U2, U3)>::try_from(a).unwrap_err();
        assert_eq!(e, Error::ShapeMismatch { expected: Dims::matrix(2, 3), actual: Dims::matrix(3, 2) });
        let five = ArrayD::<f32>::zeros(IxDyn(&[1, 2, 1, 2, 1]));
        let e = RawTensor::try_from(five.clone()).unwrap_err();
        assert_eq!(e.to_string(), "an array has shape [1, 2, 1, 2, 1], of rank 5; a tensor has rank at most 4");
        assert!(RawTensor::from_ndarray(&five.view()).is_err());
        // A tensor with no element and an axis `ndarray` cannot hold.
        let t = RawTensor::<f32>::from_vec(Dims::matrix(usize::MAX, 0), vec![]).unwrap();
        assert!(matches!(ArrayD::try_from(t), Err(Error::Ndarray { .. })));
        let empty = Tensor::<f32, (U0, U3)>::zeros();
        assert_eq!(Array::<f32, Ix2>::try_from(empty).unwrap().shape(), &[0, 3]);
    }
}
