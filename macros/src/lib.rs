//! The `graph!` procedural macro of **exactgrad**. Use it through the `exactgrad` crate, which
//! documents the syntax; this crate only parses, checks and expands.
#![forbid(unsafe_code)]

mod check;
mod codegen;
mod ir;
mod ops;
mod parse;
mod typenum;

use proc_macro::TokenStream;

/// Turns Rust-like forward code into a typed graph; see the `exactgrad` crate docs.
#[proc_macro]
pub fn graph(input: TokenStream) -> TokenStream {
    let def = syn::parse_macro_input!(input as parse::GraphDef);
    codegen::expand(def).into()
}
