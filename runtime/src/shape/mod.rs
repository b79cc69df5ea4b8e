//! Shapes: runtime dims ([`Dims`]) for the untyped core, and the typed layer on top of it —
//! typenum dims ([`Shape`]), shape lists built by snoc ([`Nil`], [`Snoc`]) and typed position
//! handles ([`Position`]), and the untyped handles of the raw graph ([`RawPosition`]).
//!
//! Type-level work happens once per op at graph-building time; kernels, storage and every reverse
//! pass work on runtime [`Dims`]. Shape lists are plain marker types with no recursive trait bound,
//! so a graph of any length type-checks at the default `recursion_limit`.

mod dims;
pub mod rules;
mod run_time;
mod type_ops;
mod typed;

pub use dims::{Dims, MAX_RANK};
pub(crate) use run_time::binding_from;
pub use run_time::{
    fits_declared, named_dims, resolve_lead, run_time_index, run_time_stand_in, Binding, MAX_RUN_TIME_DIMS,
    RUN_TIME_BASE,
};
pub use typed::{Array, Nil, Position, RawPosition, Shape, ShapeList, Snoc};
