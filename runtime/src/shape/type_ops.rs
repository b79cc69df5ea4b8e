//! Type-level building blocks of the rule traits in [`rules`](super::rules): the dim at an axis,
//! a typed constructor's constant arguments as values, the element count of a shape as a typenum number, and the
//! output size of one axis of a sliding window.

use core::ops::{Add, Div, Mul, Sub};

use typenum::{Bit, Diff, IsLessOrEqual, NonZero, Prod, Quot, Sum, UInt, UTerm, Unsigned, B1, U0, U1, U2, U3};

use super::Shape;

macro_rules! axis_at {
    ($( ($($d:ident),+ $(,)?), $i:ty => $out:ident );+) => {$(
        impl<$($d: Unsigned + 'static),+> AxisAt<$i> for ($($d,)+) {
            type Output = $out;
        }
    )+};
}
/// The dim at axis `I` (a typenum index) of a shape: the building block of [`PermuteShape`](crate::shape::rules::PermuteShape).
pub trait AxisAt<I> {
    /// The dim.
    type Output: Unsigned + 'static;
}
axis_at!((D0,), U0 => D0);
axis_at!((D0, D1), U0 => D0; (D0, D1), U1 => D1);
axis_at!((D0, D1, D2), U0 => D0; (D0, D1, D2), U1 => D1; (D0, D1, D2), U2 => D2);
axis_at!((D0, D1, D2, D3), U0 => D0; (D0, D1, D2, D3), U1 => D1; (D0, D1, D2, D3), U2 => D2; (D0, D1, D2, D3), U3 => D3);

/// A constant argument of a typed constructor given as a type — a typenum number (an axis, a
/// length, a stride: `U1::new()`) or a tuple of them (a window's height and width, a
/// permutation) — and its value of type `V`: a number is a `usize`; a pair is a `[usize; 2]`,
/// and any tuple (the unit included) a `&'static [usize]`.
pub trait TypeArg<V> {
    /// The value.
    const VALUE: V;
}
impl TypeArg<usize> for UTerm {
    const VALUE: usize = 0;
}
impl<U: Unsigned, B: Bit> TypeArg<usize> for UInt<U, B> {
    const VALUE: usize = <Self as Unsigned>::USIZE;
}
impl<P0: Unsigned, P1: Unsigned> TypeArg<[usize; 2]> for (P0, P1) {
    const VALUE: [usize; 2] = [P0::USIZE, P1::USIZE];
}
impl TypeArg<&'static [usize]> for () {
    const VALUE: &'static [usize] = &[];
}
macro_rules! type_arg_list {
    ($($p:ident),+) => {
        impl<$($p: Unsigned),+> TypeArg<&'static [usize]> for ($($p,)+) {
            const VALUE: &'static [usize] = &[$($p::USIZE),+];
        }
    };
}
type_arg_list!(P0);
type_arg_list!(P0, P1);
type_arg_list!(P0, P1, P2);
type_arg_list!(P0, P1, P2, P3);

/// The element count of a shape as a typenum number (`Prod` of its dims, `U1` for `()`): the
/// building block of [`ReshapeShape`](crate::shape::rules::ReshapeShape).
pub trait Numel: Shape {
    /// The count.
    type Count: Unsigned;
}
impl Numel for () {
    type Count = U1;
}
impl<D0: Unsigned + 'static> Numel for (D0,) {
    type Count = D0;
}
impl<D0: Unsigned + Mul<D1> + 'static, D1: Unsigned + 'static> Numel for (D0, D1)
where
    Prod<D0, D1>: Unsigned,
{
    type Count = Prod<D0, D1>;
}
impl<D0: Unsigned + Mul<D1> + 'static, D1: Unsigned + 'static, D2: Unsigned + 'static> Numel for (D0, D1, D2)
where
    Prod<D0, D1>: Unsigned + Mul<D2>,
    Prod<Prod<D0, D1>, D2>: Unsigned,
{
    type Count = Prod<Prod<D0, D1>, D2>;
}
impl<D0: Unsigned + Mul<D1> + 'static, D1: Unsigned + 'static, D2: Unsigned + 'static, D3: Unsigned + 'static> Numel
    for (D0, D1, D2, D3)
where
    Prod<D0, D1>: Unsigned + Mul<D2>,
    Prod<Prod<D0, D1>, D2>: Unsigned + Mul<D3>,
    Prod<Prod<Prod<D0, D1>, D2>, D3>: Unsigned,
{
    type Count = Prod<Prod<Prod<D0, D1>, D2>, D3>;
}

/// The padded size `size + 2·padding` of an axis.
type Padded<I, P> = Sum<I, Prod<P, U2>>;
/// The span `dilation·(kernel − 1) + 1` of a dilated kernel.
type Span<K, Dl> = Sum<Prod<Dl, Diff<K, U1>>, U1>;
/// `(padded − span) / stride + 1`.
type Windows<I, K, S, P, Dl> = Sum<Quot<Diff<Padded<I, P>, Span<K, Dl>>, S>, U1>;
/// `(padded − kernel) / stride + 1`.
type PoolWindows<I, K, S, P> = Sum<Quot<Diff<Padded<I, P>, K>, S>, U1>;

macro_rules! axis_traits {
    ($(($trait:ident, $message:literal, $label:literal, $note:literal)),* $(,)?) => {
        $( axis_traits!(@ $trait, $message, $label, $note); )*
    };
    (@ SlidingAxis, $m:literal, $l:literal, $n:literal) => {
        /// The output size of one spatial axis of a convolution over an axis of size `Self`:
        /// `(size + 2·padding − (dilation·(kernel − 1) + 1)) / stride + 1`, for a kernel size
        /// `K ≥ 1`, stride `S ≥ 1`, padding `P` and dilation `Dl ≥ 1` whose dilated kernel fits the
        /// padded axis (typenum arithmetic; no impl otherwise): the building block of
        /// [`Conv1dShape`] and [`Conv2dShape`].
        ///
        /// [`Conv1dShape`]: super::rules::Conv1dShape
        /// [`Conv2dShape`]: super::rules::Conv2dShape
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait SlidingAxis<K, S, P, Dl> {
            /// The output size.
            type Output: Unsigned + 'static;
        }

        #[diagnostic::do_not_recommend]
        impl<I, K, S, P, Dl> SlidingAxis<K, S, P, Dl> for I
        where
            I: Unsigned + Add<Prod<P, U2>>,
            K: Unsigned + NonZero + Sub<U1>,
            S: Unsigned + NonZero,
            P: Unsigned + Mul<U2>,
            Dl: Unsigned + NonZero + Mul<Diff<K, U1>>,
            Prod<Dl, Diff<K, U1>>: Add<U1>,
            Padded<I, P>: Sub<Span<K, Dl>>,
            Diff<Padded<I, P>, Span<K, Dl>>: Div<S>,
            Quot<Diff<Padded<I, P>, Span<K, Dl>>, S>: Add<U1>,
            Windows<I, K, S, P, Dl>: Unsigned + 'static,
        {
            type Output = Windows<I, K, S, P, Dl>;
        }
    };
    (@ PoolAxis, $m:literal, $l:literal, $n:literal) => {
        /// The output size of one spatial axis of a pooling over an axis of size `Self ≥ 1`:
        /// `(size + 2·padding − kernel) / stride + 1`, for a kernel size `K ≥ 1`, stride `S ≥ 1`
        /// and padding `P ≤ K / 2` (`2·P ≤ K`, so that every window overlaps the input) whose
        /// kernel fits the padded axis (no impl otherwise): the building block of
        /// [`Pool2dShape`].
        ///
        /// [`Pool2dShape`]: super::rules::Pool2dShape
        #[diagnostic::on_unimplemented(message = $m, label = $l, note = $n)]
        pub trait PoolAxis<K, S, P> {
            /// The output size.
            type Output: Unsigned + 'static;
        }

        #[diagnostic::do_not_recommend]
        impl<I, K, S, P> PoolAxis<K, S, P> for I
        where
            I: Unsigned + NonZero + Add<Prod<P, U2>>,
            K: Unsigned + NonZero,
            S: Unsigned + NonZero,
            P: Unsigned + Mul<U2>,
            Prod<P, U2>: IsLessOrEqual<K, Output = B1>,
            Padded<I, P>: Sub<K>,
            Diff<Padded<I, P>, K>: Div<S>,
            Quot<Diff<Padded<I, P>, K>, S>: Add<U1>,
            PoolWindows<I, K, S, P>: Unsigned + 'static,
        {
            type Output = PoolWindows<I, K, S, P>;
        }
    };
}

exactgrad_spec::axis_rules!(axis_traits);
