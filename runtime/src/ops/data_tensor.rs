//! `data_tensor(x)`: `y = x`, a copy of a tensor read from the graph's data through an accessor
//! `fn(&D) -> &RawTensor<A>` — a leaf that brings non-differentiable data (a batch of images, a
//! mask, fixed embeddings) into the graph, so that every op can read it (`x * w`, `h + x`, …).
//!
//! The node has **no parents**: no gradient is computed for `x`, and nothing is propagated
//! through it. Like every node, its VJP is still a pack over the whole prefix; here it is
//! `fill(0)` ([`Contributions::zero`]): uniform `+0`, empty support. So in the dense reference
//! (SEMANTICS §3) the node adds `+0` to every earlier position (turning a `-0.0` there into `+0.0`,
//! exactly as any other node's zero contribution would), and the single-output pass reaches nothing
//! through it.
//!
//! For `x · w` with data `x`, prefer [`matmul_data`](super::matmul_data): it computes only `w`'s
//! gradient and needs no copy of `x`.
//!
//! Shapes: the output dims are fixed when the node is built (known before any data); `validate`
//! (run by `compile`, before `forward`) checks that the data's tensor has exactly those dims,
//! reporting both in decimal — an error from `compile`, never a panic.

use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::LeafShape;
use crate::shape::{Dims, Shape};
use crate::tensor::RawTensor;

use super::TensorAccessor;

/// A leaf whose value is a tensor of the graph's data (not differentiable).
pub struct DataTensor<A, D> {
    dims: Dims,
    x: TensorAccessor<A, D>,
}

impl<A, D> Clone for DataTensor<A, D> {
    fn clone(&self) -> Self {
        DataTensor { dims: self.dims, x: self.x }
    }
}

impl<A, D> core::fmt::Debug for DataTensor<A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DataTensor").field("dims", &self.dims).finish_non_exhaustive()
    }
}

impl<A, D> DataTensor<A, D> {
    /// The tensor `x(data)`, which must have dims `dims`.
    pub fn new(x: TensorAccessor<A, D>, dims: Dims) -> Self {
        DataTensor { dims, x }
    }
}

impl<A: Scalar, D: 'static> CompactOp<A, D> for DataTensor<A, D> {
    fn name(&self) -> &'static str {
        "data_tensor"
    }
    fn parents(&self) -> &[usize] {
        &[]
    }
    fn output_dims(&self, _: &[Dims]) -> Result<Dims, String> {
        super::ruled(super::spec_rules::leaf(self.dims.as_slice()))
    }
    fn validate(&self, _: &[RawTensor<A>], data: &D) -> Result<(), String> {
        let dx = (self.x)(data).dims();
        // Run-time axes (stand-ins) were bound from the data by `compile`.
        if crate::shape::fits_declared(self.dims, dx) {
            Ok(())
        } else {
            Err(format!("data_tensor needs the data's tensor to have shape {}, got shape {dx}", self.dims))
        }
    }
    fn data_dims(&self, data: &D) -> Result<Option<(Dims, Dims)>, String> {
        Ok(Some((self.dims, (self.x)(data).dims())))
    }
    fn forward(&self, _: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        (self.x)(data).clone()
    }
    fn forward_into(&self, _: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        out.extend_from_slice((self.x)(data).data());
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, _: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        c.zero()
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::DataTensor { dims: self.dims.as_slice().to_vec(), x: self.x })
    }
}

/// Typed `data_tensor(x)`: a leaf of shape `S` whose value is the tensor read from the data by `x`
/// (`compile` checks it has shape `S`).
///
/// ```
/// use exactgrad_runtime::{ops, Dims, GraphData, Pack, RawTensor, Tensor, typenum::U2};
///
/// fn x_of(d: &RawTensor<f64>) -> &RawTensor<f64> {
///     d
/// }
/// let (g, w) = GraphData::<f64, RawTensor<f64>>::new().input::<(U2,)>();
/// let (g, x) = g.push(ops::data_tensor::<_, _, (U2,)>(x_of));
/// let (g, y) = g.push(ops::mul(x, w));
/// let (g, s) = g.push(ops::sum(y));
/// let x = RawTensor::from_vec(Dims::vector(2), vec![3.0, 4.0]).unwrap();
/// let saved = g.compile(Pack::new().push(Tensor::from_vec(vec![1.0, 2.0]).unwrap()), x).unwrap();
/// assert_eq!(saved.value(y).unwrap().data(), &[3.0, 8.0]);
/// let grads = saved.backprop_from(s, Tensor::full(1.0)).unwrap();
/// assert_eq!(grads.get(w).unwrap().data(), &[3.0, 4.0]); // δ * x
/// ```
pub fn data_tensor<A: Scalar, D: 'static, S: LeafShape<Output = S> + Shape>(
    x: TensorAccessor<A, D>,
) -> Compact<DataTensor<A, D>, A, D, S> {
    Compact::new(DataTensor::new(x, S::dims()), &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::testing::{bits, sample};
    use crate::ops::Mul;
    use crate::pack::RawSeeds;
    use crate::saved::RawSavedGraph;

    fn owned<A>(d: &RawTensor<A>) -> &RawTensor<A> {
        d
    }

    /// Signed zeros, infinities and a NaN with a payload, in `f64`.
    fn special() -> RawTensor<f64> {
        let v = [-0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::from_bits(0x7ff8_0000_0000_0123), 1.5];
        RawTensor::from_vec(Dims::matrix(2, 3), v.to_vec()).unwrap()
    }

    #[test]
    fn value_is_the_data_bit_for_bit_and_the_vjp_is_zero() {
        let x = special();
        let mut graph = RawGraph::<f64, RawTensor<f64>>::new(vec![Dims::vector(2)]);
        let p = graph.push(RawNode::compact(DataTensor::new(owned, x.dims()))).unwrap();
        let saved = RawSavedGraph::compile(&graph, vec![sample(&[2], 40)], x.clone()).unwrap();
        assert_eq!(bits(&saved.values()[p.index()]), bits(&x));
        let node = saved.prepared_nodes().next().unwrap();
        assert!(node.node().support().is_some_and(<[usize]>::is_empty));
        let mut c = Contributions::new();
        let dense = node.vjp_dense(&special(), &mut c).unwrap();
        assert_eq!(dense.len(), 1);
        assert_eq!(bits(&dense[0]), vec![0.0f64.to_bits(); 2]);
    }

    /// `w`'s gradient of `sum(x * w)` with `x` an input and with `x` a data leaf: the same bits
    /// (seeded at the output only, so the leaf's `+0` meets a `+0`-seeded gradient).
    #[test]
    fn w_gradient_is_bit_identical_to_x_as_an_input() {
        let x = special();
        let w = RawTensor::from_vec(Dims::matrix(2, 3), vec![2.0, -0.0, 0.0, -1.0, 3.0, f64::NAN]).unwrap();
        let g = RawTensor::from_vec(Dims::matrix(2, 3), vec![-0.0, 1.0, f64::INFINITY, 0.5, -0.0, 2.0]).unwrap();

        let mut with_input = RawGraph::<f64, ()>::new(vec![x.dims(), w.dims()]);
        let p = with_input.push(RawNode::compact(Mul::new(0, 1))).unwrap();
        let saved = RawSavedGraph::compile(&with_input, vec![x.clone(), w.clone()], ()).unwrap();
        let mut seeds = RawSeeds::zeros(with_input.dims());
        seeds.set(p, g.clone()).unwrap();
        let reference = bits(&saved.backprop_all_dense(seeds).unwrap()[1]);

        let mut with_data = RawGraph::<f64, RawTensor<f64>>::new(vec![w.dims()]);
        let leaf = with_data.push(RawNode::compact(DataTensor::new(owned, x.dims()))).unwrap();
        let q = with_data.push(RawNode::compact(Mul::new(leaf.index(), 0))).unwrap();
        let saved = RawSavedGraph::compile(&with_data, vec![w], x).unwrap();
        let mut seeds = RawSeeds::zeros(with_data.dims());
        seeds.set(q, g).unwrap();
        let array = saved.backprop_all_array(seeds.clone()).unwrap();
        let dense = saved.backprop_all_dense(seeds).unwrap();
        assert_eq!(bits(&array[0]), bits(&dense[0]));
        assert_eq!(bits(&dense[0]), reference);
    }

    #[test]
    fn a_data_tensor_of_the_wrong_shape_is_a_compile_error_in_decimal() {
        let mut graph = RawGraph::<f64, RawTensor<f64>>::new(Vec::new());
        graph.push(RawNode::compact(DataTensor::new(owned, Dims::matrix(12, 3)))).unwrap();
        match RawSavedGraph::compile(&graph, Vec::new(), sample(&[3, 12], 41)) {
            Err(Error::Node { node, op, message, .. }) => {
                assert_eq!((node, op.as_str()), (0, "data_tensor"));
                assert_eq!(message, "data_tensor needs the data's tensor to have shape [12, 3], got shape [3, 12]");
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("compile accepted a data tensor of shape [3, 12]"),
        }
    }
}
