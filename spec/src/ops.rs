//! THE op table: per built-in op its DSL name(s), arity, extra arguments, shape rule, type-level
//! rule, compact-VJP pattern (the static support), saved reads, scalar bounds and runtime type.

use crate::rules::Rule;
use crate::types::TypeRule;
use crate::vjp::{Pattern, Reads};

const S0: Pattern = Pattern::Single(0);
const S1: Pattern = Pattern::Single(1);
const S2: Pattern = Pattern::Single(2);
const BINARY: Pattern = Pattern::Add(&S0, &S1);

const NOTHING: Reads = Reads { operands: &[], output: false, data: false };
const OUTPUT: Reads = Reads { operands: &[], output: true, data: false };
const OPERAND: Reads = Reads { operands: &[0], output: false, data: false };
const BOTH: Reads = Reads { operands: &[0, 1], output: false, data: false };

/// How many graph values an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly this many.
    Fixed(usize),
    /// This many or more (`concat([a, b, c, …], axis)`); the VJP pattern is [`Pattern::Each`].
    AtLeast(usize),
}

impl Arity {
    /// The fewest values the op takes.
    #[must_use]
    pub const fn min(self) -> usize {
        match self {
            Arity::Fixed(n) | Arity::AtLeast(n) => n,
        }
    }

    /// Whether the op takes `n` values.
    #[must_use]
    pub const fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Fixed(k) => n == k,
            Arity::AtLeast(k) => n >= k,
        }
    }
}

/// Arguments after the graph values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Args {
    /// None.
    None,
    /// An integer literal: the axis.
    Axis,
    /// An optional constant, with its default written as a literal (`eps`).
    Eps(&'static str),
    /// The name of a data parameter holding one `usize` per row (`AsRef<[usize]>`): labels or ids.
    Labels,
    /// Three integer literals: axis, start, length.
    Slice,
    /// An array literal of axes: the permutation.
    Perm,
    /// `dropout(x, p, seed)`: a constant drop probability `p` in `[0, 1)` and the name of a data
    /// parameter holding the mask's seed (a `u64`).
    Dropout,
    /// A constant factor (`x * c`).
    Factor,
    /// Named window constants of a convolution, each optional: `stride` (default 1), `padding`
    /// (default 0), `dilation` (default 1); each an integer literal (every spatial axis) or, for a
    /// two-dimensional op, a pair `(height, width)`.
    Conv,
    /// Named window constants of a pooling: `kernel` (required), `stride` (default: the kernel),
    /// `padding` (default 0); each an integer literal or a pair `(height, width)`.
    Pool,
    /// The name of a data parameter holding one `bool` per masked element (`AsRef<[bool]>`), then
    /// the fill value: a constant, or an infinity (`f64::NEG_INFINITY`, `-f64::INFINITY`).
    Mask,
    /// The fill value: a constant, or an infinity (`f64::NEG_INFINITY`, `-f64::INFINITY`).
    Fill,
}

/// How the op is written in `graph!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `name(a, …)` or `a.name(…)`.
    Call,
    /// `let y: [d…] = name(…);`: the binding declares the output shape.
    Declared,
    /// Not called by name: lowered from other syntax (`x * 0.5`, a data tensor).
    Lowered,
}

/// Scalar bounds an op needs beyond the engine's `Scalar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// `Sub<Output = S>`.
    Sub,
    /// `Mul<Output = S>`.
    Mul,
    /// `Neg<Output = S>`.
    Neg,
    /// `Div<Output = S>`.
    Div,
    /// `num_traits::FromPrimitive`.
    FromPrimitive,
    /// `num_traits::Num`.
    Num,
    /// `PartialOrd`.
    PartialOrd,
    /// `num_traits::Float`.
    Float,
}

/// Everything the macro, the runtime and the docs need to know about one built-in op.
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    /// The DSL and runtime name (`Error::Node` and descriptions show it).
    pub name: &'static str,
    /// Other DSL names.
    pub aliases: &'static [&'static str],
    /// How it is written.
    pub form: Form,
    /// Graph values it takes.
    pub arity: Arity,
    /// What follows them.
    pub args: Args,
    /// Its shape rule (the function in [`crate::rules`]).
    pub rule: Rule,
    /// The type-level rule trait that computes its output shape.
    pub type_rule: TypeRule,
    /// Its compact VJP's pattern: the static support.
    pub vjp: Pattern,
    /// Saved values its VJP reads.
    pub reads: Reads,
    /// Scalar bounds.
    pub bounds: &'static [Bound],
    /// The shape rule as the docs table writes it.
    pub shapes: &'static str,
    /// How a generated program writes its contributions when it can skip building them first.
    pub direct: Direct,
}

/// How a generated program writes an op's contributions into the gradients straight from the
/// cotangent, with the `+` of the accumulation (and the pending uniforms) fused into the loop
/// that produces them, instead of building them and adding them in a second pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// Built, then added (the general path).
    No,
    /// Each contribution is one matrix product, computed straight onto a position still holding a
    /// uniform (the runtime's `ProductVjp`).
    Product,
    /// One contribution: the cotangent placed in a window of the operand, zeros elsewhere, added
    /// in one pass over the operand's gradient (the runtime's `WindowVjp`).
    Window,
}

macro_rules! op {
    ($name:literal, $arity:literal, $rule:ident, $ty:ident, $vjp:expr, $reads:expr, $shapes:expr
     $(, args = $args:expr)? $(, bounds = $bounds:expr)? $(, form = $form:expr)? $(, aliases = $aliases:expr)?
     $(, direct = $direct:expr)? $(, arity = $variadic:expr)?) => {
        OpSpec {
            name: $name,
            aliases: { let _a: &[&str] = &[]; $(let _a = $aliases;)? _a },
            form: { let _f = Form::Call; $(let _f = $form;)? _f },
            arity: { let _n = Arity::Fixed($arity); $(let _n = $variadic;)? _n },
            args: { let _x = Args::None; $(let _x = $args;)? _x },
            rule: Rule::$rule,
            type_rule: TypeRule::$ty,
            vjp: $vjp,
            reads: $reads,
            bounds: { let _b: &[Bound] = &[]; $(let _b = $bounds;)? _b },
            shapes: $shapes,
            direct: { let _d = Direct::No; $(let _d = $direct;)? _d },
        }
    };
}

const ELEMENTWISE: &str = "`[s] , [s] → [s]`";
const POINTWISE: &str = "`[s] → [s]`";

/// Every built-in op, in the order the docs list them.
pub const OPS: &[OpSpec] = {
    use Bound::{Div, Float, FromPrimitive, Mul, Neg, Num, PartialOrd, Sub};
    &[
        op!("add", 2, Elementwise, Elementwise, BINARY, NOTHING, ELEMENTWISE),
        op!("sub", 2, Elementwise, Elementwise, BINARY, NOTHING, ELEMENTWISE, bounds = &[Sub]),
        op!("mul", 2, Elementwise, Elementwise, BINARY, BOTH, ELEMENTWISE, bounds = &[Mul]),
        op!(
            "div",
            2,
            Elementwise,
            Elementwise,
            BINARY,
            Reads { operands: &[1], output: true, data: false },
            ELEMENTWISE,
            bounds = &[Sub, Mul, Div]
        ),
        op!("max", 2, Elementwise, Elementwise, BINARY, BOTH, ELEMENTWISE, bounds = &[PartialOrd]),
        op!("min", 2, Elementwise, Elementwise, BINARY, BOTH, ELEMENTWISE, bounds = &[PartialOrd]),
        op!("neg", 1, Unary, Unary, S0, NOTHING, POINTWISE, bounds = &[Neg, Sub]),
        op!("relu", 1, Unary, Unary, S0, OPERAND, POINTWISE, bounds = &[PartialOrd]),
        op!("tanh", 1, Unary, Unary, S0, OUTPUT, POINTWISE, bounds = &[Float]),
        op!("exp", 1, Unary, Unary, S0, OUTPUT, POINTWISE, bounds = &[Float]),
        op!("sigmoid", 1, Unary, Unary, S0, OUTPUT, POINTWISE, bounds = &[Float]),
        op!("softplus", 1, Unary, Unary, S0, OPERAND, POINTWISE, bounds = &[Float]),
        op!("log", 1, Unary, Unary, S0, OPERAND, POINTWISE, bounds = &[Float]),
        op!("sqrt", 1, Unary, Unary, S0, OUTPUT, POINTWISE, bounds = &[Float]),
        op!("gelu", 1, Unary, Unary, S0, OPERAND, POINTWISE, bounds = &[Float]),
        op!("silu", 1, Unary, Unary, S0, OPERAND, POINTWISE, bounds = &[Float]),
        op!("square", 1, Unary, Unary, Pattern::Add(&S0, &S0), OPERAND, POINTWISE, bounds = &[Mul]),
        op!(
            "scale",
            1,
            Unary,
            Unary,
            S0,
            NOTHING,
            "`[s] → [s]` (written `x * c` or `c * x`)",
            args = Args::Factor,
            bounds = &[Mul, Num],
            form = Form::Lowered
        ),
        op!(
            "offset",
            1,
            Unary,
            Unary,
            S0,
            NOTHING,
            "`[s] → [s]` (written `x + c`, `c + x` or `x - c`, as `x + (-c)`)",
            args = Args::Factor,
            bounds = &[Num],
            form = Form::Lowered
        ),
        op!(
            "div_const",
            1,
            Unary,
            Unary,
            S0,
            NOTHING,
            "`[s] → [s]` (written `x / c`)",
            args = Args::Factor,
            bounds = &[Div, Num],
            form = Form::Lowered
        ),
        op!(
            "matmul",
            2,
            MatMul,
            MatMul,
            BINARY,
            BOTH,
            "`[m, k] , [k, n] → [m, n]`; batched `[b, m, k] , [b, k, n] → [b, m, n]`; `[b, m, k] , [k, n] → [b, m, n]` (the matrix shared by every batch item)",
            bounds = &[Mul],
            direct = Direct::Product
        ),
        op!("transpose", 1, Transpose, Transpose, S0, NOTHING, "`[m, n] → [n, m]`", aliases = &["t"]),
        op!("sum", 1, Reduce, Reduce, S0, NOTHING, "`[s] → []`"),
        op!(
            "mean",
            1,
            Reduce,
            Reduce,
            S0,
            NOTHING,
            "`[s] → []` (at least one element)",
            bounds = &[Div, FromPrimitive]
        ),
        op!(
            "add_row",
            2,
            AddRow,
            AddRow,
            BINARY,
            NOTHING,
            "`[m, n] , [n] → [m, n]` (also written `matrix + row_vector`)"
        ),
        op!(
            "softmax",
            1,
            LastAxis,
            LastAxis,
            S0,
            OUTPUT,
            "`[…, n] → […, n]` over the last axis, `n ≥ 1`",
            bounds = &[Float]
        ),
        op!(
            "log_softmax",
            1,
            LastAxis,
            LastAxis,
            S0,
            OUTPUT,
            "`[…, n] → […, n]` over the last axis, `n ≥ 1`",
            bounds = &[Float]
        ),
        op!(
            "mse",
            2,
            ElementwiseToScalar,
            ElementwiseToScalar,
            BINARY,
            BOTH,
            "`[s] , [s] → []`",
            bounds = &[Float, FromPrimitive]
        ),
        op!(
            "sum_axis",
            1,
            AxisReduce,
            AxisReduce,
            S0,
            NOTHING,
            "drops `axis` (`sum_axis(x, axis)`, `axis` an integer literal)",
            args = Args::Axis
        ),
        op!(
            "mean_axis",
            1,
            AxisReduce,
            AxisReduce,
            S0,
            NOTHING,
            "drops `axis` (`mean_axis(x, axis)`, non-empty axis)",
            args = Args::Axis,
            bounds = &[Div, FromPrimitive]
        ),
        op!(
            "layer_norm",
            3,
            RowParams,
            RowParams,
            Pattern::Add(&BINARY, &S2),
            BOTH,
            "`[m, n] , [n] , [n] → [m, n]` (`layer_norm(x, gain, bias)` or `…, eps)`, default `1e-5`)",
            args = Args::Eps("1e-5"),
            bounds = &[Float, FromPrimitive, Num]
        ),
        op!(
            "cross_entropy",
            1,
            Logits,
            Logits,
            S0,
            Reads { operands: &[0], output: false, data: true },
            "`[m, c] → []` (`cross_entropy(logits, labels)`, one label per row from a data parameter)",
            args = Args::Labels,
            bounds = &[Float, FromPrimitive]
        ),
        op!(
            "concat",
            1,
            Concat,
            Concat,
            Pattern::Each,
            NOTHING,
            "sizes along `axis` add (`concat([a, b, …], axis)` with one or more parts, or `concat(a, b, axis)`; literal sizes there)",
            args = Args::Axis,
            arity = Arity::AtLeast(1)
        ),
        op!(
            "slice",
            1,
            Slice,
            Slice,
            S0,
            NOTHING,
            "`axis` becomes `len` (`slice(x, axis, start, len)`, integer literals)",
            args = Args::Slice,
            direct = Direct::Window
        ),
        op!(
            "permute",
            1,
            Permute,
            Permute,
            S0,
            NOTHING,
            "output axis `k` is input axis `p_k` (`permute(x, [p0, p1, …])`)",
            args = Args::Perm
        ),
        op!(
            "reshape",
            1,
            Reshape,
            Reshape,
            S0,
            NOTHING,
            "the declared shape, same element count (`let y: [d…] = reshape(x);`)",
            form = Form::Declared
        ),
        op!(
            "gather_rows",
            1,
            GatherRows,
            GatherRows,
            S0,
            Reads { operands: &[], output: false, data: true },
            "`[vocab, d] → [n…, d]` (`let e: [b, t, d] = embedding(table, ids);`, one id per output row in row-major order, from a data parameter)",
            args = Args::Labels,
            form = Form::Declared,
            aliases = &["embedding"]
        ),
        op!(
            "masked_fill",
            1,
            Unary,
            Unary,
            S0,
            Reads { operands: &[], output: false, data: true },
            "`[s] → [s]` (`masked_fill(x, mask, value)`, `mask` a data parameter of `bool`s for `x`'s trailing axes, repeated over the leading ones)",
            args = Args::Mask,
            bounds = &[Num]
        ),
        op!(
            "causal_mask",
            1,
            Causal,
            Causal,
            S0,
            NOTHING,
            "`[…, t, t] → […, t, t]` (`causal_mask(scores, value)`: `value` where the column is past the row)",
            args = Args::Fill,
            bounds = &[Num]
        ),
        op!(
            "matmul_data",
            1,
            MatMul,
            MatMul,
            S0,
            Reads { operands: &[], output: false, data: true },
            "`x.matmul(w)` with `x` a data tensor `[m, k]`, `w: [k, n]` → `[m, n]`; only `w` gets a gradient",
            bounds = &[Mul],
            form = Form::Lowered,
            direct = Direct::Product
        ),
        op!(
            "conv1d",
            2,
            Conv1d,
            Conv1d,
            BINARY,
            BOTH,
            "`[n, c_in, l] , [c_out, c_in, k] → [n, c_out, l_out]` (`conv1d(x, w, stride = 1, padding = 0, dilation = 1)`, every constant optional)",
            args = Args::Conv,
            bounds = &[Mul]
        ),
        op!(
            "conv2d",
            2,
            Conv2d,
            Conv2d,
            BINARY,
            BOTH,
            "`[n, c_in, h, w] , [c_out, c_in, kh, kw] → [n, c_out, h_out, w_out]` (`conv2d(x, w, stride = 1, padding = 0, dilation = 1)`, every constant optional, or a pair `(h, w)`)",
            args = Args::Conv,
            bounds = &[Mul]
        ),
        op!(
            "max_pool2d",
            1,
            Pool2d,
            Pool2d,
            S0,
            OPERAND,
            "`[n, c, h, w] → [n, c, h_out, w_out]` (`max_pool2d(x, kernel = 2, stride = 2, padding = 0)`, stride defaults to the kernel)",
            args = Args::Pool,
            bounds = &[PartialOrd]
        ),
        op!(
            "avg_pool2d",
            1,
            Pool2d,
            Pool2d,
            S0,
            NOTHING,
            "`[n, c, h, w] → [n, c, h_out, w_out]` (`avg_pool2d(x, kernel = 2, stride = 2, padding = 0)`, padding not counted)",
            args = Args::Pool,
            bounds = &[Div, FromPrimitive]
        ),
        op!(
            "dropout",
            1,
            Unary,
            Unary,
            S0,
            Reads { operands: &[], output: false, data: true },
            "`[s] → [s]` (`dropout(x, p, seed)`: `p` a constant in `[0, 1)`, `seed` a `u64` data parameter)",
            args = Args::Dropout,
            bounds = &[Mul, FromPrimitive]
        ),
        op!(
            "data_tensor",
            0,
            Leaf,
            Leaf,
            Pattern::Zero,
            NOTHING,
            "a data tensor used as a value: its declared shape, no parents",
            form = Form::Lowered
        ),
    ]
};

impl OpSpec {
    /// Whether the shape rule needs at least one element to reduce over (`mean`, `mean_axis`:
    /// they divide by the count).
    #[must_use]
    pub fn needs_element(&self) -> bool {
        matches!(self.name, "mean" | "mean_axis")
    }
}

/// The op called `name` in `graph!` (by its name or an alias), if it is called by name.
#[must_use]
pub fn lookup(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|op| op.form != Form::Lowered && (op.name == name || op.aliases.contains(&name)))
}

/// The entry of the op whose runtime name is `name`, in a const context (the runtime's typed
/// constructors check their table against it). Fails to evaluate, so fails to compile, for a name
/// no op has.
#[must_use]
pub const fn spec_of(name: &str) -> &'static OpSpec {
    let mut i = 0;
    while i < OPS.len() {
        if bytes_eq(OPS[i].name.as_bytes(), name.as_bytes()) {
            return &OPS[i];
        }
        i += 1;
    }
    panic!("no op has this name")
}

/// The saved reads of the op whose runtime name is `name`, in a const context (the runtime's
/// pointwise ops take theirs from here). Fails to evaluate, so fails to compile, for a name no op
/// has.
#[must_use]
pub const fn reads_of(name: &str) -> crate::Reads {
    spec_of(name).reads
}

/// Whether two names are equal, in a const context (the runtime's tables check their names with
/// it).
#[must_use]
pub const fn same_name(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes())
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The op whose runtime name is `name` (every op, lowered ones included).
#[must_use]
pub fn by_name(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|op| op.name == name)
}

/// The names `graph!` accepts as calls, for the unknown-op message.
#[must_use]
pub fn call_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = OPS.iter().filter(|o| o.form != Form::Lowered).map(|o| o.name).collect();
    v.extend(["opaque", "split"]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_patterns_fit_the_arity() {
        for (i, op) in OPS.iter().enumerate() {
            assert!(OPS[..i].iter().all(|o| o.name != op.name), "{} listed twice", op.name);
            let n = op.arity.min();
            assert!(op.vjp.support(n).iter().all(|&k| k < n), "{}: support outside its operands", op.name);
            assert!(op.reads.operands.iter().all(|&k| k < n), "{}: reads outside its operands", op.name);
            assert_eq!(op.vjp == Pattern::Each, matches!(op.arity, Arity::AtLeast(_)), "{}", op.name);
        }
        assert_eq!(lookup("t").map(|o| o.name), Some("transpose"));
        assert!(lookup("matmul_data").is_none() && by_name("matmul_data").is_some());
        assert_eq!(by_name("layer_norm").map(|o| o.vjp.support(3)), Some(vec![0, 1, 2]));
        assert_eq!(by_name("square").map(|o| o.vjp.support(1)), Some(vec![0, 0]));
        assert_eq!(BINARY.describe(&["a", "b"]), "add(single(a), single(b))");
        let concat = lookup("concat").unwrap();
        assert_eq!(concat.vjp.support(4), [0, 1, 2, 3]);
        assert!(concat.arity.accepts(1) && concat.arity.accepts(9) && !concat.arity.accepts(0));
        assert_eq!(concat.vjp.describe(&["a", "b", "c"]), "add(add(single(a), single(b)), single(c))");
        assert_eq!(concat.vjp.describe(&["a"]), "single(a)");
    }
}
