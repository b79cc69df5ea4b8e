//! `matmul_data(x, w)`: `y[i, j] = Σ_t x[i, t] * w[t, j]` for `x: m×k` read from the graph's data
//! through an accessor `fn(&D) -> &RawTensor<A>`, and `w: k×n` a position; each sum taken in
//! ascending `t` starting from `0`, with the same kernel ([`gemm`]) and operand order as
//! [`matmul`](super::matmul), so the value is bit-identical to `matmul` on the same operands.
//!
//! VJP: `single(w, xᵀ · δ)`, products `δ[i, j] * x[i, t]` (δ on the left) — exactly the
//! `b`-gradient of [`MatMul`](super::MatMul), computed by the same `gemm` call, so it is
//! bit-identical to `matmul`'s `w`-gradient. `x` is data, not differentiable: no `δ · wᵀ` product
//! is computed (for a first layer `x · w1` that is a third of the layer's FLOPs).
//!
//! Shapes: the row count `m` is fixed when the node is built (the output is `m×n`, known before
//! any data); the shape rule checks `w` is a matrix, and `validate` (run by `compile`, before
//! `forward`) checks that the data's `x` is `m×k`, reporting shapes in decimal — an error from
//! `compile`, never a panic.

use crate::reference::RefOp;
use crate::shape::rules::MatMulShape;
use core::ops::Mul;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Reads a tensor out of the graph's data.
pub type TensorAccessor<A, D> = fn(&D) -> &RawTensor<A>;

/// Matrix product `x · w` whose left operand `x` is non-differentiable data.
pub struct MatMulData<A, D> {
    parents: [usize; 1],
    rows: usize,
    x: TensorAccessor<A, D>,
}

impl<A, D> Clone for MatMulData<A, D> {
    fn clone(&self) -> Self {
        MatMulData { parents: self.parents, rows: self.rows, x: self.x }
    }
}

impl<A, D> core::fmt::Debug for MatMulData<A, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MatMulData").field("parents", &self.parents).field("rows", &self.rows).finish_non_exhaustive()
    }
}

impl<A, D> MatMulData<A, D> {
    /// The data operand `x` of this node.
    pub(crate) fn data_operand<'d>(&self, data: &'d D) -> &'d RawTensor<A> {
        (self.x)(data)
    }

    /// `x(data) · w` for the `rows × k` matrix `x` read from the data and the `k × n` matrix at
    /// position `w`.
    pub fn new(x: TensorAccessor<A, D>, rows: usize, w: usize) -> Self {
        MatMulData { parents: [w], rows, x }
    }
}

fn kn(w: Dims) -> (usize, usize) {
    (w.as_slice()[0], w.as_slice()[1])
}

impl<A: Scalar + Mul<Output = A>, D: 'static> CompactOp<A, D> for MatMulData<A, D> {
    fn name(&self) -> &'static str {
        "matmul_data"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let dw = super::dims_at("matmul_data", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::matmul_data(self.rows, dw.as_slice()))
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        let (k, _) = kn(ctx[self.parents[0]].dims());
        let dx = (self.x)(data).dims();
        match *dx.as_slice() {
            // A run-time row count (a stand-in) was bound from the data by `compile`.
            [m, c] if (m == self.rows || crate::shape::run_time_index(self.rows).is_some()) && c == k => Ok(()),
            [m, c] if c == k => {
                Err(format!("matmul_data needs the data operand to have {} rows, got shape {dx} ({m} rows)", self.rows))
            }
            [_, c] => Err(format!(
                "matmul_data needs the data operand's columns ({c}) to equal the right operand's rows ({k})"
            )),
            _ => Err(format!("matmul_data needs the data operand to be a matrix (rank 2), got shape {dx}")),
        }
    }
    fn data_dims(&self, data: &D) -> Result<Option<(Dims, Dims)>, String> {
        let dx = (self.x)(data).dims();
        let rows = dx.as_slice().first().copied().unwrap_or(0);
        Ok(Some((Dims::vector(self.rows), Dims::vector(rows))))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        // The same kernel call as `MatMul::forward` (`validate` checked `x` is `rows × k`).
        super::matmul::product((self.x)(data), &ctx[self.parents[0]])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        super::matmul::product_into((self.x)(data), &ctx[self.parents[0]], out);
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let pw = self.parents[0];
        let (x, w) = ((self.x)(saved.data), &saved.prefix[pw]);
        // xᵀ · δ: the same kernel call as `MatMul`'s right-operand gradient.
        let mut gw = c.buffer_for(w.numel());
        super::matmul::right_gradient(x, g, w.dims(), &mut gw);
        c.single(pw, RawTensor::from_parts(w.dims(), gw))
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::matmul_data(self.parents[0], self.rows, self.x))
    }
    fn as_product(&self) -> Option<&dyn super::ProductVjp<A, D>> {
        Some(self)
    }
}

/// Typed `x · w` with `x` read from the data by `x`: `X = (M, K)` data · `(K, N)` → `(M, N)`
/// ([`MatMulShape`]); `compile` checks the data's `x` is `M × K`. `X` is a matrix: a batch
/// `(B, M, K)` is a build error reported by `compile` (`graph!` puts a data batch under the
/// general [`matmul`](super::matmul) as a [`data_tensor`](super::data_tensor) leaf).
///
/// ```
/// use exactgrad_runtime::{ops, GraphData, Pack, RawTensor, Dims, Tensor, typenum::{U1, U2, U3}};
///
/// fn x_of(d: &RawTensor<f64>) -> &RawTensor<f64> {
///     d
/// }
/// let (g, w) = GraphData::<f64, RawTensor<f64>>::new().input::<(U3, U2)>();
/// let (g, y) = g.push(ops::matmul_data::<_, _, (U1, U3), _, _, _>(x_of, w));
/// let (g, s) = g.push(ops::sum(y));
/// let x = RawTensor::from_vec(Dims::matrix(1, 3), vec![1.0, 2.0, 3.0]).unwrap();
/// let inputs = Pack::new().push(Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap());
/// let saved = g.compile(inputs, x).unwrap();
/// assert_eq!(saved.value(y).unwrap().data(), &[4.0, 5.0]);
/// let grads = saved.backprop_from(s, Tensor::full(1.0)).unwrap();
/// assert_eq!(grads.get(w).unwrap().data(), &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]); // xᵀ · 1
/// ```
pub fn matmul_data<A: Scalar + Mul<Output = A>, D: 'static, X: MatMulShape<W, Output = O>, W, O: Shape, Br>(
    x: TensorAccessor<A, D>,
    w: Position<W, Br>,
) -> Compact<MatMulData<A, D>, A, D, O> {
    let rows = O::dims().as_slice().first().copied().unwrap_or(0);
    Compact::new(MatMulData::new(x, rows, w.index()), &[&w])
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::error::Error;
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::testing::{bits, forward, gradcheck, sample};
    use crate::ops::MatMul;
    use crate::pack::RawSeeds;
    use crate::saved::RawSavedGraph;

    fn x3x4(_: &()) -> &RawTensor<f64> {
        static X: OnceLock<RawTensor<f64>> = OnceLock::new();
        X.get_or_init(|| sample(&[3, 4], 31))
    }

    fn owned<A>(d: &RawTensor<A>) -> &RawTensor<A> {
        d
    }

    #[test]
    fn value_matches_matmul_and_gradient_matches_finite_differences() {
        let w = sample(&[4, 2], 32);
        let y = forward(MatMulData::new(x3x4, 3, 0), std::slice::from_ref(&w));
        let reference = forward(MatMul::new(0, 1), &[x3x4(&()).clone(), w.clone()]);
        assert_eq!(bits(&y), bits(&reference));
        gradcheck(MatMulData::new(x3x4, 3, 0), &[w], 1e-7);
    }

    /// Values that exercise the exact contract: signed zeros, infinities, NaNs with payloads,
    /// subnormals, and ordinary values of mixed magnitude.
    fn adversarial(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| match (i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) % 23 {
                0 => -0.0,
                1 => 0.0,
                2 => f32::INFINITY,
                3 => f32::NEG_INFINITY,
                4 => f32::from_bits(0x7fc0_0000 | (i % 97 + 1)),
                5 => f32::from_bits(0xff80_0000 | (seed % 89 + 1)),
                6 => f32::from_bits(i % 1000 + 1),
                7 => 1e30,
                k => (k as f32 - 12.0) * 0.37 + (i % 13) as f32 * 1e-3,
            })
            .collect()
    }

    /// `w`'s gradient of `x · w` seeded with `g` at the product, through `MatMul` (x an input) and
    /// through `MatMulData` (x data), on the array and the dense pass.
    fn both_w_gradients(m: usize, k: usize, n: usize, seed: u32) -> [(Vec<u32>, Vec<u32>); 2] {
        let x = RawTensor::from_vec(Dims::matrix(m, k), adversarial(m * k, seed)).unwrap();
        let w = RawTensor::from_vec(Dims::matrix(k, n), adversarial(k * n, seed + 1)).unwrap();
        let g = RawTensor::from_vec(Dims::matrix(m, n), adversarial(m * n, seed + 2)).unwrap();
        let as_bits = |t: &RawTensor<f32>| t.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>();

        let mut with_input = RawGraph::<f32, ()>::new(vec![x.dims(), w.dims()]);
        let p = with_input.push(RawNode::compact(MatMul::new(0, 1))).unwrap();
        let saved = RawSavedGraph::compile(&with_input, vec![x.clone(), w.clone()], ()).unwrap();
        let mut seeds = RawSeeds::zeros(with_input.dims());
        seeds.set(p, g.clone()).unwrap();
        let array = saved.backprop_all_array(seeds.clone()).unwrap();
        let dense = saved.backprop_all_dense(seeds).unwrap();
        let via_matmul = (as_bits(&array[1]), as_bits(&dense[1]));

        let mut with_data = RawGraph::<f32, RawTensor<f32>>::new(vec![w.dims()]);
        let q = with_data.push(RawNode::compact(MatMulData::new(owned, m, 0))).unwrap();
        let saved_data = RawSavedGraph::compile(&with_data, vec![w], x).unwrap();
        assert_eq!(
            as_bits(&saved_data.values()[q.index()]),
            as_bits(&saved.values()[p.index()]),
            "forward differs from matmul ({m}×{k}×{n})"
        );
        let mut seeds = RawSeeds::zeros(with_data.dims());
        seeds.set(q, g).unwrap();
        let array = saved_data.backprop_all_array(seeds.clone()).unwrap();
        let dense = saved_data.backprop_all_dense(seeds).unwrap();
        [via_matmul, (as_bits(&array[0]), as_bits(&dense[0]))]
    }

    #[test]
    fn w_gradient_is_bit_identical_to_matmul() {
        // Small (portable kernel) and large enough for the fast f32 kernel, odd sizes for the
        // panel edges.
        for (s, &(m, k, n)) in [(2, 3, 2), (5, 7, 3), (16, 32, 16), (33, 19, 41), (64, 70, 10)].iter().enumerate() {
            let [(ma, md), (da, dd)] = both_w_gradients(m, k, n, 7 * s as u32 + 1);
            assert_eq!(ma, md, "matmul: array vs dense ({m}×{k}×{n})");
            assert_eq!(da, dd, "matmul_data: array vs dense ({m}×{k}×{n})");
            assert_eq!(da, ma, "matmul_data vs matmul ({m}×{k}×{n})");
        }
    }

    fn compile_error(x: RawTensor<f64>) -> Error {
        let mut graph = RawGraph::<f64, RawTensor<f64>>::new(vec![Dims::matrix(3, 2)]);
        graph.push(RawNode::compact(MatMulData::new(owned, 4, 0))).unwrap();
        match RawSavedGraph::compile(&graph, vec![sample(&[3, 2], 33)], x) {
            Err(e) => e,
            Ok(_) => panic!("compile accepted a data operand of shape {}", Dims::matrix(3, 2)),
        }
    }

    fn message(e: Error) -> String {
        match e {
            Error::Node { node, op, message, .. } => {
                assert_eq!((node, op.as_str()), (0, "matmul_data"));
                message
            }
            e => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn bad_data_shapes_are_compile_errors_in_decimal() {
        assert_eq!(
            message(compile_error(sample(&[4, 12], 34))),
            "matmul_data needs the data operand's columns (12) to equal the right operand's rows (3)"
        );
        assert_eq!(
            message(compile_error(sample(&[10, 3], 35))),
            "matmul_data needs the data operand to have 4 rows, got shape [10, 3] (10 rows)"
        );
        assert_eq!(
            message(compile_error(sample(&[12], 36))),
            "matmul_data needs the data operand to be a matrix (rank 2), got shape [12]"
        );
        let e =
            <MatMulData<f64, ()> as CompactOp<f64, ()>>::output_dims(&MatMulData::new(x3x4, 3, 0), &[Dims::vector(4)]);
        assert_eq!(e.unwrap_err(), "matmul needs the right operand to be a matrix (rank 2), got shape [4]");
    }
}
