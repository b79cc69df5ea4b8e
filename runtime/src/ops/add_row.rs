//! `add_row(x, b)`: broadcast add of a row vector to every row of a matrix,
//! `y[i, j] = x[i, j] + b[j]` (`x` left).
//!
//! VJP: `add(single(x, δ), single(b, s))` with `s[j] = ((0 + δ[0, j]) + δ[1, j]) + …` (column
//! sums in ascending row order).

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Broadcast add of a row vector (a bias) to a matrix.
#[derive(Clone, Debug)]
pub struct AddRow {
    parents: [usize; 2],
}

impl AddRow {
    /// `x + b` where `x` is `rows × cols` and `b` has `cols` elements.
    #[must_use]
    pub fn new(x: usize, b: usize) -> Self {
        AddRow { parents: [x, b] }
    }
}

/// `y[r, c] = x[r, c] + b[c]`, row by row (no index arithmetic per element), in the wide build
/// `elementwise` runs (`run` forced inline, as the pointwise loops).
struct RowsPlusBias<'a, A> {
    x: &'a [A],
    b: &'a [A],
    y: &'a mut [A],
}

impl<A: Scalar> super::WideLoop for RowsPlusBias<'_, A> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let cols = self.b.len().max(1);
        for (yr, xr) in self.y.chunks_exact_mut(cols).zip(self.x.chunks_exact(cols)) {
            for ((o, v), w) in yr.iter_mut().zip(xr).zip(self.b) {
                *o = A::pinned_add(v.clone(), w.clone());
            }
        }
    }
}

/// `s[c] = ((s[c] + g[0, c]) + g[1, c]) + …`, the rows in ascending order, in the wide build (each
/// column its own chain: the vector lanes are columns).
struct ColumnSums<'a, A> {
    g: &'a [A],
    s: &'a mut [A],
}

impl<A: Scalar> super::WideLoop for ColumnSums<'_, A> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for row in self.g.chunks_exact(self.s.len().max(1)) {
            for (acc, v) in self.s.iter_mut().zip(row) {
                *acc = A::pinned_add(acc.clone(), v.clone());
            }
        }
    }
}

/// `y[r, c] = x[r, c] + b[c]` over `y`'s whole rows (compiled in this crate for `f32` and `f64`:
/// `crate::compiled`).
pub(crate) fn forward_body<A: Scalar>(x: &[A], b: &[A], y: &mut [A]) {
    super::elementwise(RowsPlusBias { x, b, y });
}

/// `s[c]` plus the column sums of `g`'s rows of `s.len()`, rows ascending (compiled in this
/// crate for `f32` and `f64`: `crate::compiled`).
pub(crate) fn column_sums_body<A: Scalar>(g: &[A], s: &mut [A]) {
    super::elementwise(ColumnSums { g, s });
}

impl<A: Scalar, D> CompactOp<A, D> for AddRow {
    fn name(&self) -> &'static str {
        "add_row"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let (dx, db) =
            (super::dims_at("add_row", prefix, self.parents[0])?, super::dims_at("add_row", prefix, self.parents[1])?);
        super::ruled(super::spec_rules::add_row(dx.as_slice(), db.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let (x, b) = (ctx[self.parents[0]].data(), ctx[self.parents[1]].data());
        // One output element per element of `x`'s whole rows of `b.len()` (none for an empty `b`).
        let start = y.len();
        y.resize(start + x.len() / b.len().max(1) * b.len(), A::zero());
        crate::compiled::compiled_or_body!(A, add_row.0, forward_body, (x, b, &mut y[start..]));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let bd = saved.prefix[self.parents[1]].dims();
        let cols = bd.numel();
        let gd = g.data();
        let mut s = c.buffer_for(cols);
        s.resize(cols, A::zero());
        crate::compiled::compiled_or_body!(A, add_row.1, column_sums_body, (gd, &mut s));
        let s = RawTensor::from_vec(bd, s).expect("one element per column pushed");
        let l = c.single_cotangent(self.parents[0]);
        let r = c.single(self.parents[1], s);
        c.add(l, r)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::AddRow { x: self.parents[0], b: self.parents[1] })
    }
}

typed_op!(add_row(x: L, b: R) -> AddRow: AddRow, "broadcast add, `(M, N)` + `(N,)` → `(M, N)`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let (x, b) = (sample(&[3, 2], 15), sample(&[2], 16));
        let y = forward(AddRow::new(0, 1), &[x.clone(), b.clone()]);
        assert_eq!(y.data()[5], x.data()[5] + b.data()[1]);
        gradcheck(AddRow::new(0, 1), &[x, b], 1e-7);
    }

    #[test]
    fn mismatched_bias_is_reported() {
        let e = <AddRow as CompactOp<f64, ()>>::output_dims(&AddRow::new(0, 1), &[Dims::matrix(2, 3), Dims::vector(2)]);
        assert_eq!(
            e.unwrap_err(),
            "add_row needs the row vector's length (2) to equal the matrix's columns (3), got shapes [2, 3] and [2]"
        );
    }
}
