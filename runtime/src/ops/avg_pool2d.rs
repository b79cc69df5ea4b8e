//! `avg_pool2d(x)` with kernel `k`, stride `s` and padding `p` (each a pair: height, width): the
//! mean of every window of a batch of images `x: [n, c, h, w]` (NCHW), channel by channel. The
//! output is `[n, c, h_out, w_out]` with `h_out = (h + 2·p₀ − k₀) / s₀ + 1` and `w_out` likewise;
//! `2·p ≤ k` with `h, w ≥ 1` makes every window hold at least one element of `x`.
//!
//! **The padding does not count**: neither in the sum nor in the divisor. The window of output
//! `(i, j)` holds the `count(i, j)` elements `x[b, ch, i·s₀ + ki − p₀, j·s₁ + kj − p₁]` inside the
//! image, in window order (`ki` ascending, then `kj`), and
//!
//! ```text
//! y[b, ch, i, j] = (((0 + e₀) + e₁) + …) / count(i, j)
//! ```
//!
//! a sum with the engine's pinned `+` in window order, divided by the count as a scalar
//! (`FromPrimitive::from_usize`; `compile` reports a count the scalar cannot hold). SEMANTICS
//! §8.1.
//!
//! VJP: `single(x, t)` with `t[e] = Σ δ[o] / count(o)` over the outputs `o` whose window holds
//! `e`, in ascending output order, starting from `0` (`t = 0` where no window holds `e`).

use core::ops::Div;

use num_traits::FromPrimitive;

use super::sliding::PoolWindow;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Average pooling over windows of a batch of images, padding not counted (see the module docs).
#[derive(Clone, Debug)]
pub struct AvgPool2d {
    parents: [usize; 1],
    window: PoolWindow,
}

impl AvgPool2d {
    /// `avg_pool2d(x)` for the position `x` with `kernel`, `stride` and `padding` (each height,
    /// width).
    pub fn new(x: usize, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Self {
        AvgPool2d { parents: [x], window: PoolWindow { kernel, stride, padding } }
    }
}

/// `n` as a scalar (every count the shape rule allowed was checked by `output_dims`).
fn count<A: FromPrimitive>(n: usize) -> A {
    A::from_usize(n).expect("output_dims checked that every window's count is a scalar of A")
}

impl<A: Scalar + Div<Output = A> + FromPrimitive, D> CompactOp<A, D> for AvgPool2d {
    fn name(&self) -> &str {
        "avg_pool2d"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let x = super::dims_at("avg_pool2d", prefix, self.parents[0])?;
        let (out, p) = self.window.plane("avg_pool2d", x)?;
        // Every count is at most `min(kernel, size)` along each axis.
        let largest = p.kernel[0].min(p.size[0]) * p.kernel[1].min(p.size[1]);
        if A::from_usize(largest).is_none() {
            return Err(format!("avg_pool2d cannot represent window counts up to {largest} in its scalar type"));
        }
        Ok(out)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let (out, _) = self.window.accepted("avg_pool2d", ctx[self.parents[0]].dims());
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let (_, p) = self.window.accepted("avg_pool2d", x.dims());
        let n = p.plane_len();
        for plane in x.data().chunks_exact(n.max(1)).take(p.batch * p.channels) {
            for i in 0..p.out[0] {
                for j in 0..p.out[1] {
                    let sum = super::sum::pinned_sum(p.window(i, j).map(|e| plane[e].clone()));
                    y.push(sum / count::<A>(p.count(i, j)));
                }
            }
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let (_, p) = self.window.accepted("avg_pool2d", d);
        let (n, out) = (p.plane_len(), p.out_len());
        let mut t = c.buffer_for(d.numel());
        t.extend((0..d.numel()).map(|_| A::zero()));
        if n > 0 && out > 0 {
            for (tp, delta) in t.chunks_exact_mut(n).zip(g.data().chunks_exact(out)) {
                for i in 0..p.out[0] {
                    for j in 0..p.out[1] {
                        let q = delta[i * p.out[1] + j].clone() / count::<A>(p.count(i, j));
                        for e in p.window(i, j) {
                            tp[e] = A::pinned_add(tp[e].clone(), q.clone());
                        }
                    }
                }
            }
        }
        c.single(self.parents[0], RawTensor::from_parts(d, t))
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        let w = &self.window;
        Some(RefOp::avg_pool(self.parents[0], w.kernel.to_vec(), w.stride.to_vec(), w.padding.to_vec()))
    }
}

typed_op!(avg_pool2d(x: X; kernel: @K as [usize; 2], stride: @St as [usize; 2], padding: @P as [usize; 2]) -> AvgPool2d: Pool2d, "`[n, c, h, w] → [n, c, h_out, w_out]`, each constant a pair of typenum values `(height, width)`; the rule computes the output sizes and rejects a kernel that does not fit, a zero kernel or stride, or a padding above half the kernel");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    fn t(d: &[usize], v: Vec<f64>) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::new(d).unwrap(), v).unwrap()
    }

    #[test]
    fn value_and_padding_does_not_count() {
        let x = t(&[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 6.0]);
        let y = forward(AvgPool2d::new(0, [2, 2], [1, 1], [0, 0]), std::slice::from_ref(&x));
        assert_eq!(y.data(), &[3.0]);
        // Padding 1, kernel 2, stride 1: 3 × 3 windows holding 1, 2 or 4 elements.
        let y = forward(AvgPool2d::new(0, [2, 2], [1, 1], [1, 1]), &[x]);
        assert_eq!(y.data(), &[1.0, 1.5, 2.0, 2.0, 3.0, 4.0, 3.0, 4.5, 6.0]);
    }

    #[test]
    fn gradient() {
        for (k, s, p) in [([2, 2], [2, 2], [0, 0]), ([3, 2], [1, 1], [1, 1]), ([2, 3], [2, 1], [1, 0])] {
            gradcheck(AvgPool2d::new(0, k, s, p), &[sample(&[2, 2, 5, 4], 70)], 1e-7);
        }
    }

    #[test]
    fn vjp_adds_quotients_in_output_order() {
        let x = sample(&[1, 1, 2, 2], 71);
        let g = t(&[1, 1, 3, 3], vec![-0.0, 1e16, 3.0, 1.0, -1e16, 5.0, 6.0, 7.0, 8.0]);
        let d = vjp(AvgPool2d::new(0, [2, 2], [1, 1], [1, 1]), &[x], &g);
        // Element (0, 0) is in the windows 0 (1 element), 1 (2), 3 (2) and 4 (4), in that order.
        let e0: f64 = (((0.0 + -0.0 / 1.0) + 1e16 / 2.0) + 1.0 / 2.0) + -1e16 / 4.0;
        assert_eq!(d[0].data()[0].to_bits(), e0.to_bits());
        // A -0.0 cotangent alone arrives as +0.0.
        let d =
            vjp(AvgPool2d::new(0, [1, 1], [1, 1], [0, 0]), &[sample(&[1, 1, 1, 1], 72)], &t(&[1, 1, 1, 1], vec![-0.0]));
        assert_eq!(bits(&d[0]), [0]);
    }

    #[test]
    fn integers_divide_by_the_count() {
        let x = RawTensor::from_vec(Dims::new(&[1, 1, 1, 3]).unwrap(), vec![7i64, 2, 4]).unwrap();
        let mut graph = crate::graph::RawGraph::<i64, ()>::new(vec![x.dims()]);
        let p = graph.push(crate::graph::RawNode::compact(AvgPool2d::new(0, [1, 2], [1, 1], [0, 1]))).unwrap();
        let saved = crate::saved::RawSavedGraph::compile(&graph, vec![x], ()).unwrap();
        // Windows {7}, {7, 2}, {2, 4}, {4}.
        assert_eq!(saved.values()[p.index()].data(), &[7, 4, 3, 4]);
    }

    #[test]
    fn a_count_the_scalar_cannot_hold_is_an_error() {
        let op = AvgPool2d::new(0, [1, 300], [1, 1], [0, 0]);
        let e = <AvgPool2d as CompactOp<u8, ()>>::output_dims(&op, &[Dims::new(&[1, 1, 1, 300]).unwrap()]);
        assert_eq!(e.unwrap_err(), "avg_pool2d cannot represent window counts up to 300 in its scalar type");
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U1, U2, U3, U4};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U1, U2, U4, U3)>();
        let (g, y) = g.push(avg_pool2d(x, (U2::new(), U2::new()), (U2::new(), U2::new()), (U1::new(), U1::new())));
        assert!(g.build_errors().is_empty());
        // Height (4 + 2 − 2) / 2 + 1 = 3, width (3 + 2 − 2) / 2 + 1 = 2.
        assert_eq!(g.raw().dims()[y.index()], Dims::new(&[1, 2, 3, 2]).unwrap());
    }
}
