//! The geometry the sliding-window ops share (`conv1d`, `conv2d`, `max_pool2d`, `avg_pool2d`): a
//! batch of `batch × channels` planes of `size[0] × size[1]` elements, read through windows of
//! `kernel[0] × kernel[1]` taps. A one-dimensional op is the same geometry with planes of height 1
//! (kernel height 1, stride 1, no padding, dilation 1), so every kernel here is written once.
//!
//! Output element `(i, j)` of a plane reads tap `(ki, kj)` at input row
//! `i·stride[0] + ki·dilation[0] − padding[0]` and column `j·stride[1] + kj·dilation[1] −
//! padding[1]`; a row or column outside the plane is padding (SEMANTICS §8.1).

use crate::scalar::Scalar;
use crate::shape::Dims;

/// The window constants of a two-dimensional pooling (height, width).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolWindow {
    /// Taps of a window.
    pub(crate) kernel: [usize; 2],
    /// Step between windows.
    pub(crate) stride: [usize; 2],
    /// Padding before (and after) each axis.
    pub(crate) padding: [usize; 2],
}

impl PoolWindow {
    /// The output dims of pooling an input of dims `x` (the shape rule `rules::pool`, whose
    /// message names `op`) and the geometry.
    pub(crate) fn plane(&self, op: &str, x: Dims) -> Result<(Dims, Plane), String> {
        let out = super::ruled(exactgrad_spec::rules::pool(op, x.as_slice(), self.kernel, self.stride, self.padding))?;
        let (x, o) = (x.as_slice(), out.as_slice());
        let plane = Plane {
            batch: x[0],
            channels: x[1],
            size: [x[2], x[3]],
            kernel: self.kernel,
            stride: self.stride,
            padding: self.padding,
            dilation: [1, 1],
            out: [o[2], o[3]],
        };
        Ok((out, plane))
    }

    /// [`plane`](Self::plane) of dims a shape rule has accepted.
    pub(crate) fn accepted(&self, op: &str, x: Dims) -> (Dims, Plane) {
        self.plane(op, x).expect("output_dims accepted these dims")
    }
}

/// A sliding window over a batch of planes (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plane {
    /// Planes per channel (`n`).
    pub(crate) batch: usize,
    /// Channels per batch item (`c`, `c_in` of a convolution).
    pub(crate) channels: usize,
    /// Rows and columns of an input plane.
    pub(crate) size: [usize; 2],
    /// Taps of a window along each axis.
    pub(crate) kernel: [usize; 2],
    /// Step between windows along each axis.
    pub(crate) stride: [usize; 2],
    /// Padding before (and after) each axis.
    pub(crate) padding: [usize; 2],
    /// Step between taps along each axis.
    pub(crate) dilation: [usize; 2],
    /// Rows and columns of an output plane.
    pub(crate) out: [usize; 2],
}

impl Plane {
    /// The input row (`axis = 0`) or column (`axis = 1`) that output index `o` reads at tap `k`,
    /// or `None` in the padding. The shape rule has bounded every index, so nothing overflows.
    #[inline]
    pub(crate) fn input_at(&self, axis: usize, o: usize, k: usize) -> Option<usize> {
        (o * self.stride[axis] + k * self.dilation[axis])
            .checked_sub(self.padding[axis])
            .filter(|&i| i < self.size[axis])
    }

    /// Elements of an input plane.
    pub(crate) fn plane_len(&self) -> usize {
        self.size[0] * self.size[1]
    }

    /// Elements of an output plane.
    pub(crate) fn out_len(&self) -> usize {
        self.out[0] * self.out[1]
    }

    /// Taps of a window.
    pub(crate) fn taps(&self) -> usize {
        self.kernel[0] * self.kernel[1]
    }

    /// The taps `k` along `axis` at which output index `o` reads inside the input (the others
    /// read the padding): one ascending range, computed without visiting the taps (a pooling's
    /// kernel may be far larger than its input).
    #[inline]
    pub(crate) fn inside(&self, axis: usize, o: usize) -> core::ops::Range<usize> {
        let (start, d) = (o * self.stride[axis], self.dilation[axis]);
        // `start + k·d − padding` lies in `0..size` for `k` in `lo..hi`.
        let lo = self.padding[axis].saturating_sub(start).div_ceil(d);
        let hi = (self.padding[axis] + self.size[axis]).saturating_sub(start).div_ceil(d).min(self.kernel[axis]);
        lo..hi.max(lo)
    }

    /// How many taps of a window along `axis` at output index `o` fall inside the input.
    #[inline]
    pub(crate) fn axis_count(&self, axis: usize, o: usize) -> usize {
        self.inside(axis, o).len()
    }

    /// How many input elements the window of output `(i, j)` holds (padding not counted).
    #[inline]
    pub(crate) fn count(&self, i: usize, j: usize) -> usize {
        self.axis_count(0, i) * self.axis_count(1, j)
    }

    /// The input positions (within its plane, row-major) of the window of output `(i, j)`, in
    /// window order (tap rows ascending, then tap columns), padding skipped.
    #[inline]
    pub(crate) fn window(&self, i: usize, j: usize) -> impl Iterator<Item = usize> + Clone + '_ {
        let at = |axis: usize, o: usize, k: usize| o * self.stride[axis] + k * self.dilation[axis] - self.padding[axis];
        self.inside(0, i).flat_map(move |ki| {
            let r = at(0, i, ki);
            self.inside(1, j).map(move |kj| r * self.size[1] + at(1, j, kj))
        })
    }

    /// Appends the patch matrix of `x` (`batch·channels` planes of `size`) to `out`: one row per
    /// output position `(b, i, j)` (batch item, then row, then column), one column per tap
    /// `(c, ki, kj)` (channel, then kernel row, then kernel column), holding the tapped input
    /// element or the scalar's `0` in the padding: `batch·out_len` rows of
    /// `channels·taps` entries, no arithmetic.
    pub(crate) fn patches<A: Scalar>(&self, x: &[A], out: &mut Vec<A>) {
        let plane = self.plane_len();
        for b in 0..self.batch {
            for i in 0..self.out[0] {
                for j in 0..self.out[1] {
                    for c in 0..self.channels {
                        let base = &x[(b * self.channels + c) * plane..(b * self.channels + c + 1) * plane];
                        for ki in 0..self.kernel[0] {
                            let row = self.input_at(0, i, ki);
                            for kj in 0..self.kernel[1] {
                                out.push(match (row, self.input_at(1, j, kj)) {
                                    (Some(r), Some(col)) => base[r * self.size[1] + col].clone(),
                                    _ => A::zero(),
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    /// Adds the columns of one batch item's tap-major patch gradient onto its input gradient
    /// (`col2im`): `cols` holds `channels·taps` rows of `out_len` entries (row `(c, ki, kj)`,
    /// column `(i, j)`), and each entry that taps an input element (not the padding) is added onto
    /// that element of `gx` (`channels` planes) with the engine's `+`, the accumulated value on the
    /// left. Rows run in ascending `(c, ki, kj)` order and a tap reaches an input element from at
    /// most one output position, so every element receives its terms in ascending `(ki, kj)`.
    pub(crate) fn add_columns<A: Scalar>(&self, cols: &[A], gx: &mut [A]) {
        let (plane, out) = (self.plane_len(), self.out_len());
        for c in 0..self.channels {
            let g = &mut gx[c * plane..(c + 1) * plane];
            for ki in 0..self.kernel[0] {
                for kj in 0..self.kernel[1] {
                    let t = (c * self.kernel[0] + ki) * self.kernel[1] + kj;
                    let row = &cols[t * out..(t + 1) * out];
                    for i in 0..self.out[0] {
                        let Some(r) = self.input_at(0, i, ki) else { continue };
                        for j in 0..self.out[1] {
                            let Some(col) = self.input_at(1, j, kj) else { continue };
                            let e = &mut g[r * self.size[1] + col];
                            *e = A::pinned_add(e.clone(), row[i * self.out[1] + j].clone());
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane() -> Plane {
        // 3 × 4 planes, 2 × 2 kernel, stride (1, 2), padding (1, 0), dilation (1, 2):
        // rows (3 + 2 − 2) / 1 + 1 = 4, columns (4 − 3) / 2 + 1 = 1.
        Plane {
            batch: 1,
            channels: 1,
            size: [3, 4],
            kernel: [2, 2],
            stride: [1, 2],
            padding: [1, 0],
            dilation: [1, 2],
            out: [4, 1],
        }
    }

    #[test]
    fn windows_skip_the_padding_in_window_order() {
        let p = plane();
        assert_eq!(p.window(0, 0).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(p.window(1, 0).collect::<Vec<_>>(), [0, 2, 4, 6]);
        assert_eq!(p.window(3, 0).collect::<Vec<_>>(), [8, 10]);
        assert_eq!((p.count(0, 0), p.count(1, 0), p.count(3, 0)), (2, 4, 2));
        // The ranges of inside taps are the taps `input_at` accepts, for any geometry.
        for stride in 1..4 {
            for padding in 0..4 {
                for dilation in 1..4 {
                    for size in 0..5 {
                        let q = Plane {
                            size: [size, 3],
                            stride: [stride, 1],
                            padding: [padding, 0],
                            dilation: [dilation, 1],
                            kernel: [3, 1],
                            ..p
                        };
                        for o in 0..6 {
                            let looped: Vec<usize> = (0..3).filter(|&k| q.input_at(0, o, k).is_some()).collect();
                            assert_eq!(q.inside(0, o).collect::<Vec<_>>(), looped, "{q:?} at {o}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn patches_hold_zeros_in_the_padding() {
        let p = plane();
        let x: Vec<f64> = (1..=12).map(f64::from).collect();
        let mut out = Vec::new();
        p.patches(&x, &mut out);
        assert_eq!(out, [0.0, 0.0, 1.0, 3.0, 1.0, 3.0, 5.0, 7.0, 5.0, 7.0, 9.0, 11.0, 9.0, 11.0, 0.0, 0.0]);
    }
}
