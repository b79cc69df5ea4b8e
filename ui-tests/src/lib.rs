//! Compile-fail (`ui/<phase>/*.rs`, each with its blessed `.stderr`) and compile-pass
//! (`pass/*.rs`) cases of the `graph!` macro, run by `tests/ui.rs` with trybuild.
//!
//! Re-bless after changing a message on purpose: `TRYBUILD=overwrite cargo test -p exactgrad-ui-tests`,
//! then read every changed `.stderr` as a new user would.
