//! Tensors in and out of the engine: parameter packs saved and loaded by name in the safetensors
//! format ([`safetensors`], feature `safetensors`, on by default), and conversions between
//! tensors and `ndarray` arrays ([`ndarray`], feature `ndarray`).

#[cfg(feature = "ndarray")]
pub mod ndarray;
#[cfg(feature = "safetensors")]
pub mod safetensors;
