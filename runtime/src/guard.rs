//! The boundary between the engine and user code: a user closure (an opaque node's forward or
//! VJP) or a user [`CompactOp`](crate::CompactOp) that panics becomes an error naming the node
//! and op, and the graph stays usable.
//!
//! Nothing is suppressed: the panic hook still reports the panic as usual (to stderr by
//! default); the engine only stops the unwind at the node's call and returns an error instead.
//! The state a pass was building (gradient context, contributions) is dropped or cleared by the
//! next call, so a later call on the same graph starts afresh.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f` (one call into a node's code), turning a panic into the message
/// `"{what} panicked: {payload}"`.
///
/// `AssertUnwindSafe`: on a panic the engine reads nothing `f` may have left half-written; the
/// caller returns the error at once, and every buffer `f` could reach is rebuilt or cleared
/// before it is read again.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| format!("{what} panicked: {}", payload_text(&*payload)))
}

/// The text of a panic payload (`panic!("…")` gives a `&str` or a `String`).
fn payload_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a payload that is not a string)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message() {
        assert_eq!(guarded("the forward", || 3), Ok(3));
        assert_eq!(guarded("the forward", || -> u8 { panic!("boom") }), Err("the forward panicked: boom".to_owned()));
        let n = 4;
        assert_eq!(
            guarded("the VJP", || -> u8 { panic!("{n} tensors") }),
            Err("the VJP panicked: 4 tensors".to_owned())
        );
        let e = guarded("x", || std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(e, "x panicked: (a payload that is not a string)");
    }
}
