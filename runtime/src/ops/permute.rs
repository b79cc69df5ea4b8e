//! `permute(x, perm)`: reorders the axes of `x` (rank ≤ 4). Axis `k` of the output is axis
//! `perm[k]` of `x`: `y.dims[k] = x.dims[perm[k]]` and `y[i_0, …, i_{r−1}] = x[j]` with
//! `j[perm[k]] = i_k` (so `transpose(a)` is `permute(a, [1, 0])`).
//!
//! The permutation is a runtime value checked by the shape rule: it must list every axis
//! `0..rank` of `x` exactly once, else the node is rejected with a message naming it.
//!
//! VJP: `single(x, permute(δ, perm⁻¹))` with `perm⁻¹[perm[k]] = k` — a pure reindexing, no
//! arithmetic (a `-0.0` or a NaN payload in `δ` reaches `x` unchanged).

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::{Dims, MAX_RANK};
use crate::tensor::RawTensor;

/// Axis permutation.
#[derive(Clone, Debug)]
pub struct Permute {
    parents: [usize; 1],
    perm: Vec<usize>,
    inverse: Vec<usize>,
}

impl Permute {
    /// `permute(x, perm)` for the position `x`: output axis `k` is axis `perm[k]` of `x`.
    #[must_use]
    pub fn new(x: usize, perm: &[usize]) -> Self {
        // A non-permutation gets an inverse that is never used (the shape rule rejects it).
        let mut inverse = vec![0; perm.len()];
        for (k, &p) in perm.iter().enumerate() {
            if let Some(slot) = inverse.get_mut(p) {
                *slot = k;
            }
        }
        Permute { parents: [x], perm: perm.to_vec(), inverse }
    }
}

/// Appends `x` (dims `d`) with its axes permuted by `perm` (already checked) to `out` and
/// returns the output dims. Output axes that stay adjacent in `x` are merged, so the innermost
/// merged axis is one run: a copy of contiguous elements when its step in `x` is 1 (an
/// attention head split `[b, t, h, d] → [b, h, t, d]` copies runs of `d`), else a strided gather;
/// the outer axes advance as an odometer (no division per element). Copies only, no arithmetic.
pub(super) fn permute_into<A: Clone>(x: &[A], d: Dims, perm: &[usize], out: &mut Vec<A>) -> Dims {
    let src = d.as_slice();
    let mut strides = [0; MAX_RANK];
    let mut acc = 1;
    for k in (0..src.len()).rev() {
        strides[k] = acc;
        acc *= src[k];
    }
    let rank = perm.len();
    let mut lens = [0; MAX_RANK];
    for (k, &p) in perm.iter().enumerate() {
        lens[k] = src[p];
    }
    let dims = Dims::new(&lens[..rank]).expect("a permutation keeps the rank");
    if dims.numel() == 0 {
        return dims;
    }
    // The output axes as (length, step in `x`), outermost first, size-1 axes dropped and an
    // axis merged into the one before it when the two are contiguous in `x`.
    let mut axes = [(0usize, 0usize); MAX_RANK];
    let mut m = 0;
    for (k, &p) in perm.iter().enumerate() {
        let (len, step) = (lens[k], strides[p]);
        if len == 1 {
            continue;
        }
        if m > 0 && axes[m - 1].1 == step * len {
            axes[m - 1] = (axes[m - 1].0 * len, step);
        } else {
            axes[m] = (len, step);
            m += 1;
        }
    }
    if m == 0 {
        out.push(x[0].clone());
        return dims;
    }
    out.reserve(dims.numel());
    let (run, run_step) = axes[m - 1];
    let outer = &axes[..m - 1];
    let mut at = [0usize; MAX_RANK];
    let mut base = 0;
    loop {
        if run_step == 1 {
            out.extend_from_slice(&x[base..base + run]);
        } else {
            out.extend(x[base..].iter().step_by(run_step).take(run).cloned());
        }
        let mut k = outer.len();
        loop {
            if k == 0 {
                return dims;
            }
            k -= 1;
            at[k] += 1;
            base += outer[k].1;
            if at[k] < outer[k].0 {
                break;
            }
            base -= outer[k].1 * outer[k].0;
            at[k] = 0;
        }
    }
}

/// `x` with its axes permuted by `perm`, appended to `out`: the body `crate::compiled`
/// instantiates for `f32` and `f64` (a model's crate calls it through the table).
pub(crate) fn forward_body<A: Scalar>(x: &RawTensor<A>, perm: &[usize], out: &mut Vec<A>) {
    permute_into(x.data(), x.dims(), perm, out);
}

/// The contribution tensor of the operand: the cotangent `g` permuted back by `inverse` (its
/// buffer from the arena `c`): the body `crate::compiled` instantiates for `f32` and `f64`.
pub(crate) fn vjp_body<A: Scalar>(g: &RawTensor<A>, inverse: &[usize], c: &mut Contributions<A>) -> RawTensor<A> {
    let mut v = c.buffer_for(g.dims().numel());
    let d = permute_into(g.data(), g.dims(), inverse, &mut v);
    RawTensor::from_parts(d, v)
}

impl<A: Scalar, D> CompactOp<A, D> for Permute {
    fn name(&self) -> &'static str {
        "permute"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("permute", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::permute(d.as_slice(), &self.perm))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        // `forward_into`, so both are the compiled body; the dims are the permuted ones.
        let x = &ctx[self.parents[0]];
        let d = super::ruled(super::spec_rules::permute(x.dims().as_slice(), &self.perm))
            .expect("the graph checked the permutation");
        let mut out = Vec::with_capacity(d.numel());
        self.forward_into(ctx, data, &mut out);
        RawTensor::from_parts(d, out)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        crate::compiled::compiled_or_body!(A, permute.0, forward_body, (&ctx[self.parents[0]], &self.perm, out));
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let t = crate::compiled::compiled_or_body!(A, permute.1, vjp_body, (g, &self.inverse, c));
        debug_assert_eq!(t.dims(), saved.prefix[self.parents[0]].dims());
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Permute { a: self.parents[0], perm: self.perm.clone() })
    }
}

typed_op!(permute(x: S; perm: @P as &'static [usize]) -> Permute: Permute, "output axis `k` is axis `perm.k` of `x` (`perm` a tuple of typenum values, `(U1::new(), U0::new())`); that `perm` lists every axis once is checked when the node is pushed (reported by `compile`)");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::ops::Transpose;

    fn dims(d: &[usize]) -> Dims {
        Dims::new(d).unwrap()
    }

    #[test]
    fn value() {
        // x: [2, 3, 4], y = permute(x, [2, 0, 1]): [4, 2, 3], y[k, i, j] = x[i, j, k].
        let x = sample(&[2, 3, 4], 300);
        let y = forward(Permute::new(0, &[2, 0, 1]), std::slice::from_ref(&x));
        assert_eq!(y.dims(), dims(&[4, 2, 3]));
        for (i, j, k) in [(0, 0, 0), (1, 2, 3), (0, 1, 2), (1, 0, 3)] {
            assert_eq!(y.data()[(k * 2 + i) * 3 + j].to_bits(), x.data()[(i * 3 + j) * 4 + k].to_bits());
        }
        // The identity permutation and a rank-0 tensor.
        assert_eq!(bits(&forward(Permute::new(0, &[0, 1, 2]), std::slice::from_ref(&x))), bits(&x));
        let s = sample(&[], 301);
        assert_eq!(bits(&forward(Permute::new(0, &[]), std::slice::from_ref(&s))), bits(&s));
    }

    #[test]
    fn matrices_match_transpose() {
        let x = sample(&[3, 5], 302);
        let y = forward(Permute::new(0, &[1, 0]), std::slice::from_ref(&x));
        assert_eq!(bits(&y), bits(&forward(Transpose::new(0), std::slice::from_ref(&x))));
        let g = sample(&[5, 3], 303);
        let a = vjp(Permute::new(0, &[1, 0]), std::slice::from_ref(&x), &g);
        let b = vjp(Transpose::new(0), std::slice::from_ref(&x), &g);
        assert_eq!(bits(&a[0]), bits(&b[0]));
    }

    #[test]
    fn gradient() {
        gradcheck(Permute::new(0, &[1, 0]), &[sample(&[2, 3], 304)], 1e-7);
        gradcheck(Permute::new(0, &[2, 0, 1]), &[sample(&[2, 3, 4], 305)], 1e-7);
        gradcheck(Permute::new(0, &[1, 2, 0]), &[sample(&[2, 3, 4], 306)], 1e-7);
        gradcheck(Permute::new(0, &[3, 1, 0, 2]), &[sample(&[2, 1, 3, 2], 307)], 1e-7);
        gradcheck(Permute::new(0, &[0]), &[sample(&[4], 308)], 1e-7);
    }

    #[test]
    fn vjp_is_the_inverse_permutation_and_keeps_bits() {
        // permute(δ, perm⁻¹) then permute(·, perm) is δ again, bit for bit (-0.0 and NaN payloads
        // included: the VJP only moves elements).
        let x = sample(&[2, 3, 2, 2], 309);
        let perm = [2, 3, 0, 1];
        let y = forward(Permute::new(0, &perm), std::slice::from_ref(&x));
        let special = [-0.0, f64::from_bits(0x7ff8_0000_0000_0bad), f64::NEG_INFINITY, f64::from_bits(1)];
        let g = RawTensor::from_fn(y.dims(), |i| if i % 3 == 0 { special[i % 4] } else { i as f64 });
        let t = vjp(Permute::new(0, &perm), std::slice::from_ref(&x), &g);
        assert_eq!(t[0].dims(), x.dims());
        let back = forward(Permute::new(0, &perm), &t);
        assert_eq!(bits(&back), bits(&g));
    }

    /// Every permutation of every shape of rank ≤ 4 with axes of 0 to 3 elements: the runs and
    /// odometer of `permute_into` give element `o` of the output as the definition does
    /// (`y[i] = x[j]` with `j[perm[k]] = i_k`, read off `o` by division).
    #[test]
    fn merged_runs_follow_the_definition() {
        fn perms(n: usize) -> Vec<Vec<usize>> {
            if n == 0 {
                return vec![vec![]];
            }
            let mut all = Vec::new();
            for p in perms(n - 1) {
                for at in 0..n {
                    let mut q = p.clone();
                    q.insert(at, n - 1);
                    all.push(q);
                }
            }
            all
        }
        let mut shapes = vec![vec![]];
        for _ in 0..4 {
            let longer: Vec<Vec<usize>> =
                shapes.iter().flat_map(|s: &Vec<usize>| (0..4).map(move |n| [s.clone(), vec![n]].concat())).collect();
            shapes.extend(longer.into_iter().filter(|s| s.len() <= 4));
            shapes.sort();
            shapes.dedup();
        }
        for shape in shapes {
            let d = dims(&shape);
            let x: Vec<u32> = (0..d.numel() as u32).collect();
            let mut strides = vec![1; shape.len()];
            for k in (0..shape.len().saturating_sub(1)).rev() {
                strides[k] = strides[k + 1] * shape[k + 1];
            }
            for perm in perms(shape.len()) {
                let mut out = vec![7];
                let y = permute_into(&x, d, &perm, &mut out);
                let lens: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
                assert_eq!(y.as_slice(), &lens[..]);
                let want: Vec<u32> = (0..y.numel())
                    .map(|mut o| {
                        let mut j = 0;
                        for k in (0..perm.len()).rev() {
                            j += (o % lens[k]) * strides[perm[k]];
                            o /= lens[k];
                        }
                        x[j]
                    })
                    .collect();
                assert_eq!(out[0], 7, "appends");
                assert_eq!(&out[1..], &want[..], "shape {shape:?}, perm {perm:?}");
            }
        }
    }

    #[test]
    fn bad_permutations_are_named() {
        let rule = |perm: &[usize], d: &[usize]| {
            <Permute as CompactOp<f64, ()>>::output_dims(&Permute::new(0, perm), &[dims(d)]).unwrap_err()
        };
        assert_eq!(rule(&[0, 0], &[2, 3]), "permute needs a permutation of the axes 0..2 of shape [2, 3], got [0, 0]");
        assert_eq!(
            rule(&[1, 0], &[2, 3, 4]),
            "permute needs a permutation of the axes 0..3 of shape [2, 3, 4], got [1, 0]"
        );
        assert_eq!(rule(&[0, 2], &[2, 3]), "permute needs a permutation of the axes 0..2 of shape [2, 3], got [0, 2]");
        assert_eq!(
            rule(&[0, 1, 2, 3, 4], &[1, 2, 3, 4]),
            "permute needs a permutation of the axes 0..4 of shape [1, 2, 3, 4], got [0, 1, 2, 3, 4]"
        );
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U0, U1, U2, U3, U4};
        let (g, x) = GraphData::<f64, ()>::new().input::<(U2, U3, U4)>();
        let (g, y) = g.push(permute(x, (U2::new(), U0::new(), U1::new())));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[y.index()], Dims::new(&[4, 2, 3]).unwrap());
        // Not a permutation: the type is computed axis by axis, the rule rejects it at push.
        let (g, _) = g.push(permute(x, (U0::new(), U0::new(), U1::new())));
        let errors = g.build_errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].1, "permute needs a permutation of the axes 0..3 of shape [2, 3, 4], got [0, 0, 1]");
    }
}
