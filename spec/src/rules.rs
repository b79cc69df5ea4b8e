//! Shape rules: how an op's output shape follows from its operands, and the exact words of every
//! shape error. The runtime calls them with `usize` dims; the `graph!` macro with literal-or-named
//! dims (a comparison involving a named dim is left to the type-level rule traits).
//!
//! Every message is lowercase, names the op, and prints shapes in decimal (`[2, 3]`).

use crate::shape::{numel, Dim, Dims, Shape};

mod parts;
mod window;
pub use parts::{concat, concat_all, dropout_probability, equal_parts, split};
pub use window::{conv, pool, Sliding};

/// A rule's result: the output shape or the message of the broken rule.
pub type Outcome<D> = Result<Shape<D>, String>;

/// Which shape rule an op follows (see the functions of this module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// [`elementwise`]: `[s] , [s] → [s]`.
    Elementwise,
    /// [`same_shape_to_scalar`]: `[s] , [s] → []`.
    ElementwiseToScalar,
    /// [`unary`]: `[s] → [s]`.
    Unary,
    /// [`last_axis`]: `[…, n] → […, n]`, `n ≥ 1`.
    LastAxis,
    /// [`reduce`]: `[s] → []`.
    Reduce,
    /// [`matmul`]: `[m, k] , [k, n] → [m, n]`, batched `[b, m, k] , [b, k, n] → [b, m, n]` or
    /// `[b, m, k] , [k, n] → [b, m, n]`.
    MatMul,
    /// [`transpose`]: `[m, n] → [n, m]`.
    Transpose,
    /// [`add_row`]: `[m, n] , [n] → [m, n]`.
    AddRow,
    /// [`axis_reduce`]: drops the axis.
    AxisReduce,
    /// [`row_params`]: `[m, n] , [n] , [n] → [m, n]`.
    RowParams,
    /// [`logits`]: `[m, c] → []`.
    Logits,
    /// [`concat()`]: the sizes along the axis add.
    Concat,
    /// [`slice()`]: the axis becomes `len`.
    Slice,
    /// [`permute`]: output axis `k` is input axis `perm[k]`.
    Permute,
    /// [`reshape`]: the declared shape, same element count.
    Reshape,
    /// [`gather_rows`]: `[vocab, d] → [lead…, d]`.
    GatherRows,
    /// [`causal`]: `[…, t, t] → […, t, t]`.
    Causal,
    /// [`leaf`]: the declared shape (a data tensor).
    Leaf,
    /// [`conv`] with one spatial axis: `[n, c_in, l] , [c_out, c_in, k] → [n, c_out, l_out]`.
    Conv1d,
    /// [`conv`] with two spatial axes: `[n, c_in, h, w] , [c_out, c_in, kh, kw] → [n, c_out, h_out,
    /// w_out]`.
    Conv2d,
    /// [`pool`] with two spatial axes: `[n, c, h, w] → [n, c, h_out, w_out]`.
    Pool2d,
}

/// `false` only when the dims are known to differ.
fn may_equal<D: Dim>(a: &D, b: &D) -> bool {
    a.same(b) != Some(false)
}

fn may_equal_all<D: Dim>(a: &[D], b: &[D]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| may_equal(x, y))
}

fn shape<D: Dim>(dims: &[D]) -> Shape<D> {
    Shape::new(dims).unwrap_or_else(Shape::scalar)
}

/// Elementwise binary ops (`add`, `sub`, `mul`, `div`, `max`, `min`): both operands have the same
/// shape, which is the output's.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn elementwise<D: Dim>(op: &str, a: &[D], b: &[D]) -> Outcome<D> {
    if may_equal_all(a, b) {
        Ok(shape(a))
    } else {
        Err(format!("{op} needs both operands to have the same shape, got {} and {}", Dims(a), Dims(b)))
    }
}

/// `mse`: both operands have the same non-empty shape; the output is a scalar.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn same_shape_to_scalar<D: Dim>(op: &str, a: &[D], b: &[D]) -> Outcome<D> {
    elementwise(op, a, b)?;
    nonempty(op, a)?;
    Ok(Shape::scalar())
}

fn nonempty<D: Dim>(op: &str, x: &[D]) -> Result<(), String> {
    if numel(x) == Some(0) {
        Err(format!("{op} needs at least one element, got shape {}", Dims(x)))
    } else {
        Ok(())
    }
}

/// Pointwise ops: any shape, kept.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn unary<D: Dim>(x: &[D]) -> Outcome<D> {
    Ok(shape(x))
}

/// Row-wise ops over the last axis (`softmax`, `log_softmax`): rank ≥ 1 and a non-empty last axis.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn last_axis<D: Dim>(op: &str, x: &[D]) -> Outcome<D> {
    match x.last() {
        Some(n) if n.size() != Some(0) => Ok(shape(x)),
        _ => Err(format!("{op} needs a non-empty last axis, got shape {}", Dims(x))),
    }
}

/// Full reductions (`sum`, `mean`): any shape to `[]`; `mean` (`nonempty`) needs an element.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn reduce<D: Dim>(op: &str, x: &[D], needs_element: bool) -> Outcome<D> {
    if needs_element {
        nonempty(op, x)?;
    }
    Ok(Shape::scalar())
}

/// `matmul`: `[m, k] · [k, n] → [m, n]`; batched, `[b, m, k] · [b, k, n] → [b, m, n]` (one
/// product per batch item) and `[b, m, k] · [k, n] → [b, m, n]` (the right matrix shared by every
/// batch item).
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn matmul<D: Dim>(a: &[D], b: &[D]) -> Outcome<D> {
    let inner = |k: &D, k2: &D| {
        if may_equal(k, k2) {
            Ok(())
        } else {
            Err(format!("matmul needs the left operand's columns ({k}) to equal the right operand's rows ({k2})"))
        }
    };
    match (a, b) {
        ([m, k], [k2, n]) => inner(k, k2).map(|()| shape(&[m.clone(), n.clone()])),
        ([bt, m, k], [k2, n]) => inner(k, k2).map(|()| shape(&[bt.clone(), m.clone(), n.clone()])),
        ([bt, m, k], [bt2, k2, n]) => {
            if !may_equal(bt, bt2) {
                return Err(format!(
                    "matmul needs both operands' batch sizes to be equal, got shapes {} and {}",
                    Dims(a),
                    Dims(b)
                ));
            }
            inner(k, k2).map(|()| shape(&[bt.clone(), m.clone(), n.clone()]))
        }
        _ => Err(format!(
            "matmul needs two matrices, a batch [b, m, k] and a matrix [k, n], or two batches [b, m, k] and [b, k, n], got shapes {} and {}",
            Dims(a),
            Dims(b)
        )),
    }
}

/// `matmul` with a data tensor on the left (`matmul_data`): the data operand has `rows` rows; the
/// output is `[rows, n]` for `w: [k, n]` (the data's columns are checked against `k` by
/// [`matmul`] when the data is known).
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn matmul_data<D: Dim>(rows: D, w: &[D]) -> Outcome<D> {
    match w {
        [_, n] => Ok(shape(&[rows, n.clone()])),
        _ => Err(format!("matmul needs the right operand to be a matrix (rank 2), got shape {}", Dims(w))),
    }
}

/// `transpose`: `[m, n] → [n, m]`.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn transpose<D: Dim>(x: &[D]) -> Outcome<D> {
    match x {
        [m, n] => Ok(shape(&[n.clone(), m.clone()])),
        _ => Err(format!("transpose needs a matrix (rank 2), got shape {}", Dims(x))),
    }
}

/// `add_row` (`matrix + row vector`): `[m, n] , [n] → [m, n]`.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn add_row<D: Dim>(x: &[D], b: &[D]) -> Outcome<D> {
    match (x, b) {
        ([_, c], [n]) if may_equal(c, n) => Ok(shape(x)),
        ([_, c], [n]) => Err(format!(
            "add_row needs the row vector's length ({n}) to equal the matrix's columns ({c}), got shapes {} and {}",
            Dims(x),
            Dims(b)
        )),
        _ => Err(format!("add_row needs a matrix and a row vector, got shapes {} and {}", Dims(x), Dims(b))),
    }
}

/// Axis reductions (`sum_axis`, `mean_axis`): the axis is dropped; `mean_axis` (`needs_element`)
/// needs a non-empty axis.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn axis_reduce<D: Dim>(op: &str, x: &[D], axis: usize, needs_element: bool) -> Outcome<D> {
    let Some(n) = x.get(axis) else {
        return Err(format!("{op} cannot reduce axis {axis} of shape {} (rank {})", Dims(x), x.len()));
    };
    if needs_element && n.size() == Some(0) {
        return Err(format!("{op} needs a non-empty axis, axis {axis} of shape {} is empty", Dims(x)));
    }
    Ok(shape(x).without(axis))
}

/// Row-wise ops with per-column parameters (`layer_norm(x, gain, bias)`): `[m, n] , [n] , [n] →
/// [m, n]` with `n ≥ 1`.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn row_params<D: Dim>(op: &str, x: &[D], gain: &[D], bias: &[D]) -> Outcome<D> {
    let ([_, n], [g], [b]) = (x, gain, bias) else {
        return Err(format!(
            "{op} needs a matrix and two vectors (gain, bias), got shapes {}, {} and {}",
            Dims(x),
            Dims(gain),
            Dims(bias)
        ));
    };
    if !may_equal(n, g) {
        return Err(format!("{op} needs the gain's length ({g}) to equal the rows' length ({n})"));
    }
    if !may_equal(n, b) {
        return Err(format!("{op} needs the bias's length ({b}) to equal the rows' length ({n})"));
    }
    if n.size() == Some(0) {
        return Err(format!("{op} needs non-empty rows, got shape {}", Dims(x)));
    }
    Ok(shape(x))
}

/// Losses over logits (`cross_entropy(logits, labels)`): `[m, c] → []`, both non-zero.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn logits<D: Dim>(op: &str, x: &[D]) -> Outcome<D> {
    match x {
        [m, c] if m.size() != Some(0) && c.size() != Some(0) => Ok(Shape::scalar()),
        _ => Err(format!("{op} needs a non-empty matrix of logits (rows × classes), got shape {}", Dims(x))),
    }
}

/// `slice(x, axis, start, len)`: the axis becomes `len`; `start + len` fits the axis.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn slice<D: Dim>(x: &[D], axis: usize, start: usize, len: usize) -> Outcome<D> {
    let Some(n) = x.get(axis) else {
        return Err(format!("slice cannot take axis {axis} of shape {} (rank {})", Dims(x), x.len()));
    };
    if let Some(size) = n.size() {
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(format!(
                "slice of {len} entries from {start} is out of range for axis {axis} of shape {} ({size} entries)",
                Dims(x)
            ));
        }
    }
    Ok(shape(x).with(axis, D::of_size(len)))
}

/// `permute(x, perm)`: `perm` is a permutation of `0..rank`; output axis `k` is input axis
/// `perm[k]`.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn permute<D: Dim>(x: &[D], perm: &[usize]) -> Outcome<D> {
    let is_permutation =
        perm.len() == x.len() && (0..perm.len()).all(|k| perm.contains(&k)) && perm.iter().all(|&p| p < x.len());
    if !is_permutation {
        return Err(format!(
            "permute needs a permutation of the axes 0..{} of shape {}, got {perm:?}",
            x.len(),
            Dims(x)
        ));
    }
    let mut out = shape(x);
    for (k, &p) in perm.iter().enumerate() {
        out = out.with(k, x[p].clone());
    }
    Ok(out)
}

/// `reshape(x)` to the declared shape `to`: the element counts agree (checked when both are
/// known).
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn reshape<D: Dim>(x: &[D], to: &[D]) -> Outcome<D> {
    for s in [x, to] {
        if numel(s).is_none() && s.iter().all(|d| d.size().is_some()) {
            return Err(format!("reshape cannot take shape {}: its element count overflows usize", Dims(s)));
        }
    }
    match (numel(x), numel(to)) {
        (Some(a), Some(b)) if a != b => {
            Err(format!("reshape cannot turn shape {} ({a} elements) into shape {} ({b} elements)", Dims(x), Dims(to)))
        }
        _ => Ok(shape(to)),
    }
}

/// `gather_rows(table, ids)` (alias `embedding`) with the leading dims `lead` of its output (one
/// id per row, `lead` of rank 1 to 3): `[vocab, d] → [lead…, d]`.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn gather_rows<D: Dim>(table: &[D], lead: &[D]) -> Outcome<D> {
    match table {
        [_, d] if (1..=3).contains(&lead.len()) => {
            let mut out = lead.to_vec();
            out.push(d.clone());
            Ok(shape(&out))
        }
        [_, _] => Err(format!(
            "gather_rows (embedding) gives one row of the table per id, so its output is [n, d], [b, t, d] or [b, t, u, d], got {} leading axes",
            lead.len()
        )),
        _ => Err(format!("gather_rows needs a table matrix (vocab × dim), got shape {}", Dims(table))),
    }
}

/// `causal_mask`: attention scores `[…, t, t]` (rank 2 to 4, the last two axes equal) keep their
/// shape.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operand does not fit.
pub fn causal<D: Dim>(x: &[D]) -> Outcome<D> {
    match x {
        [.., r, c] if may_equal(r, c) => Ok(shape(x)),
        _ => Err(format!(
            "causal_mask needs attention scores [.., t, t] whose last two axes are equal, got shape {}",
            Dims(x)
        )),
    }
}

/// A leaf of a declared shape (a data tensor): that shape.
///
/// # Errors
/// The rule's message, in the words the macro's checker and `compile` report, when the
/// operands do not fit.
pub fn leaf<D: Dim>(declared: &[D]) -> Outcome<D> {
    Ok(shape(declared))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(s: Outcome<usize>) -> Vec<usize> {
        s.expect("rule holds").dims().to_vec()
    }

    #[test]
    fn rules_compute_output_shapes() {
        assert_eq!(dims(matmul(&[2, 3], &[3, 5])), [2, 5]);
        assert_eq!(dims(transpose(&[2, 3])), [3, 2]);
        assert_eq!(dims(add_row(&[4, 3], &[3])), [4, 3]);
        assert_eq!(dims(axis_reduce("sum_axis", &[2, 3, 4], 1, false)), [2, 4]);
        assert_eq!(dims(concat(&[2, 3], &[2, 5], 1)), [2, 8]);
        assert_eq!(dims(slice(&[2, 8], 1, 2, 3)), [2, 3]);
        assert_eq!(dims(permute(&[2, 3, 4], &[2, 0, 1])), [4, 2, 3]);
        assert_eq!(dims(reshape(&[2, 3], &[3, 2])), [3, 2]);
        assert_eq!(dims(gather_rows(&[10, 4], &[3])), [3, 4]);
        assert_eq!(dims(gather_rows(&[10, 4], &[2, 3])), [2, 3, 4]);
        assert_eq!(dims(matmul(&[2, 3, 4], &[2, 4, 5])), [2, 3, 5]);
        assert_eq!(dims(matmul(&[2, 3, 4], &[4, 5])), [2, 3, 5]);
        assert_eq!(dims(causal(&[2, 3, 3])), [2, 3, 3]);
        assert_eq!(dims(matmul_data(7, &[3, 5])), [7, 5]);
        assert_eq!(dims(row_params("layer_norm", &[2, 3], &[3], &[3])), [2, 3]);
        assert_eq!(dims(logits("cross_entropy", &[2, 3])), Vec::<usize>::new());
        let same = Sliding { stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        assert_eq!(dims(conv("conv2d", &[2, 3, 8, 8], &[4, 3, 3, 3], &same)), [2, 4, 8, 8]);
        let strided = Sliding { stride: [2, 3], padding: [0, 1], dilation: [1, 2] };
        // Height (7 - 3) / 2 + 1 = 3; width (6 + 2 - (2·2 + 1)) / 3 + 1 = 2.
        assert_eq!(dims(conv("conv2d", &[1, 2, 7, 6], &[5, 2, 3, 3], &strided)), [1, 5, 3, 2]);
        assert_eq!(dims(conv("conv1d", &[2, 3, 10], &[4, 3, 3], &Sliding::<1>::default())), [2, 4, 8]);
        assert_eq!(dims(pool("max_pool2d", &[1, 2, 5, 4], [2, 2], [2, 2], [0, 1])), [1, 2, 2, 3]);
    }

    #[test]
    fn messages_name_the_op_and_the_shapes_in_decimal() {
        let e = |r: Outcome<usize>| r.expect_err("rule broken");
        assert_eq!(
            e(matmul(&[4, 3], &[2, 5])),
            "matmul needs the left operand's columns (3) to equal the right operand's rows (2)"
        );
        assert_eq!(
            e(matmul(&[2, 3, 4], &[3, 4, 5])),
            "matmul needs both operands' batch sizes to be equal, got shapes [2, 3, 4] and [3, 4, 5]"
        );
        assert!(e(matmul(&[3, 4], &[2, 4, 5])).starts_with("matmul needs two matrices, a batch [b, m, k]"));
        assert_eq!(
            e(causal(&[2, 3])),
            "causal_mask needs attention scores [.., t, t] whose last two axes are equal, got shape [2, 3]"
        );
        assert!(e(gather_rows(&[4, 2], &[1, 1, 1, 1])).contains("got 4 leading axes"));
        assert_eq!(
            e(elementwise("add", &[2], &[3])),
            "add needs both operands to have the same shape, got [2] and [3]"
        );
        assert_eq!(e(transpose(&[2])), "transpose needs a matrix (rank 2), got shape [2]");
        assert_eq!(
            e(slice(&[2, 4], 1, 3, 2)),
            "slice of 2 entries from 3 is out of range for axis 1 of shape [2, 4] (4 entries)"
        );
        assert!(e(slice(&[2, 4], 1, usize::MAX, 2)).contains("out of range"));
        assert_eq!(
            e(concat(&[2, usize::MAX], &[2, 1], 1)),
            "concat along axis 1 of shapes [2, 18446744073709551615] and [2, 1] overflows"
        );
        assert_eq!(
            e(reshape(&[2, 3], &[4])),
            "reshape cannot turn shape [2, 3] (6 elements) into shape [4] (4 elements)"
        );
        // A 0-element operand once passed for a target whose count wraps to 0.
        assert_eq!(
            e(reshape(&[0], &[1 << 63, 2])),
            "reshape cannot take shape [9223372036854775808, 2]: its element count overflows usize"
        );
        assert_eq!(e(reduce("mean", &[0, 3], true)), "mean needs at least one element, got shape [0, 3]");
        assert_eq!(e(last_axis("softmax", &[])), "softmax needs a non-empty last axis, got shape []");
        assert!(e(permute(&[2, 3], &[0, 0])).starts_with("permute needs a permutation of the axes 0..2"));
        assert!(e(add_row(&[4, 3], &[2])).starts_with("add_row needs the row vector's length (2)"));
        let g = Sliding::<2>::default();
        assert_eq!(
            e(conv("conv2d", &[1, 3, 8, 8], &[4, 2, 3, 3], &g)),
            "conv2d needs the weight's input channels (2) to equal the input's channels (3), got shapes [1, 3, 8, 8] and [4, 2, 3, 3]"
        );
        assert_eq!(
            e(conv("conv2d", &[1, 1, 2, 2], &[1, 1, 3, 3], &Sliding { padding: [0, 1], dilation: [2, 1], ..g })),
            "conv2d needs the dilated kernel (5 along the height) to fit the padded input (2 along the height), got shapes [1, 1, 2, 2] and [1, 1, 3, 3] with padding (0, 1) and dilation (2, 1)"
        );
        assert_eq!(
            e(conv("conv1d", &[1, 1, 4], &[1, 1, 3], &Sliding { stride: [0], ..Sliding::default() })),
            "conv1d needs strides and dilations of at least 1, got stride 0 and dilation 1"
        );
        assert_eq!(
            e(conv("conv1d", &[2, 4], &[1, 1, 3], &Sliding::<1>::default())),
            "conv1d needs an input [n, c_in, l] and a weight [c_out, c_in, k], got shapes [2, 4] and [1, 1, 3]"
        );
        assert_eq!(
            e(conv("conv1d", &[1, 1, 4], &[1, 1, 0], &Sliding::<1>::default())),
            "conv1d needs a non-empty kernel, got weight shape [1, 1, 0]"
        );
        assert!(e(conv("conv1d", &[1, 1, 4], &[1, 1, 3], &Sliding { padding: [usize::MAX], ..Sliding::default() }))
            .ends_with("overflows"));
        assert!(e(conv("conv1d", &[1, 1, 4], &[1, 1, usize::MAX], &Sliding { dilation: [2], ..Sliding::default() }))
            .ends_with("overflows"));
        assert_eq!(
            e(pool("max_pool2d", &[1, 1, 4, 4], [3, 3], [1, 1], [2, 0])),
            "max_pool2d needs a padding of at most half the kernel, got padding (2, 0) for kernel (3, 3)"
        );
        assert_eq!(
            e(pool("avg_pool2d", &[1, 1, 2, 4], [3, 3], [1, 1], [0, 1])),
            "avg_pool2d needs the kernel (3 along the height) to fit the padded input (2 along the height), got shape [1, 1, 2, 4] with kernel (3, 3) and padding (0, 1)"
        );
        assert_eq!(
            e(pool("max_pool2d", &[1, 1, 0, 4], [2, 2], [1, 1], [1, 1])),
            "max_pool2d needs a non-empty input along every spatial axis, got shape [1, 1, 0, 4]"
        );
        assert_eq!(
            e(pool("max_pool2d", &[1, 4, 4], [2, 2], [1, 1], [0, 0])),
            "max_pool2d needs an input [n, c, h, w], got shape [1, 4, 4]"
        );
        assert!(e(conv::<usize, 0>("conv0d", &[1, 1], &[1, 1], &Sliding { stride: [], padding: [], dilation: [] }))
            .starts_with("conv0d needs"));
        assert_eq!(
            e(pool("max_pool2d", &[1, 1, 4, 4], [2, 0], [1, 1], [0, 0])),
            "max_pool2d needs kernel sizes and strides of at least 1, got kernel (2, 0) and stride (1, 1)"
        );
    }
}
