//! Literal shape inference: every node's output shape from its operands' shapes by the rules of
//! `exactgrad_spec` (the runtime runs the same rules, so both say the same words), and the
//! comparison of declared shapes with computed ones. A comparison that involves a generic dim is
//! left to the compiler (the type-level rule traits).

use exactgrad_spec::{rules, OpSpec, Rule};

use crate::ir::{Dim, ExtraArg, Shape, Window};

fn shape(s: exactgrad_spec::Shape<Dim>) -> Shape {
    Shape(s.dims().to_vec())
}

/// The output shape of `op` on `operands`, or the rule's message. `declared` is the binding's
/// shape for ops whose output the binding declares (`reshape`, `gather_rows`); `data` is the data
/// tensor's shape for `matmul_data` and `data_tensor`.
pub(crate) fn output(
    op: &OpSpec,
    extra: &ExtraArg,
    operands: &[&Shape],
    declared: Option<&Shape>,
    data: Option<&Shape>,
) -> Result<Shape, String> {
    let x = |k: usize| operands.get(k).map_or(&[][..], |s| &s.0[..]);
    let name = op.name;
    let empty = Shape(Vec::new());
    let declared = declared.unwrap_or(&empty);
    run_time_needs(op, extra, x(0), &declared.0)?;
    let out = match (op.rule, extra) {
        (Rule::Elementwise, _) => rules::elementwise(name, x(0), x(1)),
        (Rule::ElementwiseToScalar, _) => rules::same_shape_to_scalar(name, x(0), x(1)),
        (Rule::Unary, _) => rules::unary(x(0)),
        (Rule::LastAxis, _) => rules::last_axis(name, x(0)),
        (Rule::Reduce, _) => rules::reduce(name, x(0), op.needs_element()),
        (Rule::MatMul, ExtraArg::Data(_)) => rules::matmul(&data.unwrap_or(&empty).0, x(0)),
        (Rule::MatMul, _) => rules::matmul(x(0), x(1)),
        (Rule::Transpose, _) => rules::transpose(x(0)),
        (Rule::AddRow, _) => rules::add_row(x(0), x(1)),
        (Rule::AxisReduce, ExtraArg::Axis(axis)) => rules::axis_reduce(name, x(0), *axis, op.needs_element()),
        (Rule::RowParams, _) => rules::row_params(name, x(0), x(1), x(2)),
        (Rule::Logits, _) => rules::logits(name, x(0)),
        (Rule::Concat, ExtraArg::Axis(axis)) => {
            let parts: Vec<&[Dim]> = operands.iter().map(|s| &s.0[..]).collect();
            rules::concat_all(&parts, *axis)
        }
        (Rule::Slice, ExtraArg::Slice(axis, start, len)) => rules::slice(x(0), *axis, *start, *len),
        (Rule::Permute, ExtraArg::Perm(perm)) => rules::permute(x(0), perm),
        (Rule::Reshape, _) => rules::reshape(x(0), &declared.0),
        (Rule::GatherRows, _) => {
            // The binding declares `[lead…, d]`: every axis but the last is the ids' layout.
            let lead = &declared.0[..declared.0.len().saturating_sub(1)];
            let out = rules::gather_rows(x(0), lead).map(shape);
            let width = match x(0) {
                [_, d] => d.clone(),
                _ => return out,
            };
            let fits = out.as_ref().is_ok_and(|o| compare(declared, o) != Compared::Differ);
            if !fits {
                return Err(format!(
                    "{name} (embedding) gives rows of the table's width {width}, so the binding is [n, {width}] or [b, t, {width}], but it declares {declared}"
                ));
            }
            return out;
        }
        (Rule::Causal, _) => rules::causal(x(0)),
        (Rule::Leaf, _) => rules::leaf(&data.unwrap_or(&empty).0),
        (Rule::Conv1d, ExtraArg::Window(w)) => rules::conv(name, x(0), x(1), &w.sliding::<1>()),
        (Rule::Conv2d, ExtraArg::Window(w)) => rules::conv(name, x(0), x(1), &w.sliding::<2>()),
        (Rule::Pool2d, ExtraArg::Window(w)) => {
            let axes = Window::axes::<2>;
            rules::pool(name, x(0), axes(&w.kernel), axes(&w.stride), axes(&w.padding))
        }
        (rule, _) => unreachable!("lowering gives {rule:?} ({name}) its extra arguments"),
    };
    out.map(shape)
}

/// How a declared shape compares with a computed one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Compared {
    /// Equal dim by dim.
    Same,
    /// Known to differ (a rank or a literal size).
    Differ,
    /// Equal where the macro can tell; some generic dims only the compiler can compare.
    Compiler,
}

/// Compares `declared` with `actual`.
/// The ops that would need a run-time dim's size now: a slice along it, and a reshape that does
/// not keep each run-time dim as an axis of its own (or whose other axes' element counts differ).
fn run_time_needs(op: &OpSpec, extra: &ExtraArg, x: &[Dim], to: &[Dim]) -> Result<(), String> {
    let dyn_names = |s: &[Dim]| {
        let mut v: Vec<String> = s.iter().filter(|&d| matches!(d, Dim::Dyn(..))).map(ToString::to_string).collect();
        v.sort();
        v
    };
    match (op.rule, extra) {
        (Rule::Slice, ExtraArg::Slice(axis, _, _)) => match x.get(*axis) {
            Some(d @ Dim::Dyn(..)) => Err(format!(
                "slice along axis {axis} of shape {} needs the size of the run-time dim `{d}`, known only at run time; slice along another axis",
                exactgrad_spec::shape::Dims(x)
            )),
            _ => Ok(()),
        },
        (Rule::Reshape, _) => {
            let (from, into) = (dyn_names(x), dyn_names(to));
            if from.is_empty() && into.is_empty() {
                return Ok(());
            }
            let shapes = (exactgrad_spec::shape::Dims(x), exactgrad_spec::shape::Dims(to));
            if from != into {
                let d = from.iter().chain(&into).find(|n| from.contains(n) != into.contains(n)).or(from.first());
                return Err(format!(
                    "reshape from {} to {} would have to split or merge the run-time dim `{}`, whose size is known only at run time: keep it as an axis of its own on both sides",
                    shapes.0,
                    shapes.1,
                    d.map_or("", String::as_str)
                ));
            }
            let lits = |s: &[Dim]| {
                s.iter().try_fold(1u128, |n, d| match d {
                    Dim::Lit(k) => Some(n.saturating_mul(u128::from(*k))),
                    Dim::Dyn(..) => Some(n),
                    Dim::Sym(_) => None,
                })
            };
            match (lits(x), lits(to)) {
                (Some(a), Some(b)) if a != b => Err(format!(
                    "reshape cannot turn shape {} into shape {}: besides the run-time dims, {a} elements become {b}",
                    shapes.0, shapes.1
                )),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

pub(crate) fn compare(declared: &Shape, actual: &Shape) -> Compared {
    use exactgrad_spec::Dim as _;
    if declared.0.len() != actual.0.len() {
        return Compared::Differ;
    }
    let mut out = Compared::Same;
    for (d, a) in declared.0.iter().zip(&actual.0) {
        match d.same(a) {
            Some(true) => {}
            Some(false) => return Compared::Differ,
            None => out = Compared::Compiler,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use exactgrad_spec::ops::{by_name, lookup};
    use proc_macro2::Span;
    use syn::Ident;

    fn lit(d: &[u64]) -> Shape {
        Shape(d.iter().map(|&n| Dim::Lit(n)).collect())
    }

    fn sym(n: &str) -> Dim {
        Dim::Sym(Ident::new(n, Span::call_site()))
    }

    #[test]
    fn literal_shapes_follow_the_spec_rules() {
        let mm = lookup("matmul").unwrap();
        assert_eq!(output(mm, &ExtraArg::None, &[&lit(&[2, 3]), &lit(&[3, 5])], None, None), Ok(lit(&[2, 5])));
        assert_eq!(
            output(mm, &ExtraArg::None, &[&lit(&[4, 3]), &lit(&[2, 5])], None, None).unwrap_err(),
            "matmul needs the left operand's columns (3) to equal the right operand's rows (2)"
        );
        let cat = lookup("concat").unwrap();
        assert_eq!(output(cat, &ExtraArg::Axis(1), &[&lit(&[2, 3]), &lit(&[2, 1])], None, None), Ok(lit(&[2, 4])));
        let three = [&lit(&[2, 3]), &lit(&[2, 1]), &lit(&[2, 3])];
        assert_eq!(output(cat, &ExtraArg::Axis(1), &three, None, None), Ok(lit(&[2, 7])));
        let md = by_name("matmul_data").unwrap();
        let x = Ident::new("x", Span::call_site());
        assert_eq!(output(md, &ExtraArg::Data(x), &[&lit(&[3, 4])], None, Some(&lit(&[7, 3]))), Ok(lit(&[7, 4])));
    }

    #[test]
    fn generic_dims_are_left_to_the_compiler() {
        let add = lookup("add").unwrap();
        let b = Shape(vec![sym("B"), Dim::Lit(3)]);
        let c = Shape(vec![sym("C"), Dim::Lit(3)]);
        assert_eq!(output(add, &ExtraArg::None, &[&b, &c], None, None), Ok(b.clone()));
        assert_eq!(compare(&b, &c), Compared::Compiler);
        assert_eq!(compare(&b, &b), Compared::Same);
        assert_eq!(compare(&b, &lit(&[2])), Compared::Differ);
    }
}
