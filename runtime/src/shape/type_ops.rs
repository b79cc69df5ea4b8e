//! Type-level building blocks of the rule traits in [`rules`](super::rules): the dim at an axis,
//! a tuple of axis indices as values, and the element count of a shape as a typenum number.

use core::ops::Mul;

use typenum::{Prod, Unsigned, U0, U1, U2, U3};

use super::Shape;

macro_rules! axis_at {
    ($( ($($d:ident),+ $(,)?), $i:ty => $out:ident );+) => {$(
        impl<$($d: Unsigned + 'static),+> AxisAt<$i> for ($($d,)+) {
            type Output = $out;
        }
    )+};
}
/// The dim at axis `I` (a typenum index) of a shape: the building block of [`PermuteShape`].
pub trait AxisAt<I> {
    /// The dim.
    type Output: Unsigned + 'static;
}
axis_at!((D0,), U0 => D0);
axis_at!((D0, D1), U0 => D0; (D0, D1), U1 => D1);
axis_at!((D0, D1, D2), U0 => D0; (D0, D1, D2), U1 => D1; (D0, D1, D2), U2 => D2);
axis_at!((D0, D1, D2, D3), U0 => D0; (D0, D1, D2, D3), U1 => D1; (D0, D1, D2, D3), U2 => D2; (D0, D1, D2, D3), U3 => D3);

/// A tuple of typenum axis indices (a permutation): its values.
pub trait AxisList {
    /// The indices, in order.
    fn axes() -> Vec<usize>;
}
impl AxisList for () {
    fn axes() -> Vec<usize> {
        Vec::new()
    }
}
macro_rules! axis_list {
    ($($p:ident),+) => {
        impl<$($p: Unsigned),+> AxisList for ($($p,)+) {
            fn axes() -> Vec<usize> {
                vec![$($p::USIZE),+]
            }
        }
    };
}
axis_list!(P0);
axis_list!(P0, P1);
axis_list!(P0, P1, P2);
axis_list!(P0, P1, P2, P3);

/// The element count of a shape as a typenum number (`Prod` of its dims, `U1` for `()`): the
/// building block of [`ReshapeShape`].
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
