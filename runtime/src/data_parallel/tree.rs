//! The fixed reduction tree over micro-batch index (SEMANTICS §8.5).

use crate::error::{DimsList, Error};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// The sum of `parts` (one list of tensors per micro-batch, in micro-batch order), list position
/// by list position, in a fixed binary tree over the micro-batch index: neighbours are added in
/// pairs, level by level, the left one on the left (`g0 + g1`, `g2 + g3`, …), and an odd last
/// one is carried to the next level unchanged. For 4 parts that is `(g0 + g1) + (g2 + g3)`; for
/// 3, `(g0 + g1) + g2`; for 5, `((g0 + g1) + (g2 + g3)) + g4`. The tree depends on the number
/// of parts only; every addition is the engine's (`Storage::pinned_add`).
///
/// ```
/// use exactgrad_runtime::{data_parallel::tree_sum, Dims, RawTensor};
/// let g = |v: f32| vec![RawTensor::from_vec(Dims::new(&[1]).unwrap(), vec![v]).unwrap()];
/// let sum = tree_sum(vec![g(1e8), g(-1e8), g(1.0), g(1.0)]).unwrap();
/// assert_eq!(sum[0].data(), &[2.0]); // (1e8 + -1e8) + (1 + 1)
/// // In f32, 1e8 + 1 rounds to 1e8: the tree gives (1e8 + 1) + (-1e8 + 1) = 0, where a
/// // left-to-right sum would give ((1e8 + 1) + -1e8) + 1 = 1. The order is part of the result.
/// let sum = tree_sum(vec![g(1e8), g(1.0), g(-1e8), g(1.0)]).unwrap();
/// assert_eq!(sum[0].data(), &[0.0]);
/// ```
///
/// # Errors
/// [`Error::Workers`] for no parts, or a part whose tensors differ in number or shape from the
/// first part's (naming the micro-batch and the shapes).
pub fn tree_sum<A: Scalar>(parts: Vec<Vec<RawTensor<A>>>) -> Result<Vec<RawTensor<A>>, Error> {
    let Some(first) = parts.first() else {
        return Err(Error::Workers { message: "no micro-batches to sum".to_owned() });
    };
    let shapes: Vec<Dims> = first.iter().map(RawTensor::dims).collect();
    for (index, part) in parts.iter().enumerate().skip(1) {
        if part.len() != shapes.len() || part.iter().zip(&shapes).any(|(t, &d)| t.dims() != d) {
            let theirs: Vec<Dims> = part.iter().map(RawTensor::dims).collect();
            return Err(Error::Workers {
                message: format!(
                    "micro-batch {index} has gradients of shapes {}, micro-batch 0 of shapes {}",
                    DimsList(&theirs),
                    DimsList(&shapes)
                ),
            });
        }
    }
    let mut level = parts;
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut items = level.into_iter();
        while let Some(mut left) = items.next() {
            if let Some(right) = items.next() {
                for (l, r) in left.iter_mut().zip(&right) {
                    l.add_assign(r)?;
                }
            }
            next.push(left);
        }
        level = next;
    }
    Ok(level.pop().unwrap_or_default())
}
