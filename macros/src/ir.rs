//! The graph IR: inputs, nodes (op, parent ids, shape, span), outputs, and the shape checks left
//! to the compiler (symbolic dims).

use proc_macro2::Span;
use syn::{Expr, ExprClosure, Ident, Path};

use crate::ops::{OpInfo, Rule};

/// One dim: a literal size or a generic dim of the graph.
#[derive(Clone)]
pub(crate) enum Dim {
    Lit(u64),
    Sym(Ident),
}

impl Dim {
    /// `Some(true/false)` when equality is known now; `None` when the compiler must decide.
    pub(crate) fn known_eq(&self, other: &Dim) -> Option<bool> {
        match (self, other) {
            (Dim::Lit(a), Dim::Lit(b)) => Some(a == b),
            (Dim::Sym(a), Dim::Sym(b)) if a == b => Some(true),
            _ => None,
        }
    }
}

impl core::fmt::Display for Dim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Dim::Lit(n) => write!(f, "{n}"),
            Dim::Sym(i) => write!(f, "{i}"),
        }
    }
}

/// A shape: its dims.
#[derive(Clone)]
pub(crate) struct Shape(pub(crate) Vec<Dim>);

impl core::fmt::Display for Shape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
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

/// The value of an op's extra argument (see `ops::Extra`).
pub(crate) enum ExtraArg {
    None,
    Axis(usize),
    /// The constant, or the op's default literal.
    Eps(Expr),
    /// A data parameter's name.
    Labels(Ident),
    /// Axis, start, length.
    Slice(usize, usize, usize),
    /// The permutation.
    Perm(Vec<usize>),
}

/// What a node runs.
pub(crate) enum NodeKind {
    Builtin(&'static OpInfo, ExtraArg),
    /// `x * c` with a constant `c`.
    Scale(Expr),
    /// `vjp` returns one gradient per read value, or with `whole_prefix` (`vjp_all`) one tensor
    /// per position of the prefix. `name` (the binding's) is shown in descriptions.
    Opaque {
        name: String,
        forward: ExprClosure,
        vjp: ExprClosure,
        whole_prefix: bool,
    },
    /// A user type implementing the runtime's op traits.
    Custom(Path),
    /// `reshape(x)` to the declared shape.
    Reshape,
    /// `gather_rows(table, ids)` with the ids in the named data parameter.
    Gather(Ident),
    /// A parentless leaf whose value is the named data tensor (its first use outside the left of
    /// a `matmul`).
    DataTensor(Ident),
    /// `x.matmul(w)` with `x` the named data tensor: the only parent is `w`.
    MatMulData(Ident),
}

pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    /// Value ids read (inputs `0..n`, then nodes).
    pub(crate) parents: Vec<usize>,
    pub(crate) shape: Shape,
    pub(crate) span: Span,
}

/// A dim equality the macro cannot decide (a generic dim against another dim): emitted as a trait
/// bound whose `on_unimplemented` message names the op and the rule.
pub(crate) struct Check {
    pub(crate) rule: Rule,
    pub(crate) left: Dim,
    pub(crate) right: Dim,
    pub(crate) span: Span,
}

pub(crate) struct Graph {
    pub(crate) inputs: Vec<(Ident, Shape)>,
    /// Data tensors (data parameters declared with a shape), in declaration order.
    pub(crate) data_tensors: Vec<(Ident, Shape)>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) outputs: Vec<usize>,
    pub(crate) checks: Vec<Check>,
}

impl Graph {
    pub(crate) fn shape_of(&self, value: usize) -> &Shape {
        if value < self.inputs.len() {
            &self.inputs[value].1
        } else {
            &self.nodes[value - self.inputs.len()].shape
        }
    }
}
