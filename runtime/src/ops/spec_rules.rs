//! The spec's shape rules (`exactgrad_spec::rules`) at the runtime's dims, `usize`: not generic,
//! so they are compiled once, here. The spec's rules are generic over the dim type (the macro runs
//! them on symbolic dims), and the ops' `output_dims` that call them are generic over the scalar
//! and the data: called directly there, every model's crate would compile the rules again.

use exactgrad_spec::rules::{self, Outcome};

/// [`rules::elementwise`].
pub(crate) fn elementwise(op: &str, a: &[usize], b: &[usize]) -> Outcome<usize> {
    rules::elementwise(op, a, b)
}
/// [`rules::same_shape_to_scalar`].
pub(crate) fn same_shape_to_scalar(op: &str, a: &[usize], b: &[usize]) -> Outcome<usize> {
    rules::same_shape_to_scalar(op, a, b)
}
/// [`rules::unary`].
pub(crate) fn unary(x: &[usize]) -> Outcome<usize> {
    rules::unary(x)
}
/// [`rules::last_axis`].
pub(crate) fn last_axis(op: &str, x: &[usize]) -> Outcome<usize> {
    rules::last_axis(op, x)
}
/// [`rules::reduce`].
pub(crate) fn reduce(op: &str, x: &[usize], needs_element: bool) -> Outcome<usize> {
    rules::reduce(op, x, needs_element)
}
/// [`rules::matmul`].
pub(crate) fn matmul(a: &[usize], b: &[usize]) -> Outcome<usize> {
    rules::matmul(a, b)
}
/// [`rules::matmul_data`].
pub(crate) fn matmul_data(rows: usize, w: &[usize]) -> Outcome<usize> {
    rules::matmul_data(rows, w)
}
/// [`rules::transpose`].
pub(crate) fn transpose(x: &[usize]) -> Outcome<usize> {
    rules::transpose(x)
}
/// [`rules::add_row`].
pub(crate) fn add_row(x: &[usize], b: &[usize]) -> Outcome<usize> {
    rules::add_row(x, b)
}
/// [`rules::axis_reduce`].
pub(crate) fn axis_reduce(op: &str, x: &[usize], axis: usize, needs_element: bool) -> Outcome<usize> {
    rules::axis_reduce(op, x, axis, needs_element)
}
/// [`rules::row_params`].
pub(crate) fn row_params(op: &str, x: &[usize], gain: &[usize], bias: &[usize]) -> Outcome<usize> {
    rules::row_params(op, x, gain, bias)
}
/// [`rules::logits`].
pub(crate) fn logits(op: &str, x: &[usize]) -> Outcome<usize> {
    rules::logits(op, x)
}
/// [`rules::slice`].
pub(crate) fn slice(x: &[usize], axis: usize, start: usize, len: usize) -> Outcome<usize> {
    rules::slice(x, axis, start, len)
}
/// [`rules::permute`].
pub(crate) fn permute(x: &[usize], perm: &[usize]) -> Outcome<usize> {
    rules::permute(x, perm)
}
/// [`rules::reshape`].
pub(crate) fn reshape(x: &[usize], to: &[usize]) -> Outcome<usize> {
    rules::reshape(x, to)
}
/// [`rules::gather_rows`].
pub(crate) fn gather_rows(table: &[usize], lead: &[usize]) -> Outcome<usize> {
    rules::gather_rows(table, lead)
}
/// [`rules::causal`].
pub(crate) fn causal(x: &[usize]) -> Outcome<usize> {
    rules::causal(x)
}
/// [`rules::leaf`].
pub(crate) fn leaf(declared: &[usize]) -> Outcome<usize> {
    rules::leaf(declared)
}
/// [`rules::concat_all`].
pub(crate) fn concat_all(parts: &[&[usize]], axis: usize) -> Outcome<usize> {
    rules::concat_all(parts, axis)
}
