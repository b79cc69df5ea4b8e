//! The graph IR that lowering builds and inference completes: inputs, data tensors, nodes (op,
//! parent values, shape, site), outputs, and the declared-shape checks left to the compiler.

use exactgrad_spec::OpSpec;
use syn::{Expr, ExprClosure, Ident, Path};

use crate::errors::Site;

/// One dim: a literal size or a generic dim of the graph.
#[derive(Clone, Debug)]
pub(crate) enum Dim {
    Lit(u64),
    Sym(Ident),
    /// A run-time dim (`batch: dyn`) and its index among the graph's run-time dims: equal only
    /// to itself, never to a number or a generic dim; its size is known only at `compile`.
    Dyn(Ident, usize),
}

impl PartialEq for Dim {
    fn eq(&self, other: &Dim) -> bool {
        match (self, other) {
            (Dim::Lit(a), Dim::Lit(b)) => a == b,
            (Dim::Sym(a), Dim::Sym(b)) | (Dim::Dyn(a, _), Dim::Dyn(b, _)) => a == b,
            _ => false,
        }
    }
}

impl core::fmt::Display for Dim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Dim::Lit(n) => write!(f, "{n}"),
            Dim::Sym(i) | Dim::Dyn(i, _) => write!(f, "{i}"),
        }
    }
}

/// The shape rules of `exactgrad_spec` run on these dims: literal sizes are compared now, a
/// generic dim equals only itself here and is otherwise left to the type-level rule traits.
impl exactgrad_spec::Dim for Dim {
    fn of_size(n: usize) -> Self {
        Dim::Lit(n as u64)
    }
    fn size(&self) -> Option<usize> {
        match self {
            Dim::Lit(n) => usize::try_from(*n).ok(),
            Dim::Sym(_) | Dim::Dyn(..) => None,
        }
    }
    fn same(&self, other: &Self) -> Option<bool> {
        match (self, other) {
            (Dim::Lit(a), Dim::Lit(b)) => Some(a == b),
            (Dim::Sym(a), Dim::Sym(b)) if a == b => Some(true),
            (Dim::Dyn(a, _), Dim::Dyn(b, _)) => Some(a == b),
            (Dim::Dyn(..), _) | (_, Dim::Dyn(..)) => Some(false),
            _ => None,
        }
    }
}

/// A shape: its dims.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shape(pub(crate) Vec<Dim>);

impl core::fmt::Display for Shape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        exactgrad_spec::shape::Dims(&self.0).fmt(f)
    }
}

/// The value of an op's extra arguments (see `exactgrad_spec::Args`).
#[derive(Clone)]
pub(crate) enum ExtraArg {
    None,
    Axis(usize),
    /// The constant, or the op's default literal.
    Eps(Expr),
    /// A data parameter's name (labels or ids).
    Labels(Ident),
    /// Axis, start, length.
    Slice(usize, usize, usize),
    /// The permutation.
    Perm(Vec<usize>),
    /// A constant factor (`x * c`).
    Factor(Expr),
    /// A data tensor's name (`matmul_data`'s left operand, `data_tensor`'s value).
    Data(Ident),
    /// A sliding-window op's constants.
    Window(Window),
    /// `dropout`'s probability (a constant in `[0, 1)`, evaluated in `f64`) and the data
    /// parameter holding the seed.
    Dropout(f64, Ident),
    /// `masked_fill`'s mask (a data parameter's name) and fill value.
    Mask(Ident, Fill),
    /// `causal_mask`'s fill value.
    Fill(Fill),
}

/// The fill value of `masked_fill` and `causal_mask`.
#[derive(Clone)]
pub(crate) enum Fill {
    /// A constant expression (as for `scale`).
    Const(Expr),
    /// An infinity, written `f64::INFINITY`, `f64::NEG_INFINITY`, `-f64::INFINITY` (or `f32::…`);
    /// `true` for `-∞`.
    Infinity(bool),
}

/// The constants of a convolution or a pooling (`exactgrad_spec::Args::Conv`, `Args::Pool`), one
/// entry per spatial axis (`conv1d`: the length; the others: height, width). A convolution's
/// kernel is its weight's, so `kernel` is empty for it; a pooling's `dilation` is all ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) kernel: Vec<usize>,
    pub(crate) stride: Vec<usize>,
    pub(crate) padding: Vec<usize>,
    pub(crate) dilation: Vec<usize>,
}

impl Window {
    /// `v` as `N` entries (`N` is the op's spatial count, which lowering gave every list).
    pub(crate) fn axes<const N: usize>(v: &[usize]) -> [usize; N] {
        core::array::from_fn(|k| v.get(k).copied().unwrap_or(1))
    }

    /// The stride, padding and dilation as the shape rule takes them.
    pub(crate) fn sliding<const N: usize>(&self) -> exactgrad_spec::rules::Sliding<N> {
        exactgrad_spec::rules::Sliding {
            stride: Self::axes(&self.stride),
            padding: Self::axes(&self.padding),
            dilation: Self::axes(&self.dilation),
        }
    }
}

/// What a node runs.
pub(crate) enum NodeKind {
    /// A built-in op of `exactgrad_spec::OPS`.
    Builtin(&'static OpSpec, ExtraArg),
    /// `vjp` returns one gradient per read value, or with `whole_prefix` (`vjp_all`) one tensor
    /// per position of the prefix. `name` (the binding's) is shown in descriptions.
    Opaque { name: String, forward: ExprClosure, vjp: ExprClosure, whole_prefix: bool },
    /// A user type implementing the runtime's op traits.
    Custom(Path),
}

pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    /// Value ids read (inputs `0..n`, then nodes).
    pub(crate) parents: Vec<usize>,
    pub(crate) shape: Shape,
    pub(crate) site: Site,
    /// The binding and loop iteration that made it (`h@i=3`), for nodes made inside a loop.
    pub(crate) label: Option<String>,
}

impl Node {
    /// The op's name, as the runtime reports it.
    pub(crate) fn op_name(&self) -> String {
        match &self.kind {
            NodeKind::Builtin(op, _) => op.name.to_owned(),
            NodeKind::Opaque { name, .. } => name.clone(),
            NodeKind::Custom(p) => quote::quote!(#p).to_string().replace(' ', ""),
        }
    }
}

/// A declared shape (a `let` annotation or the signature's output) that involves generic dims
/// the macro cannot compare: the compiler checks `declared == actual` through the `DeclaredShape`
/// rule trait at `site`.
pub(crate) struct Check {
    pub(crate) declared: Shape,
    pub(crate) actual: Shape,
    pub(crate) site: Site,
}

/// A `for` loop as lowering unrolled it: the first node of each iteration, and the node after
/// the last (iteration `i` made nodes `starts[i]..starts[i + 1]`, the last `..end`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Loop {
    pub(crate) starts: Vec<usize>,
    pub(crate) end: usize,
}

pub(crate) struct Graph {
    pub(crate) inputs: Vec<(Ident, Shape)>,
    /// Data tensors (data parameters declared with a shape), in declaration order.
    pub(crate) data_tensors: Vec<(Ident, Shape)>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) outputs: Vec<usize>,
    pub(crate) checks: Vec<Check>,
    /// The declared inputs in order: a name, and for a parameter array its length (its elements
    /// are consecutive inputs).
    pub(crate) input_decls: Vec<(Ident, Option<usize>, Shape)>,
    /// Every `for` loop lowering unrolled, in the order they started (an inner loop's record
    /// after its outer one's).
    pub(crate) loops: Vec<Loop>,
}

impl Graph {
    pub(crate) fn shape_of(&self, value: usize) -> &Shape {
        if value < self.inputs.len() {
            &self.inputs[value].1
        } else {
            &self.nodes[value - self.inputs.len()].shape
        }
    }

    /// The data tensor's declared shape.
    pub(crate) fn data_shape(&self, name: &Ident) -> Option<&Shape> {
        self.data_tensors.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exactgrad_spec::Dim as _;

    #[test]
    fn generic_dims_compare_only_with_themselves() {
        let b = Dim::Sym(Ident::new("B", proc_macro2::Span::call_site()));
        let c = Dim::Sym(Ident::new("C", proc_macro2::Span::call_site()));
        assert_eq!(b.same(&b), Some(true));
        assert_eq!(b.same(&c), None);
        assert_eq!(b.same(&Dim::Lit(3)), None);
        assert_eq!(Dim::Lit(2).same(&Dim::Lit(3)), Some(false));
        assert_eq!(Shape(vec![b, Dim::Lit(4)]).to_string(), "[B, 4]");
    }
}
