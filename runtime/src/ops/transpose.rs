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

/// `x` transposed (`out[j * rows + i] = x[i * cols + j]` for `x` of dims `d`), appended to
/// `out`: `permute(x, [1, 0])`'s copy (each output row a strided gather of a column of `x`).
fn transposed<A: Clone>(x: &RawTensor<A>, out: &mut Vec<A>) -> Dims {
    super::permute::permute_into(x.data(), x.dims(), &[1, 0], out)
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
        super::ruled(super::spec_rules::transpose(d.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let mut out = Vec::new();
        let d = transposed(&ctx[self.parents[0]], &mut out);
        RawTensor::from_parts(d, out)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        transposed(&ctx[self.parents[0]], out);
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        // g is cols × rows; its transpose is the operand's rows × cols.
        let mut v = c.buffer_for(g.dims().numel());
        let d = transposed(g, &mut v);
        let t = RawTensor::from_parts(d, v);
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
