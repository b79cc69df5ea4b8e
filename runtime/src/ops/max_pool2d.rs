//! `max_pool2d(x)` with kernel `k`, stride `s` and padding `p` (each a pair: height, width): the
//! maximum of every window of a batch of images `x: [n, c, h, w]` (NCHW), channel by channel. The
//! output is `[n, c, h_out, w_out]` with `h_out = (h + 2·p₀ − k₀) / s₀ + 1` and `w_out` likewise;
//! the padding is never a candidate (it is not a `-∞` or a `0`: padded taps are skipped), and
//! `2·p ≤ k` with `h, w ≥ 1` makes every window hold at least one element of `x`.
//!
//! The window of output `(i, j)` holds `x[b, ch, i·s₀ + ki − p₀, j·s₁ + kj − p₁]` for the taps
//! `(ki, kj)` inside the image, in **window order** (`ki` ascending, then `kj`). The scan keeps
//! the first element and replaces the kept one `m` by a later element `v` unless `m` wins, with
//! the rule of `max` (SEMANTICS §8.1):
//!
//! * `m > v` or `m == v` (ties, including `-0.0` and `+0.0`): `m` stays — the **first** maximal
//!   element in window order wins;
//! * `m < v`: `v`;
//! * unordered (a NaN): a NaN wins — `m` stays if it is a NaN, else `v` (the NaN) replaces it. So
//!   the first NaN in window order is the output, with its payload.
//!
//! `y[b, ch, i, j]` is the kept element (a copy: no arithmetic).
//!
//! VJP: `single(x, t)` where `t[e] = Σ δ[o]` over the outputs `o` whose kept element is `e`, in
//! ascending output order, starting from `0` (`t = 0` where no window keeps `e`, and `0 + δ` where
//! one does: a `-0.0` cotangent arrives as `+0.0`). A select, not a product: a NaN or infinite
//! cotangent reaches only the kept elements.

use core::cmp::Ordering;

use super::sliding::{Plane, PoolWindow};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// Max pooling over windows of a batch of images (ties and NaNs: see the module docs).
#[derive(Clone, Debug)]
pub struct MaxPool2d {
    parents: [usize; 1],
    window: PoolWindow,
}

impl MaxPool2d {
    /// `max_pool2d(x)` for the position `x` with `kernel`, `stride` and `padding` (each height,
    /// width).
    pub fn new(x: usize, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Self {
        MaxPool2d { parents: [x], window: PoolWindow { kernel, stride, padding } }
    }
}

/// Whether the kept element `m` stays against the later element `v` (module docs).
#[inline]
fn stays<A: PartialOrd>(m: &A, v: &A) -> bool {
    match m.partial_cmp(v) {
        Some(o) => o != Ordering::Less,
        None => m.partial_cmp(m).is_none(),
    }
}

/// The position in its plane of the element kept by the window of output `(i, j)` of `plane`
/// (one image channel), or `None` for a window without an element (never, by the shape rule).
#[inline]
fn kept<A: PartialOrd>(p: &Plane, plane: &[A], i: usize, j: usize) -> Option<usize> {
    let mut window = p.window(i, j);
    let first = window.next()?;
    Some(window.fold(first, |m, e| if stays(&plane[m], &plane[e]) { m } else { e }))
}

impl<A: Scalar + PartialOrd, D> CompactOp<A, D> for MaxPool2d {
    fn name(&self) -> &str {
        "max_pool2d"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let x = super::dims_at("max_pool2d", prefix, self.parents[0])?;
        self.window.plane("max_pool2d", x).map(|(out, _)| out)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let (out, _) = self.window.accepted("max_pool2d", ctx[self.parents[0]].dims());
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let (_, p) = self.window.accepted("max_pool2d", x.dims());
        let n = p.plane_len();
        for plane in x.data().chunks_exact(n.max(1)).take(p.batch * p.channels) {
            for i in 0..p.out[0] {
                for j in 0..p.out[1] {
                    let e = kept(&p, plane, i, j).expect("every window holds an element (shape rule)");
                    y.push(plane[e].clone());
                }
            }
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let x = &saved.prefix[self.parents[0]];
        let (_, p) = self.window.accepted("max_pool2d", x.dims());
        let (n, out) = (p.plane_len(), p.out_len());
        let mut t = c.buffer_for(x.numel());
        t.extend((0..x.numel()).map(|_| A::zero()));
        if n > 0 && out > 0 {
            let planes = x.data().chunks_exact(n).zip(t.chunks_exact_mut(n)).zip(g.data().chunks_exact(out));
            for ((plane, tp), delta) in planes {
                for i in 0..p.out[0] {
                    for j in 0..p.out[1] {
                        let e = kept(&p, plane, i, j).expect("every window holds an element (shape rule)");
                        tp[e] = A::pinned_add(tp[e].clone(), delta[i * p.out[1] + j].clone());
                    }
                }
            }
        }
        c.single(self.parents[0], RawTensor::from_parts(x.dims(), t))
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        let w = &self.window;
        Some(RefOp::max_pool(self.parents[0], w.kernel.to_vec(), w.stride.to_vec(), w.padding.to_vec()))
    }
}

typed_op!(max_pool2d(x: X; kernel: @K as [usize; 2], stride: @St as [usize; 2], padding: @P as [usize; 2]) -> MaxPool2d: Pool2d, "`[n, c, h, w] → [n, c, h_out, w_out]`, each constant a pair of typenum values `(height, width)`; the rule computes the output sizes and rejects a kernel that does not fit, a zero kernel or stride, or a padding above half the kernel");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    fn t(d: &[usize], v: Vec<f64>) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::new(d).unwrap(), v).unwrap()
    }

    #[test]
    fn value() {
        let x = t(&[1, 1, 3, 4], vec![1.0, 5.0, 2.0, 0.0, 3.0, 4.0, 9.0, 8.0, 7.0, 6.0, 1.0, 2.0]);
        let y = forward(MaxPool2d::new(0, [2, 2], [2, 2], [0, 0]), std::slice::from_ref(&x));
        assert_eq!((y.dims(), y.data()), (Dims::new(&[1, 1, 1, 2]).unwrap(), &[5.0, 9.0][..]));
        // Padding 1, stride 1, kernel 2 × 3: the padding is skipped, never a candidate.
        let y = forward(MaxPool2d::new(0, [2, 3], [1, 1], [1, 1]), std::slice::from_ref(&x));
        assert_eq!(y.dims(), Dims::new(&[1, 1, 4, 4]).unwrap());
        assert_eq!(y.data()[..4], [5.0, 5.0, 5.0, 2.0]);
        let neg = t(&[1, 1, 1, 1], vec![-3.0]);
        assert_eq!(forward(MaxPool2d::new(0, [3, 3], [1, 1], [1, 1]), &[neg]).data(), &[-3.0]);
    }

    #[test]
    fn gradient() {
        // Overlapping windows (stride below the kernel): elements kept twice get both cotangents.
        for (k, s, p) in [([2, 2], [2, 2], [0, 0]), ([3, 2], [1, 1], [1, 1]), ([2, 3], [2, 1], [1, 0])] {
            gradcheck(MaxPool2d::new(0, k, s, p), &[sample(&[2, 2, 5, 4], 60)], 1e-7);
        }
    }

    #[test]
    fn ties_and_nans_go_to_the_first_in_window_order() {
        let nan1 = f64::from_bits(0x7ff8_0000_0000_0001);
        let nan2 = f64::from_bits(0xfff8_0000_0000_0002);
        // Windows of 4: a tie of -0 and +0, a tie of 2s, NaNs after a number, a larger later value.
        let x =
            t(&[1, 1, 2, 8], vec![-0.0, 0.0, 2.0, 1.0, 1.0, nan1, 1.0, 3.0, 0.0, -0.0, 2.0, 0.0, nan2, 7.0, 2.0, 4.0]);
        let op = MaxPool2d::new(0, [2, 2], [2, 2], [0, 0]);
        let y = forward(op.clone(), std::slice::from_ref(&x));
        assert_eq!(bits(&y), [(-0.0f64).to_bits(), 2.0f64.to_bits(), nan1.to_bits(), 4.0f64.to_bits()]);
        let g = t(&[1, 1, 1, 4], vec![-0.0, f64::NAN, 5.0, 6.0]);
        let d = vjp(op, &[x], &g);
        let mut expected = [0u64; 16];
        expected[0] = 0; // 0 + -0 = +0
        expected[2] = f64::NAN.to_bits(); // the first 2 in window order
        expected[5] = 5.0f64.to_bits(); // the first NaN
        expected[15] = 6.0f64.to_bits();
        assert_eq!(bits(&d[0]), expected);
    }

    #[test]
    fn overlapping_windows_add_in_output_order() {
        // The 9 is kept by all four windows of 2 × 2, stride 1: ((((0 + a) + b) + c) + d).
        let x = t(&[1, 1, 3, 3], vec![0.0, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0]);
        let g = t(&[1, 1, 2, 2], vec![1e16, 1.0, -1e16, 1.0]);
        let d = vjp(MaxPool2d::new(0, [2, 2], [1, 1], [0, 0]), &[x], &g);
        assert_eq!(d[0].data()[4], (((0.0 + 1e16) + 1.0) + -1e16) + 1.0);
    }

    #[test]
    fn shape_errors_are_named() {
        let rule = |op: MaxPool2d, x: &[usize]| {
            <MaxPool2d as CompactOp<f64, ()>>::output_dims(&op, &[Dims::new(x).unwrap()]).unwrap_err()
        };
        assert_eq!(
            rule(MaxPool2d::new(0, [2, 2], [2, 2], [2, 0]), &[1, 1, 4, 4]),
            "max_pool2d needs a padding of at most half the kernel, got padding (2, 0) for kernel (2, 2)"
        );
    }

    #[test]
    fn integers() {
        let x = RawTensor::from_vec(Dims::new(&[1, 1, 2, 2]).unwrap(), vec![3i64, 7, 7, -1]).unwrap();
        let mut graph = crate::graph::RawGraph::<i64, ()>::new(vec![x.dims()]);
        let p = graph.push(crate::graph::RawNode::compact(MaxPool2d::new(0, [2, 2], [1, 1], [0, 0]))).unwrap();
        let saved = crate::saved::RawSavedGraph::compile(&graph, vec![x], ()).unwrap();
        assert_eq!(saved.values()[p.index()].data(), &[7]);
        let grads = saved.backprop_from(p, RawTensor::full(Dims::new(&[1, 1, 1, 1]).unwrap(), 10)).unwrap();
        assert_eq!(grads[0].data(), &[0, 10, 0, 0]);
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U0, U1, U2, U3, U5};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3, U5, U5)>();
        let (g, y) = g.push(max_pool2d(x, (U2::new(), U3::new()), (U2::new(), U1::new()), (U1::new(), U0::new())));
        assert!(g.build_errors().is_empty());
        // Height (5 + 2 − 2) / 2 + 1 = 3, width (5 − 3) / 1 + 1 = 3.
        assert_eq!(g.raw().dims()[y.index()], Dims::new(&[2, 3, 3, 3]).unwrap());
    }
}
