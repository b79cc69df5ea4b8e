//! The one implementation of every pointwise op (`relu`, `tanh`, `exp`, `sigmoid`, `softplus`,
//! `log`, `sqrt`, `gelu`, `neg`, `silu`): an op is a [`PointwiseFn`] — its forward and its derivative
//! applied to the cotangent — handed to [`Pointwise`], which supplies the shape rule, the forward
//! loop and the compact VJP `single(a, t)` with `t[i] = derivative(δ[i], a[i], y[i])`.
//!
//! The `graph!` macro's generated programs call the same two functions, so every pass computes the
//! same scalar operations.

use core::fmt;
use core::marker::PhantomData;

use rayon::prelude::*;

use super::elementwise_vjp::{onto_target, same_len, ElementwiseVjp, Onto};
use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::parallel;
use crate::scalar::Scalar;
use crate::shape::{rules::UnaryShape, Dims, Position, Shape};
use crate::tensor::RawTensor;

/// A pointwise function: its forward and its derivative applied to a cotangent.
pub trait PointwiseFn<A>: 'static {
    /// The op's name (as in `exactgrad_spec::OPS`).
    const NAME: &'static str;
    /// The saved values the derivative reads: the op's `exactgrad_spec` entry. A value it does
    /// not read is never touched (a generated program does not keep it): the cotangent stands in
    /// for it in [`derivative`](Self::derivative), which ignores it.
    const READS: exactgrad_spec::Reads = exactgrad_spec::ops::reads_of(Self::NAME);
    /// The forward's work per element, for the thread split: a loop of `n` elements is split
    /// when `n · FORWARD_WORK` reaches `parallel::min_pointwise_work()` (default `2^19`). About
    /// 16 per nanosecond the loop takes per element on one thread: `16` (the default) for a
    /// vectorised transcendental kernel such as `tanh` or `exp` (about 1 ns: split from 32 768
    /// elements), more for slower ones (`log` 48, `softplus` 128), and `0` — never split by
    /// default — for loops bound by memory bandwidth (`relu`, `neg`, `sqrt`, and most
    /// derivatives: about 0.15 ns, which a second thread does not make faster). Measured with
    /// `cargo bench --bench math -- threads`; it changes only where work runs.
    const FORWARD_WORK: usize = 16;
    /// The derivative's work per element, as [`FORWARD_WORK`](Self::FORWARD_WORK).
    const DERIVATIVE_WORK: usize = 16;
    /// Constants computed once per loop (e.g. GELU's coefficients in the scalar type).
    type Consts;
    /// The constants.
    fn consts() -> Self::Consts;
    /// `y = f(x)`.
    fn forward(k: &Self::Consts, x: &A) -> A;
    /// The contribution to the operand at one element: `δ · f'(x)` with `δ` on the left, written
    /// from the cotangent `g`, the saved input `x` and the saved output `y` (each op documents
    /// which it reads; `exactgrad_spec` lists them).
    fn derivative(k: &Self::Consts, g: &A, x: &A, y: &A) -> A;
    /// The function as the independent reference knows it ([`crate::reference`]); `None` (the
    /// default, for user functions) makes the reference trust the op's own code.
    #[must_use]
    fn reference() -> Option<crate::reference::Unary<A>> {
        None
    }
    /// Whether this crate compiled the function's loops for `f32` and `f64` (a built-in op's:
    /// `crate::ops`' `builtin_pointwise!` table). Set only by this crate.
    #[doc(hidden)]
    const COMPILED: bool = false;
    /// The place of its loops in the compiled table: its name's place in [`BUILTIN`] (a compile
    /// error when `COMPILED` is set on a function the table does not list).
    #[doc(hidden)]
    const COMPILED_INDEX: usize = compiled_index(Self::NAME, Self::COMPILED);
}

/// The built-in pointwise functions' names, in the order of their loops in the compiled table
/// (`crate::compiled`), as `crate::ops` declares them.
pub const BUILTIN: &[&str] = super::builtin::NAMES;

pub(crate) use exactgrad_spec::ops::same_name;

/// `name`'s place in [`BUILTIN`] when `compiled`, else `0` (unused).
const fn compiled_index(name: &str, compiled: bool) -> usize {
    let mut i = 0;
    while i < BUILTIN.len() {
        if same_name(BUILTIN[i], name) {
            return i;
        }
        i += 1;
    }
    assert!(!compiled, "a compiled pointwise function that ops::builtin_pointwise! does not list");
    0
}

/// The op `F` applied elementwise to one position.
pub struct Pointwise<F> {
    parents: [usize; 1],
    f: PhantomData<fn() -> F>,
}

impl<F> Pointwise<F> {
    /// The op applied to the position `a`.
    #[must_use]
    pub fn new(a: usize) -> Self {
        Pointwise { parents: [a], f: PhantomData }
    }
}

impl<F> Clone for Pointwise<F> {
    fn clone(&self) -> Self {
        Pointwise::new(self.parents[0])
    }
}

impl<F> fmt::Debug for Pointwise<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pointwise<{}>({})", core::any::type_name::<F>(), self.parents[0])
    }
}

/// `y[i] = f(x[i])` appended to `out`. Long loops are split over threads in contiguous chunks
/// (`parallel::element_parts`, by [`PointwiseFn::FORWARD_WORK`]): every element is computed
/// alone, so the split moves work only.
pub fn forward_into<A: Scalar, F: PointwiseFn<A>>(x: &[A], out: &mut Vec<A>) {
    // Two constants once `A` and `F` are known: the call or the body is compiled, not both.
    if A::COMPILED && F::COMPILED {
        return (A::compiled().pointwise_forward[F::COMPILED_INDEX])(x, out);
    }
    forward_body::<A, F>(x, out);
}

/// [`forward_into`]'s body (compiled in this crate for the built-in functions over `f32` and
/// `f64`: `crate::compiled`).
pub(crate) fn forward_body<A: Scalar, F: PointwiseFn<A>>(x: &[A], out: &mut Vec<A>) {
    let start = out.len();
    out.resize(start + x.len(), A::zero());
    let out = &mut out[start..];
    let parts = parallel::element_parts(x.len(), F::FORWARD_WORK);
    if parts < 2 {
        super::elementwise(ForwardLoop::<A, F> { x, out, f: PhantomData });
        return;
    }
    let chunk = x.len().div_ceil(parts);
    parallel::split(|| {
        out.par_chunks_mut(chunk).zip(x.par_chunks(chunk)).for_each(|(out, x)| {
            parallel::part(|| super::elementwise(ForwardLoop::<A, F> { x, out, f: PhantomData }));
        });
    });
}

/// `t[i] = derivative(g[i], x[i], y[i])` appended to `out`, split over threads as
/// [`forward_into`].
pub fn derivative_into<A: Scalar, F: PointwiseFn<A>>(g: &[A], x: &[A], y: &[A], out: &mut Vec<A>) {
    // Two constants once `A` and `F` are known: the call or the body is compiled, not both.
    if A::COMPILED && F::COMPILED {
        return (A::compiled().pointwise_derivative[F::COMPILED_INDEX])(g, x, y, out);
    }
    derivative_body::<A, F>(g, x, y, out);
}

/// [`derivative_into`]'s body (compiled as [`forward_body`]).
pub(crate) fn derivative_body<A: Scalar, F: PointwiseFn<A>>(g: &[A], x: &[A], y: &[A], out: &mut Vec<A>) {
    debug_assert!(x.len() == g.len() && y.len() == g.len(), "pointwise operands of one shape");
    let start = out.len();
    out.resize(start + g.len(), A::zero());
    let out = &mut out[start..];
    let parts = parallel::element_parts(g.len(), F::DERIVATIVE_WORK);
    if parts < 2 || x.len() != g.len() || y.len() != g.len() {
        super::elementwise(DerivativeLoop::<A, F> { g, x, y, out, f: PhantomData });
        return;
    }
    let chunk = g.len().div_ceil(parts);
    parallel::split(|| {
        out.par_chunks_mut(chunk).zip(g.par_chunks(chunk)).zip(x.par_chunks(chunk)).zip(y.par_chunks(chunk)).for_each(
            |(((out, g), x), y)| {
                parallel::part(|| super::elementwise(DerivativeLoop::<A, F> { g, x, y, out, f: PhantomData }));
            },
        );
    });
}

// The two loops are plain loops over slices whose `run` is forced inline, so that they (with
// `F::forward` / `F::derivative`) are compiled inside the wider build `elementwise` runs: as
// closures, GELU's loops stayed out of line, in the baseline build. The constants are made inside
// `run`: read through a closure's captures, LLVM could not hoist them past the stores to `out`
// and left GELU's derivative scalar. Over 4 096 `f32` (`cargo bench --bench math -- gelu`):
// forward 19.8 → 6.0 µs, derivative 62.0 → 23.4 µs (hoisted constants) → see the README.

/// `out[i] = forward(x[i])`.
struct ForwardLoop<'a, A, F> {
    x: &'a [A],
    out: &'a mut [A],
    f: PhantomData<fn() -> F>,
}

impl<A: Scalar, F: PointwiseFn<A>> super::WideLoop for ForwardLoop<'_, A, F> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let k = F::consts();
        for (o, v) in self.out.iter_mut().zip(self.x) {
            *o = F::forward(&k, v);
        }
    }
}

/// `out[i] = derivative(g[i], x[i], y[i])`.
struct DerivativeLoop<'a, A, F> {
    g: &'a [A],
    x: &'a [A],
    y: &'a [A],
    out: &'a mut [A],
    f: PhantomData<fn() -> F>,
}

impl<A: Scalar, F: PointwiseFn<A>> super::WideLoop for DerivativeLoop<'_, A, F> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let k = F::consts();
        for (((o, g), x), y) in self.out.iter_mut().zip(self.g).zip(self.x).zip(self.y) {
            *o = F::derivative(&k, g, x, y);
        }
    }
}

/// `onto` the read `t[e] = derivative(g[e], x[e], y[e])` (the op's one term, a lone `single`),
/// split over threads as [`derivative_into`].
pub fn derivative_onto<A: Scalar, F: PointwiseFn<A>>(g: &[A], x: &[A], y: &[A], onto: Onto<'_, A>) {
    // Two constants once `A` and `F` are known: the call or the body is compiled, not both.
    if A::COMPILED && F::COMPILED {
        return (A::compiled().pointwise_onto[F::COMPILED_INDEX])(g, x, y, onto);
    }
    derivative_onto_body::<A, F>(g, x, y, onto);
}

/// [`derivative_onto`]'s body (compiled as [`forward_body`]). `g`, `x`, `y` (and a slot) have
/// one length.
pub(crate) fn derivative_onto_body<A: Scalar, F: PointwiseFn<A>>(g: &[A], x: &[A], y: &[A], onto: Onto<'_, A>) {
    let parts = parallel::element_parts(g.len(), F::DERIVATIVE_WORK);
    if parts < 2 || x.len() != g.len() || y.len() != g.len() {
        super::elementwise(DerivativeOnto::<A, F> { g, x, y, onto, f: PhantomData });
        return;
    }
    let (x_out, u) = onto.into_slot(g.len());
    let chunk = g.len().div_ceil(parts);
    parallel::split(|| {
        x_out
            .par_chunks_mut(chunk)
            .zip(g.par_chunks(chunk))
            .zip(x.par_chunks(chunk))
            .zip(y.par_chunks(chunk))
            .for_each(|(((slot, g), x), y)| {
                let onto = Onto::Slot(slot, u);
                parallel::part(|| super::elementwise(DerivativeOnto::<A, F> { g, x, y, onto, f: PhantomData }));
            });
    });
}

/// `onto` the read `t[e] = derivative(g[e], x[e], y[e])`.
struct DerivativeOnto<'a, A, F> {
    g: &'a [A],
    x: &'a [A],
    y: &'a [A],
    onto: Onto<'a, A>,
    f: PhantomData<fn() -> F>,
}

impl<A: Scalar, F: PointwiseFn<A>> super::WideLoop for DerivativeOnto<'_, A, F> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        // Plain loops over the slices with the derivative in their body (as `DerivativeLoop`):
        // through an iterator adapter, a long derivative (GELU's) left `Zip::next` out of line,
        // called per element.
        let k = F::consts();
        let (g, x, y) = (self.g, self.x, self.y);
        onto_target!(A, self.onto.into_target(g.len()), ((g, x), y) in g.iter().zip(x).zip(y) => F::derivative(&k, g, x, y));
    }
}

impl<A: Scalar, F: PointwiseFn<A>> ElementwiseVjp<A> for Pointwise<F> {
    fn elementwise_uniform(&self) -> A {
        A::zero()
    }
    fn read_onto(
        &self,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        q: usize,
        onto: Onto<'_, A>,
    ) -> Result<(), String> {
        if q != self.parents[0] {
            return Err(format!("position {q} is not in the support"));
        }
        let gd = g.data();
        let x = if F::READS.operands.is_empty() { gd } else { prefix[self.parents[0]].data() };
        let y = if F::READS.output { output.data() } else { gd };
        same_len(&onto, gd.len(), &[x.len(), y.len()])?;
        derivative_onto::<A, F>(gd, x, y, onto);
        Ok(())
    }
}

impl<A: Scalar, D, F: PointwiseFn<A>> CompactOp<A, D> for Pointwise<F> {
    fn name(&self) -> &str {
        F::NAME
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at(F::NAME, prefix, self.parents[0])?;
        super::ruled(super::spec_rules::unary(d.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.parents[0]];
        let mut out = Vec::with_capacity(x.numel());
        forward_into::<A, F>(x.data(), &mut out);
        RawTensor::from_parts(x.dims(), out)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        forward_into::<A, F>(ctx[self.parents[0]].data(), out);
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let x = if F::READS.operands.is_empty() { g.data() } else { saved.prefix[self.parents[0]].data() };
        let y = if F::READS.output { saved.output.data() } else { g.data() };
        let mut t = c.buffer_for(g.numel());
        derivative_into::<A, F>(g.data(), x, y, &mut t);
        c.single(self.parents[0], RawTensor::from_parts(g.dims(), t))
    }
    fn reference(&self) -> Option<crate::reference::RefOp<A, D>> {
        F::reference().map(|f| crate::reference::RefOp::Unary { a: self.parents[0], f })
    }
    fn as_elementwise(&self) -> Option<&dyn ElementwiseVjp<A>> {
        Some(self)
    }
}

/// Typed `f(a)`: the shape is kept ([`UnaryShape`]).
#[must_use]
pub fn node<A: Scalar, D: 'static, F: PointwiseFn<A>, S: UnaryShape<Output = O>, O: Shape, Br>(
    a: Position<S, Br>,
) -> Compact<Pointwise<F>, A, D, O> {
    Compact::new(Pointwise::<F>::new(a.index()), &[&a])
}

#[cfg(test)]
mod thread_tests;
