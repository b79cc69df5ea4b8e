use core::fmt;

/// Highest rank a tensor can have.
pub const MAX_RANK: usize = 4;

/// Runtime dims of a row-major tensor, rank `0..=MAX_RANK`.
///
/// ```
/// use exactgrad_runtime::Dims;
/// let d = Dims::new(&[2, 3]).unwrap();
/// assert_eq!(d.numel(), 6);
/// assert_eq!(d.to_string(), "[2, 3]");
/// assert_eq!(Dims::scalar().numel(), 1);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dims {
    rank: u8,
    dims: [usize; MAX_RANK],
}

impl From<&exactgrad_spec::Shape<usize>> for Dims {
    /// The dims a shape rule computed (rank ≤ [`MAX_RANK`] by construction).
    fn from(s: &exactgrad_spec::Shape<usize>) -> Self {
        let mut dims = [0; MAX_RANK];
        dims[..s.dims().len()].copy_from_slice(s.dims());
        Dims { rank: s.dims().len() as u8, dims }
    }
}

impl Dims {
    /// Dims from a slice; `None` when the rank exceeds [`MAX_RANK`].
    #[must_use]
    pub fn new(dims: &[usize]) -> Option<Self> {
        if dims.len() > MAX_RANK {
            return None;
        }
        let mut d = [0; MAX_RANK];
        d[..dims.len()].copy_from_slice(dims);
        Some(Dims { rank: dims.len() as u8, dims: d })
    }

    /// Rank 0: one element.
    #[must_use]
    pub const fn scalar() -> Self {
        Dims { rank: 0, dims: [0; MAX_RANK] }
    }

    /// Rank 1 with `n` elements.
    #[must_use]
    pub const fn vector(n: usize) -> Self {
        Dims { rank: 1, dims: [n, 0, 0, 0] }
    }

    /// Rank 2, `rows × cols`.
    #[must_use]
    pub const fn matrix(rows: usize, cols: usize) -> Self {
        Dims { rank: 2, dims: [rows, cols, 0, 0] }
    }

    /// Number of axes.
    #[must_use]
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// The extent of each axis.
    #[must_use]
    pub fn as_slice(&self) -> &[usize] {
        &self.dims[..self.rank as usize]
    }

    /// Number of elements (1 for rank 0), or `None` when the product of the dims overflows
    /// `usize` (`[2^63, 2]` on a 64-bit target).
    ///
    /// ```
    /// use exactgrad_runtime::Dims;
    /// assert_eq!(Dims::matrix(2, 3).checked_numel(), Some(6));
    /// assert_eq!(Dims::matrix(usize::MAX, 2).checked_numel(), None);
    /// ```
    #[must_use]
    pub fn checked_numel(&self) -> Option<usize> {
        self.as_slice().iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// Number of elements (1 for rank 0).
    ///
    /// # Panics
    /// When the product of the dims overflows `usize` (see [`checked_numel`](Self::checked_numel)).
    /// Never for the dims of a [`RawTensor`](crate::RawTensor) or of a graph's position: every
    /// place that takes dims from the user checks the count first and returns an error
    /// ([`Error::ShapeOverflow`](crate::Error::ShapeOverflow), or [`Error::Node`](crate::Error::Node)
    /// for a node's shape).
    #[must_use]
    pub fn numel(&self) -> usize {
        match self.checked_numel() {
            Some(n) => n,
            None => panic!("the element count of shape {self} overflows usize"),
        }
    }
}

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.as_slice().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_limit_is_checked() {
        assert!(Dims::new(&[1, 2, 3, 4]).is_some());
        assert!(Dims::new(&[1, 2, 3, 4, 5]).is_none());
    }

    #[test]
    fn trailing_storage_does_not_affect_equality() {
        assert_eq!(Dims::new(&[3]).unwrap(), Dims::vector(3));
        assert_ne!(Dims::vector(3), Dims::matrix(3, 1));
        assert_eq!(Dims::matrix(0, 5).numel(), 0);
    }

    #[test]
    fn element_counts_are_checked() {
        let big = 1usize << (usize::BITS - 1);
        assert_eq!(Dims::matrix(big, 2).checked_numel(), None);
        assert_eq!(Dims::matrix(usize::MAX, usize::MAX).checked_numel(), None);
        assert_eq!(Dims::new(&[big, 0, 2]).and_then(|d| d.checked_numel()), Some(0));
        assert_eq!(Dims::scalar().checked_numel(), Some(1));
        assert!(std::panic::catch_unwind(|| Dims::matrix(big, 2).numel()).is_err());
    }
}
