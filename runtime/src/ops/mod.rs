//! Built-in ops. One op per file: its forward, its compact VJP (contributions) and static
//! support, its shape rule, docs with the formula, and tests.
//!
//! Conventions (SEMANTICS §4, kept by every op):
//! * a binary op `f(a, b)` contributes `add(single(a, ga), single(b, gb))`, so when `a == b` the
//!   two terms are added first and reach the gradient once;
//! * negation inside a VJP is `0 - δ`, never `-δ`;
//! * products put the cotangent `δ` on the left (`δ * other`);
//! * reductions run in a fixed order (ascending index, starting from `0`), never reassociated, no
//!   `mul_add`.
//!
//! Every op has a typed constructor (shapes checked by the compiler) returning a [`Node`] for
//! [`GraphData::push`](crate::GraphData::push), and an untyped struct implementing
//! [`CompactOp`](crate::CompactOp) for [`RawGraph::push`](crate::RawGraph::push).
//!
//! [`Node`]: crate::Node

/// Declares the typed constructor of a built-in op in the op's file:
/// `typed_op!(name(a: L, b: R, …; extra: Type, axis: @Ax as usize, …) -> Op<…>: Rule, "what");` — its
/// operands (each with its shape parameter), then the arguments after them, in the order the
/// constructor takes them: a plain argument (`extra: Type`: a constant of the scalar type, a data
/// accessor, a start index) is given to `Op::new` as it is; a type argument (`axis: @Ax as usize`:
/// an axis, a length, a stride, a window or a permutation, as typenum values such as `U1::new()`
/// or `(U2::new(), U2::new())`) is given as its [`TypeArg`](crate::shape::rules::TypeArg) value
/// of the type after `as`, and is a parameter of the rule, after the operands' shapes. The constructor's output shape is the
/// one the spec's type-level rule `Rule` computes ([`by_rule`](crate::shape::rules::by_rule));
/// its scalar bounds are those of `Op`'s [`CompactOp`](crate::CompactOp) impl, and the bounds of
/// an optional `where` clause after the doc text (ones `Op::new` needs itself). A constant check
/// makes the line's rule and operand count the op's `exactgrad_spec` entry's.
macro_rules! typed_op {
    ($name:ident($a:ident: $L:ident $(, $b:ident: $R:ident)* $(; $($c:ident: $(@$tp:ident as)? $cty:ty),+)?)
        -> $op:ident $(<$($g:ident),+>)?: $rule:ident, $what:literal $(where $($bound:tt)+)?) => {
        typed_op!(@emit $name, $a: $L, [$($b: $R),*], [$($($c: $(@$tp as)? $cty),+)?], [$($($($tp)?)+)?],
            $op $(<$($g),+>)?, $rule, $what, [$($($bound)+)?]);
    };
    (@emit $name:ident, $a:ident: $L:ident, [$($b:ident: $R:ident),*], [$($c:ident: $(@$tc:ident as)? $cty:ty),*],
        [$($tp:ident)*], $op:ty, $rule:ident, $what:literal, [$($bound:tt)*]) => {
        #[doc = concat!("Typed `", stringify!($name), "`: ", $what, " (the rule [`", stringify!($rule),
            "`](crate::shape::rules::by_rule::", stringify!($rule), ")).")]
        #[must_use]
        pub fn $name<A, D, $L, $($R,)* $($tp,)* O, Br>(
            $a: crate::shape::Position<$L, Br>,
            $($b: crate::shape::Position<$R, Br>,)*
            $($c: typed_op!(@type $(@$tc)? $cty),)*
        ) -> crate::graph::Compact<$op, A, D, O>
        where
            A: crate::scalar::Scalar,
            D: 'static,
            $L: super::by_rule::$rule<$($R,)* $($tp,)* Output = O>,
            $($($tc: crate::shape::rules::TypeArg<$cty>,)?)*
            O: crate::shape::Shape,
            $op: crate::graph::CompactOp<A, D>,
            $($bound)*
        {
            crate::graph::Compact::new(
                <$op>::new($a.index() $(, $b.index())* $(, typed_op!(@value $c $(@$tc)?: $cty))*),
                &[&$a $(, &$b)*],
            )
        }
        const _: () = {
            let spec = exactgrad_spec::ops::spec_of(stringify!($name));
            assert!(matches!(spec.type_rule, exactgrad_spec::TypeRule::$rule), "the table's rule is not the spec's");
            assert!(matches!(spec.arity, exactgrad_spec::Arity::Fixed(n) if n == [stringify!($a) $(, stringify!($b))*].len()));
        };
    };
    (@type @$tp:ident $cty:ty) => { $tp };
    (@type $cty:ty) => { $cty };
    (@value $c:ident @$tp:ident: $cty:ty) => {{
        let _ = $c;
        <$tp as crate::shape::rules::TypeArg<$cty>>::VALUE
    }};
    (@value $c:ident: $cty:ty) => {
        $c
    };
}

// The rule traits by spec name, for `typed_op!`'s bounds.
use crate::shape::rules::by_rule;

mod add;
mod add_row;
mod avg_pool2d;
mod causal_mask;
mod concat;
mod conv;
mod conv1d;
mod conv2d;
mod cross_entropy;
mod data_tensor;
mod div;
mod div_const;
mod dropout;
pub(crate) mod elementwise_vjp;
mod gather_rows;
mod layer_norm;
mod log_softmax;
mod masked_fill;
mod matmul;
mod matmul_data;
mod max;
mod max_pool2d;
mod mean;
mod mean_axis;
mod min;
mod mse;
mod mul;
mod offset;
mod opaque;
mod permute;
pub mod pointwise;
mod product_vjp;
mod reshape;
mod scale;
mod select;
mod slice;
mod sliding;
mod softmax;
mod spec_rules;
mod square;
mod sub;
mod sum;
mod sum_axis;
mod transpose;
pub(crate) mod window_vjp;

pub use add::{add, Add};
pub use add_row::{add_row, AddRow};
pub use avg_pool2d::{avg_pool2d, AvgPool2d};
pub use causal_mask::{causal_mask, CausalMask};
pub use concat::{concat, concat_parts, concat_then, Concat, ConcatParts};
pub use conv::Conv;
pub use conv1d::{conv1d, Conv1d};
pub use conv2d::{conv2d, Conv2d};
pub use cross_entropy::{cross_entropy, CrossEntropy, LabelAccessor};
pub use data_tensor::{data_tensor, DataTensor};
pub use div::{div, Div};
pub use dropout::{dropout, keeps, splitmix64, Dropout, SeedAccessor};
pub use exactgrad_spec::rules::Sliding;
pub use gather_rows::{gather_rows, GatherRows};
pub use layer_norm::{layer_norm, LayerNorm};
pub use log_softmax::{log_softmax, LogSoftmax};
pub use masked_fill::{masked_fill, MaskAccessor, MaskedFill};
pub(crate) use matmul::{elementwise, Batch, WideLoop};
/// The bodies `crate::compiled` instantiates for `f32` and `f64`.
pub(crate) mod bodies {
    pub(crate) use super::matmul::{gemm_body, left_gradient_body, product_body, right_gradient_body};
    pub(crate) use super::product_vjp::product_onto_body;
    /// The row ops' and `permute`'s forwards and contributions, by op.
    pub(crate) mod rows {
        pub(crate) use super::super::add_row::{column_sums_body as add_row_vjp, forward_body as add_row};
        pub(crate) use super::super::cross_entropy::{forward_body as cross_entropy, vjp_body as cross_entropy_vjp};
        pub(crate) use super::super::layer_norm::{forward_body as layer_norm, vjp_body as layer_norm_vjp};
        pub(crate) use super::super::log_softmax::{forward_body as log_softmax, vjp_body as log_softmax_vjp};
        pub(crate) use super::super::permute::{forward_body as permute, vjp_body as permute_vjp};
        pub(crate) use super::super::softmax::{forward_body as softmax, vjp_body as softmax_vjp};
    }
    /// The binary elementwise ops' reads onto a gradient, by op.
    pub(crate) mod reads {
        pub(crate) use super::super::add::read_body as add;
        pub(crate) use super::super::mul::read_body as mul;
        pub(crate) use super::super::sub::read_body as sub;
    }
}
pub use matmul::{gemm, gemm_onto, matmul, MatMul, MatrixView};
pub use matmul_data::{matmul_data, MatMulData, TensorAccessor};
pub use max::{max, Max};
pub use max_pool2d::{max_pool2d, MaxPool2d};
pub use mean::{mean, Mean};
pub use mean_axis::{mean_axis, MeanAxis};
pub use min::{min, Min};
pub use mse::{mse, Mse};
pub use mul::{mul, Mul};
pub use opaque::opaque;
pub use permute::{permute, Permute};
pub use pointwise::{Pointwise, PointwiseFn};

/// Declares the built-in pointwise ops from one line each — `name: Op = OpFn, "what it is";` —
/// in the order of their loops in the compiled table ([`pointwise::BUILTIN`]). Each line makes:
/// the module `name.rs` (which holds `OpFn`, the [`PointwiseFn`] with the forward, the derivative
/// and the reference), the op type `Op = Pointwise<OpFn>`, its typed constructor `name(a)` (the
/// scalar bounds are `OpFn`'s), and its `f32`/`f64` loops in `crate::compiled`.
macro_rules! builtin_pointwise {
    ($($name:ident: $op:ident = $f:ident, $what:literal;)*) => {
        $(
            mod $name;
            pub use $name::$f;
            #[doc = concat!($what, ": [`", stringify!($f), "`] applied to every element.")]
            pub type $op = Pointwise<$f>;
            #[doc = concat!("Typed `", stringify!($name), "(a)`: [`", stringify!($op), "`], the shape kept ([`UnaryShape`](crate::shape::rules::UnaryShape)).")]
            #[must_use]
            pub fn $name<A, D, S, O, Br>(a: crate::shape::Position<S, Br>) -> crate::graph::Compact<$op, A, D, O>
            where
                A: crate::scalar::Scalar,
                D: 'static,
                S: crate::shape::rules::UnaryShape<Output = O>,
                O: crate::shape::Shape,
                $f: PointwiseFn<A>,
            {
                pointwise::node::<A, D, $f, S, O, Br>(a)
            }
            // The table's name is the function's own (`COMPILED_INDEX` is found by name).
            const _: () = assert!(pointwise::same_name(<$f as PointwiseFn<f64>>::NAME, stringify!($name)));
        )*
        pub(crate) mod builtin {
            //! The built-in pointwise functions as one list, for `pointwise::BUILTIN` and the
            //! compiled table.
            use super::*;
            /// Their names, in table order.
            pub(crate) const NAMES: &[&str] = &[$(stringify!($name)),*];
            /// Their forward loops for `A`, in table order.
            pub(crate) const fn forward_loops<A: crate::scalar::Scalar + num_traits::Float>() -> [fn(&[A], &mut Vec<A>); NAMES.len()] {
                [$(pointwise::forward_body::<A, $f>),*]
            }
            /// Their derivative loops for `A`, in table order.
            pub(crate) const fn derivative_loops<A: crate::scalar::Scalar + num_traits::Float>() -> [fn(&[A], &[A], &[A], &mut Vec<A>); NAMES.len()] {
                [$(pointwise::derivative_body::<A, $f>),*]
            }
            /// Their derivative loops onto a gradient, for `A`, in table order.
            pub(crate) const fn onto_loops<A: crate::scalar::Scalar + num_traits::Float>() -> [fn(&[A], &[A], &[A], Onto<'_, A>); NAMES.len()] {
                [$(pointwise::derivative_onto_body::<A, $f>),*]
            }
            /// What a test does with each built-in function.
            #[cfg(test)]
            pub(crate) trait Visit {
                /// Called once per function, in table order.
                fn visit<F: PointwiseFn<f32> + PointwiseFn<f64>>(&mut self);
            }
            /// Calls `v` with every built-in function, in table order.
            #[cfg(test)]
            pub(crate) fn each(v: &mut impl Visit) {
                $(v.visit::<$f>();)*
            }
        }
    };
}

builtin_pointwise! {
    relu: Relu = ReluFn, "Rectified linear unit";
    tanh: Tanh = TanhFn, "Hyperbolic tangent";
    exp: Exp = ExpFn, "Exponential";
    sigmoid: Sigmoid = SigmoidFn, "Logistic sigmoid";
    softplus: Softplus = SoftplusFn, "Softplus `ln(1 + exp(x))`, in a stable form";
    log: Log = LogFn, "Natural logarithm";
    sqrt: Sqrt = SqrtFn, "Square root";
    gelu: Gelu = GeluFn, "GELU, tanh approximation";
    neg: Neg = NegFn, "Negation";
    silu: Silu = SiluFn, "SiLU (swish) `x · sigmoid(x)`";
}
pub use elementwise_vjp::{ElementwiseVjp, Onto};
pub use product_vjp::ProductVjp;
pub use window_vjp::{Window, WindowVjp};

pub use div_const::{div_const, DivConst};
pub use offset::{offset, Offset};
pub use reshape::{reshape, Reshape};
pub use scale::{scale, Scale};
pub use slice::{slice, Slice};
pub use softmax::{softmax, Softmax};
pub use square::{square, Square};
pub use sub::{sub, Sub};
pub use sum::{sum, Sum};
pub use sum_axis::{sum_axis, SumAxis};
pub use transpose::{transpose, Transpose};

use exactgrad_spec::rules;

use crate::shape::Dims;

/// Dims of position `p` in a prefix, or a message naming the op.
pub(crate) fn dims_at(op: &str, prefix: &[Dims], p: usize) -> Result<Dims, String> {
    prefix.get(p).copied().ok_or_else(|| format!("{op} reads position {p}, outside its prefix of {}", prefix.len()))
}

/// The value of `op` as a new tensor shaped like position `like`: its
/// [`forward_into`](crate::CompactOp::forward_into), so `forward` and `forward_into` are one
/// implementation.
pub(crate) fn forward_like<A: Clone, D, Op: crate::graph::CompactOp<A, D>>(
    op: &Op,
    ctx: &[crate::tensor::RawTensor<A>],
    data: &D,
    like: usize,
) -> crate::tensor::RawTensor<A> {
    let d = ctx[like].dims();
    let mut out = Vec::with_capacity(d.numel());
    op.forward_into(ctx, data, &mut out);
    crate::tensor::RawTensor::from_parts(d, out)
}

/// The dims a shape rule of `exactgrad_spec::rules` computed, or its message.
pub(crate) fn ruled(outcome: rules::Outcome<usize>) -> Result<Dims, String> {
    outcome.map(|s| Dims::from(&s))
}

/// Shape rule of elementwise binary ops ([`rules::elementwise`]): both operands have the same
/// shape.
pub(crate) fn same_dims(op: &str, prefix: &[Dims], a: usize, b: usize) -> Result<Dims, String> {
    let (da, db) = (dims_at(op, prefix, a)?, dims_at(op, prefix, b)?);
    ruled(spec_rules::elementwise(op, da.as_slice(), db.as_slice()))
}

#[cfg(test)]
mod rows_thread_tests;

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for op tests: run one node's forward and dense VJP, and a finite-difference check.
    /// `f64`s for the row ops' property tests: signed zeros, infinities, a signalling and a
    /// quiet NaN with payloads, the smallest subnormal, and (three times as often) numbers in
    /// `-range..range`.
    pub(crate) fn special_f64(range: f64) -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![
            Just(0.0f64),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::from_bits(0x7ff4_0000_0000_0bad)),
            Just(f64::from_bits(0xfff8_0000_0000_0001)),
            Just(f64::from_bits(1)),
            (-range..range),
            (-range..range),
            (-range..range),
        ]
    }

    /// `f32`s for the fused paths' property tests: signed zeros, infinities, a signalling and a
    /// quiet NaN with payloads, the smallest subnormal, `1.5`, and numbers in `-4..4`.
    pub(crate) fn special_f32() -> impl proptest::strategy::Strategy<Value = f32> {
        use proptest::prelude::*;
        prop_oneof![
            Just(0.0f32),
            Just(-0.0),
            Just(1.5),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            Just(f32::from_bits(0x7fa0_0001)),
            Just(f32::from_bits(0xffc0_0002)),
            Just(f32::from_bits(1)),
            (-4.0f32..4.0),
        ]
    }

    use crate::contributions::Contributions;
    use crate::graph::{CompactOp, RawGraph, RawNode};
    use crate::saved::RawSavedGraph;
    use crate::tensor::RawTensor;

    /// The value of one `op` node on `inputs`.
    pub(crate) fn forward<O: CompactOp<f64, ()> + Clone>(op: O, inputs: &[RawTensor<f64>]) -> RawTensor<f64> {
        let mut graph = RawGraph::new(inputs.iter().map(RawTensor::dims).collect());
        let p = graph.push(RawNode::compact(op)).unwrap();
        let saved = RawSavedGraph::compile(&graph, inputs.to_vec(), ()).unwrap();
        saved.values()[p.index()].clone()
    }

    /// The dense VJP of one `op` node on `inputs` at cotangent `g` (one tensor per input).
    pub(crate) fn vjp<O: CompactOp<f64, ()> + Clone>(
        op: O,
        inputs: &[RawTensor<f64>],
        g: &RawTensor<f64>,
    ) -> Vec<RawTensor<f64>> {
        let mut graph = RawGraph::new(inputs.iter().map(RawTensor::dims).collect());
        graph.push(RawNode::compact(op)).unwrap();
        let saved = RawSavedGraph::compile(&graph, inputs.to_vec(), ()).unwrap();
        let mut c = Contributions::new();
        let node = saved.prepared_nodes().next().unwrap();
        node.vjp_dense(g, &mut c).unwrap()
    }

    /// Checks the VJP of `op` against central finite differences of `<g, forward>` at `inputs`.
    pub(crate) fn gradcheck<O: CompactOp<f64, ()> + Clone>(op: O, inputs: &[RawTensor<f64>], tol: f64) {
        let y = forward(op.clone(), inputs);
        let g = RawTensor::from_fn(y.dims(), |i| 0.3 + 0.7 * ((i * 7 + 3) % 5) as f64 / 5.0);
        let analytic = vjp(op.clone(), inputs, &g);
        let h = 1e-6;
        let f = |xs: &[RawTensor<f64>]| {
            let y = forward(op.clone(), xs);
            y.data().iter().zip(g.data()).map(|(a, b)| a * b).sum::<f64>()
        };
        for (q, x) in inputs.iter().enumerate() {
            for i in 0..x.numel() {
                let mut plus = inputs.to_vec();
                plus[q].data_mut()[i] += h;
                let mut minus = inputs.to_vec();
                minus[q].data_mut()[i] -= h;
                let numeric = (f(&plus) - f(&minus)) / (2.0 * h);
                let a = analytic[q].data()[i];
                let scale = 1.0f64.max(numeric.abs()).max(a.abs());
                assert!((numeric - a).abs() <= tol * scale, "input {q} element {i}: numeric {numeric} vs analytic {a}");
            }
        }
    }

    /// A tensor of the given dims with varied, non-degenerate values.
    pub(crate) fn sample(dims: &[usize], seed: u64) -> RawTensor<f64> {
        let d = crate::Dims::new(dims).unwrap();
        RawTensor::from_fn(d, |i| {
            let x = (i as u64 + 1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
            ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
    }

    /// Bits of every element.
    pub(crate) fn bits(t: &RawTensor<f64>) -> Vec<u64> {
        t.data().iter().map(|x| x.to_bits()).collect()
    }
}
