//! `transpose(a)`: `y[j, i] = a[i, j]` for a matrix `a`.
//!
//! VJP: `single(a, δᵀ)`.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Matrix transpose.
#[derive(Clone, Debug)]
pub struct Transpose {
    parents: [usize; 1],
}

impl Transpose {
    /// `aᵀ` for the matrix at position `a`.
    #[must_use]
    pub fn new(a: usize) -> Self {
        Transpose { parents: [a] }
    }
}

/// `out[j * rows + i] = x[i * cols + j]`.
fn transposed<A: Clone>(x: &[A], rows: usize, cols: usize) -> impl Fn(usize) -> A + '_ {
    move |o| x[(o % rows) * cols + o / rows].clone()
}

impl<A: Scalar, D> CompactOp<A, D> for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("transpose", prefix, self.parents[0])?;
        super::ruled(exactgrad_spec::rules::transpose(d.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.parents[0]];
        let (r, c) = (x.dims().as_slice()[0], x.dims().as_slice()[1]);
        RawTensor::from_fn(Dims::matrix(c, r), transposed(x.data(), r, c))
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let (r, c) = (x.dims().as_slice()[0], x.dims().as_slice()[1]);
        out.extend((0..r * c).map(transposed(x.data(), r, c)));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let (r, cols) = (d.as_slice()[0], d.as_slice()[1]);
        // g is cols × r; its transpose is r × cols.
        let t = c.tensor(d, transposed(g.data(), cols, r));
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Transpose { a: self.parents[0] })
    }
}

typed_op!(transpose(a: S) -> Transpose: Transpose, "`aᵀ`, `(M, N)` → `(N, M)`");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = sample(&[2, 3], 12);
        let y = forward(Transpose::new(0), std::slice::from_ref(&x));
        assert_eq!(y.dims(), Dims::matrix(3, 2));
        assert_eq!(y.data()[2 * 2 + 1], x.data()[3 + 2]);
        gradcheck(Transpose::new(0), &[x], 1e-7);
    }
}
