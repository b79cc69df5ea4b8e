//! Parameters saved and loaded by name in the [safetensors] format (feature `safetensors`, on by
//! default): the format PyTorch, JAX and candle exchange weights in, read and written by Hugging
//! Face's own `safetensors` crate.
//!
//! A pack is saved with one name per tensor ([`Pack::save_safetensors`], to bytes, or
//! [`Pack::save_safetensors_file`]) and loaded back by the graph whose inputs it holds
//! ([`GraphData::load_safetensors`], [`GraphData::load_safetensors_file`]), which knows the shape
//! each name must have. A `graph!` model names its inputs: `handles.input_names()`. The round trip
//! is bit for bit — `-0.0`, NaN payloads, subnormals — for every scalar type the format stores
//! ([`Element`]: `f32`, `f64`, the integers, and `half::f16` / `half::bf16` with the `half`
//! feature).
//!
//! Loading never panics on bad data: a tensor missing, of another shape or element type, names
//! that do not fit, and truncated or malformed data (a bad header, offsets that do not cover the
//! data) are each an [`Error`]. The data may hold more tensors than are asked for; the others are
//! ignored.
//!
//! ```
//! use exactgrad_runtime::{ops, Error, GraphData, Pack, Tensor, typenum::{U2, U3}};
//!
//! let g = GraphData::<f32, ()>::new();
//! let (g, w) = g.input::<(U2, U3)>();
//! let (g, b) = g.input::<(U3,)>();
//! let names = ["w", "b"];
//! let params = Pack::new()
//!     .push(Tensor::<f32, (U2, U3)>::from_fn(|i| i as f32 - 2.5))
//!     .push(Tensor::<f32, (U3,)>::from_vec(vec![-0.0, f32::from_bits(0x7fc0_1234), 1e-40]).unwrap());
//!
//! let bytes = params.save_safetensors(&names).unwrap();
//! let loaded = g.load_safetensors(&names, &bytes).unwrap();
//! for (a, b) in params.as_slice().iter().zip(loaded.as_slice()) {
//!     assert!(a.storage_eq(b)); // the same bits
//! }
//! assert_eq!(loaded.get(b).unwrap().data()[1].to_bits(), 0x7fc0_1234);
//!
//! // Another name, a truncated file, another scalar type: typed errors.
//! assert!(matches!(g.load_safetensors(&["w", "bias"], &bytes), Err(Error::MissingTensor { .. })));
//! assert!(matches!(g.load_safetensors(&names, &bytes[..bytes.len() - 1]), Err(Error::Safetensors { .. })));
//! let g64 = GraphData::<f64, ()>::new().input::<(U2, U3)>().0.input::<(U3,)>().0;
//! let e = g64.load_safetensors(&names, &bytes).unwrap_err();
//! assert_eq!(e.to_string(), "tensor `w` holds F32 elements in the safetensors data, expected F64");
//! # let _ = w;
//! ```
//!
//! [safetensors]: https://huggingface.co/docs/safetensors

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;

use ::safetensors::tensor::{Metadata, SafeTensors, View};
use ::safetensors::{Dtype, SafeTensorError};

use crate::error::Error;
use crate::graph::GraphData;
use crate::guard::guarded;
use crate::pack::Pack;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

mod sealed {
    use ::safetensors::Dtype;

    /// How a scalar type is stored: its dtype and its little-endian bytes.
    #[allow(unreachable_pub)] // the sealed-trait idiom: public, in a private module
    pub trait Encoding: Sized {
        /// The safetensors dtype.
        const DTYPE: Dtype;
        /// Appends the little-endian bytes of `self`.
        fn put(&self, out: &mut Vec<u8>);
        /// The values of `bytes`, little-endian, one per whole element (the caller passes a
        /// multiple of the element size).
        fn get_all(bytes: &[u8]) -> Vec<Self>;
    }
}

/// A scalar type the safetensors format stores, bit for bit: `f32` (`F32`), `f64` (`F64`), `i8`
/// to `i64` and `u8` to `u64` (`I8` … `U64`), and with the `half` feature `half::f16` (`F16`) and
/// `half::bf16` (`BF16`). Sealed: the format has a fixed list of element types.
pub trait Element: Scalar + sealed::Encoding {}

macro_rules! element {
    ($($t:ty => $dtype:ident),* $(,)?) => {$(
        impl sealed::Encoding for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get_all(bytes: &[u8]) -> Vec<Self> {
                const SIZE: usize = core::mem::size_of::<$t>();
                bytes
                    .chunks_exact(SIZE)
                    .map(|c| {
                        let mut a = [0u8; SIZE];
                        a.copy_from_slice(c); // `chunks_exact`: `c` has SIZE bytes
                        <$t>::from_le_bytes(a)
                    })
                    .collect()
            }
        }
        impl Element for $t {}
    )*};
}
element!(f32 => F32, f64 => F64, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);
#[cfg(feature = "half")]
element!(half::f16 => F16, half::bf16 => BF16);

/// One tensor's bytes, as the `safetensors` writer takes them.
struct Encoded {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Encoded {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// `Ok` when there is one name per tensor and no name twice.
fn check_names(names: &[&str], tensors: usize) -> Result<(), Error> {
    if names.len() != tensors {
        let message = format!("{} names for {} tensors", names.len(), tensors);
        return Err(Error::TensorNames { message });
    }
    let mut seen = HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(**n)) {
        return Err(Error::TensorNames { message: format!("`{twice}` is given twice") });
    }
    Ok(())
}

fn encode<A: Element>(names: &[&str], tensors: &[RawTensor<A>]) -> Result<Vec<(String, Encoded)>, Error> {
    check_names(names, tensors.len())?;
    Ok(names
        .iter()
        .zip(tensors)
        .map(|(name, t)| {
            let mut bytes = Vec::with_capacity(t.numel() * core::mem::size_of::<A>());
            t.data().iter().for_each(|v| v.put(&mut bytes));
            ((*name).to_owned(), Encoded { dtype: A::DTYPE, shape: t.dims().as_slice().to_vec(), bytes })
        })
        .collect())
}

fn format_error(e: &SafeTensorError) -> Error {
    Error::Safetensors { message: e.to_string() }
}

/// Untyped saving: `tensors[k]` under `names[k]`, as safetensors bytes.
///
/// # Errors
/// [`Error::TensorNames`] for another number of names than of tensors or a name given twice;
/// [`Error::Safetensors`] when the format cannot hold them (a header over its limit).
///
/// ```
/// use exactgrad_runtime::{io::safetensors, Dims, RawTensor};
/// let t = RawTensor::from_vec(Dims::vector(2), vec![1.5f64, -0.0]).unwrap();
/// let bytes = safetensors::save_raw(&["t"], &[t.clone()]).unwrap();
/// let back = safetensors::load_raw::<f64>(&["t"], &[Dims::vector(2)], &bytes).unwrap();
/// assert!(back[0].storage_eq(&t));
/// ```
pub fn save_raw<A: Element>(names: &[&str], tensors: &[RawTensor<A>]) -> Result<Vec<u8>, Error> {
    serialize(&encode(names, tensors)?)
}

/// [`save_raw`] into the file at `path`, written to a temporary file beside it and moved into
/// place, so a reader never sees half a file.
///
/// # Errors
/// As [`save_raw`], and [`Error::Io`] when the file cannot be written.
pub fn save_raw_file<A: Element>(names: &[&str], tensors: &[RawTensor<A>], path: &Path) -> Result<(), Error> {
    serialize_to_file(&encode(names, tensors)?, path)
}

// The writing and the reading proper are not generic, so they (and `safetensors`' and
// `serde_json`'s code under them) are compiled once, in this crate, not in every crate that saves
// a model; only the conversion between a tensor's elements and their bytes is generic.

fn serialize(encoded: &[(String, Encoded)]) -> Result<Vec<u8>, Error> {
    ::safetensors::serialize(encoded.iter().map(|(n, e)| (n.as_str(), e)), None).map_err(|e| format_error(&e))
}

fn serialize_to_file(encoded: &[(String, Encoded)], path: &Path) -> Result<(), Error> {
    ::safetensors::serialize_to_file(encoded.iter().map(|(n, e)| (n.as_str(), e)), None, path).map_err(|e| match e {
        SafeTensorError::IoError(io) => Error::Io { path: path.to_owned(), message: io.to_string() },
        other => format_error(&other),
    })
}

/// The header of `bytes` checked against the data it declares, before `SafeTensors` reads it:
/// `safetensors` 0.8 adds the declared data length to the header length unchecked, which
/// overflows (a panic in a debug build) on a header declaring nearly `2^64` bytes.
fn check_header(bytes: &[u8]) -> Result<(), Error> {
    let malformed = |message: &str| Error::Safetensors { message: message.to_owned() };
    let (Some(len), Some(rest)) = (bytes.get(..8), bytes.get(8..)) else {
        return Err(malformed("header too small"));
    };
    let mut n = [0u8; 8];
    n.copy_from_slice(len);
    let header = usize::try_from(u64::from_le_bytes(n))
        .ok()
        .and_then(|n| rest.get(..n))
        .ok_or_else(|| malformed("invalid header length"))?;
    let data = rest.len() - header.len();
    let metadata: Metadata =
        serde_json::from_slice(header).map_err(|e| Error::Safetensors { message: format!("invalid header: {e}") })?;
    if metadata.data_len() != data {
        let message = format!("the header declares {} bytes of data, the data has {data}", metadata.data_len());
        return Err(Error::Safetensors { message });
    }
    Ok(())
}

/// Untyped loading: the tensor named `names[k]`, which must have dims `dims[k]`, for each `k`.
///
/// # Errors
/// [`Error::TensorNames`] for another number of names than of dims or a name given twice;
/// [`Error::Safetensors`] for data that is not valid safetensors (truncated, a malformed header,
/// offsets that do not cover the data); [`Error::MissingTensor`] for a name not in the data;
/// [`Error::TensorDtype`] for a tensor of another element type than `A`; [`Error::TensorShape`]
/// for a tensor of other dims.
pub fn load_raw<A: Element>(names: &[&str], dims: &[Dims], bytes: &[u8]) -> Result<Vec<RawTensor<A>>, Error> {
    read_tensors(names, dims, bytes, A::DTYPE)?
        .into_iter()
        .zip(dims)
        .map(|(data, &expected)| RawTensor::from_vec(expected, A::get_all(data)))
        .collect()
}

/// The bytes of the tensor named `names[k]`, checked to have dims `dims[k]` and element type
/// `dtype`, for each `k`: [`load_raw`]'s reading, without its element type.
fn read_tensors<'a>(names: &[&str], dims: &[Dims], bytes: &'a [u8], dtype: Dtype) -> Result<Vec<&'a [u8]>, Error> {
    check_names(names, dims.len())?;
    check_header(bytes)?;
    // The check above rules out the one panic known in `safetensors`; any other is an error too.
    let file = guarded("reading the safetensors data", || SafeTensors::deserialize(bytes))
        .map_err(|message| Error::Safetensors { message })?
        .map_err(|e| format_error(&e))?;
    names
        .iter()
        .zip(dims)
        .map(|(&name, &expected)| {
            let view = match file.tensor(name) {
                Ok(view) => view,
                Err(SafeTensorError::TensorNotFound(_)) => return Err(Error::MissingTensor { name: name.to_owned() }),
                Err(e) => return Err(format_error(&e)),
            };
            if view.dtype() != dtype {
                let actual = view.dtype().to_string();
                return Err(Error::TensorDtype { name: name.to_owned(), expected: dtype.to_string(), actual });
            }
            if view.shape() != expected.as_slice() {
                return Err(Error::TensorShape { name: name.to_owned(), expected, actual: view.shape().to_vec() });
            }
            Ok(view.data())
        })
        .collect()
}

/// [`load_raw`] from the file at `path`.
///
/// # Errors
/// As [`load_raw`], and [`Error::Io`] when the file cannot be read.
pub fn load_raw_file<A: Element>(names: &[&str], dims: &[Dims], path: &Path) -> Result<Vec<RawTensor<A>>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.to_owned(), message: e.to_string() })?;
    load_raw(names, dims, &bytes)
}

impl<A: Element, L> Pack<A, L> {
    /// The pack in the safetensors format, its `k`-th tensor under `names[k]` (for a `graph!`
    /// model, `handles.input_names()`). See the [module docs](self) for an example.
    ///
    /// # Errors
    /// [`Error::TensorNames`] for another number of names than of tensors or a name given twice;
    /// [`Error::Safetensors`] when the format cannot hold them.
    pub fn save_safetensors(&self, names: &[&str]) -> Result<Vec<u8>, Error> {
        save_raw(names, self.as_slice())
    }

    /// [`save_safetensors`](Self::save_safetensors) into the file at `path` (written beside it and
    /// moved into place).
    ///
    /// # Errors
    /// As [`save_safetensors`](Self::save_safetensors), and [`Error::Io`] when the file cannot be
    /// written.
    pub fn save_safetensors_file(&self, names: &[&str], path: impl AsRef<Path>) -> Result<(), Error> {
        save_raw_file(names, self.as_slice(), path.as_ref())
    }
}

impl<A: Element, D: 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// The graph's input pack from safetensors data: input `k` is the tensor named `names[k]`
    /// (for a `graph!` model, `handles.input_names()`), which must have the input's shape and the
    /// element type `A`. Bit for bit the pack that was saved. See the [module docs](self).
    ///
    /// # Errors
    /// As [`load_raw`]: [`Error::TensorNames`], [`Error::Safetensors`], [`Error::MissingTensor`],
    /// [`Error::TensorDtype`], [`Error::TensorShape`] (naming the tensor and both shapes).
    pub fn load_safetensors(&self, names: &[&str], bytes: &[u8]) -> Result<Pack<A, G>, Error> {
        let raw = self.raw();
        Ok(Pack::from_raw(None, load_raw(names, &raw.dims()[..raw.num_inputs()], bytes)?))
    }

    /// [`load_safetensors`](Self::load_safetensors) from the file at `path`.
    ///
    /// # Errors
    /// As [`load_safetensors`](Self::load_safetensors), and [`Error::Io`] when the file cannot be
    /// read.
    pub fn load_safetensors_file(&self, names: &[&str], path: impl AsRef<Path>) -> Result<Pack<A, G>, Error> {
        let raw = self.raw();
        Ok(Pack::from_raw(None, load_raw_file(names, &raw.dims()[..raw.num_inputs()], path.as_ref())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header declaring eight tensors of `2^61 - 1` bytes each: `2^64 - 8` bytes of data, which
    /// `safetensors` would add to the header length unchecked.
    #[test]
    fn a_header_declaring_nearly_2_to_the_64_bytes_is_an_error() {
        let size = (1u64 << 61) - 1;
        let entries: Vec<String> = (0..8)
            .map(|k| {
                format!(
                    "\"t{k}\":{{\"dtype\":\"U8\",\"shape\":[{size}],\"data_offsets\":[{},{}]}}",
                    k * size,
                    (k + 1) * size
                )
            })
            .collect();
        let header = format!("{{{}}}", entries.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        let e = load_raw::<u8>(&["t0"], &[Dims::vector(size as usize)], &bytes).unwrap_err();
        assert!(matches!(e, Error::Safetensors { .. }), "{e}");
        assert!(e.to_string().contains("declares 18446744073709551608 bytes of data, the data has 0"), "{e}");
    }
}
