//! The one-loop reads against the contributions built and read through the arena, bit for bit:
//! every elementwise op (both operands distinct and the same position), every support position,
//! onto a dense slot (with and without a pending uniform) and onto a uniform one, on `f32` and
//! `f64` bits of every kind (NaN payloads, signed zeros, infinities, subnormals) and on integers.

use proptest::prelude::*;

use super::*;
use crate::contributions::{Contributions, Sink};
use crate::graph::{CompactOp, SavedValues};
use crate::ops::builtin::{each, Visit};
use crate::ops::{Add, Mul, Pointwise, PointwiseFn, Sub};
use crate::parallel;
use crate::shape::Dims;

/// `op` on the positions `0` and `1` (values `x0`, `x1`, cotangent `g`): at every support
/// position, the one-loop read onto a slot holding `slot` (pending `u`) and onto the uniform
/// `stored` equals the arena's, compared with `same` (bits, or `==`).
#[allow(clippy::too_many_arguments)] // an op, its saved values, the cotangent and the targets
fn check<A: Scalar + core::fmt::Debug, O: CompactOp<A, ()>>(
    op: &O,
    x0: &[A],
    x1: &[A],
    g: &[A],
    slot: &[A],
    u: Option<&A>,
    stored: &A,
    same: fn(&[A], &[A]) -> bool,
) -> Result<(), TestCaseError> {
    let d = Dims::vector(g.len());
    let prefix = [RawTensor::from_parts(d, x0.to_vec()), RawTensor::from_parts(d, x1.to_vec())];
    let y = op.forward(&prefix, &());
    let g = RawTensor::from_parts(d, g.to_vec());
    let saved = SavedValues { prefix: &prefix, output: &y, data: &() };
    let e = op.as_elementwise().expect("an elementwise op");
    let mut c = Contributions::new();
    let root = op.contributions(&saved, &g, &mut c);
    prop_assert!(same(&[c.uniform(root)], &[e.elementwise_uniform()]), "the uniform differs");
    let mut support = op.support().to_vec();
    support.dedup();
    for &q in &support {
        // Onto a slot: the pending uniform applied, then the read added.
        let mut want = slot.to_vec();
        if let Some(u) = u {
            for v in &mut want {
                *v = A::pinned_add(v.clone(), u.clone());
            }
        }
        c.read_into(root, q, &g, Sink::Accumulate(&mut want)).map_err(TestCaseError::fail)?;
        let mut got = slot.to_vec();
        e.read_onto(&prefix, &y, &g, q, Onto::Slot(&mut got, u)).map_err(TestCaseError::fail)?;
        prop_assert!(same(&got, &want), "onto a slot at {}: {:?} against {:?}", q, got, want);
        // Onto a uniform.
        let (mut want, mut got) = (Vec::new(), Vec::new());
        c.read_into(root, q, &g, Sink::OntoUniformInto(stored, &mut want)).map_err(TestCaseError::fail)?;
        e.read_onto(&prefix, &y, &g, q, Onto::Uniform(stored, &mut got)).map_err(TestCaseError::fail)?;
        prop_assert!(same(&got, &want), "onto a uniform at {}: {:?} against {:?}", q, got, want);
    }
    // A position outside the support is refused, not written.
    let mut untouched = slot.to_vec();
    prop_assert!(e.read_onto(&prefix, &y, &g, 2, Onto::Slot(&mut untouched, u)).is_err());
    Ok(())
}

fn same_f32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn same_f64(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The binary ops, on distinct operands and on one operand twice.
fn binary_ops() -> [(Add, Sub, Mul); 2] {
    [(Add::new(0, 1), Sub::new(0, 1), Mul::new(0, 1)), (Add::new(1, 1), Sub::new(1, 1), Mul::new(1, 1))]
}

/// Four vectors of `n` values each from `values`: `x0`, `x1`, `g` and the slot.
fn parts<A: Clone>(values: &[A], n: usize) -> [Vec<A>; 4] {
    core::array::from_fn(|i| values[i * n..(i + 1) * n].to_vec())
}

/// Every built-in pointwise function, through [`check`], on `f32` and `f64` values.
struct Pointwises<'a> {
    f32s: &'a [f32],
    f64s: &'a [f64],
    n: usize,
    u32_: Option<f32>,
    u64_: Option<f64>,
    result: Result<(), TestCaseError>,
}

impl Visit for Pointwises<'_> {
    fn visit<F: PointwiseFn<f32> + PointwiseFn<f64>>(&mut self) {
        if self.result.is_err() {
            return;
        }
        let [x, _, g, s] = parts(self.f32s, self.n);
        let stored = self.f32s[4 * self.n];
        self.result = check(&Pointwise::<F>::new(0), &x, &x, &g, &s, self.u32_.as_ref(), &stored, same_f32);
        if self.result.is_ok() {
            let [x, _, g, s] = parts(self.f64s, self.n);
            let stored = self.f64s[4 * self.n];
            self.result = check(&Pointwise::<F>::new(0), &x, &x, &g, &s, self.u64_.as_ref(), &stored, same_f64);
        }
    }
}

proptest! {
    #[test]
    fn one_loop_equals_the_arena_on_floats(
        n in 0usize..24,
        f32s in prop::collection::vec(crate::ops::testing::special_f32(), 4 * 24 + 1),
        f64s in prop::collection::vec(crate::ops::testing::special_f64(4.0), 4 * 24 + 1),
        u32_ in prop::option::of(crate::ops::testing::special_f32()),
        u64_ in prop::option::of(crate::ops::testing::special_f64(4.0)),
    ) {
        let f32s = [&f32s[..4 * n], &f32s[4 * 24..]].concat();
        let f64s = [&f64s[..4 * n], &f64s[4 * 24..]].concat();
        for (add, sub, mul) in binary_ops() {
            let [x0, x1, g, s] = parts(&f32s, n);
            let stored = f32s[4 * n];
            check(&add, &x0, &x1, &g, &s, u32_.as_ref(), &stored, same_f32)?;
            check(&sub, &x0, &x1, &g, &s, u32_.as_ref(), &stored, same_f32)?;
            check(&mul, &x0, &x1, &g, &s, u32_.as_ref(), &stored, same_f32)?;
            let [x0, x1, g, s] = parts(&f64s, n);
            let stored = f64s[4 * n];
            check(&add, &x0, &x1, &g, &s, u64_.as_ref(), &stored, same_f64)?;
            check(&sub, &x0, &x1, &g, &s, u64_.as_ref(), &stored, same_f64)?;
            check(&mul, &x0, &x1, &g, &s, u64_.as_ref(), &stored, same_f64)?;
        }
        let mut all = Pointwises { f32s: &f32s, f64s: &f64s, n, u32_, u64_, result: Ok(()) };
        each(&mut all);
        all.result?;
    }

    #[test]
    fn one_loop_equals_the_arena_on_integers(
        n in 0usize..24,
        values in prop::collection::vec(-1000i64..1000, 4 * 24 + 1),
        u in prop::option::of(-1000i64..1000),
    ) {
        let values = [&values[..4 * n], &values[4 * 24..]].concat();
        let [x0, x1, g, s] = parts(&values, n);
        let same = |a: &[i64], b: &[i64]| a == b;
        for (add, sub, mul) in binary_ops() {
            check(&add, &x0, &x1, &g, &s, u.as_ref(), &values[4 * n], same)?;
            check(&sub, &x0, &x1, &g, &s, u.as_ref(), &values[4 * n], same)?;
            check(&mul, &x0, &x1, &g, &s, u.as_ref(), &values[4 * n], same)?;
        }
    }
}

fn pools() -> &'static [parallel::ThreadPool] {
    static POOLS: std::sync::OnceLock<Vec<parallel::ThreadPool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| (1..=4).map(|n| parallel::pool(n).expect("threads")).collect())
}

/// The pointwise reads split over 1 to 4 threads (forced on these short loops) give the one-thread
/// bits, onto a slot and onto a uniform.
struct Threads<'a> {
    x: &'a [f64],
    g: &'a [f64],
    failures: Vec<&'static str>,
}

impl Visit for Threads<'_> {
    fn visit<F: PointwiseFn<f32> + PointwiseFn<f64>>(&mut self) {
        let runs: Vec<Vec<u64>> = pools()
            .iter()
            .map(|pool| {
                pool.install(|| {
                    let mut y = Vec::new();
                    crate::ops::pointwise::forward_into::<f64, F>(self.x, &mut y);
                    let mut slot = self.x.to_vec();
                    crate::ops::pointwise::derivative_onto::<f64, F>(
                        self.g,
                        self.x,
                        &y,
                        Onto::Slot(&mut slot, Some(&-0.0)),
                    );
                    let mut out = Vec::new();
                    crate::ops::pointwise::derivative_onto::<f64, F>(
                        self.g,
                        self.x,
                        &y,
                        Onto::Uniform(&-0.0, &mut out),
                    );
                    slot.iter().chain(&out).map(|v| v.to_bits()).collect()
                })
            })
            .collect();
        if runs.iter().any(|r| r != &runs[0]) {
            self.failures.push(<F as PointwiseFn<f64>>::NAME);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn pointwise_reads_are_the_same_on_1_to_4_threads(
        (x, g) in (0usize..100).prop_flat_map(|n| (
            prop::collection::vec(crate::ops::testing::special_f64(3.0), n),
            prop::collection::vec(crate::ops::testing::special_f64(3.0), n),
        )),
    ) {
        parallel::set_min_pointwise_work(0);
        prop_assert_eq!(pools()[1].install(|| parallel::element_parts(2, 0)), 2);
        let mut all = Threads { x: &x, g: &g, failures: Vec::new() };
        each(&mut all);
        prop_assert!(all.failures.is_empty(), "differ across threads: {:?}", all.failures);
    }
}
