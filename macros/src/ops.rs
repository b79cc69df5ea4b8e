//! THE op table: name, arity, shape rule, runtime constructor and scalar bounds of every
//! built-in op the DSL knows.

/// How an op's output shape follows from its operands, and which rule a mismatch breaks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Elementwise binary: both operands have the same shape.
    SameShape,
    /// Any shape to the same shape.
    Unary,
    /// `[m, k] · [k, n] → [m, n]`.
    MatMul,
    /// `[m, n] → [n, m]`.
    Transpose,
    /// Any shape to `[]`.
    Reduce,
    /// `[m, n] + [n] → [m, n]`.
    AddRow,
    /// Both operands the same shape, output `[]` (mse).
    SameShapeToScalar,
    /// Drops the axis given as the extra argument.
    AxisReduce,
    /// `[m, n] , [n] , [n] → [m, n]` (layer norm with gain and bias).
    RowParams,
    /// `[m, c] → []` with one label per row from the data (cross-entropy).
    LogitsToScalar,
    /// Same shapes but along the axis, where the sizes add (literal sizes there).
    Concat,
    /// The axis becomes `len` (`start + len` within it).
    Slice,
    /// Axes reordered: output axis `k` is input axis `perm[k]`.
    Permute,
    /// A declared shape (let annotation or output) equals the inferred one.
    Declared,
}

impl Rule {
    /// The runtime's check function for a symbolic dim pair under this rule.
    pub(crate) fn check_fn(self) -> &'static str {
        match self {
            Rule::SameShape | Rule::Unary | Rule::Reduce | Rule::SameShapeToScalar => "same_shape",
            Rule::AxisReduce | Rule::LogitsToScalar | Rule::Concat | Rule::Slice | Rule::Permute => "same_shape",
            Rule::RowParams => "row_length",
            Rule::MatMul => "matmul_inner",
            Rule::Transpose => "same_shape",
            Rule::AddRow => "row_length",
            Rule::Declared => "declared_shape",
        }
    }
}

/// Scalar bounds an op needs beyond `Scalar`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Bound {
    Sub,
    Mul,
    Neg,
    Div,
    FromPrimitive,
    Num,
    PartialOrd,
    Float,
}

/// An argument after the graph values: an axis, an optional constant, or a data parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extra {
    None,
    /// A non-negative integer literal: the axis.
    Axis,
    /// An optional constant (`eps`), with its default written as a literal.
    Eps(&'static str),
    /// The name of a data parameter holding one `usize` label per row (`AsRef<[usize]>`).
    Labels,
    /// Three integer literals: axis, start, length.
    Slice,
    /// An array literal of axes: the permutation.
    Perm,
}

pub(crate) struct OpInfo {
    pub(crate) name: &'static str,
    /// Graph values it takes.
    pub(crate) arity: usize,
    pub(crate) extra: Extra,
    pub(crate) rule: Rule,
    /// The struct in `exactgrad::ops`.
    pub(crate) runtime: &'static str,
    pub(crate) bounds: &'static [Bound],
}

pub(crate) const OPS: &[OpInfo] = &[
    OpInfo { name: "add", arity: 2, extra: Extra::None, rule: Rule::SameShape, runtime: "Add", bounds: &[] },
    OpInfo { name: "sub", arity: 2, extra: Extra::None, rule: Rule::SameShape, runtime: "Sub", bounds: &[Bound::Sub] },
    OpInfo { name: "mul", arity: 2, extra: Extra::None, rule: Rule::SameShape, runtime: "Mul", bounds: &[Bound::Mul] },
    OpInfo {
        name: "neg",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Neg",
        bounds: &[Bound::Neg, Bound::Sub],
    },
    OpInfo {
        name: "relu",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Relu",
        bounds: &[Bound::PartialOrd],
    },
    OpInfo { name: "tanh", arity: 1, extra: Extra::None, rule: Rule::Unary, runtime: "Tanh", bounds: &[Bound::Float] },
    OpInfo { name: "exp", arity: 1, extra: Extra::None, rule: Rule::Unary, runtime: "Exp", bounds: &[Bound::Float] },
    OpInfo {
        name: "sigmoid",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Sigmoid",
        bounds: &[Bound::Float],
    },
    OpInfo {
        name: "softplus",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Softplus",
        bounds: &[Bound::Float],
    },
    OpInfo { name: "log", arity: 1, extra: Extra::None, rule: Rule::Unary, runtime: "Log", bounds: &[Bound::Float] },
    OpInfo { name: "sqrt", arity: 1, extra: Extra::None, rule: Rule::Unary, runtime: "Sqrt", bounds: &[Bound::Float] },
    OpInfo { name: "gelu", arity: 1, extra: Extra::None, rule: Rule::Unary, runtime: "Gelu", bounds: &[Bound::Float] },
    OpInfo {
        name: "square",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Square",
        bounds: &[Bound::Mul],
    },
    OpInfo {
        name: "div",
        arity: 2,
        extra: Extra::None,
        rule: Rule::SameShape,
        runtime: "Div",
        bounds: &[Bound::Sub, Bound::Mul, Bound::Div],
    },
    OpInfo {
        name: "max",
        arity: 2,
        extra: Extra::None,
        rule: Rule::SameShape,
        runtime: "Max",
        bounds: &[Bound::PartialOrd],
    },
    OpInfo {
        name: "min",
        arity: 2,
        extra: Extra::None,
        rule: Rule::SameShape,
        runtime: "Min",
        bounds: &[Bound::PartialOrd],
    },
    OpInfo {
        name: "matmul",
        arity: 2,
        extra: Extra::None,
        rule: Rule::MatMul,
        runtime: "MatMul",
        bounds: &[Bound::Mul],
    },
    OpInfo {
        name: "transpose",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Transpose,
        runtime: "Transpose",
        bounds: &[],
    },
    OpInfo { name: "sum", arity: 1, extra: Extra::None, rule: Rule::Reduce, runtime: "Sum", bounds: &[] },
    OpInfo {
        name: "mean",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Reduce,
        runtime: "Mean",
        bounds: &[Bound::Div, Bound::FromPrimitive],
    },
    OpInfo { name: "add_row", arity: 2, extra: Extra::None, rule: Rule::AddRow, runtime: "AddRow", bounds: &[] },
    OpInfo {
        name: "softmax",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "Softmax",
        bounds: &[Bound::Float],
    },
    OpInfo {
        name: "log_softmax",
        arity: 1,
        extra: Extra::None,
        rule: Rule::Unary,
        runtime: "LogSoftmax",
        bounds: &[Bound::Float],
    },
    OpInfo {
        name: "mse",
        arity: 2,
        extra: Extra::None,
        rule: Rule::SameShapeToScalar,
        runtime: "Mse",
        bounds: &[Bound::Float, Bound::FromPrimitive],
    },
    OpInfo { name: "sum_axis", arity: 1, extra: Extra::Axis, rule: Rule::AxisReduce, runtime: "SumAxis", bounds: &[] },
    OpInfo {
        name: "mean_axis",
        arity: 1,
        extra: Extra::Axis,
        rule: Rule::AxisReduce,
        runtime: "MeanAxis",
        bounds: &[Bound::Div, Bound::FromPrimitive],
    },
    OpInfo {
        name: "layer_norm",
        arity: 3,
        extra: Extra::Eps("1e-5"),
        rule: Rule::RowParams,
        runtime: "LayerNorm",
        bounds: &[Bound::Float, Bound::FromPrimitive, Bound::Num],
    },
    OpInfo {
        name: "cross_entropy",
        arity: 1,
        extra: Extra::Labels,
        rule: Rule::LogitsToScalar,
        runtime: "CrossEntropy",
        bounds: &[Bound::Float, Bound::FromPrimitive],
    },
    OpInfo { name: "concat", arity: 2, extra: Extra::Axis, rule: Rule::Concat, runtime: "Concat", bounds: &[] },
    OpInfo { name: "slice", arity: 1, extra: Extra::Slice, rule: Rule::Slice, runtime: "Slice", bounds: &[] },
    OpInfo { name: "permute", arity: 1, extra: Extra::Perm, rule: Rule::Permute, runtime: "Permute", bounds: &[] },
];

/// The built-in op called `name` (`t` is `transpose`).
pub(crate) fn lookup(name: &str) -> Option<&'static OpInfo> {
    let name = if name == "t" { "transpose" } else { name };
    OPS.iter().find(|op| op.name == name)
}

/// Names for the "unknown op" message.
pub(crate) fn names() -> String {
    let mut v: Vec<&str> = OPS.iter().map(|o| o.name).collect();
    v.extend(["scale", "reshape", "gather_rows", "opaque"]);
    v.join(", ")
}
