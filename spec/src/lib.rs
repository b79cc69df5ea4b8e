//! The one source of op facts of **exactgrad**, shared by the `graph!` macro and the runtime:
//! per built-in op its DSL name and arity ([`ops::OPS`]), its shape rule and the exact words of its
//! shape errors ([`rules`]), the type-level rule trait that computes its output shape type and that
//! trait's error texts ([`types`]), its compact-VJP pattern (the static support) and the saved
//! values its VJP reads; and the forward's level rule both schedule by ([`levels`]). The crate docs' op table is generated from it ([`docs::op_table`]).
//!
//! Plain Rust, no dependencies: the proc-macro crate and the runtime both build on it.
//!
//! ```
//! use exactgrad_spec::{ops, rules};
//! let op = ops::lookup("matmul").unwrap();
//! assert_eq!(op.vjp.support(2), [0, 1]);
//! let err = rules::matmul(&[4usize, 3], &[2, 5]).unwrap_err();
//! assert_eq!(err, "matmul needs the left operand's columns (3) to equal the right operand's rows (2)");
//! ```
#![forbid(unsafe_code)]

pub mod docs;
pub mod labels;
pub mod levels;
pub mod ops;
pub mod rules;
pub mod shape;
pub mod types;
pub mod vjp;

/// Node shapes per chunk of the node-list type `graph!` names and its builder grows (the runtime's
/// `MacroBuilder` has one tuple impl per chunk length below it).
pub const NODE_CHUNK: usize = 32;

/// The stand-in size of a graph's first run-time dim (`graph!`'s `batch: dyn`); the `k`-th is
/// `RUN_TIME_BASE + k`, for `k <` [`MAX_RUN_TIME_DIMS`]. The typed layer sees a run-time dim as
/// this typenum number; `compile` binds it to the size the inputs give it (the runtime's
/// `shape::Binding`). A graph with run-time dims must not use these numbers as literal dims.
pub const RUN_TIME_BASE: usize = 1_000_000_007;

/// The most run-time dims one graph may declare.
pub const MAX_RUN_TIME_DIMS: usize = 8;

pub use ops::{Args, Arity, Bound, Direct, Form, OpSpec, OPS};
pub use rules::Rule;
pub use shape::{Dim, Shape};
pub use types::TypeRule;
pub use vjp::{Pattern, Reads};
