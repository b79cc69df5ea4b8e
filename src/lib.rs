//! **exactgrad**: differentiable models written inline in Rust, with reverse-mode passes that are
//! fast *and* bit-for-bit equal to the dense reference on every scalar type.
//!
//! This facade re-exports the engine ([`exactgrad_runtime`]); see its docs for the layers.
//!
//! ```
//! use exactgrad::{ops, GraphData, Pack, Tensor, typenum::U3};
//!
//! let (g, x) = GraphData::<f32, ()>::new().input::<(U3,)>();
//! let (g, e) = g.push(ops::exp(x));
//! let (g, y) = g.push(ops::sum(e));
//! let saved = g.compile(Pack::new().push(Tensor::from_vec(vec![0.0, 1.0, 2.0]).unwrap()), ()).unwrap();
//! let grads = saved.backprop_from(y, Tensor::full(1.0)).unwrap();
//! assert_eq!(grads.get(x).unwrap().data(), saved.value(e).unwrap().data());
//! ```
#![forbid(unsafe_code)]

pub use exactgrad_runtime::*;
