//! `layer_norm(x, gain, bias)` over the last axis, with a constant `eps`; `x: [m, n]`,
//! `gain, bias: [n]` (`n ≥ 1`).
//!
//! For each row `x[0..n]`, in exactly this order:
//! 1. `μ = (((0 + x[0]) + x[1]) + …) / n`;
//! 2. `d[j] = x[j] − μ`;
//! 3. `v = (((0 + d[0] * d[0]) + d[1] * d[1]) + …) / n`;
//! 4. `r = 1 / sqrt(v + eps)`;
//! 5. `h[j] = d[j] * r`;
//! 6. `y[j] = h[j] * gain[j] + bias[j]` (product first, no `mul_add`).
//!
//! VJP (with `h` and `r` recomputed by the same kernel): per row, `q[j] = δ[j] * gain[j]`,
//! `a = (((0 + q[0]) + q[1]) + …) / n`, `b = (((0 + q[0] * h[0]) + q[1] * h[1]) + …) / n`, and
//! `gx[j] = ((q[j] − a) − b * h[j]) * r`. Over the rows `i` in ascending order from `0`:
//! `gbias[j] = ((0 + δ[0, j]) + δ[1, j]) + …` and `ggain[j] = ((0 + δ[0, j] * h[0, j]) + …)`.
//! The contributions are `add(add(single(x, gx), single(gain, ggain)), single(bias, gbias))`.

use crate::reference::{FloatKit, RefOp};
use crate::shape::rules::RowParamsShape;
use num_traits::{Float, FromPrimitive};

use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::scalar::{Scalar, Storage};
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Layer normalisation over the last axis with a gain and a bias.
#[derive(Clone, Debug)]
pub struct LayerNorm<A> {
    parents: [usize; 3],
    eps: A,
}

impl<A> LayerNorm<A> {
    /// `layer_norm(x, gain, bias)` with the constant `eps`.
    pub fn new(x: usize, gain: usize, bias: usize, eps: A) -> Self {
        LayerNorm { parents: [x, gain, bias], eps }
    }
}

/// `a + b`: the engine's pinned addition when `P`, plain `+` otherwise (see [`pinned_if_nan`]).
#[inline(always)]
fn add<A: Scalar + Float, const P: bool>(a: A, b: A) -> A {
    if P {
        A::pinned_add(a, b)
    } else {
        a + b
    }
}

/// `a * b` of two data values: pinned when `P`, plain otherwise.
#[inline(always)]
fn mul<A: Scalar + Float, const P: bool>(a: A, b: A) -> A {
    if P {
        A::pinned_mul(a, b)
    } else {
        a * b
    }
}

/// Runs `f::<false>` (plain `+` and `*`, which vectorise and keep one add on each sum's
/// dependency chain), and again as `f::<true>` (every `+`/`*` of two data values pinned) when its
/// results hold a NaN. Every operation here carries a NaN operand into its result (no select, no
/// comparison), so results without a NaN had no NaN along the way, where pinned and plain
/// operations agree: the two runs give the same bits whenever the first is kept.
fn pinned_if_nan<A: Scalar>(out: &mut Vec<A>, start: usize, mut f: impl FnMut(&mut Vec<A>, bool)) {
    f(out, false);
    if out[start..].iter().any(Storage::is_nan) {
        out.truncate(start);
        f(out, true);
    }
}

/// Steps 1–5 for one row: `h` into `h` (cleared first); returns `r`.
fn normalise<A: Scalar + Float, const P: bool>(row: &[A], n: A, eps: A, h: &mut Vec<A>) -> A {
    let mu = row.iter().fold(<A as Scalar>::zero(), |acc, &v| add::<A, P>(acc, v)) / n;
    h.clear();
    h.extend(row.iter().map(|&v| v - mu));
    let var = h.iter().fold(<A as Scalar>::zero(), |acc, &d| add::<A, P>(acc, d * d)) / n;
    let r = A::one() / (var + eps).sqrt();
    for d in h.iter_mut() {
        *d = mul::<A, P>(*d, r);
    }
    r
}

/// The forward of every row of `x` appended to `out`: `normalise`, then `h * g + b`.
fn forward_rows<A: Scalar + Float, const P: bool>(x: &[A], gain: &[A], bias: &[A], nf: A, eps: A, out: &mut Vec<A>) {
    let n = gain.len();
    for row in x.chunks_exact(n.max(1)) {
        // `normalise` written into `out`'s row, then `h * g + b` in place.
        let mu = row.iter().fold(<A as Scalar>::zero(), |acc, &v| add::<A, P>(acc, v)) / nf;
        let start = out.len();
        out.extend(row.iter().map(|&v| v - mu));
        let h = &mut out[start..];
        let var = h.iter().fold(<A as Scalar>::zero(), |acc, &d| add::<A, P>(acc, d * d)) / nf;
        let r = A::one() / (var + eps).sqrt();
        for ((d, &g), &b) in h.iter_mut().zip(gain).zip(bias) {
            *d = add::<A, P>(mul::<A, P>(mul::<A, P>(*d, r), g), b);
        }
    }
}

/// The VJP of every row: `gx` appended, `ggain` and `gbias` (zeros, `n` each) accumulated.
#[allow(clippy::type_complexity)]
fn vjp_rows<A: Scalar + Float, const P: bool>(
    x: &[A],
    g: &[A],
    gain: &[A],
    nf: A,
    eps: A,
    (h, q): (&mut Vec<A>, &mut Vec<A>),
    (gx, ggain, gbias): (&mut Vec<A>, &mut Vec<A>, &mut Vec<A>),
) {
    let n = gain.len();
    let zero = <A as Scalar>::zero();
    for (row, dr) in x.chunks_exact(n.max(1)).zip(g.chunks_exact(n.max(1))) {
        let r = normalise::<A, P>(row, nf, eps, h);
        q.clear();
        q.extend(dr.iter().zip(gain).map(|(&dv, &gv)| mul::<A, P>(dv, gv)));
        let a = q.iter().fold(zero, |acc, &v| add::<A, P>(acc, v)) / nf;
        let b = q.iter().zip(h.iter()).fold(zero, |acc, (&qv, &hv)| add::<A, P>(acc, mul::<A, P>(qv, hv))) / nf;
        gx.extend(q.iter().zip(h.iter()).map(|(&qv, &hv)| mul::<A, P>((qv - a) - mul::<A, P>(b, hv), r)));
        for j in 0..n {
            ggain[j] = add::<A, P>(ggain[j], mul::<A, P>(dr[j], h[j]));
            gbias[j] = add::<A, P>(gbias[j], dr[j]);
        }
    }
}

impl<A: Scalar + Float + FromPrimitive, D> CompactOp<A, D> for LayerNorm<A> {
    fn name(&self) -> &'static str {
        "layer_norm"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let dx = super::dims_at("layer_norm", prefix, self.parents[0])?;
        let dg = super::dims_at("layer_norm", prefix, self.parents[1])?;
        let db = super::dims_at("layer_norm", prefix, self.parents[2])?;
        let out =
            super::ruled(exactgrad_spec::rules::row_params("layer_norm", dx.as_slice(), dg.as_slice(), db.as_slice()))?;
        let n = dg.numel();
        A::from_usize(n)
            .map(|_: A| out)
            .ok_or_else(|| format!("layer_norm cannot represent the row length {n} in its scalar type"))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        super::forward_like(self, ctx, data, self.parents[0])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        let x = &ctx[self.parents[0]];
        let (gain, bias) = (ctx[self.parents[1]].data(), ctx[self.parents[2]].data());
        let n = gain.len();
        let nf = A::from_usize(n).expect("output_dims checked that the element count is a scalar of A");
        let start = out.len();
        pinned_if_nan(out, start, |out, pinned| {
            if pinned {
                forward_rows::<A, true>(x.data(), gain, bias, nf, self.eps, out);
            } else {
                forward_rows::<A, false>(x.data(), gain, bias, nf, self.eps, out);
            }
        });
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let x = &saved.prefix[self.parents[0]];
        let (tg, tb) = (&saved.prefix[self.parents[1]], &saved.prefix[self.parents[2]]);
        let gain = tg.data();
        let n = gain.len();
        let nf = A::from_usize(n).expect("output_dims checked that the element count is a scalar of A");
        let zero = <A as Scalar>::zero();
        // Scratch rows from the arena's recycled buffers (given back below): no allocation once
        // warm.
        let (mut h, mut q) = (c.buffer_for(n), c.buffer_for(n));
        let mut gx = c.buffer_for(x.numel());
        let mut ggain = c.buffer_for(n);
        ggain.resize(n, zero);
        let mut gbias = c.buffer_for(n);
        gbias.resize(n, zero);
        let mut rows = |pinned: bool, gx: &mut Vec<A>, ggain: &mut Vec<A>, gbias: &mut Vec<A>| {
            let bufs = (&mut h, &mut q);
            if pinned {
                vjp_rows::<A, true>(x.data(), g.data(), gain, nf, self.eps, bufs, (gx, ggain, gbias));
            } else {
                vjp_rows::<A, false>(x.data(), g.data(), gain, nf, self.eps, bufs, (gx, ggain, gbias));
            }
        };
        // As `pinned_if_nan`, over the three results.
        rows(false, &mut gx, &mut ggain, &mut gbias);
        if gx.iter().chain(&ggain).chain(&gbias).any(Storage::is_nan) {
            gx.clear();
            ggain.clear();
            ggain.resize(n, zero);
            gbias.clear();
            gbias.resize(n, zero);
            rows(true, &mut gx, &mut ggain, &mut gbias);
        }
        c.recycle(h);
        c.recycle(q);
        let gx = RawTensor::from_parts(x.dims(), gx);
        let ggain = RawTensor::from_parts(tg.dims(), ggain);
        let gbias = RawTensor::from_parts(tb.dims(), gbias);
        let sx = c.single(self.parents[0], gx);
        let sg = c.single(self.parents[1], ggain);
        let l = c.add(sx, sg);
        let sb = c.single(self.parents[2], gbias);
        c.add(l, sb)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        let [x, gain, bias] = self.parents;
        Some(RefOp::LayerNorm { x, gain, bias, eps: self.eps, k: FloatKit::counting() })
    }
}

/// Typed `layer_norm(x, gain, bias)` with the constant `eps`: `(M, N)`, `(N,)`, `(N,)` → `(M, N)`
/// ([`RowParamsShape`]).
pub fn layer_norm<
    A: Scalar + Float + FromPrimitive,
    D: 'static,
    S: RowParamsShape<G, B, Output = O>,
    G,
    B,
    O: Shape,
    Br,
>(
    x: Position<S, Br>,
    gain: Position<G, Br>,
    bias: Position<B, Br>,
    eps: A,
) -> Compact<LayerNorm<A>, A, D, O> {
    Compact::new(LayerNorm::new(x.index(), gain.index(), bias.index(), eps), &[&x, &gain, &bias])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{forward, gradcheck, sample};

    #[test]
    fn value() {
        let x = RawTensor::from_vec(Dims::matrix(1, 4), vec![1.0, 2.0, 3.0, 6.0]).unwrap();
        let g = RawTensor::from_vec(Dims::vector(4), vec![1.0, 2.0, 1.0, 1.0]).unwrap();
        let b = RawTensor::from_vec(Dims::vector(4), vec![0.0, 0.0, 0.5, 0.0]).unwrap();
        let y = forward(LayerNorm::new(0, 1, 2, 0.0), &[x, g, b]);
        // μ = 3, d = [-2, -1, 0, 3], v = 14 / 4.
        let r = 1.0 / 3.5f64.sqrt();
        assert_eq!(y.data(), &[-2.0 * r, -r * 2.0, 0.5, 3.0 * r]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let inputs = [sample(&[3, 4], 100), sample(&[4], 101), sample(&[4], 102)];
        gradcheck(LayerNorm::new(0, 1, 2, 1e-5), &inputs, 1e-6);
        // Gain and bias at one position: their terms are added first.
        gradcheck(LayerNorm::new(0, 1, 1, 1e-5), &inputs[..2], 1e-6);
    }

    #[test]
    fn constant_row_is_finite_with_eps() {
        let x = RawTensor::full(Dims::matrix(2, 3), 7.0);
        let y = forward(LayerNorm::new(0, 1, 2, 1e-5), &[x, sample(&[3], 103), RawTensor::full(Dims::vector(3), 0.25)]);
        assert!(y.data().iter().all(|&v| v == 0.25));
    }

    #[test]
    fn shape_errors_name_the_shapes() {
        let op = LayerNorm::new(0, 1, 2, 1e-5);
        let e = <LayerNorm<f64> as CompactOp<f64, ()>>::output_dims(
            &op,
            &[Dims::matrix(2, 3), Dims::vector(3), Dims::vector(2)],
        );
        assert_eq!(e.unwrap_err(), "layer_norm needs the bias's length (2) to equal the rows' length (3)");
    }
}
