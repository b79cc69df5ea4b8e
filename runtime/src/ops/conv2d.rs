//! `conv2d(x, w)` with stride `s`, padding `p` and dilation `d` (each a pair: height, width): the
//! cross-correlation of a batch of images `x: [n, c_in, h, w]` (channels first, NCHW) with the
//! filters `w: [c_out, c_in, kh, kw]`, no bias. The output is `[n, c_out, h_out, w_out]` with
//! `h_out = (h + 2·p₀ − d₀·(kh − 1) − 1) / s₀ + 1` and `w_out` likewise; `xp` is `x` with `p₀`
//! rows and `p₁` columns of the scalar's `0` on each side:
//!
//! ```text
//! y[b, co, i, j] = Σ_{ci, ki, kj} xp[b, ci, i·s₀ + ki·d₀, j·s₁ + kj·d₁] * w[co, ci, ki, kj]
//! ```
//!
//! each sum starting from `0` and running over `(ci, ki, kj)` in ascending row-major order, each
//! product with the input on the left. Padded taps are zeros that take part in the products (so
//! `0 · ∞` makes a NaN, as it would with the zeros written out). SEMANTICS §8.1 states the
//! order; the kernel is an im2col + GEMM path (`conv.rs`) whose sums are the GEMM's, in that
//! order.
//!
//! VJP: `add(single(x, gx), single(w, gw))`, products with `δ` on the left:
//!
//! ```text
//! gx[b, ci, r, c] = Σ_{ki, kj} ( Σ_{co} δ[b, co, i, j] * w[co, ci, ki, kj] )
//! gw[co, ci, ki, kj] = Σ_{b, i, j} δ[b, co, i, j] * xp[b, ci, i·s₀ + ki·d₀, j·s₁ + kj·d₁]
//! ```
//!
//! In `gx` the outer sum runs over the taps `(ki, kj)` in ascending order for which an output
//! position `(i, j)` reads `x[b, ci, r, c]` there (`r = i·s₀ + ki·d₀ − p₀`, `c = j·s₁ + kj·d₁ − p₁`;
//! at most one per tap), the inner one over `co` ascending; an element no window reads gets `0`.
//! In `gw` the sum runs over `(b, i, j)` ascending, padded taps included (`δ * 0`). Every sum
//! starts from `0`.
//!
//! A bias per output channel is an `add_row` after moving the channels last:
//! `permute(y, [0, 2, 3, 1])`, `reshape` to `[n·h_out·w_out, c_out]`, `add_row` (`+ b`), then back.

use super::conv::Conv;

/// A two-dimensional convolution (see the module docs): `Conv2d::new(x, w, stride, padding,
/// dilation)`, each a `[height, width]` pair, or `Conv2d::with_sliding(x, w, sliding)` with a
/// [`Sliding<2>`](exactgrad_spec::rules::Sliding) of them.
pub type Conv2d = Conv<2>;

typed_op!(conv2d(x: X, w: W; stride: @S as [usize; 2], padding: @P as [usize; 2], dilation: @Dl as [usize; 2]) -> Conv2d: Conv2d, "`x: [n, c_in, h, w]`, `w: [c_out, c_in, kh, kw]` → `[n, c_out, h_out, w_out]`, each constant a pair of typenum values `(height, width)`; the rule computes the output sizes and rejects a kernel that does not fit, a zero stride or a zero dilation");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::CompactOp;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;
    use exactgrad_spec::rules::Sliding;

    fn t(d: &[usize], v: Vec<f64>) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::new(d).unwrap(), v).unwrap()
    }

    fn sliding(stride: [usize; 2], padding: [usize; 2], dilation: [usize; 2]) -> Sliding<2> {
        Sliding { stride, padding, dilation }
    }

    /// The textbook loop of the module docs, in `f64` with plain arithmetic, each product fused
    /// into its sum (`mul_add`, SEMANTICS §8; for ordinary values the same bits as the kernel).
    fn textbook(x: &RawTensor<f64>, w: &RawTensor<f64>, s: Sliding<2>) -> Vec<f64> {
        let (xd, wd) = (x.dims(), w.dims());
        let [n, ci_n, h, wi] = xd.as_slice().try_into().unwrap();
        let [co_n, _, kh, kw] = wd.as_slice().try_into().unwrap();
        let span = |k: usize, a: usize| s.dilation[a] * (k - 1) + 1;
        let oh = (h + 2 * s.padding[0] - span(kh, 0)) / s.stride[0] + 1;
        let ow = (wi + 2 * s.padding[1] - span(kw, 1)) / s.stride[1] + 1;
        let mut y = Vec::new();
        for b in 0..n {
            for co in 0..co_n {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut acc = 0.0;
                        for ci in 0..ci_n {
                            for ki in 0..kh {
                                for kj in 0..kw {
                                    let r = (i * s.stride[0] + ki * s.dilation[0]).checked_sub(s.padding[0]);
                                    let c = (j * s.stride[1] + kj * s.dilation[1]).checked_sub(s.padding[1]);
                                    let v = match (r, c) {
                                        (Some(r), Some(c)) if r < h && c < wi => {
                                            x.data()[((b * ci_n + ci) * h + r) * wi + c]
                                        }
                                        _ => 0.0,
                                    };
                                    acc = v.mul_add(w.data()[((co * ci_n + ci) * kh + ki) * kw + kj], acc);
                                }
                            }
                        }
                        y.push(acc);
                    }
                }
            }
        }
        y
    }

    #[test]
    fn value() {
        // One 3 × 3 image, one 2 × 2 filter: y[i, j] = x[i, j] + 2 x[i, j+1] + 3 x[i+1, j] + 4 x[i+1, j+1].
        let x = t(&[1, 1, 3, 3], (1..=9).map(f64::from).collect());
        let w = t(&[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let y = forward(Conv2d::with_sliding(0, 1, Sliding::default()), &[x.clone(), w.clone()]);
        assert_eq!(y.dims(), Dims::new(&[1, 1, 2, 2]).unwrap());
        assert_eq!(y.data(), &[37.0, 47.0, 67.0, 77.0]);
        for s in [
            sliding([1, 1], [1, 1], [1, 1]),
            sliding([2, 1], [1, 0], [1, 1]),
            sliding([1, 2], [2, 1], [2, 1]),
            sliding([3, 3], [1, 1], [1, 2]),
        ] {
            for (xs, ws, seed) in [([2, 3, 5, 4], [4, 3, 2, 3], 1), ([1, 2, 3, 3], [2, 2, 3, 1], 2)] {
                let (x, w) = (sample(&xs, seed), sample(&ws, seed + 10));
                let y = forward(Conv2d::with_sliding(0, 1, s), &[x.clone(), w.clone()]);
                assert_eq!(y.data(), &textbook(&x, &w, s)[..], "{s:?} {xs:?} {ws:?}");
            }
        }
    }

    #[test]
    fn gradient() {
        for s in [sliding([1, 1], [0, 0], [1, 1]), sliding([2, 1], [1, 1], [1, 2]), sliding([1, 3], [2, 0], [2, 1])] {
            gradcheck(Conv2d::with_sliding(0, 1, s), &[sample(&[2, 2, 5, 4], 20), sample(&[3, 2, 2, 2], 21)], 1e-7);
        }
        // The same position as input and weight: the two terms added first.
        gradcheck(Conv2d::with_sliding(0, 0, sliding([1, 1], [1, 0], [1, 1])), &[sample(&[2, 2, 2, 3], 22)], 1e-7);
    }

    #[test]
    fn padded_taps_are_zeros_in_the_products() {
        // 0 · ∞ in the padding makes a NaN, as the written-out zeros would.
        let x = t(&[1, 1, 1, 1], vec![1.0]);
        let w = t(&[1, 1, 1, 2], vec![2.0, f64::INFINITY]);
        let y = forward(Conv2d::with_sliding(0, 1, sliding([1, 1], [0, 1], [1, 1])), &[x.clone(), w.clone()]);
        assert_eq!(y.data()[0], f64::INFINITY); // 0 + (0 · 2) + (1 · ∞)
        assert!(y.data()[1].is_nan()); // 0 + (1 · 2) + (0 · ∞)
                                       // gw[0, 0, 0, 1] = 0 + (δ₀ · x) + (δ₁ · 0); a -0.0 cotangent gives +0 sums.
        let d = vjp(
            Conv2d::with_sliding(0, 1, sliding([1, 1], [0, 1], [1, 1])),
            &[x, w],
            &t(&[1, 1, 1, 2], vec![-0.0, -0.0]),
        );
        assert_eq!(bits(&d[1]), [0, 0]);
        assert!(d[0].data()[0].is_nan()); // (0 + (0 + -0·2)) + (0 + -0·∞)
    }

    #[test]
    fn shape_errors_are_named() {
        let rule = |op: Conv2d, x: &[usize], w: &[usize]| {
            <Conv2d as CompactOp<f64, ()>>::output_dims(&op, &[Dims::new(x).unwrap(), Dims::new(w).unwrap()])
        };
        assert_eq!(
            rule(Conv2d::with_sliding(0, 1, Sliding::default()), &[1, 3, 4, 4], &[2, 2, 3, 3]).unwrap_err(),
            "conv2d needs the weight's input channels (2) to equal the input's channels (3), got shapes [1, 3, 4, 4] and [2, 2, 3, 3]"
        );
        let huge = sliding([1, 1], [1 << 40, 1 << 40], [1, 1]);
        assert!(rule(Conv2d::with_sliding(0, 1, huge), &[0, 1, 1, 1], &[1, 1, 1, 1])
            .unwrap_err()
            .contains("patch matrix"));
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U0, U1, U2, U3, U4, U5};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3, U5, U4)>();
        let (g, w) = g.input::<(U4, U3, U2, U3)>();
        let (g, y) = g.push(conv2d(x, w, (U2::new(), U1::new()), (U1::new(), U0::new()), (U1::new(), U1::new())));
        assert!(g.build_errors().is_empty());
        // Height (5 + 2 − 2) / 2 + 1 = 3, width (4 − 3) / 1 + 1 = 2.
        assert_eq!(g.raw().dims()[y.index()], Dims::new(&[2, 4, 3, 2]).unwrap());
    }
}
