//! The VJP of `slice` added in one pass (SEMANTICS §4–§6, "fuse the `+ 0` of a contribution into
//! the kernel that produces it").
//!
//! `slice`'s contribution is `single(x, t)`, `t` the cotangent placed in a window of `x`'s shape
//! and zeros around it. A generated program accumulates it at `x` as `(slot + pending uniforms) +
//! t[e]` for every element `e`: built first, that is one pass to write `t` (mostly zeros) and one
//! to add it. Here both are one loop over the gradient of `x` that reads the cotangent inside the
//! window and adds `0` around it — the same additions, in the same order, with the same operands
//! (the zeros are `A::zero()`, the value `t` holds), so the same bits on every scalar.
//! `tests` below compare it with the contributions read through the arena, bit for bit, on
//! adversarial values.

use super::slice::Slice;
use super::sum_axis::split;
use crate::graph::CompactOp;
use crate::scalar::Scalar;
use crate::shape::Dims;

/// Where a window op's cotangent lands in its operand: the operand's elements as `rows` rows of
/// `row_len`, and in each row the `count` elements from `from` (row `r` of the cotangent, in
/// order); the rest of the operand gets zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Number of rows.
    pub rows: usize,
    /// Elements per row of the operand.
    pub row_len: usize,
    /// Where the window starts in each row.
    pub from: usize,
    /// Elements of the window in each row (of the cotangent per row).
    pub count: usize,
}

impl Window {
    /// Whether the window fits an operand of `operand` elements and a cotangent of `cotangent`.
    #[must_use]
    pub fn fits(&self, operand: usize, cotangent: usize) -> bool {
        let rows = |len: usize| self.rows.checked_mul(len);
        self.from.checked_add(self.count).is_some_and(|end| end <= self.row_len)
            && rows(self.row_len) == Some(operand)
            && rows(self.count) == Some(cotangent)
    }
}

/// A built-in op whose one contribution is its cotangent in a [`Window`] of its one operand,
/// zeros elsewhere: a generated program adds it in one pass
/// ([`ProgramState::vjp_window`](crate::ProgramState::vjp_window)).
pub trait WindowVjp<A, D>: CompactOp<A, D> {
    /// The window for an operand of dims `operand`.
    fn window(&self, operand: Dims) -> Window;
}

impl<A: Scalar, D> WindowVjp<A, D> for Slice {
    fn window(&self, operand: Dims) -> Window {
        let (outer, n, inner) = split(operand, self.axis());
        let (start, len) = self.range();
        Window { rows: outer, row_len: n * inner, from: start * inner, count: len * inner }
    }
}

/// `x[e] ← (x[e] + u) + t[e]` (without `+ u` when `u` is `None`), `t` the cotangent `g` in window
/// `w`, zeros around it. `w` fits `x` and `g`.
pub(crate) fn accumulate<A: Scalar>(x: &mut [A], u: Option<&A>, g: &[A], w: Window) {
    super::elementwise(Accumulate { x, u, g, w });
}

/// `out = [stored + t[e]]`, `t` as in [`accumulate`] (`out` is cleared first).
pub(crate) fn onto<A: Scalar>(stored: &A, g: &[A], w: Window, out: &mut Vec<A>) {
    out.clear();
    out.reserve(w.rows * w.row_len);
    let around = A::pinned_add(stored.clone(), A::zero());
    for r in 0..w.rows {
        out.extend((0..w.from).map(|_| around.clone()));
        out.extend(g[r * w.count..][..w.count].iter().map(|v| A::pinned_add(stored.clone(), v.clone())));
        out.extend((w.from + w.count..w.row_len).map(|_| around.clone()));
    }
}

struct Accumulate<'a, A> {
    x: &'a mut [A],
    u: Option<&'a A>,
    g: &'a [A],
    w: Window,
}

/// `e ← (e + u) + c` for every `e` of `run` and the matching `c` of `cs` (or `zero`).
#[inline(always)]
fn add_run<A: Scalar>(run: &mut [A], u: Option<&A>, cs: Option<&[A]>) {
    let zero = A::zero();
    match (u, cs) {
        (Some(u), Some(cs)) => {
            for (e, c) in run.iter_mut().zip(cs) {
                *e = A::pinned_add(A::pinned_add(e.clone(), u.clone()), c.clone());
            }
        }
        (Some(u), None) => {
            for e in run.iter_mut() {
                *e = A::pinned_add(A::pinned_add(e.clone(), u.clone()), zero.clone());
            }
        }
        (None, Some(cs)) => {
            for (e, c) in run.iter_mut().zip(cs) {
                *e = A::pinned_add(e.clone(), c.clone());
            }
        }
        (None, None) => {
            for e in run.iter_mut() {
                *e = A::pinned_add(e.clone(), zero.clone());
            }
        }
    }
}

impl<A: Scalar> super::WideLoop for Accumulate<'_, A> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let Accumulate { x, u, g, w } = self;
        for r in 0..w.rows {
            let row = &mut x[r * w.row_len..][..w.row_len];
            let cs = &g[r * w.count..][..w.count];
            let (head, rest) = row.split_at_mut(w.from);
            let (mid, tail) = rest.split_at_mut(w.count);
            add_run(head, u, None);
            add_run(mid, u, Some(cs));
            add_run(tail, u, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contributions::{Contributions, Sink};
    use crate::graph::SavedValues;
    use crate::scalar::Storage;
    use crate::tensor::RawTensor;
    use proptest::prelude::*;

    /// The window path against the contributions built and read through the arena, both onto a
    /// dense slot (with and without a pending uniform) and onto a uniform one.
    fn check(op: &Slice, dims: &[usize], x: &[f32], g: &[f32], u: Option<f32>, stored: f32) {
        let d = Dims::new(dims).unwrap();
        let op = op.clone();
        let x_t = RawTensor::from_vec(d, x.to_vec()).unwrap();
        let out_dims = CompactOp::<f32, ()>::output_dims(&op, &[d]).unwrap();
        let g_t = RawTensor::from_vec(out_dims, g.to_vec()).unwrap();
        let y = CompactOp::<f32, ()>::forward(&op, std::slice::from_ref(&x_t), &());
        let saved = SavedValues { prefix: std::slice::from_ref(&x_t), output: &y, data: &() };
        let mut c = Contributions::new();
        let root = op.contributions(&saved, &g_t, &mut c);
        let w = <Slice as WindowVjp<f32, ()>>::window(&op, d);
        assert!(w.fits(d.numel(), out_dims.numel()));
        let bits = |v: &[f32]| v.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
        // Dense slot: pending uniform applied, then the read added.
        let mut want = x.to_vec();
        if let Some(u) = u {
            for e in &mut want {
                *e = f32::pinned_add(*e, u);
            }
        }
        c.read_into(root, 0, &g_t, Sink::Accumulate(&mut want)).unwrap();
        let mut got = x.to_vec();
        accumulate(&mut got, u.as_ref(), g, w);
        assert_eq!(bits(&got), bits(&want));
        // Uniform slot.
        let (mut want, mut got) = (Vec::new(), Vec::new());
        c.read_into(root, 0, &g_t, Sink::OntoUniformInto(&stored, &mut want)).unwrap();
        onto(&stored, g, w, &mut got);
        assert_eq!(bits(&got), bits(&want));
    }

    proptest! {
        #[test]
        fn one_pass_equals_the_arena(
            (dims, axis, start, len) in (1usize..4, 1usize..5, 1usize..4, 0usize..3).prop_flat_map(|(a, b, c, axis)| {
                let dims = vec![a, b, c];
                let axis = axis.min(2);
                let n = dims[axis];
                (Just(dims), Just(axis), 0..n).prop_flat_map(move |(d, ax, s)| (Just(d), Just(ax), Just(s), 0..=n - s))
            }),
            values in prop::collection::vec(crate::ops::testing::special_f32(), 128),
            u in prop::option::of(crate::ops::testing::special_f32()),
            stored in crate::ops::testing::special_f32(),
        ) {
            let numel: usize = dims.iter().product();
            let mut out = dims.clone();
            out[axis] = len;
            let out_numel: usize = out.iter().product();
            check(&Slice::new(0, axis, start, len), &dims, &values[..numel], &values[64..64 + out_numel], u, stored);
        }
    }
}
