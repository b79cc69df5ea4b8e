//! The engine of **exactgrad**: tensors, typed shapes, graphs, saved forward executions and
//! every reverse pass of `SEMANTICS.md`, with the fast passes bit-for-bit equal to the dense
//! reference on every scalar type.
//!
//! Layers, bottom up:
//! * [`Scalar`] / [`Storage`]: what the engine needs of a scalar, and whether it has bit-level
//!   (storage) equality — which the fast passes need;
//! * [`RawTensor`] (untyped, row-major) and [`Tensor<A, S>`] (typed by a typenum [`Shape`]);
//! * [`RawGraph`] (untyped) and [`GraphData`] (typed by snoc shape lists), nodes with a compact
//!   program ([`CompactOp`]) or opaque closures;
//! * [`Contributions`]: the compact description of one node's VJP; [`History`] and
//!   [`GradientContext`]: deferred uniform updates;
//! * [`RawSavedGraph`] / [`SavedGraph`]: one saved forward and every reverse pass;
//! * training utilities: [`Init`] (seeded parameter initialisation) and the optimizers [`Sgd`]
//!   and [`Adam`] ([`optim`]), which update an input pack in place from its gradient pack;
//! * `io`: parameter packs saved and loaded by name in the safetensors format (feature
//!   `safetensors`, on by default) and conversions to and from `ndarray` arrays (feature
//!   `ndarray`).
//!
//! Graphs, saved graphs, packs and tensors are `Send + Sync` — [`Scalar`], [`CompactOp`] and the
//! opaque closures ([`OpaqueForward`], [`OpaqueVjp`]) require it — so one compiled model can
//! serve several threads: passes run concurrently on one shared [`SavedGraph`] give the bits of
//! the same passes run on one thread.
//!
//! ```
//! use exactgrad_runtime::{ops, GraphData, Pack, Seeds, Tensor, typenum::{U2, U3}};
//!
//! // y = sum(tanh(x · w)), x: 1×2, w: 2×3
//! let g = GraphData::<f64, ()>::new();
//! let (g, x) = g.input::<(typenum::U1, U2)>();
//! let (g, w) = g.input::<(U2, U3)>();
//! let (g, h) = g.push(ops::matmul(x, w));
//! let (g, t) = g.push(ops::tanh(h));
//! let (g, y) = g.push(ops::sum(t));
//!
//! let inputs = Pack::new()
//!     .push(Tensor::from_vec(vec![0.5, -1.0]).unwrap())
//!     .push(Tensor::from_vec(vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6]).unwrap());
//! let saved = g.compile(inputs, ()).unwrap();
//! let fast = saved.backprop_from(y, Tensor::full(1.0)).unwrap();
//! let reference = saved.backprop_from_dense(y, Tensor::full(1.0)).unwrap();
//! for (a, b) in fast.iter().zip(reference.iter()) {
//!     assert!(a.data().iter().zip(b.data()).all(|(a, b)| a.to_bits() == b.to_bits()));
//! }
//! # use exactgrad_runtime::typenum;
//! ```
#![deny(unsafe_code)]
// `forbid` except in `ops::matmul::simd` (run-time-checked AVX2 / AVX-512F calls)
// Pedantic lints this crate does not follow, on purpose (`cargo clippy -- -W clippy::pedantic`):
#![allow(
    clippy::inline_always,
    reason = "kernel bodies are forced inline into their `target_feature` callers; each one was measured"
)]
#![allow(clippy::many_single_char_names, reason = "kernels and shape rules use the usual m, n, k, i, j, a, b")]
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "the casts left are of small counts to floats and of float bits in the math kernels"
)]

#[doc(hidden)] // how the kernels are compiled once; nothing for users to call
pub mod compiled;
pub mod contributions;
pub mod data_parallel;
pub mod deferred;
pub mod dsl;
pub mod error;
pub mod gradients;
pub mod graph;
pub mod graphviz;
mod guard;
pub mod init;
#[cfg(any(feature = "safetensors", feature = "ndarray"))]
pub mod io;
pub mod macro_builder;
pub mod math;
pub mod ops;
pub mod optim;
pub mod pack;
pub mod parallel;
pub mod program;
pub mod reference;
pub mod saved;
pub mod scalar;
pub mod shape;
pub mod tensor;

pub use contributions::{Contrib, Contributions};
pub use deferred::History;
pub use error::Error;
pub use gradients::GradientContext;
pub use graph::{
    Compact, CompactOp, ErasedPosition, FromParents, GraphData, IntoNode, Node, OpaqueForward, OpaqueVjp, RawGraph,
    RawNode, SavedValues,
};
pub use init::Init;
pub use macro_builder::MacroBuilder;
pub use optim::{Adam, InvalidHyperparameter, Optimizer, Sgd, Trainable};
pub use pack::{ContextPack, Pack, RawPack, RawPackIter, RawSeeds, Seeds};
pub use program::{MemoryPlan, OutputSeeds, Pass, Program, ProgramState};
pub use saved::{InputPack, PreparedNode, RawSavedGraph, SavedGraph};
pub use scalar::{Scalar, Storage};
pub use shape::{rules, Array, Dims, Nil, Position, RawPosition, Shape, ShapeList, Snoc, MAX_RANK};
pub use tensor::{RawTensor, Tensor};

/// Re-export of `half` (`half` feature), whose `f16` and `bf16` are scalars.
#[cfg(feature = "half")]
pub use half;
/// Re-export of `ndarray` (`ndarray` feature), whose arrays tensors convert to and from.
#[cfg(feature = "mpi")]
pub use mpi;
#[cfg(feature = "ndarray")]
pub use ndarray;
/// Re-export of `num-traits`, whose traits the ops' scalar bounds use.
pub use num_traits;
/// Re-export of `typenum`, so users name dims without depending on it.
pub use typenum;
