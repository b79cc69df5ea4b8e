//! Tensors in and out of the engine: parameter packs saved and loaded by name in the safetensors
//! format ([`safetensors`], feature `safetensors`, on by default).

#[cfg(feature = "safetensors")]
pub mod safetensors;
