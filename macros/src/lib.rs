//! The `graph!` procedural macro of **exactgrad**. Use it through the `exactgrad` crate, which
//! documents the syntax. A compiler in phases: [`parse`] (syntax → AST), [`lower`] (names,
//! desugaring → IR), [`infer`] (literal shapes by the rules of `exactgrad_spec`), [`plan`] (the backward
//! schedules), [`emit`] (IR → tokens); every error is collected in [`errors`] with its span.
//! [`check`] wires the phases together (and runs them on source text for the tests and fuzzers).
#![forbid(unsafe_code)]
// The IR holds `syn` syntax (an `Expr` is some 240 bytes, more with proc-macro2's `span-locations`,
// which the unit tests turn on to compare where errors point) beside small variants, for one
// expansion: boxing them would only add allocations.
#![allow(clippy::large_enum_variant)]

mod check;
mod emit;
mod errors;
#[cfg(test)]
mod fuzz;
mod infer;
mod ir;
mod lower;
mod parse;
mod plan;
mod typenum;

use proc_macro::TokenStream;

/// Turns Rust-like forward code into a typed graph; see the `exactgrad` crate docs.
#[proc_macro]
pub fn graph(input: TokenStream) -> TokenStream {
    check::expand(input.into()).into()
}
