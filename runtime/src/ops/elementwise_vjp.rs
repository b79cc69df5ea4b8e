//! The VJPs of the elementwise ops (`add`, `sub`, `mul`, the pointwise functions) written straight
//! onto their gradients (SEMANTICS §4–§6, "fuse the `+ 0` of a contribution into the kernel that
//! produces it").
//!
//! A binary elementwise op contributes `add(single(a, l), single(b, r))` and a unary one
//! `single(a, t)`, each term a function of one element of the cotangent and the saved values. A
//! generated program accumulates the read at each support position `q` as
//! `(slot_q + pending uniforms) + read(q)[e]`, where `read(a)` is `l[e] + 0`, `read(b)` is
//! `0 + r[e]` and, for `a == b`, `l[e] + r[e]` (the other side's uniform is `0`, added, never
//! elided). Through the arena that is a pass per term to build it, and a pass per position to
//! read and add it; here it is one loop per position that computes the term, makes the read's
//! addition and adds it to the slot — the same operations on the same operands in the same order,
//! so the same bits on every scalar. Each op's terms are written once, as iterators its
//! `contributions` and [`ElementwiseVjp::read_onto`] both use. `tests` below compare the two,
//! bit for bit, on adversarial values.

#[cfg(doc)]
use crate::graph::CompactOp;
use crate::scalar::Scalar;
use crate::tensor::RawTensor;

/// Where an elementwise VJP writes its read at one position `q`.
#[derive(Debug)]
pub enum Onto<'a, A> {
    /// `x[e] ← (x[e] + u) + read[e]` (`x[e] + read[e]` when `u` is `None`): a position already
    /// written, `u` the last of its pending uniforms (the ones before it applied already).
    Slot(&'a mut [A], Option<&'a A>),
    /// `out[e] = stored + read[e]` appended to `out` (empty on entry): a position that still
    /// holds the uniform `stored` (its pending uniforms applied).
    Uniform(&'a A, &'a mut Vec<A>),
}

impl<'a, A: Clone> Onto<'a, A> {
    /// The element count the read must have: a slot's length; `None` onto a uniform.
    fn len(&self) -> Option<usize> {
        match self {
            Onto::Slot(x, _) => Some(x.len()),
            Onto::Uniform(..) => None,
        }
    }

    /// The elements to add a read of `n` elements to, and the pending uniform to add first: a
    /// uniform `stored` as a buffer holding `stored` `n` times (`stored + r` is then the same
    /// addition, in a loop LLVM keeps in the wide build, where an `extend` stayed out of line).
    pub(crate) fn into_slot(self, n: usize) -> (&'a mut [A], Option<&'a A>) {
        match self {
            Onto::Slot(x, u) => (x, u),
            Onto::Uniform(stored, out) => {
                out.clear();
                out.resize(n, stored.clone());
                (&mut out[..], None)
            }
        }
    }
}

/// Writes a read onto a [`Target`], element by element: `$read` (an expression of the pattern
/// `$pat`, bound to each item of `$items`) for each element, with the slot's or the uniform's
/// additions of [`Onto`]. One plain loop per arm, the read in its body: the elementwise reads and
/// the pointwise derivatives (whose long bodies, through an iterator adapter, left `Zip::next`
/// out of line) share it.
macro_rules! onto_target {
    ($a:ty, $target:expr, $pat:pat in $items:expr => $read:expr) => {
        match $target {
            $crate::ops::elementwise_vjp::Target::Slot(x, Some(u)) => {
                for (e, $pat) in x.iter_mut().zip($items) {
                    *e = <$a>::pinned_add(<$a>::pinned_add(e.clone(), u.clone()), $read);
                }
            }
            $crate::ops::elementwise_vjp::Target::Slot(x, None) => {
                for (e, $pat) in x.iter_mut().zip($items) {
                    *e = <$a>::pinned_add(e.clone(), $read);
                }
            }
            $crate::ops::elementwise_vjp::Target::Fresh(x, stored) => {
                for (e, $pat) in x.iter_mut().zip($items) {
                    *e = <$a>::pinned_add(stored.clone(), $read);
                }
            }
        }
    };
}
pub(crate) use onto_target;

/// Where [`Onto::into_target`] writes a read.
pub(crate) enum Target<'a, A> {
    /// `x[e] ← (x[e] + u) + r` (`x[e] + r` without `u`).
    Slot(&'a mut [A], Option<&'a A>),
    /// `x[e] ← stored + r` over elements holding zeros.
    Fresh(&'a mut [A], &'a A),
}

impl<'a, A: Scalar> Onto<'a, A> {
    /// The elements to write a read of `n` elements to: a slot's own, or onto a uniform `stored`
    /// `n` zeros to overwrite with `stored + r` (one pass over the read and a zero fill; a fill
    /// with `stored` and `x[e] + r` after it was two passes).
    pub(crate) fn into_target(self, n: usize) -> Target<'a, A> {
        match self {
            Onto::Slot(x, u) => Target::Slot(x, u),
            Onto::Uniform(stored, out) => {
                out.clear();
                out.resize(n, A::zero());
                Target::Fresh(&mut out[..], stored)
            }
        }
    }
}

/// A built-in elementwise op whose read at each support position a generated program computes
/// and adds in one loop ([`ProgramState`](crate::ProgramState)'s sweep). Its VJP reads no data,
/// so the trait does not name the data's type: a program's sweep, compiled once for `f32` and
/// `f64`, calls it straight.
pub trait ElementwiseVjp<A>: Send + Sync {
    /// The uniform of the op's contributions (what
    /// [`Contributions::uniform`](crate::Contributions::uniform) gives for them: `0 + 0` for a
    /// binary op, `0` for a unary one).
    fn elementwise_uniform(&self) -> A;

    /// Writes `read(q)` onto `onto`, `q` one of the op's parents, from the node's saved `prefix`
    /// and `output` and its cotangent `g`: bit for bit what
    /// [`contributions`](CompactOp::contributions), read at `q` and added, give.
    ///
    /// # Errors
    /// When `q` is not a parent, or the cotangent, the saved values and the slot differ in
    /// length (never for a node of a planned program).
    fn read_onto(
        &self,
        prefix: &[RawTensor<A>],
        output: &RawTensor<A>,
        g: &RawTensor<A>,
        q: usize,
        onto: Onto<'_, A>,
    ) -> Result<(), String>;
}

/// `Ok` when every length in `lens` is `n` (and the slot's, if any, too).
pub(crate) fn same_len<A: Clone>(onto: &Onto<'_, A>, n: usize, lens: &[usize]) -> Result<(), String> {
    match lens.iter().chain(onto.len().as_ref()).find(|&&l| l != n) {
        None => Ok(()),
        Some(l) => Err(format!("tensors of {l} and {n} elements in one elementwise VJP")),
    }
}

/// Writes `read` (one value per element) onto `onto`, in the widest build the CPU has.
#[inline]
pub(crate) fn write<A: Scalar>(onto: Onto<'_, A>, read: impl ExactSizeIterator<Item = A>) {
    super::elementwise(Write { onto, read });
}

/// [`write`]'s loop, a `WideLoop` so that it is compiled inside the wide build.
struct Write<'a, A, I> {
    onto: Onto<'a, A>,
    read: I,
}

impl<A: Scalar, I: ExactSizeIterator<Item = A>> super::WideLoop for Write<'_, A, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        write_here(self.onto, self.read);
    }
}

/// [`Write`]'s body.
#[inline(always)]
fn write_here<A: Scalar>(onto: Onto<'_, A>, read: impl ExactSizeIterator<Item = A>) {
    let n = read.len();
    onto_target!(A, onto.into_target(n), r in read => r);
}

/// The read at `q` of `add(single(a, left), single(b, right))` written onto `onto`.
///
/// # Errors
/// When `q` is neither `a` nor `b`.
pub(crate) fn binary<A: Scalar>(
    onto: Onto<'_, A>,
    q: usize,
    [a, b]: [usize; 2],
    left: impl ExactSizeIterator<Item = A>,
    right: impl ExactSizeIterator<Item = A>,
) -> Result<(), String> {
    let zero = A::zero();
    match (q == a, q == b) {
        (true, true) => write(onto, left.zip(right).map(|(l, r)| A::pinned_add(l, r))),
        (true, false) => write(onto, left.map(|l| A::pinned_add(l, zero.clone()))),
        (false, true) => write(onto, right.map(|r| A::pinned_add(zero.clone(), r))),
        (false, false) => return Err(format!("position {q} is not in the support")),
    }
    Ok(())
}

/// The uniform of a binary op's contributions: `0 + 0`.
pub(crate) fn binary_uniform<A: Scalar>() -> A {
    A::pinned_add(A::zero(), A::zero())
}

#[cfg(test)]
mod tests;
