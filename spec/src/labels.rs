//! Node labels (`block#2/h@i=3`: the helper call, the binding and the loop iteration that made a
//! node) as a generated program's plan stores them: the runs of digits are numbers, which a
//! repeated run of plan rows moves from one iteration to the next. The macro that writes the rows
//! and the runtime that reads them split a label here, the one place.
//!
//! ```
//! use exactgrad_spec::labels::{numbers, shape};
//! assert_eq!(numbers("block#12/h@i=3").collect::<Vec<_>>(), [(6..8, 12), (13..14, 3)]);
//! assert_eq!(shape("block#12/h@i=3"), "block###/h@i=#");
//! ```

use core::ops::Range;

/// The runs of ASCII digits of `label`, where they stand and what they read as.
pub fn numbers(label: &str) -> impl Iterator<Item = (Range<usize>, usize)> + '_ {
    let bytes = label.as_bytes();
    let mut i = 0;
    core::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        (start < i).then(|| (start..i, label[start..i].parse().unwrap_or(usize::MAX)))
    })
}

/// `label` with every digit replaced by `#`: what two labels that differ only in their numbers
/// share.
#[must_use]
pub fn shape(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect()
}
