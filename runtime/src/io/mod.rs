//! Tensors in and out of the engine: parameter packs saved and loaded by name in the safetensors
//! format (feature `safetensors`, on by default), and conversions between tensors and `ndarray`
//! arrays (feature `ndarray`).
// Each module is linked only where it is built (the docs are built with `-D warnings`).
#![cfg_attr(feature = "safetensors", doc = "\nSafetensors: [`safetensors`].")]
#![cfg_attr(feature = "ndarray", doc = "\n`ndarray`: [`ndarray`].")]

#[cfg(feature = "ndarray")]
pub mod ndarray;
#[cfg(feature = "safetensors")]
pub mod safetensors;
