//! The kernels that write a read contribution into its sink (a fresh tensor or an accumulating
//! gradient), in the widest build the CPU has.

use super::*;

pub(super) fn check_len<A>(n: usize, s: &[A]) -> Result<(), String> {
    if s.len() == n {
        Ok(())
    } else {
        Err(format!("tensors of {} and {n} elements added at one position", s.len()))
    }
}

/// Writes `values` (exactly `n` of them) into `sink`. The values come as an iterator over slices,
/// not an index closure, so the loops vectorise (no bounds check per element).
/// The loop runs in the widest build the CPU has (`ops::elementwise`: the same operations).
#[inline]
fn emit<A: Scalar>(sink: Sink<'_, A>, values: impl Iterator<Item = A>) {
    crate::ops::elementwise(Emit { sink, values });
}

/// [`emit`]'s loop, a `WideLoop` so that it is compiled inside the wide build (as a closure it
/// stayed out of line).
struct Emit<'s, A, I> {
    sink: Sink<'s, A>,
    values: I,
}

impl<A: Scalar, I: Iterator<Item = A>> crate::ops::WideLoop for Emit<'_, A, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        emit_here(self.sink, self.values);
    }
}

#[inline(always)]
fn emit_here<A: Scalar>(sink: Sink<'_, A>, values: impl Iterator<Item = A>) {
    match sink {
        Sink::New(v) => v.extend(values),
        Sink::Accumulate(t) => {
            for (x, y) in t.iter_mut().zip(values) {
                *x = A::pinned_add(x.clone(), y);
            }
        }
        Sink::OntoUniform(stored, v) | Sink::OntoUniformInto(stored, v) => {
            v.extend(values.map(|y| A::pinned_add(stored.clone(), y)));
        }
    }
}

pub(super) fn emit_copy<A: Scalar>(sink: Sink<'_, A>, n: usize, t: &[A]) -> Result<(), String> {
    check_len(n, t)?;
    crate::ops::elementwise(Emit { sink, values: t.iter().cloned() });
    Ok(())
}

pub(super) fn emit_add<A: Scalar>(
    sink: Sink<'_, A>,
    n: usize,
    l: Operand<'_, A>,
    r: Operand<'_, A>,
) -> Result<(), String> {
    match (l, r) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            check_len(n, a)?;
            check_len(n, b)?;
            emit(sink, a.iter().zip(b).map(|(x, y)| A::pinned_add(x.clone(), y.clone())));
        }
        (Operand::Slice(a), Operand::Uniform(u)) => {
            check_len(n, a)?;
            emit(sink, a.iter().map(|x| A::pinned_add(x.clone(), u.clone())));
        }
        (Operand::Uniform(u), Operand::Slice(b)) => {
            check_len(n, b)?;
            emit(sink, b.iter().map(|y| A::pinned_add(u.clone(), y.clone())));
        }
        (Operand::Uniform(u), Operand::Uniform(w)) => {
            emit(sink, core::iter::repeat_n(A::pinned_add(u.clone(), w.clone()), n));
        }
    }
    Ok(())
}
