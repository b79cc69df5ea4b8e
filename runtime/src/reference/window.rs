//! The reference's convolutions and poolings: each value and each VJP element by the textbook
//! loop of its documented formula (SEMANTICS §8.1), one output or one
//! gradient element at a time, with its own geometry and its own checks. Nothing here is shared
//! with the kernels (`ops/sliding.rs`, `ops/conv.rs`): no patch matrix, no GEMM, no scatter.
//!
//! A one-dimensional op is read as a two-dimensional one over planes of height 1 (a leading unit
//! axis with kernel 1, stride 1, padding 0, dilation 1), which is its definition.

use core::cmp::Ordering;

use super::forward::count;
use super::tensor::{fused, plus, RefTensor};
use crate::scalar::Scalar;

/// The geometry of a window op over `n × c` planes of `h × w`.
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    oh: usize,
    ow: usize,
}

impl Geometry {
    /// The geometry of `x` (`[n, c, spatial…]`, one or two spatial axes) under the constants, or a
    /// message when they do not fit (no window, a zero stride or dilation, a size overflow).
    fn new(
        x: &[usize],
        kernel: &[usize],
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
    ) -> Result<Geometry, String> {
        let spatial = x.len().checked_sub(2).filter(|&s| s == 1 || s == 2).ok_or("needs one or two spatial axes")?;
        let lists = [kernel, stride, padding, dilation];
        if lists.iter().any(|l| l.len() != spatial) {
            return Err(format!("constants for {spatial} spatial axes expected"));
        }
        // Two axes: a one-dimensional op has a unit height.
        let two = |v: &[usize], unit: usize| if spatial == 1 { [unit, v[0]] } else { [v[0], v[1]] };
        let (size, kernel, stride, padding, dilation) =
            (two(&x[2..], 1), two(kernel, 1), two(stride, 1), two(padding, 0), two(dilation, 1));
        let mut out = [0; 2];
        for a in 0..2 {
            if kernel[a] == 0 || stride[a] == 0 || dilation[a] == 0 {
                return Err(format!("kernel {kernel:?}, stride {stride:?}, dilation {dilation:?}"));
            }
            let padded = size[a].checked_add(padding[a]).and_then(|v| v.checked_add(padding[a]));
            let span = (kernel[a] - 1).checked_mul(dilation[a]).and_then(|v| v.checked_add(1));
            match (padded, span) {
                (Some(padded), Some(span)) if span <= padded => out[a] = (padded - span) / stride[a] + 1,
                _ => return Err(format!("a kernel of {kernel:?} does not fit {size:?} padded by {padding:?}")),
            }
        }
        let geometry = Geometry {
            n: x[0],
            c: x[1],
            h: size[0],
            w: size[1],
            kernel,
            stride,
            padding,
            dilation,
            oh: out[0],
            ow: out[1],
        };
        let elements = [geometry.n, geometry.c, out[0], out[1]].iter().try_fold(1usize, |a, &b| a.checked_mul(b));
        elements.map(|_| geometry).ok_or_else(|| "the output has too many elements".to_owned())
    }

    /// The input index along `axis` that output index `o` reads at tap `k` (`None`: the padding).
    fn tap(&self, axis: usize, o: usize, k: usize) -> Option<usize> {
        let padded = o * self.stride[axis] + k * self.dilation[axis];
        let limit = if axis == 0 { self.h } else { self.w };
        padded.checked_sub(self.padding[axis]).filter(|&i| i < limit)
    }

    /// The output index along `axis` whose tap `k` reads input index `i`, if any.
    fn reader(&self, axis: usize, i: usize, k: usize) -> Option<usize> {
        let padded = (i + self.padding[axis]).checked_sub(k * self.dilation[axis])?;
        let outs = if axis == 0 { self.oh } else { self.ow };
        (padded % self.stride[axis] == 0).then_some(padded / self.stride[axis]).filter(|&o| o < outs)
    }

    /// The value of plane `(b, ch)` of `x` at the taps `(ki, kj)` of output `(i, j)`, the
    /// scalar's `0` in the padding.
    fn padded<A: Scalar>(
        &self,
        x: &RefTensor<A>,
        b: usize,
        ch: usize,
        (i, j): (usize, usize),
        (ki, kj): (usize, usize),
    ) -> A {
        match (self.tap(0, i, ki), self.tap(1, j, kj)) {
            (Some(r), Some(col)) => x.data[((b * self.c + ch) * self.h + r) * self.w + col].clone(),
            _ => A::zero(),
        }
    }

    /// The input rows (`axis = 0`) or columns of a pooling window at output index `o`: the padded
    /// indices `o·stride .. o·stride + kernel` (a pooling's dilation is 1) that fall inside the
    /// input, shifted back by the padding; ascending.
    fn within(&self, axis: usize, o: usize) -> core::ops::Range<usize> {
        let (size, pad) = (if axis == 0 { self.h } else { self.w }, self.padding[axis]);
        let first = o * self.stride[axis];
        let lo = first.max(pad);
        let hi = (first + self.kernel[axis]).min(pad + size).max(lo);
        lo - pad..hi - pad
    }

    /// The elements `(r, col)` of the pooling window of output `(i, j)` inside the plane, in
    /// window order (rows ascending, then columns).
    fn window(&self, i: usize, j: usize) -> Vec<(usize, usize)> {
        let mut taps = Vec::new();
        for r in self.within(0, i) {
            for col in self.within(1, j) {
                taps.push((r, col));
            }
        }
        taps
    }
}

/// The output dims: `x`'s with the channels `channels` and the spatial sizes of `g`.
fn out_dims(x: &[usize], channels: usize, g: &Geometry) -> Vec<usize> {
    if x.len() == 3 {
        vec![g.n, channels, g.ow]
    } else {
        vec![g.n, channels, g.oh, g.ow]
    }
}

/// The constants of a convolution.
pub(super) struct ConvArgs<'a, A> {
    pub(super) stride: &'a [usize],
    pub(super) padding: &'a [usize],
    pub(super) dilation: &'a [usize],
    pub(super) mul_add: fn(A, A, A) -> A,
}

/// The geometry of the convolution of `x` with `w` and `c_out`, or a message.
fn conv_geometry<A>(x: &RefTensor<A>, w: &RefTensor<A>, a: &ConvArgs<'_, A>) -> Result<(Geometry, usize), String> {
    if w.dims.len() != x.dims.len() || x.dims.len() < 3 || w.dims[1] != x.dims[1] {
        return Err(format!("input of dims {:?} and weight of dims {:?}", x.dims, w.dims));
    }
    Ok((Geometry::new(&x.dims, &w.dims[2..], a.stride, a.padding, a.dilation)?, w.dims[0]))
}

/// `y[b, co, i, j] = Σ_{ci, ki, kj} xp[…] * w[co, ci, ki, kj]` from `0`, ascending, each step a
/// fused multiply-add ([`fused`]: SEMANTICS §8).
pub(super) fn conv<A: Scalar>(x: &RefTensor<A>, w: &RefTensor<A>, a: &ConvArgs<'_, A>) -> Result<RefTensor<A>, String> {
    let (g, c_out) = conv_geometry(x, w, a)?;
    let weight = |co: usize, ci: usize, ki: usize, kj: usize| {
        w.data[((co * g.c + ci) * g.kernel[0] + ki) * g.kernel[1] + kj].clone()
    };
    let mut data = Vec::new();
    for b in 0..g.n {
        for co in 0..c_out {
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let mut acc = A::zero();
                    for ci in 0..g.c {
                        for ki in 0..g.kernel[0] {
                            for kj in 0..g.kernel[1] {
                                let v = g.padded(x, b, ci, (i, j), (ki, kj));
                                acc = fused(v, weight(co, ci, ki, kj), acc, a.mul_add);
                            }
                        }
                    }
                    data.push(acc);
                }
            }
        }
    }
    Ok(RefTensor { dims: out_dims(&x.dims, c_out, &g), data })
}

/// The convolution's two VJP tensors `(gx, gw)` at cotangent `d`:
/// `gx[b, ci, r, c] = Σ_{ki, kj} (Σ_co δ[b, co, i, j] * w[co, ci, ki, kj])` over the taps that
/// read the element, and `gw[co, ci, ki, kj] = Σ_{b, i, j} δ[b, co, i, j] * xp[…]`.
pub(super) fn conv_vjp<A: Scalar>(
    x: &RefTensor<A>,
    w: &RefTensor<A>,
    d: &RefTensor<A>,
    a: &ConvArgs<'_, A>,
) -> Result<(RefTensor<A>, RefTensor<A>), String> {
    let (g, c_out) = conv_geometry(x, w, a)?;
    let delta = |b: usize, co: usize, i: usize, j: usize| d.data[((b * c_out + co) * g.oh + i) * g.ow + j].clone();
    let weight = |co: usize, ci: usize, ki: usize, kj: usize| {
        w.data[((co * g.c + ci) * g.kernel[0] + ki) * g.kernel[1] + kj].clone()
    };
    let mut gx = Vec::with_capacity(x.data.len());
    for b in 0..g.n {
        for ci in 0..g.c {
            for r in 0..g.h {
                for col in 0..g.w {
                    let mut acc = A::zero();
                    for ki in 0..g.kernel[0] {
                        for kj in 0..g.kernel[1] {
                            let (Some(i), Some(j)) = (g.reader(0, r, ki), g.reader(1, col, kj)) else { continue };
                            let mut inner = A::zero();
                            for co in 0..c_out {
                                inner = fused(delta(b, co, i, j), weight(co, ci, ki, kj), inner, a.mul_add);
                            }
                            acc = plus(acc, inner);
                        }
                    }
                    gx.push(acc);
                }
            }
        }
    }
    let mut gw = Vec::with_capacity(w.data.len());
    for co in 0..c_out {
        for ci in 0..g.c {
            for ki in 0..g.kernel[0] {
                for kj in 0..g.kernel[1] {
                    let mut acc = A::zero();
                    for b in 0..g.n {
                        for i in 0..g.oh {
                            for j in 0..g.ow {
                                let v = g.padded(x, b, ci, (i, j), (ki, kj));
                                acc = fused(delta(b, co, i, j), v, acc, a.mul_add);
                            }
                        }
                    }
                    gw.push(acc);
                }
            }
        }
    }
    Ok((RefTensor { dims: x.dims.clone(), data: gx }, RefTensor { dims: w.dims.clone(), data: gw }))
}

/// The constants of a pooling.
pub(super) struct PoolArgs<'a> {
    pub(super) kernel: &'a [usize],
    pub(super) stride: &'a [usize],
    pub(super) padding: &'a [usize],
}

/// The geometry of a pooling of `x`, or a message (every window must hold an element of `x`).
fn pool_geometry<A>(x: &RefTensor<A>, a: &PoolArgs<'_>) -> Result<Geometry, String> {
    let ones = vec![1; a.kernel.len()];
    let g = Geometry::new(&x.dims, a.kernel, a.stride, a.padding, &ones)?;
    let empty = || (0..g.oh).any(|i| g.within(0, i).is_empty()) || (0..g.ow).any(|j| g.within(1, j).is_empty());
    if g.n * g.c > 0 && empty() {
        return Err(format!("a window of {:?} padded by {:?} holds no element of {:?}", a.kernel, a.padding, x.dims));
    }
    Ok(g)
}

/// Whether `max` keeps `m` against a later `v`: unless `m < v`; unordered, a NaN `m` stays and a
/// NaN `v` replaces a number.
fn stays<A>(cmp: fn(&A, &A) -> Option<Ordering>, m: &A, v: &A) -> bool {
    match cmp(m, v) {
        Some(o) => o != Ordering::Less,
        None => cmp(m, m).is_none(),
    }
}

/// The tap `(r, col)` of plane `(b, ch)` that max pooling keeps in the window of `(i, j)`: the
/// first maximal one in window order.
fn kept<A>(
    x: &RefTensor<A>,
    g: &Geometry,
    cmp: fn(&A, &A) -> Option<Ordering>,
    b: usize,
    ch: usize,
    i: usize,
    j: usize,
) -> (usize, usize) {
    let at = |(r, col): (usize, usize)| &x.data[((b * g.c + ch) * g.h + r) * g.w + col];
    let window = g.window(i, j);
    let mut best = window[0];
    for &t in &window[1..] {
        if !stays(cmp, at(best), at(t)) {
            best = t;
        }
    }
    best
}

/// `y[b, ch, i, j]`: the first maximal element of the window in window order.
pub(super) fn max_pool<A: Scalar>(
    x: &RefTensor<A>,
    a: &PoolArgs<'_>,
    cmp: fn(&A, &A) -> Option<Ordering>,
) -> Result<RefTensor<A>, String> {
    let g = pool_geometry(x, a)?;
    let mut data = Vec::new();
    for b in 0..g.n {
        for ch in 0..g.c {
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let (r, col) = kept(x, &g, cmp, b, ch, i, j);
                    data.push(x.data[((b * g.c + ch) * g.h + r) * g.w + col].clone());
                }
            }
        }
    }
    Ok(RefTensor { dims: out_dims(&x.dims, g.c, &g), data })
}

/// `t[e] = Σ δ[o]` over the outputs `o` (ascending) that keep `e`, from `0`.
pub(super) fn max_pool_vjp<A: Scalar>(
    x: &RefTensor<A>,
    d: &RefTensor<A>,
    a: &PoolArgs<'_>,
    cmp: fn(&A, &A) -> Option<Ordering>,
) -> Result<RefTensor<A>, String> {
    let g = pool_geometry(x, a)?;
    let mut t = Vec::with_capacity(x.data.len());
    for b in 0..g.n {
        for ch in 0..g.c {
            for r in 0..g.h {
                for col in 0..g.w {
                    let mut acc = A::zero();
                    for i in 0..g.oh {
                        for j in 0..g.ow {
                            if kept(x, &g, cmp, b, ch, i, j) == (r, col) {
                                acc = plus(acc, d.data[((b * g.c + ch) * g.oh + i) * g.ow + j].clone());
                            }
                        }
                    }
                    t.push(acc);
                }
            }
        }
    }
    Ok(RefTensor { dims: x.dims.clone(), data: t })
}

/// `y[b, ch, i, j] = (Σ window, in window order from 0) / count`, the padding not counted.
pub(super) fn avg_pool<A: Scalar>(
    x: &RefTensor<A>,
    a: &PoolArgs<'_>,
    div: fn(A, A) -> A,
    counted: fn(usize) -> Option<A>,
) -> Result<RefTensor<A>, String> {
    let g = pool_geometry(x, a)?;
    let mut data = Vec::new();
    for b in 0..g.n {
        for ch in 0..g.c {
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let window = g.window(i, j);
                    let mut acc = A::zero();
                    for &(r, col) in &window {
                        acc = plus(acc, x.data[((b * g.c + ch) * g.h + r) * g.w + col].clone());
                    }
                    data.push(div(acc, count(counted, window.len())?));
                }
            }
        }
    }
    Ok(RefTensor { dims: out_dims(&x.dims, g.c, &g), data })
}

/// `t[e] = Σ δ[o] / count(o)` over the outputs `o` (ascending) whose window holds `e`, from `0`.
pub(super) fn avg_pool_vjp<A: Scalar>(
    x: &RefTensor<A>,
    d: &RefTensor<A>,
    a: &PoolArgs<'_>,
    div: fn(A, A) -> A,
    counted: fn(usize) -> Option<A>,
) -> Result<RefTensor<A>, String> {
    let g = pool_geometry(x, a)?;
    let mut t = Vec::with_capacity(x.data.len());
    for b in 0..g.n {
        for ch in 0..g.c {
            for r in 0..g.h {
                for col in 0..g.w {
                    let mut acc = A::zero();
                    for i in 0..g.oh {
                        for j in 0..g.ow {
                            let window = g.window(i, j);
                            if window.contains(&(r, col)) {
                                let v = d.data[((b * g.c + ch) * g.oh + i) * g.ow + j].clone();
                                acc = plus(acc, div(v, count(counted, window.len())?));
                            }
                        }
                    }
                    t.push(acc);
                }
            }
        }
    }
    Ok(RefTensor { dims: x.dims.clone(), data: t })
}
