//! Shape rules as traits, for dims the `graph!` macro cannot compare itself (generic dims): the
//! compiler proves `L: Rule<R>` only when `L` and `R` are the same dim, and otherwise reports the
//! op and the rule in words.

use typenum::Unsigned;

/// `L` and `R` are the same dim, as elementwise ops need.
#[diagnostic::on_unimplemented(
    message = "an elementwise op needs both operands to have the same shape",
    label = "these dims may differ",
    note = "give both operands the same dims (the same literal sizes or the same generic dim)"
)]
pub trait SameShape<R> {}
#[diagnostic::do_not_recommend]
impl<T> SameShape<T> for T {}

/// `L` (the left operand's columns) equals `R` (the right operand's rows).
#[diagnostic::on_unimplemented(
    message = "matmul needs the left operand's columns to equal the right operand's rows",
    label = "these dims may differ",
    note = "for `a.matmul(b)` with `a: [m, k]`, `b` must be `[k, n]`"
)]
pub trait MatmulInner<R> {}
#[diagnostic::do_not_recommend]
impl<T> MatmulInner<T> for T {}

/// `L` (the matrix's columns) equals `R` (the row vector's length).
#[diagnostic::on_unimplemented(
    message = "adding a row vector to a matrix needs the vector's length to equal the matrix's columns",
    label = "these dims may differ",
    note = "for `x + b` with `x: [m, n]`, `b` must be `[n]`"
)]
pub trait RowLength<R> {}
#[diagnostic::do_not_recommend]
impl<T> RowLength<T> for T {}

/// `L` (a declared dim) equals `R` (the inferred one).
#[diagnostic::on_unimplemented(
    message = "the declared shape differs from the shape the graph computes",
    label = "these dims may differ",
    note = "change the declared shape (let annotation or signature) to the computed one"
)]
pub trait DeclaredShape<R> {}
#[diagnostic::do_not_recommend]
impl<T> DeclaredShape<T> for T {}

/// Compile-time check of [`SameShape`].
pub fn same_shape<L: SameShape<R> + Unsigned, R: Unsigned>() {}
/// Compile-time check of [`MatmulInner`].
pub fn matmul_inner<L: MatmulInner<R> + Unsigned, R: Unsigned>() {}
/// Compile-time check of [`RowLength`].
pub fn row_length<L: RowLength<R> + Unsigned, R: Unsigned>() {}
/// Compile-time check of [`DeclaredShape`].
pub fn declared_shape<L: DeclaredShape<R> + Unsigned, R: Unsigned>() {}
