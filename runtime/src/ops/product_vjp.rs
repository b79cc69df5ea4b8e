//! The VJPs of `matmul` and `matmul_data` written straight onto a gradient that still holds a
//! uniform: one GEMM whose final store adds the stored value (SEMANTICS §4–§6, "fuse the `+ 0` of
//! a contribution into the kernel that produces it").
//!
//! A generated program accumulates a contribution at a position `q` holding the uniform `stored`
//! as `stored + read(q)`. For these ops each `read(q)` is one matrix product `P`, possibly with
//! the other operand's uniform `0` added by the contribution's `add` node:
//!
//! * `matmul`: `read(a) = P_a + 0` (`δ · bᵀ`, then `single(b)`'s zero on the right) and
//!   `read(b) = 0 + P_b` (`aᵀ · δ`, the zero on the left), for distinct `a` and `b`;
//! * `matmul_data`: `read(w) = P_w` (`xᵀ · δ`, a lone `single`).
//!
//! A batched `matmul` (`[bt, m, k] · [bt, k, n]`) computes one such GEMM per batch item, appended
//! in batch order exactly as `left_gradient`/`right_gradient` lay out the contribution; with a
//! shared right matrix (`[bt, m, k] · [k, n]`) it is the rank-2 case over the `bt·m` rows.
//!
//! `stored + P` is [`gemm_onto`]. For `stored + (P + 0)` on `f32`/`f64` the GEMM adds
//! `stored'` instead, where `stored'` is `+0` when `stored` is `-0` and `stored` otherwise: the
//! two agree on every input. (`P + 0` equals `P` except that `-0` becomes `+0` and a NaN is
//! quieted; a quieted NaN gives the same pinned result as the NaN itself, and `-0` only matters
//! against a `stored` of `-0`, where `-0 + +0 = +0` while `-0 + -0 = -0` — replacing that `stored`
//! by `+0` makes both `+0`.) Other scalars compute the product and then the two additions in the
//! contribution's order. `tests` below compare both with the contributions read through the
//! arena, bit for bit, on adversarial values.

use core::any::Any;
use core::ops::Mul;

use super::matmul::{each_item, gemm, gemm_onto, Batch, MatMul, MatrixView};
use super::matmul_data::MatMulData;
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::tensor::RawTensor;

/// A built-in op whose contribution at each support position is one matrix product: a generated
/// program computes it onto a position still holding a uniform in one GEMM
/// ([`ProgramState::vjp_product`](crate::ProgramState::vjp_product)).
pub trait ProductVjp<A, D>: CompactOp<A, D> {
    /// The uniform of the op's contributions (what
    /// [`Contributions::uniform`](crate::Contributions::uniform) gives for them).
    fn product_uniform(&self) -> A;

    /// Appends `stored + read(q)[e]` for every element `e`, where `q` is the op's `operand`-th
    /// support position and `read(q)` what its contributions read there: bit for bit what
    /// [`contributions`](CompactOp::contributions) and an accumulation onto `stored` give.
    /// For `matmul` the two operands must be distinct positions.
    fn product_onto(
        &self,
        saved: &SavedValues<'_, A, D>,
        g: &RawTensor<A>,
        operand: usize,
        stored: &A,
        out: &mut Vec<A>,
    );
}

/// `stored'` of the module docs for `f32`/`f64` (`None` for other scalars).
fn float_stored<A: 'static + Clone>(stored: &A) -> Option<A> {
    let any = stored as &dyn Any;
    let zero_for = |negative_zero: bool| -> Option<A> {
        if negative_zero {
            (&0.0f32 as &dyn Any).downcast_ref::<A>().or_else(|| (&0.0f64 as &dyn Any).downcast_ref::<A>()).cloned()
        } else {
            Some(stored.clone())
        }
    };
    if let Some(v) = any.downcast_ref::<f32>() {
        zero_for(v.to_bits() == (-0.0f32).to_bits())
    } else if let Some(v) = any.downcast_ref::<f64>() {
        zero_for(v.to_bits() == (-0.0f64).to_bits())
    } else {
        None
    }
}

/// Appends `stored + (P + 0)` (`zero_left`: `stored + (0 + P)`) for the product `P` that
/// `gemm::<A, RHS_LEFT>` of these arguments appends.
#[allow(clippy::too_many_arguments)] // gemm's arguments, the uniform and the side of the zero
fn gemm_onto_plus_zero<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    (rows, inner, cols): (usize, usize, usize),
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    stored: &A,
    zero_left: bool,
    out: &mut Vec<A>,
) {
    if let Some(s) = float_stored(stored) {
        gemm_onto::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, &s, out);
        return;
    }
    let start = out.len();
    gemm::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, out);
    for x in &mut out[start..] {
        let read = if zero_left { A::pinned_add(A::zero(), x.clone()) } else { A::pinned_add(x.clone(), A::zero()) };
        *x = A::pinned_add(stored.clone(), read);
    }
}

impl<A: Scalar + Mul<Output = A>, D> ProductVjp<A, D> for MatMul {
    fn product_uniform(&self) -> A {
        // `add(single(a, …), single(b, …))`: the sum of the two singles' zeros.
        A::pinned_add(A::zero(), A::zero())
    }

    fn product_onto(
        &self,
        saved: &SavedValues<'_, A, D>,
        g: &RawTensor<A>,
        operand: usize,
        stored: &A,
        out: &mut Vec<A>,
    ) {
        let [pa, pb] = self.positions();
        let (a, b) = (&saved.prefix[pa], &saved.prefix[pb]);
        if A::COMPILED {
            return (A::compiled().product_onto)(a, b, g, operand, stored, out);
        }
        product_onto_body(a, b, g, operand, stored, out);
    }
}

/// `matmul`'s [`ProductVjp::product_onto`] for operands `a` and `b` (compiled in this crate for
/// `f32` and `f64`: [`crate::compiled`]).
pub(crate) fn product_onto_body<A: Scalar + Mul<Output = A>>(
    a: &RawTensor<A>,
    b: &RawTensor<A>,
    g: &RawTensor<A>,
    operand: usize,
    stored: &A,
    out: &mut Vec<A>,
) {
    // One GEMM per batch item, as `left_gradient` and `right_gradient` run them: each output
    // element is one item's product plus the uniform, so the items may be added onto it one
    // after the other.
    let bt = Batch::of(a.dims(), b.dims());
    let Batch { count, m, k, n, .. } = bt;
    let item = |p: usize, size: usize| p * size..(p + 1) * size;
    // The items in blocks on threads as in those two (`each_item`).
    if operand == 0 {
        each_item(count, m * k, m.saturating_mul(k).saturating_mul(n), out, |p, out| {
            // δ · bᵀ, the arguments of `left_gradient`.
            let bp = if bt.batched { &b.data()[item(p, k * n)] } else { b.data() };
            let lhs = MatrixView::row_major(&g.data()[item(p, m * n)], n);
            let rhs = MatrixView::transposed(bp, n);
            gemm_onto_plus_zero::<A, false>((m, n, k), lhs, rhs, stored, false, out);
        });
    } else {
        each_item(count, k * n, m.saturating_mul(k).saturating_mul(n), out, |p, out| {
            // aᵀ · δ, the arguments of `right_gradient`.
            let lhs = MatrixView::transposed(&a.data()[item(p, m * k)], k);
            let rhs = MatrixView::row_major(&g.data()[item(p, m * n)], n);
            gemm_onto_plus_zero::<A, true>((k, m, n), lhs, rhs, stored, true, out);
        });
    }
}

impl<A: Scalar + Mul<Output = A>, D: 'static> ProductVjp<A, D> for MatMulData<A, D> {
    fn product_uniform(&self) -> A {
        A::zero()
    }

    fn product_onto(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, _: usize, stored: &A, out: &mut Vec<A>) {
        let x = self.data_operand(saved.data);
        let (m, k) = (x.dims().as_slice()[0], x.dims().as_slice()[1]);
        let n = g.dims().as_slice()[1];
        let (lhs, rhs) = (MatrixView::transposed(x.data(), k), MatrixView::row_major(g.data(), n));
        gemm_onto::<A, true>(k, m, n, lhs, rhs, stored, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contributions::{Contributions, Sink};
    use crate::shape::Dims;
    use core::num::Wrapping;
    use proptest::prelude::*;

    fn special() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.5),
            Just(-2.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::from_bits(0x7ff8_0000_0000_0001)),
            Just(f64::from_bits(0xfff0_0000_0000_0002)),
            Just(f64::from_bits(1)),
            Just(1e300),
            -4.0..4.0f64,
        ]
    }

    /// The reference: the op's contributions read through the arena onto the uniform `stored`.
    fn via_arena<A: Scalar, D, Op: CompactOp<A, D>>(
        op: &Op,
        saved: &SavedValues<'_, A, D>,
        g: &RawTensor<A>,
        q: usize,
        stored: &A,
    ) -> Vec<A> {
        let mut c = Contributions::new();
        let root = op.contributions(saved, g, &mut c);
        let mut out = Vec::new();
        c.read_into(root, q, g, Sink::OntoUniformInto(stored, &mut out)).expect("q is in the support");
        out
    }

    fn itself<A>(d: &RawTensor<A>) -> &RawTensor<A> {
        d
    }

    fn matrix<A>(rows: usize, cols: usize, v: &[A]) -> RawTensor<A>
    where
        A: Clone,
    {
        RawTensor::from_parts(Dims::matrix(rows, cols), (0..rows * cols).map(|i| v[i % v.len()].clone()).collect())
    }

    fn check<A: Scalar + Mul<Output = A> + core::fmt::Debug>(
        (m, k, n): (usize, usize, usize),
        values: &[A],
        stored: &A,
        bits: impl Fn(&A) -> u64,
    ) {
        let a = matrix(m, k, values);
        let b = matrix(k, n, &values[1..]);
        let g = matrix(m, n, &values[2..]);
        let prefix = [a.clone(), b.clone()];
        let out = RawTensor::from_parts(Dims::matrix(m, n), vec![A::zero(); m * n]);
        let saved = SavedValues { prefix: &prefix, output: &out, data: &a };
        let op = MatMul::new(0, 1);
        for (operand, q) in [(0, 0), (1, 1)] {
            let mut fused = Vec::new();
            ProductVjp::<A, RawTensor<A>>::product_onto(&op, &saved, &g, operand, stored, &mut fused);
            let want = via_arena(&op, &saved, &g, q, stored);
            assert_eq!(fused.iter().map(&bits).collect::<Vec<_>>(), want.iter().map(&bits).collect::<Vec<_>>());
        }
        let data_op = MatMulData::<A, RawTensor<A>>::new(itself, m, 1);
        let prefix = [a.clone(), b];
        let saved = SavedValues { prefix: &prefix, output: &out, data: &a };
        let mut fused = Vec::new();
        data_op.product_onto(&saved, &g, 0, stored, &mut fused);
        let want = via_arena(&data_op, &saved, &g, 1, stored);
        assert_eq!(fused.iter().map(&bits).collect::<Vec<_>>(), want.iter().map(&bits).collect::<Vec<_>>());
    }

    /// [`check`] for batched operands: `a: [bt, m, k]` and `b: [bt, k, n]` (`shared`: `[k, n]`).
    fn check_batched<A: Scalar + Mul<Output = A> + core::fmt::Debug>(
        (bt, m, k, n, shared): (usize, usize, usize, usize, bool),
        values: &[A],
        stored: &A,
        bits: impl Fn(&A) -> u64,
    ) {
        let tensor = |d: &[usize], skip: usize| {
            let d = Dims::new(d).unwrap();
            RawTensor::from_parts(d, (0..d.numel()).map(|i| values[(i + skip) % values.len()].clone()).collect())
        };
        let a = tensor(&[bt, m, k], 0);
        let b = if shared { tensor(&[k, n], 1) } else { tensor(&[bt, k, n], 1) };
        let g = tensor(&[bt, m, n], 2);
        let prefix = [a.clone(), b];
        let saved = SavedValues { prefix: &prefix, output: &g, data: &a };
        let op = MatMul::new(0, 1);
        for q in [0, 1] {
            let mut fused = Vec::new();
            ProductVjp::<A, RawTensor<A>>::product_onto(&op, &saved, &g, q, stored, &mut fused);
            let want = via_arena(&op, &saved, &g, q, stored);
            assert_eq!(fused.iter().map(&bits).collect::<Vec<_>>(), want.iter().map(&bits).collect::<Vec<_>>());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn fused_batched_products_equal_the_arena_f64(
            bt in 0usize..4, m in 1usize..6, k in 1usize..6, n in 1usize..20, shared in any::<bool>(),
            values in prop::collection::vec(special(), 3..40), stored in special(),
        ) {
            check_batched((bt, m, k, n, shared), &values, &stored, |x: &f64| x.to_bits());
        }

        #[test]
        fn fused_batched_products_equal_the_arena_f32(
            bt in 1usize..4, m in 1usize..20, k in 1usize..20, n in 1usize..40, shared in any::<bool>(),
            values in prop::collection::vec(special(), 3..40), stored in special(),
        ) {
            let values: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            check_batched((bt, m, k, n, shared), &values, &(stored as f32), |x: &f32| u64::from(x.to_bits()));
        }

        #[test]
        fn fused_batched_products_equal_the_arena_wrapping(
            bt in 1usize..4, m in 1usize..5, k in 1usize..5, n in 1usize..5, shared in any::<bool>(),
            values in prop::collection::vec(any::<i64>(), 3..20), stored in any::<i64>(),
        ) {
            let values: Vec<Wrapping<i64>> = values.into_iter().map(Wrapping).collect();
            check_batched((bt, m, k, n, shared), &values, &Wrapping(stored), |x: &Wrapping<i64>| x.0 as u64);
        }

        #[test]
        fn fused_products_equal_the_arena_f64(
            m in 1usize..12, k in 1usize..12, n in 1usize..40,
            values in prop::collection::vec(special(), 3..40), stored in special(),
        ) {
            check((m, k, n), &values, &stored, |x: &f64| x.to_bits());
        }

        #[test]
        fn fused_products_equal_the_arena_f32(
            m in 1usize..40, k in 1usize..40, n in 1usize..70,
            values in prop::collection::vec(special(), 3..40), stored in special(),
        ) {
            let values: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            check((m, k, n), &values, &(stored as f32), |x: &f32| u64::from(x.to_bits()));
        }

        #[test]
        fn fused_products_equal_the_arena_wrapping(
            m in 1usize..6, k in 1usize..6, n in 1usize..6,
            values in prop::collection::vec(any::<i64>(), 3..20), stored in any::<i64>(),
        ) {
            let values: Vec<Wrapping<i64>> = values.into_iter().map(Wrapping).collect();
            check((m, k, n), &values, &Wrapping(stored), |x: &Wrapping<i64>| x.0 as u64);
        }
    }

    #[test]
    fn a_negative_zero_stored_meets_a_zero_product() {
        // `-0 + (P + 0)` with `P = 0 + 1 · -0 = +0`: `+0`, as the arena reads it.
        let (a, b, g) = (matrix(1, 1, &[1.0f64]), matrix(1, 1, &[-0.0]), matrix(1, 1, &[1.0]));
        let prefix = [a.clone(), b];
        let out = matrix(1, 1, &[0.0]);
        let saved = SavedValues { prefix: &prefix, output: &out, data: &a };
        let op = MatMul::new(0, 1);
        let mut fused = Vec::new();
        ProductVjp::<f64, RawTensor<f64>>::product_onto(&op, &saved, &g, 0, &-0.0, &mut fused);
        assert_eq!(fused[0].to_bits(), 0.0f64.to_bits());
        assert_eq!(via_arena(&op, &saved, &g, 0, &-0.0)[0].to_bits(), 0.0f64.to_bits());
    }
}
