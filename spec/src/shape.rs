//! Dims as the shape rules see them, and small fixed-rank shapes over them.

use core::fmt;

/// Highest rank a shape can have.
pub const MAX_RANK: usize = 4;

/// A dim as a shape rule sees it: the runtime's sizes (`usize`, always known) or the macro's
/// literal-or-named dims (a named dim's size is unknown until the compiler instantiates it).
pub trait Dim: Clone + fmt::Display {
    /// The dim of literal size `n`.
    fn of_size(n: usize) -> Self;
    /// The size, when it is known now.
    fn size(&self) -> Option<usize>;
    /// `Some(true/false)` when equality is decided now; `None` when only the compiler can decide
    /// (a named dim against another dim): the rule then assumes equality and the type-level rule
    /// trait checks it.
    fn same(&self, other: &Self) -> Option<bool> {
        match (self.size(), other.size()) {
            (Some(a), Some(b)) => Some(a == b),
            _ => None,
        }
    }
}

impl Dim for usize {
    fn of_size(n: usize) -> Self {
        n
    }
    fn size(&self) -> Option<usize> {
        Some(*self)
    }
}

/// A shape of rank `0..=MAX_RANK` over dims `D`, built by the rules (no allocation).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shape<D> {
    rank: usize,
    dims: [D; MAX_RANK],
}

impl<D: Dim> Shape<D> {
    /// The shape with these dims; `None` above [`MAX_RANK`].
    pub fn new(dims: &[D]) -> Option<Self> {
        if dims.len() > MAX_RANK {
            return None;
        }
        let mut out = Self::scalar();
        out.dims[..dims.len()].clone_from_slice(dims);
        out.rank = dims.len();
        Some(out)
    }

    /// Rank 0.
    #[must_use]
    pub fn scalar() -> Self {
        Shape { rank: 0, dims: [D::of_size(0), D::of_size(0), D::of_size(0), D::of_size(0)] }
    }

    /// The dims.
    pub fn dims(&self) -> &[D] {
        &self.dims[..self.rank]
    }

    /// `self` with dim `axis` replaced by `d` (`axis < rank`).
    pub(crate) fn with(mut self, axis: usize, d: D) -> Self {
        self.dims[axis] = d;
        self
    }

    /// `self` without dim `axis` (`axis < rank`).
    pub(crate) fn without(&self, axis: usize) -> Self {
        let mut out = Self::scalar();
        for (k, d) in self.dims().iter().enumerate().filter(|(k, _)| *k != axis) {
            out.dims[out.rank] = d.clone();
            out.rank += 1;
            let _ = k;
        }
        out
    }
}

/// Writes dims as `[2, 3]` (names for named dims), the form every message uses.
pub struct Dims<'a, D>(pub &'a [D]);

impl<D: fmt::Display> fmt::Display for Dims<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl<D: Dim> fmt::Display for Shape<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Dims(self.dims()).fmt(f)
    }
}

/// The element count of `dims`, when every size is known and the product fits `usize`.
pub fn numel<D: Dim>(dims: &[D]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, d| n.checked_mul(d.size()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_like_runtime_dims() {
        let s = Shape::new(&[2usize, 3]).expect("rank 2");
        assert_eq!(s.to_string(), "[2, 3]");
        assert_eq!(Shape::<usize>::scalar().to_string(), "[]");
        assert_eq!(s.without(0).dims(), &[3]);
        assert_eq!(s.with(1, 7).dims(), &[2, 7]);
        assert!(Shape::new(&[1usize; 5]).is_none());
        assert_eq!(numel(&[usize::MAX, 2]), None);
    }
}
