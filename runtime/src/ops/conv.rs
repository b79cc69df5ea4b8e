//! The shared machinery of `conv1d` and `conv2d` (see `conv1d.rs` and `conv2d.rs` for the
//! formulas): an exact im2col + GEMM path. The patch matrix (`Plane::patches`: one row per output
//! position, one column per tap, zeros in the padding) turns every sum of the convolution into a
//! sum of one matrix product, and the GEMM kernels add the terms of each product in ascending
//! order from `0` (SEMANTICS §8), which is the order the formulas define:
//!
//! * forward, per batch item `b`: `y_b = w · patches_bᵀ` (`c_out × taps·c_in` times
//!   `taps·c_in × out`), products `x * w` (the input on the left);
//! * input gradient, per batch item: `cols = wᵀ · δ_b` (products `δ * w`, summed over output
//!   channels), then `Plane::add_columns` adds each entry onto the input element it taps;
//! * weight gradient: `δ' · patches` with `δ'` the cotangent as `c_out × (n·out)` (products
//!   `δ * x`, one sum over every batch item and output position).
//!
//! Scratch: the VJP takes its patch and column buffers from the `Contributions` pool; the forward
//! keeps its patch matrix in a per-thread buffer for `f32` and `f64` ([`with_scratch`]), so a
//! generated program's runs after the first allocate nothing (other scalars allocate it per call).

use core::any::{Any, TypeId};
use core::cell::RefCell;
use core::ops::Mul;

use exactgrad_spec::rules::{self, Sliding};

use super::matmul::{gemm, MatrixView};
use super::sliding::Plane;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

thread_local! {
    static SCRATCH_F32: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    static SCRATCH_F64: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on an empty buffer: for `f32` and `f64` this thread's reused one (taken out for the
/// call, so a nested call gets a fresh one), for other scalars a new one.
fn with_scratch<A: 'static, R>(f: impl FnOnce(&mut Vec<A>) -> R) -> R {
    fn reuse<T: 'static, A: 'static, R>(
        key: &'static std::thread::LocalKey<RefCell<Vec<T>>>,
        f: impl FnOnce(&mut Vec<A>) -> R,
    ) -> R {
        let mut v = key.with(|c| c.take());
        v.clear();
        let r = match (&mut v as &mut dyn Any).downcast_mut::<Vec<A>>() {
            Some(typed) => f(typed),
            None => f(&mut Vec::new()),
        };
        v.clear();
        key.with(|c| c.replace(v));
        r
    }
    if TypeId::of::<A>() == TypeId::of::<f32>() {
        reuse(&SCRATCH_F32, f)
    } else if TypeId::of::<A>() == TypeId::of::<f64>() {
        reuse(&SCRATCH_F64, f)
    } else {
        f(&mut Vec::new())
    }
}

/// A convolution over `N` spatial axes (`conv1d`: `N = 1`, `conv2d`: `N = 2`, the only two that
/// can be built) of an input `[n, c_in, spatial…]` with a weight `[c_out, c_in, kernel…]`
/// (formulas: `conv1d.rs`, `conv2d.rs`).
#[derive(Clone, Debug)]
pub struct Conv<const N: usize> {
    parents: [usize; 2],
    sliding: Sliding<N>,
}

impl Conv<1> {
    /// `conv1d` of the input at position `x` (`[n, c_in, l]`) with the weight at position `w`
    /// (`[c_out, c_in, k]`), with this stride, padding and dilation.
    pub fn new(x: usize, w: usize, stride: usize, padding: usize, dilation: usize) -> Self {
        Self::with_sliding(x, w, Sliding { stride: [stride], padding: [padding], dilation: [dilation] })
    }
}

impl Conv<2> {
    /// `conv2d` of the input at position `x` (`[n, c_in, h, w]`) with the weight at position `w`
    /// (`[c_out, c_in, kh, kw]`), with these strides, paddings and dilations (height, width).
    pub fn new(x: usize, w: usize, stride: [usize; 2], padding: [usize; 2], dilation: [usize; 2]) -> Self {
        Self::with_sliding(x, w, Sliding { stride, padding, dilation })
    }
}

impl<const N: usize> Conv<N> {
    /// The convolution of the input at position `x` with the weight at position `w`, with the
    /// strides, paddings and dilations of `sliding`.
    pub fn with_sliding(x: usize, w: usize, sliding: Sliding<N>) -> Self {
        Conv { parents: [x, w], sliding }
    }
}

impl<const N: usize> Conv<N> {
    /// The op's name.
    fn op_name() -> &'static str {
        if N == 1 {
            "conv1d"
        } else {
            "conv2d"
        }
    }

    /// The output dims for an input of dims `x` and a weight of dims `w`, or a message: the shape
    /// rule, and the patch matrix's element count must fit `usize`.
    fn output(&self, x: Dims, w: Dims) -> Result<Dims, String> {
        let out = super::ruled(rules::conv(Self::op_name(), x.as_slice(), w.as_slice(), &self.sliding))?;
        let product = |dims: &[usize]| dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let positions = product(&out.as_slice()[2..]);
        let taps = product(&w.as_slice()[1..]);
        let fits = positions
            .zip(taps)
            .and_then(|(o, t)| o.checked_mul(t))
            .and_then(|ot| ot.checked_mul(x.as_slice()[0]))
            .is_some();
        if fits {
            Ok(out)
        } else {
            Err(format!(
                "{} of shapes {x} and {w}: its patch matrix (one row per output position, one column per tap) has more elements than usize holds",
                Self::op_name()
            ))
        }
    }

    /// The geometry for an input of dims `x`, a weight of dims `w` and the output dims `out` (a
    /// one-dimensional convolution is a two-dimensional one over planes of height 1).
    fn plane(&self, x: Dims, w: Dims, out: Dims) -> Plane {
        let (x, w, out) = (x.as_slice(), w.as_slice(), out.as_slice());
        let s = &self.sliding;
        let pair = |v: &[usize], one: usize| if N == 1 { [one, v[0]] } else { [v[0], v[1]] };
        Plane {
            batch: x[0],
            channels: x[1],
            size: pair(&x[2..], 1),
            kernel: pair(&w[2..], 1),
            stride: pair(&s.stride, 1),
            padding: pair(&s.padding, 0),
            dilation: pair(&s.dilation, 1),
            out: pair(&out[2..], 1),
        }
    }

    /// The geometry of the saved operands `x` and `w`.
    fn saved_plane<A>(&self, x: &RawTensor<A>, w: &RawTensor<A>) -> Plane {
        let out = self.output(x.dims(), w.dims()).expect("output_dims accepted these dims");
        self.plane(x.dims(), w.dims(), out)
    }
}

impl<A: Scalar + Mul<Output = A>, D, const N: usize> CompactOp<A, D> for Conv<N> {
    fn name(&self) -> &str {
        Self::op_name()
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let x = super::dims_at(Self::op_name(), prefix, self.parents[0])?;
        let w = super::dims_at(Self::op_name(), prefix, self.parents[1])?;
        self.output(x, w)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let (x, w) = (&ctx[self.parents[0]], &ctx[self.parents[1]]);
        let out = self.output(x.dims(), w.dims()).expect("output_dims accepted these dims");
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        let (x, w) = (&ctx[self.parents[0]], &ctx[self.parents[1]]);
        let p = self.saved_plane(x, w);
        let (c_out, taps, out) = (w.dims().as_slice()[0], p.channels * p.taps(), p.out_len());
        if taps == 0 {
            // Sums of no term: every output element is the scalar's 0.
            y.extend((0..p.batch * c_out * out).map(|_| A::zero()));
            return;
        }
        if c_out * out == 0 {
            return;
        }
        with_scratch(|patches: &mut Vec<A>| {
            patches.reserve(p.batch * out * taps);
            p.patches(x.data(), patches);
            let weights = MatrixView::row_major(w.data(), taps);
            for b in 0..p.batch {
                // y_b[co, o] = Σ_t patches[b·out + o, t] * w[co, t]: the input on the left.
                let rows = MatrixView::transposed(&patches[b * out * taps..(b + 1) * out * taps], taps);
                gemm::<A, true>(c_out, taps, out, weights, rows, y);
            }
        });
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [px, pw] = self.parents;
        let (x, w) = (&saved.prefix[px], &saved.prefix[pw]);
        let p = self.saved_plane(x, w);
        let (c_out, taps, out) = (w.dims().as_slice()[0], p.channels * p.taps(), p.out_len());
        let delta = g.data();

        // The input's gradient, batch item by batch item: cols = wᵀ · δ_b (products δ * w, over
        // the output channels), each entry then added onto the input element it taps.
        let mut gx = c.buffer_for(x.numel());
        gx.extend((0..x.numel()).map(|_| A::zero()));
        if taps > 0 && out > 0 {
            let mut cols = c.buffer_for(taps * out);
            let weights = MatrixView::transposed(w.data(), taps);
            let in_item = p.channels * p.plane_len();
            for b in 0..p.batch {
                cols.clear();
                let g_b = MatrixView::row_major(&delta[b * c_out * out..(b + 1) * c_out * out], out);
                gemm::<A, true>(taps, c_out, out, weights, g_b, &mut cols);
                p.add_columns(&cols, &mut gx[b * in_item..(b + 1) * in_item]);
            }
            c.recycle(cols);
        }

        // The weight's gradient: δ' · patches, δ' the cotangent as c_out × (n·out) (products
        // δ * x, one sum over every batch item and output position in ascending order).
        let mut gw = c.buffer_for(w.numel());
        let positions = p.batch * out;
        if taps > 0 && c_out > 0 {
            let mut patches = c.buffer_for(positions * taps);
            p.patches(x.data(), &mut patches);
            let mut by_channel = c.buffer_for(if p.batch > 1 { delta.len() } else { 0 });
            let lhs = if p.batch > 1 {
                for co in 0..c_out {
                    for b in 0..p.batch {
                        by_channel.extend_from_slice(&delta[(b * c_out + co) * out..(b * c_out + co + 1) * out]);
                    }
                }
                MatrixView::row_major(&by_channel, positions)
            } else {
                MatrixView::row_major(delta, positions)
            };
            gemm::<A, false>(c_out, positions, taps, lhs, MatrixView::row_major(&patches, taps), &mut gw);
            c.recycle(by_channel);
            c.recycle(patches);
        }
        let gx = c.single(px, RawTensor::from_parts(x.dims(), gx));
        let gw = c.single(pw, RawTensor::from_parts(w.dims(), gw));
        c.add(gx, gw)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        let s = &self.sliding;
        Some(RefOp::conv(self.parents[0], self.parents[1], s.stride.to_vec(), s.padding.to_vec(), s.dilation.to_vec()))
    }
}
