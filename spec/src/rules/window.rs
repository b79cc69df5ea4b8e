//! The rules of the sliding-window ops (convolutions and pooling): the output length along each
//! spatial axis from the input, kernel, stride, padding and dilation.

use super::{may_equal, shape, Outcome};
use crate::shape::{Dim, Dims};

/// The constants of a convolution along its `N` spatial axes (`conv1d`: the length; `conv2d`:
/// the height, then the width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sliding<const N: usize> {
    /// The step between windows (at least 1).
    pub stride: [usize; N],
    /// Zeros added before and after the input (the same count on both sides).
    pub padding: [usize; N],
    /// The step between kernel taps (at least 1; 1 is a dense kernel).
    pub dilation: [usize; N],
}

impl<const N: usize> Default for Sliding<N> {
    /// Stride 1, no padding, dilation 1.
    fn default() -> Self {
        Sliding { stride: [1; N], padding: [0; N], dilation: [1; N] }
    }
}

/// Writes one constant per spatial axis: `2` for one axis, `(2, 1)` for two.
struct PerAxis<'a>(&'a [usize]);

impl core::fmt::Display for PerAxis<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            [one] => write!(f, "{one}"),
            many => {
                f.write_str("(")?;
                for (i, v) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The name of spatial axis `k` of `n` in messages.
fn axis_name(n: usize, k: usize) -> &'static str {
    match (n, k) {
        (1, _) => "the length",
        (_, 0) => "the height",
        _ => "the width",
    }
}

/// One spatial axis of a sliding window: the output size
/// `(size + 2·padding − (dilation·(kernel − 1) + 1)) / stride + 1`, or `Err(None)` on overflow and
/// `Err(Some((span, padded)))` when the dilated kernel (`span` entries) does not fit the padded
/// input (`padded` entries).
fn window_axis(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> Result<usize, Option<(usize, usize)>> {
    let padded = padding.checked_mul(2).and_then(|p| p.checked_add(size)).ok_or(None)?;
    let span =
        kernel.checked_sub(1).and_then(|k| k.checked_mul(dilation)).and_then(|k| k.checked_add(1)).ok_or(None)?;
    if span > padded {
        return Err(Some((span, padded)));
    }
    Ok((padded - span) / stride + 1)
}

/// `conv1d` (`N = 1`) and `conv2d` (`N = 2`; other `N` are refused): the input `x` is `[n, c_in, spatial…]`, the weight
/// `w` is `[c_out, c_in, kernel…]`, and each spatial axis becomes
/// `(size + 2·padding − (dilation·(kernel − 1) + 1)) / stride + 1`: output `[n, c_out, out…]`.
/// Every stride and dilation is at least 1, every kernel size at least 1, and the dilated kernel
/// fits the padded input. The spatial sizes of `x` and the kernel's sizes must be known (literal
/// sizes in `graph!`); `n`, `c_in` and `c_out` may be generic.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit or a size overflows `usize`.
pub fn conv<D: Dim, const N: usize>(op: &str, x: &[D], w: &[D], g: &Sliding<N>) -> Outcome<D> {
    let layout = if N == 1 {
        "an input [n, c_in, l] and a weight [c_out, c_in, k]"
    } else {
        "an input [n, c_in, h, w] and a weight [c_out, c_in, kh, kw]"
    };
    if !(1..=2).contains(&N) || x.len() != N + 2 || w.len() != N + 2 {
        return Err(format!("{op} needs {layout}, got shapes {} and {}", Dims(x), Dims(w)));
    }
    if !may_equal(&x[1], &w[1]) {
        return Err(format!(
            "{op} needs the weight's input channels ({}) to equal the input's channels ({}), got shapes {} and {}",
            w[1],
            x[1],
            Dims(x),
            Dims(w)
        ));
    }
    if g.stride.contains(&0) || g.dilation.contains(&0) {
        return Err(format!(
            "{op} needs strides and dilations of at least 1, got stride {} and dilation {}",
            PerAxis(&g.stride),
            PerAxis(&g.dilation)
        ));
    }
    let mut out = shape(x).with(1, w[0].clone());
    for k in 0..N {
        let (Some(size), Some(kernel)) = (x[k + 2].size(), w[k + 2].size()) else {
            return Err(format!(
                "{op} needs literal spatial sizes of the input and the kernel to compute its output, got shapes {} and {}",
                Dims(x),
                Dims(w)
            ));
        };
        if kernel == 0 {
            return Err(format!("{op} needs a non-empty kernel, got weight shape {}", Dims(w)));
        }
        let axis = window_axis(size, kernel, g.stride[k], g.padding[k], g.dilation[k]).map_err(|e| match e {
            None => format!(
                "{op} of shapes {} and {} with padding {} and dilation {} overflows",
                Dims(x),
                Dims(w),
                PerAxis(&g.padding),
                PerAxis(&g.dilation)
            ),
            Some((span, padded)) => format!(
                "{op} needs the dilated kernel ({span} along {}) to fit the padded input ({padded} along {}), got shapes {} and {} with padding {} and dilation {}",
                axis_name(N, k),
                axis_name(N, k),
                Dims(x),
                Dims(w),
                PerAxis(&g.padding),
                PerAxis(&g.dilation)
            ),
        })?;
        out = out.with(k + 2, D::of_size(axis));
    }
    Ok(out)
}

/// `max_pool2d` and `avg_pool2d` (`N = 2`; `N = 1` is a one-dimensional pooling, other `N` are
/// refused): the input is `[n, c, spatial…]`, each spatial axis
/// becomes `(size + 2·padding − kernel) / stride + 1`: output `[n, c, out…]`. Every kernel size and
/// stride is at least 1, the padding at most half the kernel (`2·padding ≤ kernel`) and every
/// spatial size at least 1, so that every window holds at least one element of the input; the
/// kernel fits the padded input. The spatial sizes must be known (literal sizes in `graph!`).
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operand does not fit or a size overflows `usize`.
pub fn pool<D: Dim, const N: usize>(
    op: &str,
    x: &[D],
    kernel: [usize; N],
    stride: [usize; N],
    padding: [usize; N],
) -> Outcome<D> {
    if !(1..=2).contains(&N) || x.len() != N + 2 {
        let layout = if N == 1 { "[n, c, l]" } else { "[n, c, h, w]" };
        return Err(format!("{op} needs an input {layout}, got shape {}", Dims(x)));
    }
    if kernel.contains(&0) || stride.contains(&0) {
        return Err(format!(
            "{op} needs kernel sizes and strides of at least 1, got kernel {} and stride {}",
            PerAxis(&kernel),
            PerAxis(&stride)
        ));
    }
    if (0..N).any(|k| padding[k] > kernel[k] / 2) {
        return Err(format!(
            "{op} needs a padding of at most half the kernel, got padding {} for kernel {}",
            PerAxis(&padding),
            PerAxis(&kernel)
        ));
    }
    let mut out = shape(x);
    for k in 0..N {
        let Some(size) = x[k + 2].size() else {
            return Err(format!("{op} needs literal spatial sizes to compute its output, got shape {}", Dims(x)));
        };
        if size == 0 {
            return Err(format!("{op} needs a non-empty input along every spatial axis, got shape {}", Dims(x)));
        }
        let axis = window_axis(size, kernel[k], stride[k], padding[k], 1).map_err(|e| match e {
            None => format!("{op} of shape {} with padding {} overflows", Dims(x), PerAxis(&padding)),
            Some((span, padded)) => format!(
                "{op} needs the kernel ({span} along {}) to fit the padded input ({padded} along {}), got shape {} with kernel {} and padding {}",
                axis_name(N, k),
                axis_name(N, k),
                Dims(x),
                PerAxis(&kernel),
                PerAxis(&padding)
            ),
        })?;
        out = out.with(k + 2, D::of_size(axis));
    }
    Ok(out)
}
