//! The kernels compiled once, in this crate, for `f32` and `f64`.
//!
//! A generic function is compiled again in every crate that calls it with a new type — and, in
//! an optimised build, even with a type this crate already compiled it for (rustc shares generic
//! instances between crates only in unoptimised builds). So a model crate that called the GEMM,
//! its packing and its thread splits as generic code compiled all of them for `f32` in its own
//! build: most of a release rebuild of a 7-node model.
//!
//! Here, each heavy kernel is a generic *body* and a thin generic *entry*. The entry starts with
//! ```text
//! if A::COMPILED { return (A::compiled().kernel)(…) }
//! ```
//! `A::COMPILED` is a constant once `A` is known, and rustc does not instantiate the code of a
//! branch that is dead for the concrete type, so for `f32` and `f64` a user's crate compiles only
//! the call through [`Compiled`], whose entries — the bodies at `f32` and `f64` — were
//! instantiated here, in the statics `F32` and `F64`. Every other scalar (`f16`, integers,
//! rationals, a user's type) has `COMPILED = false` and runs the generic body, instantiated where
//! it is used. The body is the same code either way: the bits cannot depend on the path.
//!
//! What is here: the matmul family (the GEMM, the products, both gradients, the product onto a
//! uniform), the built-in pointwise functions' loops (forward and derivative), the row ops'
//! forwards and contributions (`softmax`, `log_softmax`, `layer_norm`, `cross_entropy`),
//! `permute`'s and `add_row`'s, the reads of `add`, `sub` and `mul` onto a gradient, a program's
//! state (`ProgramState::new`), `compile`'s
//! forward, the saved graph's two loops (the dense reference loop and the indexed loop every
//! other pass runs) and the routines a generated program's `run` calls
//! (`ProgramState::forward_rows`, `sweep_rows`, `sweep_inputs`). The forward, the loops and those
//! routines see the graph through `program::bound::BoundGraph`, without the data's type, so they
//! are generic over the scalar only. A model's crate compiles its graph, the thin
//! `Bound` that forwards to its nodes' ops, and those ops' own (small) code.
//!
//! (The STYLE guide's anchor: std's generic `fs::read<P: AsRef<Path>>` calling a non-generic
//! `inner`.)

use core::ops::Mul;

use crate::contributions::Contributions;
use crate::error::Error;
use crate::gradients::Stored;
use crate::graph::Levels;
use crate::ops::pointwise::BUILTIN;
use crate::ops::MatrixView;
use crate::program::bound::BoundGraph;
use crate::program::plan::{Rows, Sweep};
use crate::program::{Plan, ProgramState};
use crate::saved::{Reached, View};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// A GEMM with an optional uniform to add onto (`ops::gemm`, `ops::gemm_onto`): rows, inner,
/// cols, the operands, the uniform, the output appended to.
pub(crate) type GemmFn<A> = fn(usize, usize, usize, MatrixView<'_, A>, MatrixView<'_, A>, Option<&A>, &mut Vec<A>);

/// A loop of the saved graph's passes: the view, the seeds, the reached set of a single-output
/// pass, whether node gradients are kept; one result per position.
pub(crate) type PassLoop<A, T> = fn(&View<'_, A>, Vec<Stored<A>>, Option<Reached>, bool) -> Result<Vec<T>, Error>;

/// A row op's forward over its operand, appended to the output (`softmax`, `log_softmax`).
pub(crate) type RowForward<A> = fn(&RawTensor<A>, &mut Vec<A>);
/// A row op's contribution tensor from its output and the cotangent (`softmax`, `log_softmax`).
pub(crate) type RowVjp<A> = fn(&RawTensor<A>, &RawTensor<A>, &mut Contributions<A>) -> RawTensor<A>;
/// An op's forward over its operand and a list of indices (`cross_entropy`'s labels,
/// `permute`'s axes), appended to the output.
pub(crate) type IndexedForward<A> = fn(&RawTensor<A>, &[usize], &mut Vec<A>);
/// `permute`'s contribution: the cotangent permuted by the inverse axes.
pub(crate) type IndexedVjp<A> = fn(&RawTensor<A>, &[usize], &mut Contributions<A>) -> RawTensor<A>;
/// `cross_entropy`'s contribution: from the logits, the labels and the cotangent.
pub(crate) type LabelsVjp<A> = fn(&RawTensor<A>, &[usize], &RawTensor<A>, &mut Contributions<A>) -> RawTensor<A>;
/// `layer_norm`'s forward: `x`, gain, bias, `eps`, the output.
pub(crate) type NormForward<A> = fn(&RawTensor<A>, &[A], &[A], A, &mut Vec<A>);
/// `layer_norm`'s three contributions: from `x`, gain and bias, the cotangent and `eps`.
pub(crate) type NormVjp<A> = fn([&RawTensor<A>; 3], &RawTensor<A>, A, &mut Contributions<A>) -> [RawTensor<A>; 3];

/// `add_row`'s forward: `x`, the row, the output's elements.
pub(crate) type RowBias<A> = fn(&[A], &[A], &mut [A]);
/// `add_row`'s row contribution: the cotangent, the column sums it adds to.
pub(crate) type ColumnSums<A> = fn(&[A], &mut [A]);

/// A binary elementwise op's read at one support position written onto a gradient
/// (`ElementwiseVjp::read_onto` of `add`, `sub`, `mul`): the operands' saved values, the
/// cotangent, the position, the op's parents, the target.
pub(crate) type ElementwiseRead<A> =
    fn([&[A]; 2], &[A], usize, [usize; 2], crate::ops::Onto<'_, A>) -> Result<(), String>;

/// `A`'s entry `field.i` (or `field`) of this crate's table (see the [module docs](self)) when `A` is compiled
/// here (`f32`, `f64`), else `body` — the function that entry is, at `A` — called with `args`.
macro_rules! compiled_or_body {
    ($A:ty, $field:ident . $i:tt, $body:expr, ($($arg:expr),* $(,)?)) => {
        if <$A as $crate::scalar::Storage>::COMPILED {
            (<$A as $crate::scalar::Storage>::compiled().$field.$i)($($arg),*)
        } else {
            $body($($arg),*)
        }
    };
    ($A:ty, $field:ident, $body:expr, ($($arg:expr),* $(,)?)) => {
        if <$A as $crate::scalar::Storage>::COMPILED {
            (<$A as $crate::scalar::Storage>::compiled().$field)($($arg),*)
        } else {
            $body($($arg),*)
        }
    };
}
pub(crate) use compiled_or_body;

/// The kernels of one scalar type, compiled in this crate (see the [module docs](self)). Only
/// this crate builds one: for `f32` and `f64` (the statics `F32`, `F64`).
pub struct Compiled<A: 'static> {
    /// `ops::gemm` / `ops::gemm_onto` with the cotangent on the left (`RHS_LEFT = false`).
    pub(crate) gemm: GemmFn<A>,
    /// The same with the right operand's element on the left of each product (`RHS_LEFT = true`).
    pub(crate) gemm_rhs_left: GemmFn<A>,
    /// `matmul`'s forward: `a · b` appended to the output (batched products included).
    pub(crate) product: fn(&RawTensor<A>, &RawTensor<A>, &mut Vec<A>),
    /// `matmul`'s left gradient `δ · bᵀ` (`a`, `δ`, `b`, output).
    pub(crate) left_gradient: fn(&RawTensor<A>, &RawTensor<A>, &RawTensor<A>, &mut Vec<A>),
    /// `matmul`'s right gradient `aᵀ · δ` (`a`, `δ`, `b`'s dims, output).
    pub(crate) right_gradient: fn(&RawTensor<A>, &RawTensor<A>, Dims, &mut Vec<A>),
    /// `matmul`'s gradient of operand 0 or 1 added onto a uniform (`a`, `b`, `δ`, operand,
    /// uniform, output): `ProductVjp::product_onto`.
    pub(crate) product_onto: fn(&RawTensor<A>, &RawTensor<A>, &RawTensor<A>, usize, &A, &mut Vec<A>),
    /// `compile`'s forward over a bound graph, by levels when given.
    pub(crate) forward:
        fn(&(dyn BoundGraph<A> + Sync), Option<&Levels>, &[Dims], &mut Vec<RawTensor<A>>) -> Result<(), Error>,
    /// The dense reference loop of the saved graph's passes (SEMANTICS §3, §7).
    pub(crate) dense_loop: PassLoop<A, RawTensor<A>>,
    /// The indexed loop of the saved graph's passes (SEMANTICS §6, §7).
    pub(crate) array_slots: PassLoop<A, Stored<A>>,
    /// The built-in pointwise functions' forward loops (`ops::pointwise::forward_into`), in the
    /// order of `ops::pointwise::BUILTIN`.
    pub(crate) pointwise_forward: [fn(&[A], &mut Vec<A>); BUILTIN.len()],
    /// Their derivative loops (`ops::pointwise::derivative_into`).
    pub(crate) pointwise_derivative: [fn(&[A], &[A], &[A], &mut Vec<A>); BUILTIN.len()],
    /// Their derivative loops onto a gradient (`ops::pointwise::derivative_onto`).
    pub(crate) pointwise_onto: [fn(&[A], &[A], &[A], crate::ops::Onto<'_, A>); BUILTIN.len()],
    /// `softmax`'s forward and contribution (`ops::softmax::{forward_body, vjp_body}`).
    pub(crate) softmax: (RowForward<A>, RowVjp<A>),
    /// `log_softmax`'s (`ops::log_softmax::{forward_body, vjp_body}`).
    pub(crate) log_softmax: (RowForward<A>, RowVjp<A>),
    /// `layer_norm`'s forward and its three contributions
    /// (`ops::layer_norm::{forward_body, vjp_body}`).
    pub(crate) layer_norm: (NormForward<A>, NormVjp<A>),
    /// `cross_entropy`'s forward (logits, labels, output) and contribution
    /// (`ops::cross_entropy::{forward_body, vjp_body}`).
    pub(crate) cross_entropy: (IndexedForward<A>, LabelsVjp<A>),
    /// `permute`'s forward (operand, axes) and contribution (cotangent, inverse axes)
    /// (`ops::permute::{forward_body, vjp_body}`).
    pub(crate) permute: (IndexedForward<A>, IndexedVjp<A>),
    /// `add`'s, `sub`'s and `mul`'s reads onto a gradient (`ops::bodies::reads`).
    pub(crate) binary_reads: (ElementwiseRead<A>, ElementwiseRead<A>, ElementwiseRead<A>),
    /// `add_row`'s forward (`x`, the row, the output's elements) and its row's contribution
    /// (the cotangent, the column sums) (`ops::add_row::{forward_body, column_sums_body}`).
    pub(crate) add_row: (RowBias<A>, ColumnSums<A>),
    /// A generated program's state: `ProgramState::new`.
    pub(crate) state_new: fn(&[Dims], usize, usize, crate::program::MemoryPlan) -> ProgramState<A>,
    /// A generated program's forward rows: `ProgramState::forward_rows`.
    pub(crate) forward_rows: fn(&mut ProgramState<A>, &Plan, &(dyn BoundGraph<A> + Sync), Rows),
    /// A generated program's sweep rows: `ProgramState::sweep_rows`.
    pub(crate) sweep_rows: fn(&mut ProgramState<A>, &Sweep, &(dyn BoundGraph<A> + Sync), Rows) -> Result<(), Error>,
    /// A generated program's sweep end: `ProgramState::sweep_inputs`.
    pub(crate) sweep_inputs: fn(&mut ProgramState<A>, &Sweep),
}

impl<A> core::fmt::Debug for Compiled<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Compiled").field("scalar", &core::any::type_name::<A>()).finish_non_exhaustive()
    }
}

/// The table of `A`'s generic bodies (instantiated where the table is built: here).
const fn table<A: Scalar + Mul<Output = A> + num_traits::Float + num_traits::FromPrimitive>() -> Compiled<A> {
    use crate::ops::bodies as mm;
    Compiled {
        gemm: mm::gemm_body::<A, false>,
        gemm_rhs_left: mm::gemm_body::<A, true>,
        product: mm::product_body::<A>,
        left_gradient: mm::left_gradient_body::<A>,
        right_gradient: mm::right_gradient_body::<A>,
        product_onto: mm::product_onto_body::<A>,
        pointwise_forward: crate::ops::builtin::forward_loops::<A>(),
        pointwise_derivative: crate::ops::builtin::derivative_loops::<A>(),
        pointwise_onto: crate::ops::builtin::onto_loops::<A>(),
        forward: crate::saved::forward_body::<A>,
        dense_loop: crate::saved::dense_loop_body::<A>,
        array_slots: crate::saved::array_slots_body::<A>,
        softmax: (mm::rows::softmax::<A>, mm::rows::softmax_vjp::<A>),
        log_softmax: (mm::rows::log_softmax::<A>, mm::rows::log_softmax_vjp::<A>),
        layer_norm: (mm::rows::layer_norm::<A>, mm::rows::layer_norm_vjp::<A>),
        cross_entropy: (mm::rows::cross_entropy::<A>, mm::rows::cross_entropy_vjp::<A>),
        permute: (mm::rows::permute::<A>, mm::rows::permute_vjp::<A>),
        binary_reads: (mm::reads::add::<A>, mm::reads::sub::<A>, mm::reads::mul::<A>),
        add_row: (mm::rows::add_row::<A>, mm::rows::add_row_vjp::<A>),
        state_new: ProgramState::<A>::new_body,
        forward_rows: ProgramState::<A>::forward_rows_body,
        sweep_rows: ProgramState::<A>::sweep_rows_body,
        sweep_inputs: ProgramState::<A>::sweep_inputs_body,
    }
}

/// The `f32` kernels, compiled in this crate.
pub(crate) static F32: Compiled<f32> = table::<f32>();
/// The `f64` kernels, compiled in this crate.
pub(crate) static F64: Compiled<f64> = table::<f64>();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::pointwise::{PointwiseFn, BUILTIN};
    use crate::Storage;

    #[test]
    fn the_floats_and_only_they_are_compiled_here() {
        const { assert!(<f32 as Storage>::COMPILED && <f64 as Storage>::COMPILED) };
        const { assert!(!<i64 as Storage>::COMPILED && !<core::num::Wrapping<i32> as Storage>::COMPILED) };
        assert!(core::ptr::eq(f32::compiled(), &F32) && core::ptr::eq(f64::compiled(), &F64));
        assert!(format!("{:?}", f32::compiled()).contains("f32"));
    }

    /// A built-in pointwise function's index names its own loops in the table.
    struct Indexed(usize);

    impl crate::ops::builtin::Visit for Indexed {
        fn visit<F: PointwiseFn<f32> + PointwiseFn<f64>>(&mut self) {
            let (i32_, i64_) = (<F as PointwiseFn<f32>>::COMPILED_INDEX, <F as PointwiseFn<f64>>::COMPILED_INDEX);
            assert!(<F as PointwiseFn<f32>>::COMPILED && <F as PointwiseFn<f64>>::COMPILED);
            assert_eq!((i32_, i64_), (self.0, self.0), "{} is not at its place in the table", BUILTIN[self.0]);
            assert_eq!(BUILTIN[i32_], <F as PointwiseFn<f32>>::NAME);
            // The table's loops are the function's: the same values as its generic bodies.
            let x: Vec<f32> = (0..40).map(|i| i as f32 / 7.0 - 2.0).collect();
            let g: Vec<f32> = (0..40).map(|i| 1.5 - i as f32 / 9.0).collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            (F32.pointwise_forward[i32_])(&x, &mut a);
            crate::ops::pointwise::forward_body::<f32, F>(&x, &mut b);
            (F32.pointwise_derivative[i32_])(&g, &x, &a.clone(), &mut a);
            crate::ops::pointwise::derivative_body::<f32, F>(&g, &x, &b.clone(), &mut b);
            let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            let (mut c, mut d) = (Vec::new(), Vec::new());
            (F64.pointwise_forward[i64_])(&xd, &mut c);
            crate::ops::pointwise::forward_body::<f64, F>(&xd, &mut d);
            let bits32 = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            let bits64 = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits32(&a), bits32(&b), "{}", BUILTIN[self.0]);
            assert_eq!(bits64(&c), bits64(&d), "{}", BUILTIN[self.0]);
            self.0 += 1;
        }
    }

    /// The row ops' entries are their own op's bodies (two of them share a type: a swap would
    /// compile): each entry against the body it names, by bits, with a NaN payload and `-0.0`.
    #[test]
    fn the_row_ops_entries_are_their_ops_bodies() {
        use crate::contributions::Contributions;
        use crate::ops::bodies::rows;
        let mut v: Vec<f32> = (0..24).map(|i| i as f32 / 5.0 - 2.0).collect();
        v[3] = f32::from_bits(0x7fc0_0123);
        v[7] = -0.0;
        let x = RawTensor::from_parts(Dims::new(&[4, 6]).expect("small"), v.clone());
        let g = RawTensor::from_parts(Dims::new(&[4, 6]).expect("small"), v.iter().rev().copied().collect());
        let bits = |t: &[f32]| t.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let forward = |f: fn(&RawTensor<f32>, &mut Vec<f32>)| {
            let mut out = Vec::new();
            f(&x, &mut out);
            bits(&out)
        };
        let vjp = |f: RowVjp<f32>| bits(f(&x, &g, &mut Contributions::new()).data());
        assert_eq!(forward(F32.softmax.0), forward(rows::softmax::<f32>));
        assert_eq!(forward(F32.log_softmax.0), forward(rows::log_softmax::<f32>));
        assert_ne!(forward(rows::softmax::<f32>), forward(rows::log_softmax::<f32>));
        assert_eq!(vjp(F32.softmax.1), vjp(rows::softmax_vjp::<f32>));
        assert_eq!(vjp(F32.log_softmax.1), vjp(rows::log_softmax_vjp::<f32>));
        assert_ne!(vjp(rows::softmax_vjp::<f32>), vjp(rows::log_softmax_vjp::<f32>));
    }

    #[test]
    fn every_built_in_pointwise_function_is_at_its_index() {
        let mut v = Indexed(0);
        crate::ops::builtin::each(&mut v);
        assert_eq!(v.0, BUILTIN.len());
    }
}
