//! The rules of the ops that join, split and mask: `concat` of one or more parts, `split` (the
//! `graph!` syntax lowered to slices) and `dropout`'s probability (SEMANTICS §8.3).

use super::{may_equal, shape, Outcome};
use crate::shape::{Dim, Dims, Shape};

/// `concat(a, b, axis)`: [`concat_all`] of the two.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn concat<D: Dim>(a: &[D], b: &[D], axis: usize) -> Outcome<D> {
    concat_all(&[a, b], axis)
}

/// `concat([a, b, …], axis)` of one or more parts: one rank, equal dims off the axis, the sizes
/// along it add (they must be known: literal sizes in `graph!`). A broken rule names the first
/// part and the first part that does not fit it (with its index when there are more than two).
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn concat_all<D: Dim>(parts: &[&[D]], axis: usize) -> Outcome<D> {
    let Some(&a) = parts.first() else {
        return Err(format!("concat along axis {axis} needs at least one part"));
    };
    let which = |k: usize| if parts.len() > 2 { format!(" (part {k})") } else { String::new() };
    let one = parts.len() == 1;
    if one && axis >= a.len() {
        return Err(format!("concat along axis {axis} needs shapes with that axis, got {}", Dims(a)));
    }
    for (k, b) in parts.iter().enumerate().skip(1) {
        if a.len() != b.len() || axis >= a.len() {
            return Err(format!(
                "concat along axis {axis} needs two shapes of one rank with that axis, got {} and {}{}",
                Dims(a),
                Dims(b),
                which(k)
            ));
        }
        if a.iter().zip(b.iter()).enumerate().any(|(j, (x, y))| j != axis && !may_equal(x, y)) {
            return Err(format!(
                "concat along axis {axis} needs the other dims equal, got {} and {}{}",
                Dims(a),
                Dims(b),
                which(k)
            ));
        }
    }
    let mut total = 0usize;
    for (k, b) in parts.iter().enumerate() {
        let Some(n) = b[axis].size() else {
            return Err(match parts {
                [_, y] => format!(
                    "concat along axis {axis} needs literal sizes on that axis to add them, got {} and {}",
                    a[axis], y[axis]
                ),
                _ => format!(
                    "concat along axis {axis} needs literal sizes on that axis to add them, got {}{}",
                    b[axis],
                    which(k)
                ),
            });
        };
        total = total.checked_add(n).ok_or_else(|| match parts {
            [x, y] => format!("concat along axis {axis} of shapes {} and {} overflows", Dims(x), Dims(y)),
            _ => format!("concat along axis {axis} of {} parts overflows at part {k}", parts.len()),
        })?;
    }
    Ok(shape(a).with(axis, D::of_size(total)))
}

/// `dropout(x, p, seed)`: the drop probability is a constant in `[0, 1)` (the shape is `x`'s).
///
/// # Errors
/// When `p` is outside `[0, 1)` (or NaN).
pub fn dropout_probability(p: f64) -> Result<(), String> {
    if (0.0..1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!("dropout needs a probability p in [0, 1), got {p}"))
    }
}

/// `split(x, axis, [n0, n1, …])` (or `split(x, axis, parts)`: that many equal parts): the parts'
/// shapes, `x`'s with `n_k` along the axis; the sizes must add up to the axis's (a literal size).
/// `graph!` lowers it to one [`slice`] per part, from the sum of the sizes before it.
///
/// # Errors
/// The rule's message, in the words the macro's checker reports, when the sizes do not fit.
pub fn split<D: Dim>(x: &[D], axis: usize, sizes: &[usize]) -> Result<Vec<Shape<D>>, String> {
    let Some(n) = x.get(axis) else {
        return Err(format!("split cannot take axis {axis} of shape {} (rank {})", Dims(x), x.len()));
    };
    let Some(size) = n.size() else {
        return Err(format!("split along axis {axis} needs a literal size there, got shape {}", Dims(x)));
    };
    if sizes.is_empty() {
        return Err(format!("split along axis {axis} needs at least one part"));
    }
    let total = sizes.iter().try_fold(0usize, |t, &s| t.checked_add(s));
    if total != Some(size) {
        let listed = sizes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let sum = total.map_or_else(|| "more than any size".to_owned(), |t| t.to_string());
        return Err(format!(
            "split sizes [{listed}] add up to {sum}, but axis {axis} of shape {} has {size} entries",
            Dims(x)
        ));
    }
    Ok(sizes.iter().map(|&s| shape(x).with(axis, D::of_size(s))).collect())
}

/// The sizes of `split(x, axis, parts)` in equal parts: `parts` entries of `size / parts`.
///
/// # Errors
/// When `parts` is 0, more than the axis's literal size (or 1 for an empty axis), or does not
/// divide it.
pub fn equal_parts<D: Dim>(x: &[D], axis: usize, parts: usize) -> Result<Vec<usize>, String> {
    let Some(n) = x.get(axis) else {
        return Err(format!("split cannot take axis {axis} of shape {} (rank {})", Dims(x), x.len()));
    };
    let Some(size) = n.size() else {
        return Err(format!("split along axis {axis} needs a literal size there, got shape {}", Dims(x)));
    };
    if parts > size.max(1) {
        return Err(format!(
            "split of axis {axis} of shape {} ({size} entries) into {parts} equal parts: at most {} parts",
            Dims(x),
            size.max(1)
        ));
    }
    if parts == 0 || size % parts != 0 {
        return Err(format!(
            "split of axis {axis} of shape {} ({size} entries) into {parts} equal parts: {parts} does not divide {size}",
            Dims(x)
        ));
    }
    Ok(vec![size / parts; parts])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(r: Outcome<usize>) -> Vec<usize> {
        r.expect("rule holds").dims().to_vec()
    }

    fn e(r: Outcome<usize>) -> String {
        r.expect_err("rule broken")
    }

    #[test]
    fn parts_join_and_split() {
        assert_eq!(dims(concat_all(&[&[2, 3], &[2, 1], &[2, 4]], 1)), [2, 8]);
        assert_eq!(dims(concat_all(&[&[2, 3]], 0)), [2, 3]);
        let parts = split(&[2usize, 9], 1, &[2, 3, 4]).unwrap();
        assert_eq!(parts.iter().map(|p| p.dims().to_vec()).collect::<Vec<_>>(), [[2, 2], [2, 3], [2, 4]]);
        assert_eq!(equal_parts(&[6usize, 2], 0, 3), Ok(vec![2, 2, 2]));
    }

    #[test]
    fn messages_name_the_part_and_the_sizes() {
        assert_eq!(
            e(concat_all(&[&[2, 3], &[2, 3], &[3, 1]], 1)),
            "concat along axis 1 needs the other dims equal, got [2, 3] and [3, 1] (part 2)"
        );
        assert_eq!(e(concat_all::<usize>(&[], 0)), "concat along axis 0 needs at least one part");
        assert_eq!(e(concat_all(&[&[2]], 1)), "concat along axis 1 needs shapes with that axis, got [2]");
        assert_eq!(
            split(&[2usize, 9], 1, &[2, 3]).unwrap_err(),
            "split sizes [2, 3] add up to 5, but axis 1 of shape [2, 9] has 9 entries"
        );
        assert_eq!(
            split(&[2usize], 0, &[usize::MAX, 3]).unwrap_err(),
            format!(
                "split sizes [{}, 3] add up to more than any size, but axis 0 of shape [2] has 2 entries",
                usize::MAX
            )
        );
        assert_eq!(split(&[2usize], 1, &[1]).unwrap_err(), "split cannot take axis 1 of shape [2] (rank 1)");
        assert_eq!(
            equal_parts(&[2usize, 9], 1, 2).unwrap_err(),
            "split of axis 1 of shape [2, 9] (9 entries) into 2 equal parts: 2 does not divide 9"
        );
    }
}
