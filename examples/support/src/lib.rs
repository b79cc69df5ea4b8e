//! The helpers the examples share: the loss plot ([`plot`]), a small fully specified random
//! number generator ([`SplitMix64`]) and the character-level text of `char_rnn` and `gpt_char`
//! ([`text`]).
//!
//! They are a library of their own so that they are compiled once: an example rebuilt after a
//! one-line change compiles its model and its training loop, not the plotting library's generic
//! code. (The GPT model shared by `gpt_char` and `benches/gpt_step.rs`, `examples/support/gpt_model.rs`,
//! is a `graph!` model and stays in the crates that use it: its build is part of theirs.)
#![forbid(unsafe_code)]

pub mod plot;
mod rng;
pub mod text;

pub use rng::SplitMix64;
