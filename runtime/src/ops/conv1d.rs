//! `conv1d(x, w)` with stride `s`, padding `p` and dilation `d`: the cross-correlation of a batch
//! of sequences `x: [n, c_in, l]` (channels first) with the filters `w: [c_out, c_in, k]`, no
//! bias. The output is `[n, c_out, l_out]` with `l_out = (l + 2·p − d·(k − 1) − 1) / s + 1`; `xp`
//! is `x` with `p` of the scalar's `0` on each side:
//!
//! ```text
//! y[b, co, j] = Σ_{ci, kj} xp[b, ci, j·s + kj·d] * w[co, ci, kj]
//! ```
//!
//! each sum starting from `0` and running over `(ci, kj)` in ascending row-major order, each
//! product with the input on the left; padded taps are zeros that take part in the products. It
//! is `conv2d` of planes of height 1 (`x` as `[n, c_in, 1, l]`, `w` as `[c_out, c_in, 1, k]`,
//! stride `(1, s)`, padding `(0, p)`, dilation `(1, d)`): the same kernel, the same order
//! (SEMANTICS §8.1).
//!
//! VJP: `add(single(x, gx), single(w, gw))`, products with `δ` on the left:
//!
//! ```text
//! gx[b, ci, c] = Σ_{kj} ( Σ_{co} δ[b, co, j] * w[co, ci, kj] )
//! gw[co, ci, kj] = Σ_{b, j} δ[b, co, j] * xp[b, ci, j·s + kj·d]
//! ```
//!
//! In `gx` the outer sum runs over the taps `kj` in ascending order for which an output position
//! `j` reads `x[b, ci, c]` there (`c = j·s + kj·d − p`), the inner one over `co` ascending; in
//! `gw` the sum runs over `(b, j)` ascending, padded taps included. Every sum starts from `0`.

use super::conv::Conv;

/// A one-dimensional convolution (see the module docs): `Conv1d::new(x, w, stride, padding,
/// dilation)`, or `Conv1d::with_sliding(x, w, sliding)` with a
/// [`Sliding<1>`](exactgrad_spec::rules::Sliding) of the three.
pub type Conv1d = Conv<1>;

typed_op!(conv1d(x: X, w: W; stride: @S as usize, padding: @P as usize, dilation: @Dl as usize) -> Conv1d: Conv1d, "`x: [n, c_in, l]`, `w: [c_out, c_in, k]` → `[n, c_out, l_out]`, each constant a typenum value (`U1::new()`); the rule computes the output length and rejects a kernel that does not fit, a zero stride or a zero dilation");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::CompactOp;
    use crate::ops::testing::{bits, forward, gradcheck, sample};
    use crate::ops::Conv2d;
    use crate::shape::Dims;
    use crate::tensor::RawTensor;
    use exactgrad_spec::rules::Sliding;

    fn d(v: &[usize]) -> Dims {
        Dims::new(v).unwrap()
    }

    #[test]
    fn value() {
        // y[j] = x[j] - x[j + 2] (dilation 2), one zero of padding on each side.
        let x = RawTensor::from_vec(d(&[1, 1, 4]), vec![1.0, 2.0, 4.0, 8.0]).unwrap();
        let w = RawTensor::from_vec(d(&[1, 1, 2]), vec![1.0, -1.0]).unwrap();
        let s = Sliding { stride: [1], padding: [1], dilation: [2] };
        let y = forward(Conv1d::with_sliding(0, 1, s), &[x, w]);
        assert_eq!((y.dims(), y.data()), (d(&[1, 1, 4]), &[-2.0, -3.0, -6.0, 4.0][..]));
    }

    #[test]
    fn is_conv2d_of_planes_of_height_one() {
        let (x, w) = (sample(&[2, 3, 7], 40), sample(&[2, 3, 3], 41));
        let as_planes = |t: &RawTensor<f64>| {
            let s = t.dims();
            RawTensor::from_vec(d(&[s.as_slice()[0], s.as_slice()[1], 1, s.as_slice()[2]]), t.data().to_vec()).unwrap()
        };
        for (stride, padding, dilation) in [(1, 0, 1), (2, 1, 1), (1, 2, 3), (3, 2, 2)] {
            let one = Sliding { stride: [stride], padding: [padding], dilation: [dilation] };
            let two = Sliding { stride: [1, stride], padding: [0, padding], dilation: [1, dilation] };
            let y1 = forward(Conv1d::with_sliding(0, 1, one), &[x.clone(), w.clone()]);
            let y2 = forward(Conv2d::with_sliding(0, 1, two), &[as_planes(&x), as_planes(&w)]);
            assert_eq!(bits(&y1), bits(&y2));
        }
    }

    #[test]
    fn gradient() {
        for (stride, padding, dilation) in [(1, 0, 1), (2, 1, 1), (1, 2, 2)] {
            let s = Sliding { stride: [stride], padding: [padding], dilation: [dilation] };
            gradcheck(Conv1d::with_sliding(0, 1, s), &[sample(&[2, 2, 6], 42), sample(&[3, 2, 3], 43)], 1e-7);
        }
    }

    #[test]
    fn shape_errors_are_named() {
        let rule = |s: Sliding<1>, x: &[usize], w: &[usize]| {
            <Conv1d as CompactOp<f64, ()>>::output_dims(&Conv1d::with_sliding(0, 1, s), &[d(x), d(w)]).unwrap_err()
        };
        assert_eq!(
            rule(Sliding::default(), &[1, 2, 2], &[1, 2, 3]),
            "conv1d needs the dilated kernel (3 along the length) to fit the padded input (2 along the length), got shapes [1, 2, 2] and [1, 2, 3] with padding 0 and dilation 1"
        );
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U1, U2, U3, U4, U7};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3, U7)>();
        let (g, w) = g.input::<(U4, U3, U3)>();
        let (g, y) = g.push(conv1d(x, w, U2::new(), U1::new(), U2::new()));
        assert!(g.build_errors().is_empty());
        // (7 + 2 − 5) / 2 + 1 = 3.
        assert_eq!(g.raw().dims()[y.index()], d(&[2, 4, 3]));
    }
}
