//! `reshape(x)`: the same elements in the same (row-major) order under another shape of the same
//! element count: `y[i] = x[i]`.
//!
//! VJP: `single(x, t)` with `t[i] = δ[i]` under the shape of `x`.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::ReshapeShape;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Reshape to a target shape of the same element count.
#[derive(Clone, Debug)]
pub struct Reshape {
    parents: [usize; 1],
    dims: Dims,
    /// The declared shape of `x`, when it has run-time dims (their stand-ins, see
    /// [`crate::shape::Binding`]): the target's run-time axes take the sizes `x` has there.
    from: Option<Dims>,
}

impl Reshape {
    /// `reshape(x)` to `dims`.
    #[must_use]
    pub fn new(x: usize, dims: Dims) -> Self {
        Reshape { parents: [x], dims, from: None }
    }

    /// `reshape(x)` from the declared shape `from` to `to`, either of which may hold run-time
    /// dims: at run time each run-time axis of `to` has the size `x` has at that dim's axis in
    /// `from` (so `[batch, 4, 4]` → `[batch, 16]` keeps the batch; a run-time dim of `to` that
    /// `from` lacks keeps its stand-in, which the shape rule then refuses).
    #[must_use]
    pub fn declared(x: usize, from: Dims, to: Dims) -> Self {
        let has_run_time = |d: Dims| d.as_slice().iter().any(|&a| crate::shape::run_time_index(a).is_some());
        Reshape { parents: [x], dims: to, from: (has_run_time(from) || has_run_time(to)).then_some(from) }
    }

    /// The target for an `x` of dims `actual`.
    fn target(&self, actual: Dims) -> Dims {
        match self.from {
            Some(from) if from.rank() == actual.rank() => crate::shape::binding_from(from, actual).resolve(self.dims),
            _ => self.dims,
        }
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("reshape", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::reshape(d.as_slice(), self.target(d).as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.parents[0]];
        RawTensor::from_parts(self.target(x.dims()), x.data().to_vec())
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        out.extend_from_slice(ctx[self.parents[0]].data());
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let gd = g.data();
        let t = c.tensor(saved.prefix[self.parents[0]].dims(), |i| gd[i].clone());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Reshape { a: self.parents[0], dims: self.dims.as_slice().to_vec() })
    }
}

/// Typed `reshape(x)` to the shape `To` (`ops::reshape::<(U3, U2), _, _, _, _>(x)`): the element
/// counts agree ([`ReshapeShape`]).
#[must_use]
pub fn reshape<To: Shape, A: Scalar, D: 'static, S: ReshapeShape<To, Output = To> + Shape, Br>(
    x: Position<S, Br>,
) -> Compact<Reshape, A, D, To> {
    Compact::new(Reshape::declared(x.index(), S::dims(), To::dims()), &[&x])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample};

    #[test]
    fn value_and_gradient() {
        let x = sample(&[2, 3], 110);
        let y = forward(Reshape::new(0, Dims::new(&[3, 1, 2]).unwrap()), std::slice::from_ref(&x));
        assert_eq!(y.dims(), Dims::new(&[3, 1, 2]).unwrap());
        assert_eq!(bits(&y), bits(&x));
        gradcheck(Reshape::new(0, Dims::vector(6)), &[x], 1e-7);
        gradcheck(Reshape::new(0, Dims::scalar()), &[sample(&[1, 1], 111)], 1e-7);
    }

    #[test]
    fn element_count_mismatch_names_both_shapes() {
        let op = Reshape::new(0, Dims::matrix(2, 2));
        let e = <Reshape as CompactOp<f64, ()>>::output_dims(&op, &[Dims::matrix(2, 3)]);
        assert_eq!(e.unwrap_err(), "reshape cannot turn shape [2, 3] (6 elements) into shape [2, 2] (4 elements)");
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U2, U3, U6};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3)>();
        let (g, y) = g.push(reshape::<(U3, U2), _, _, _, _>(x));
        let (g, z) = g.push(reshape::<(U6,), _, _, _, _>(y));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[z.index()], Dims::vector(6));
    }
}
