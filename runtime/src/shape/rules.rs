//! The type-level shape rules: one trait per rule of `exactgrad_spec`, whose `Output` is the op's
//! output shape type computed from its operands' shape types — for literal (typenum) and generic
//! dims alike. The typed op constructors (`ops::matmul`, …) and the code `graph!` generates name
//! their output shapes through these traits, so a node of the wrong shape is a compile error from
//! the trait, in the words of `exactgrad_spec::types` (rustc prints typenum numbers in binary, so
//! the messages name the op and the rule, never the sizes).
//!
//! Every impl is flat (one per rank, or per rank and axis): no trait recursion, so graphs of any
//! size check at the default `recursion_limit`.
//!
//! ```
//! use exactgrad_runtime::shape::rules::{MatMulShape, ConcatShape};
//! use exactgrad_runtime::typenum::{U0, U1, U2, U3, U5};
//! fn output<L: MatMulShape<R>, R>() -> exactgrad_runtime::Dims { <L::Output as exactgrad_runtime::Shape>::dims() }
//! assert_eq!(output::<(U2, U3), (U3, U5)>().as_slice(), &[2, 5]);
//! type Joined = <(U2, U3) as ConcatShape<(U1, U3), U0>>::Output; // [2, 3] ++ [1, 3] along axis 0
//! assert_eq!(<Joined as exactgrad_runtime::Shape>::dims().as_slice(), &[3, 3]);
//! ```
//!
//! The sliding-window rules compute output sizes with typenum arithmetic:
//!
//! ```
//! use exactgrad_runtime::shape::rules::{Conv2dShape, Pool2dShape};
//! use exactgrad_runtime::typenum::{U0, U1, U2, U3, U4, U8};
//! // [2, 3, 8, 8] * [4, 3, 3, 3], stride 1, padding 1, dilation 1: [2, 4, 8, 8].
//! type Y = <(U2, U3, U8, U8) as Conv2dShape<(U4, U3, U3, U3), (U1, U1), (U1, U1), (U1, U1)>>::Output;
//! assert_eq!(<Y as exactgrad_runtime::Shape>::dims().as_slice(), &[2, 4, 8, 8]);
//! // A 2 × 2 window, stride 2: [2, 4, 4, 4].
//! type P = <Y as Pool2dShape<(U2, U2), (U2, U2), (U0, U0)>>::Output;
//! assert_eq!(<P as exactgrad_runtime::Shape>::dims().as_slice(), &[2, 4, 4, 4]);
//! ```
//!
//! ```compile_fail
//! use exactgrad_runtime::shape::rules::Conv2dShape;
//! use exactgrad_runtime::typenum::{U0, U1, U2, U3};
//! fn output<X: Conv2dShape<W, S, P, Dl>, W, S, P, Dl>() {}
//! // A 3 × 3 kernel does not fit a 2 × 2 input without padding.
//! output::<(U1, U1, U2, U2), (U1, U1, U3, U3), (U1, U1), (U0, U0), (U1, U1)>();
//! ```
//!
//! ```compile_fail
//! use exactgrad_runtime::shape::rules::MatMulShape;
//! use exactgrad_runtime::typenum::{U2, U3, U5};
//! fn output<L: MatMulShape<R>, R>() {}
//! output::<(U2, U3), (U2, U5)>(); // matmul needs the left operand's columns to equal the right operand's rows
//! ```

use core::ops::Add;

use typenum::{Sum, Unsigned, U0, U1, U2, U3};

use super::Shape;

macro_rules! rule_traits {
    ($(($variant:ident, $trait:ident, $message:literal, $label:literal, $note:literal)),* $(,)?) => {
        $( rule_traits!(@ $trait, $message, $label, $note); )*
        /// Every rule's trait under the name of its `exactgrad_spec::TypeRule` variant
        /// (`by_rule::MatMul` is [`MatMulShape`]), so that a table naming an op's rule as the spec
        /// does can name its trait.
        pub mod by_rule {
            $( pub use super::$trait as $variant; )*
        }
    };
    (@ ElementwiseShape, $m:literal, $l:literal, $n:literal) => {
        /// `[s] , [s] → [s]`: both operands have the same shape.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait ElementwiseShape<R> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape> ElementwiseShape<S> for S {
            type Output = S;
        }
    };
    (@ ElementwiseToScalarShape, $m:literal, $l:literal, $n:literal) => {
        /// `[s] , [s] → []`: both operands have the same shape (`mse`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait ElementwiseToScalarShape<R> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape> ElementwiseToScalarShape<S> for S {
            type Output = ();
        }
    };
    (@ UnaryShape, $m:literal, $l:literal, $n:literal) => {
        /// `[s] → [s]` (pointwise ops, `scale`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait UnaryShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape> UnaryShape for S {
            type Output = S;
        }
    };
    (@ LastAxisShape, $m:literal, $l:literal, $n:literal) => {
        /// `[…, n] → […, n]` for rank ≥ 1 (`softmax`, `log_softmax`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait LastAxisShape {
            /// The output shape.
            type Output: Shape;
        }
        per_rank!(LastAxisShape);
    };
    (@ ReduceShape, $m:literal, $l:literal, $n:literal) => {
        /// `[s] → []` (`sum`, `mean`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait ReduceShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape> ReduceShape for S {
            type Output = ();
        }
    };
    (@ MatMulShape, $m:literal, $l:literal, $n:literal) => {
        /// `[m, k] , [k, n] → [m, n]`; batched `[b, m, k] , [b, k, n] → [b, m, n]` and
        /// `[b, m, k] , [k, n] → [b, m, n]`.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait MatMulShape<R> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<M: Unsigned + 'static, K: Unsigned + 'static, N: Unsigned + 'static> MatMulShape<(K, N)> for (M, K) {
            type Output = (M, N);
        }
        #[diagnostic::do_not_recommend]
        impl<B: Unsigned + 'static, M: Unsigned + 'static, K: Unsigned + 'static, N: Unsigned + 'static>
            MatMulShape<(K, N)> for (B, M, K)
        {
            type Output = (B, M, N);
        }
        #[diagnostic::do_not_recommend]
        impl<B: Unsigned + 'static, M: Unsigned + 'static, K: Unsigned + 'static, N: Unsigned + 'static>
            MatMulShape<(B, K, N)> for (B, M, K)
        {
            type Output = (B, M, N);
        }
    };
    (@ TransposeShape, $m:literal, $l:literal, $n:literal) => {
        /// `[m, n] → [n, m]`.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait TransposeShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<M: Unsigned + 'static, N: Unsigned + 'static> TransposeShape for (M, N) {
            type Output = (N, M);
        }
    };
    (@ AddRowShape, $m:literal, $l:literal, $n:literal) => {
        /// `[m, n] , [n] → [m, n]`.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait AddRowShape<R> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<M: Unsigned + 'static, N: Unsigned + 'static> AddRowShape<(N,)> for (M, N) {
            type Output = (M, N);
        }
    };
    (@ AxisReduceShape, $m:literal, $l:literal, $n:literal) => {
        /// Drops axis `Axis` (a typenum index): `sum_axis`, `mean_axis`.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait AxisReduceShape<Axis> {
            /// The output shape.
            type Output: Shape;
        }
        axis_impls!(AxisReduceShape;
            (D0,), U0 => ();
            (D0, D1), U0 => (D1,); (D0, D1), U1 => (D0,);
            (D0, D1, D2), U0 => (D1, D2); (D0, D1, D2), U1 => (D0, D2); (D0, D1, D2), U2 => (D0, D1);
            (D0, D1, D2, D3), U0 => (D1, D2, D3); (D0, D1, D2, D3), U1 => (D0, D2, D3);
            (D0, D1, D2, D3), U2 => (D0, D1, D3); (D0, D1, D2, D3), U3 => (D0, D1, D2));
    };
    (@ RowParamsShape, $m:literal, $l:literal, $n:literal) => {
        /// `[m, n] , [n] , [n] → [m, n]` (`layer_norm(x, gain, bias)`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait RowParamsShape<G, B> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<M: Unsigned + 'static, N: Unsigned + 'static> RowParamsShape<(N,), (N,)> for (M, N) {
            type Output = (M, N);
        }
    };
    (@ LogitsShape, $m:literal, $l:literal, $n:literal) => {
        /// `[m, c] → []` (`cross_entropy`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait LogitsShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<M: Unsigned + 'static, C: Unsigned + 'static> LogitsShape for (M, C) {
            type Output = ();
        }
    };
    (@ ConcatShape, $m:literal, $l:literal, $n:literal) => {
        /// `concat` along axis `Axis`: the other dims equal, the sizes along it add (typenum `Sum`).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait ConcatShape<R, Axis> {
            /// The output shape.
            type Output: Shape;
        }
        concat_impls!();
    };
    (@ SliceShape, $m:literal, $l:literal, $n:literal) => {
        /// `slice` of axis `Axis` to `Len` entries (the range is checked by the macro for literal
        /// sizes and by `compile` at run time).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait SliceShape<Axis, Len> {
            /// The output shape.
            type Output: Shape;
        }
        slice_impls!();
    };
    (@ PermuteShape, $m:literal, $l:literal, $n:literal) => {
        /// `permute` by `P = (P0, …)` (typenum axis indices): output axis `k` is axis `Pk`.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait PermuteShape<P> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape + AxisAt<P0>, P0> PermuteShape<(P0,)> for S
        where (S::Output,): Shape {
            type Output = (S::Output,);
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape + AxisAt<P0> + AxisAt<P1>, P0, P1> PermuteShape<(P0, P1)> for S
        where (<S as AxisAt<P0>>::Output, <S as AxisAt<P1>>::Output): Shape {
            type Output = (<S as AxisAt<P0>>::Output, <S as AxisAt<P1>>::Output);
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape + AxisAt<P0> + AxisAt<P1> + AxisAt<P2>, P0, P1, P2> PermuteShape<(P0, P1, P2)> for S
        where (<S as AxisAt<P0>>::Output, <S as AxisAt<P1>>::Output, <S as AxisAt<P2>>::Output): Shape {
            type Output = (<S as AxisAt<P0>>::Output, <S as AxisAt<P1>>::Output, <S as AxisAt<P2>>::Output);
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape + AxisAt<P0> + AxisAt<P1> + AxisAt<P2> + AxisAt<P3>, P0, P1, P2, P3> PermuteShape<(P0, P1, P2, P3)> for S
        where (
            <S as AxisAt<P0>>::Output,
            <S as AxisAt<P1>>::Output,
            <S as AxisAt<P2>>::Output,
            <S as AxisAt<P3>>::Output,
        ): Shape {
            type Output = (
                <S as AxisAt<P0>>::Output,
                <S as AxisAt<P1>>::Output,
                <S as AxisAt<P2>>::Output,
                <S as AxisAt<P3>>::Output,
            );
        }
    };
    (@ ReshapeShape, $m:literal, $l:literal, $n:literal) => {
        /// `reshape` to `To`: the element counts ([`Numel`]) are the same type.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait ReshapeShape<To> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Numel, To: Shape + Numel<Count = S::Count>> ReshapeShape<To> for S {
            type Output = To;
        }
    };
    (@ GatherRowsShape, $m:literal, $l:literal, $n:literal) => {
        /// `[vocab, d] → [lead…, d]` (`gather_rows`, alias `embedding`): `Lead` is the tuple of
        /// the output's leading dims, `(N,)`, `(B, T)` or `(B, T, U)`, one id per row.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait GatherRowsShape<Lead> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<V: Unsigned + 'static, E: Unsigned + 'static, N: Unsigned + 'static> GatherRowsShape<(N,)> for (V, E) {
            type Output = (N, E);
        }
        #[diagnostic::do_not_recommend]
        impl<V: Unsigned + 'static, E: Unsigned + 'static, B: Unsigned + 'static, T: Unsigned + 'static>
            GatherRowsShape<(B, T)> for (V, E)
        {
            type Output = (B, T, E);
        }
        #[diagnostic::do_not_recommend]
        impl<V, E, B, T, U> GatherRowsShape<(B, T, U)> for (V, E)
        where
            V: Unsigned + 'static,
            E: Unsigned + 'static,
            B: Unsigned + 'static,
            T: Unsigned + 'static,
            U: Unsigned + 'static,
        {
            type Output = (B, T, U, E);
        }
    };
    (@ CausalShape, $m:literal, $l:literal, $n:literal) => {
        /// `[…, t, t] → […, t, t]` (`causal_mask`), rank 2 to 4.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait CausalShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<T: Unsigned + 'static> CausalShape for (T, T) {
            type Output = (T, T);
        }
        #[diagnostic::do_not_recommend]
        impl<B: Unsigned + 'static, T: Unsigned + 'static> CausalShape for (B, T, T) {
            type Output = (B, T, T);
        }
        #[diagnostic::do_not_recommend]
        impl<B: Unsigned + 'static, H: Unsigned + 'static, T: Unsigned + 'static> CausalShape for (B, H, T, T) {
            type Output = (B, H, T, T);
        }
    };
    (@ LeafShape, $m:literal, $l:literal, $n:literal) => {
        /// A data tensor's declared shape.
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait LeafShape {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<S: Shape> LeafShape for S {
            type Output = S;
        }
    };
    (@ Conv1dShape, $m:literal, $l:literal, $n:literal) => {
        /// `conv1d`: `[n, c_in, l] , [c_out, c_in, k] → [n, c_out, l_out]` with stride `S`,
        /// padding `P` and dilation `Dl` (typenum numbers), `l_out` by [`SlidingAxis`].
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait Conv1dShape<W, S, P, Dl> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<N, C, L, CO, K, S, P, Dl> Conv1dShape<(CO, C, K), S, P, Dl> for (N, C, L)
        where
            N: Unsigned + 'static,
            C: Unsigned + 'static,
            CO: Unsigned + 'static,
            K: Unsigned + 'static,
            L: Unsigned + SlidingAxis<K, S, P, Dl> + 'static,
        {
            type Output = (N, CO, <L as SlidingAxis<K, S, P, Dl>>::Output);
        }
    };
    (@ Conv2dShape, $m:literal, $l:literal, $n:literal) => {
        /// `conv2d`: `[n, c_in, h, w] , [c_out, c_in, kh, kw] → [n, c_out, h_out, w_out]` with
        /// strides `(SH, SW)`, paddings `(PH, PW)` and dilations `(DH, DW)` (typenum numbers),
        /// each output axis by [`SlidingAxis`].
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait Conv2dShape<W, S, P, Dl> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<N, C, H, X, CO, KH, KW, SH, SW, PH, PW, DH, DW>
            Conv2dShape<(CO, C, KH, KW), (SH, SW), (PH, PW), (DH, DW)> for (N, C, H, X)
        where
            N: Unsigned + 'static,
            C: Unsigned + 'static,
            CO: Unsigned + 'static,
            KH: Unsigned + 'static,
            KW: Unsigned + 'static,
            H: Unsigned + SlidingAxis<KH, SH, PH, DH> + 'static,
            X: Unsigned + SlidingAxis<KW, SW, PW, DW> + 'static,
        {
            type Output = (
                N,
                CO,
                <H as SlidingAxis<KH, SH, PH, DH>>::Output,
                <X as SlidingAxis<KW, SW, PW, DW>>::Output,
            );
        }
    };
    (@ Pool2dShape, $m:literal, $l:literal, $n:literal) => {
        /// `max_pool2d`, `avg_pool2d`: `[n, c, h, w] → [n, c, h_out, w_out]` with kernel
        /// `(KH, KW)`, strides `(SH, SW)` and paddings `(PH, PW)` (typenum numbers), each output
        /// axis by [`PoolAxis`].
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait Pool2dShape<K, S, P> {
            /// The output shape.
            type Output: Shape;
        }
        #[diagnostic::do_not_recommend]
        impl<N, C, H, X, KH, KW, SH, SW, PH, PW> Pool2dShape<(KH, KW), (SH, SW), (PH, PW)> for (N, C, H, X)
        where
            N: Unsigned + 'static,
            C: Unsigned + 'static,
            H: Unsigned + PoolAxis<KH, SH, PH> + 'static,
            X: Unsigned + PoolAxis<KW, SW, PW> + 'static,
        {
            type Output = (N, C, <H as PoolAxis<KH, SH, PH>>::Output, <X as PoolAxis<KW, SW, PW>>::Output);
        }
    };
    (@ DeclaredShape, $m:literal, $l:literal, $n:literal) => {
        /// `L` (a declared shape or dim) is `R` (the computed one).
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait DeclaredShape<R> {}
        #[diagnostic::do_not_recommend]
        impl<T> DeclaredShape<T> for T {}
    };
}

/// `impl $trait for` every rank ≥ 1 with `Output = Self`.
macro_rules! per_rank {
    ($trait:ident) => {
        per_rank!(@ $trait; D0);
        per_rank!(@ $trait; D0, D1);
        per_rank!(@ $trait; D0, D1, D2);
        per_rank!(@ $trait; D0, D1, D2, D3);
    };
    (@ $trait:ident; $($d:ident),+) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Unsigned + 'static),+> $trait for ($($d,)+) {
            type Output = ($($d,)+);
        }
    };
}

/// `impl $trait<Axis> for Shape { Output = … }` per (shape, axis) pair.
macro_rules! axis_impls {
    ($trait:ident; $( ($($d:ident),+ $(,)?), $axis:ty => $out:ty );+ $(;)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<$($d: Unsigned + 'static),+> $trait<$axis> for ($($d,)+) {
            type Output = $out;
        }
    )+};
}

/// `ConcatShape` per rank and axis: `A` and `B` agree off the axis, the axis dims add.
macro_rules! concat_impls {
    () => {
        concat_impls!(@ U0; (A0), (B0) => (Sum<A0, B0>,); A0, B0;);
        concat_impls!(@ U0; (A0, X1), (B0, X1) => (Sum<A0, B0>, X1); A0, B0; X1);
        concat_impls!(@ U1; (X0, A1), (X0, B1) => (X0, Sum<A1, B1>); A1, B1; X0);
        concat_impls!(@ U0; (A0, X1, X2), (B0, X1, X2) => (Sum<A0, B0>, X1, X2); A0, B0; X1, X2);
        concat_impls!(@ U1; (X0, A1, X2), (X0, B1, X2) => (X0, Sum<A1, B1>, X2); A1, B1; X0, X2);
        concat_impls!(@ U2; (X0, X1, A2), (X0, X1, B2) => (X0, X1, Sum<A2, B2>); A2, B2; X0, X1);
        concat_impls!(@ U0; (A0, X1, X2, X3), (B0, X1, X2, X3) => (Sum<A0, B0>, X1, X2, X3); A0, B0; X1, X2, X3);
        concat_impls!(@ U1; (X0, A1, X2, X3), (X0, B1, X2, X3) => (X0, Sum<A1, B1>, X2, X3); A1, B1; X0, X2, X3);
        concat_impls!(@ U2; (X0, X1, A2, X3), (X0, X1, B2, X3) => (X0, X1, Sum<A2, B2>, X3); A2, B2; X0, X1, X3);
        concat_impls!(@ U3; (X0, X1, X2, A3), (X0, X1, X2, B3) => (X0, X1, X2, Sum<A3, B3>); A3, B3; X0, X1, X2);
    };
    (@ $axis:ty; ($($l:ident),+), ($($r:ident),+) => $out:ty; $a:ident, $b:ident; $($x:ident),*) => {
        #[diagnostic::do_not_recommend]
        impl<$a, $b, $($x: Unsigned + 'static),*> ConcatShape<($($r,)+), $axis> for ($($l,)+)
        where
            $a: Unsigned + Add<$b> + 'static,
            $b: Unsigned + 'static,
            Sum<$a, $b>: Unsigned + 'static,
        {
            type Output = $out;
        }
    };
}

/// `SliceShape` per rank and axis: the axis dim becomes `Len`.
macro_rules! slice_impls {
    () => {
        slice_impls!(@ U0; (D0) => (Len,));
        slice_impls!(@ U0; (D0, D1) => (Len, D1));
        slice_impls!(@ U1; (D0, D1) => (D0, Len));
        slice_impls!(@ U0; (D0, D1, D2) => (Len, D1, D2));
        slice_impls!(@ U1; (D0, D1, D2) => (D0, Len, D2));
        slice_impls!(@ U2; (D0, D1, D2) => (D0, D1, Len));
        slice_impls!(@ U0; (D0, D1, D2, D3) => (Len, D1, D2, D3));
        slice_impls!(@ U1; (D0, D1, D2, D3) => (D0, Len, D2, D3));
        slice_impls!(@ U2; (D0, D1, D2, D3) => (D0, D1, Len, D3));
        slice_impls!(@ U3; (D0, D1, D2, D3) => (D0, D1, D2, Len));
    };
    (@ $axis:ty; ($($d:ident),+) => $out:ty) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Unsigned + 'static,)+ Len: Unsigned + 'static> SliceShape<$axis, Len> for ($($d,)+) {
            type Output = $out;
        }
    };
}

exactgrad_spec::type_rules!(rule_traits);

pub use super::type_ops::{AxisAt, Numel, PoolAxis, SlidingAxis, TypeArg};

/// Compile-time check that the declared shape (or dim) `L` is the computed one `R` ([`DeclaredShape`]):
/// `graph!` emits it where a `let` annotation or the signature declares generic dims it cannot
/// compare itself.
pub fn declared<L: DeclaredShape<R>, R>() {}
