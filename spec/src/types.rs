//! The type-level shape rules: one trait per rule in the runtime's `shape::rules` module computes
//! an op's output shape type from its operands' shape types, for literal and generic dims alike.
//! A broken rule is a trait error whose words come from here (rustc prints typenum numbers in
//! binary, so the texts name the op and the rule, never the sizes).
//!
//! [`type_rules!`](crate::type_rules) hands every rule's texts to a callback macro: the runtime
//! defines its traits with it, and [`TypeRule`] is defined from the same list here, so the words
//! live in one place.

/// Calls `$callback!` with one `(Variant, TraitName, message, label, note)` entry per type-level
/// rule.
#[macro_export]
macro_rules! type_rules {
    ($callback:ident) => {
        $callback! {
            (Elementwise, ElementwiseShape,
             "an elementwise op (add, sub, mul, div, max, min) needs both operands to have the same shape",
             "these operands' shapes may differ",
             "give both operands the same dims: the same literal sizes or the same generic dim"),
            (ElementwiseToScalar, ElementwiseToScalarShape,
             "mse needs both operands to have the same shape",
             "these operands' shapes may differ",
             "give both operands the same dims: the same literal sizes or the same generic dim"),
            (Unary, UnaryShape,
             "a pointwise op keeps its operand's shape",
             "not a tensor shape",
             "a shape is `()` or a tuple of 1 to 4 typenum dims"),
            (LastAxis, LastAxisShape,
             "softmax and log_softmax need an operand with at least one axis",
             "a scalar has no last axis",
             "apply it to a vector or a matrix of rows"),
            (Reduce, ReduceShape,
             "a full reduction (sum, mean) takes a tensor shape",
             "not a tensor shape",
             "a shape is `()` or a tuple of 1 to 4 typenum dims"),
            (MatMul, MatMulShape,
             "matmul needs the left operand's columns to equal the right operand's rows (and equal batch sizes)",
             "these dims may differ",
             "for `a.matmul(b)` with `a: [m, k]` or `[bt, m, k]`, `b` must be `[k, n]` or `[bt, k, n]`"),
            (Transpose, TransposeShape,
             "transpose needs a matrix (rank 2)",
             "not a matrix",
             "transpose swaps the two axes of an `[m, n]` matrix"),
            (AddRow, AddRowShape,
             "adding a row vector to a matrix (add_row) needs the vector's length to equal the matrix's columns",
             "these dims may differ",
             "for `x + b` with `x: [m, n]`, `b` must be `[n]`"),
            (AxisReduce, AxisReduceShape,
             "sum_axis and mean_axis need an axis of the operand",
             "the axis is not below the operand's rank",
             "axes count from 0: an `[m, n]` matrix has axes 0 and 1"),
            (RowParams, RowParamsShape,
             "layer_norm needs x: [m, n] and gain, bias: [n]",
             "these shapes do not fit",
             "the gain and the bias have one entry per column of x"),
            (Logits, LogitsShape,
             "cross_entropy needs logits as a matrix [rows, classes]",
             "not a matrix",
             "one row of class scores per example"),
            (Concat, ConcatShape,
             "concat needs two shapes of one rank that agree off the concat axis",
             "these shapes cannot be joined along that axis",
             "every dim but the concat axis's must be equal; the sizes along it add"),
            (Slice, SliceShape,
             "slice needs an axis of the operand",
             "the axis is not below the operand's rank",
             "`slice(x, axis, start, len)` keeps `len` entries of `axis` from `start`"),
            (Permute, PermuteShape,
             "permute needs one axis of the operand per output axis",
             "the permutation does not fit the operand's rank",
             "`permute(x, [p0, p1, …])` lists every axis of `x` once"),
            (Reshape, ReshapeShape,
             "reshape needs the declared shape to have the operand's element count",
             "the element counts may differ",
             "the product of the dims must stay the same"),
            (GatherRows, GatherRowsShape,
             "gather_rows (embedding) needs a table matrix [vocab, dim] and an output [n…, dim]",
             "not a matrix",
             "each id selects one row of the table; the output has 1 to 3 leading axes"),
            (Causal, CausalShape,
             "causal_mask needs attention scores [.., t, t] whose last two axes are equal",
             "these dims may differ",
             "scores of shape [t, t], [b, t, t] or [b, h, t, t]: one row and one column per position"),
            (Leaf, LeafShape,
             "a data tensor has its declared shape",
             "not a tensor shape",
             "a shape is `()` or a tuple of 1 to 4 typenum dims"),
            (Conv1d, Conv1dShape,
             "conv1d needs an input [n, c_in, l] and a weight [c_out, c_in, k] whose dilated kernel fits the padded input",
             "these shapes do not fit this convolution",
             "the weight's second dim is the input's channels; stride and dilation are at least 1"),
            (Conv2d, Conv2dShape,
             "conv2d needs an input [n, c_in, h, w] and a weight [c_out, c_in, kh, kw] whose dilated kernel fits the padded input",
             "these shapes do not fit this convolution",
             "the weight's second dim is the input's channels; strides and dilations are at least 1"),
            (Pool2d, Pool2dShape,
             "max_pool2d and avg_pool2d need an input [n, c, h, w] that every window of the kernel overlaps",
             "this shape does not fit this pooling",
             "kernel sizes and strides are at least 1, the padding at most half the kernel, the spatial sizes at least 1"),
            (Declared, DeclaredShape,
             "the declared shape differs from the shape the graph computes",
             "these shapes may differ",
             "change the declared shape (let annotation or signature) to the computed one"),
        }
    };
}

/// Calls `$callback!` with one `(TraitName, message, label, note)` entry per type-level building
/// block of the sliding-window rules: the output size of one spatial axis, whose trait is the one
/// a broken window rule names (the runtime's `shape::rules::SlidingAxis` and `PoolAxis`).
#[macro_export]
macro_rules! axis_rules {
    ($callback:ident) => {
        $callback! {
            (SlidingAxis,
             "a convolution needs, along every spatial axis, a dilated kernel that fits the padded input, and a kernel size, stride and dilation of at least 1",
             "this axis does not fit the convolution",
             "an axis of size s gives (s + 2·padding − dilation·(kernel − 1) − 1) / stride + 1 outputs"),
            (PoolAxis,
             "a pooling needs, along every spatial axis, a non-empty input, a kernel that fits the padded input, a kernel size and stride of at least 1, and a padding of at most half the kernel",
             "this axis does not fit the pooling",
             "an axis of size s gives (s + 2·padding − kernel) / stride + 1 outputs"),
        }
    };
}

macro_rules! define_type_rule {
    ($(($variant:ident, $trait:ident, $message:literal, $label:literal, $note:literal)),* $(,)?) => {
        /// A type-level shape rule: the trait of the runtime's `shape::rules` module that computes
        /// (and so checks) an op's output shape type.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum TypeRule {
            $(
                // The message is the compile error's text: its `[m, n]` are shapes, not links.
                #[allow(rustdoc::broken_intra_doc_links)]
                #[doc = concat!("`", stringify!($trait), "`: ", $message, ".")]
                $variant,
            )*
        }

        impl TypeRule {
            /// Every rule.
            pub const ALL: &'static [TypeRule] = &[$(TypeRule::$variant),*];

            /// The trait's name in the runtime's `shape::rules` module.
            pub fn trait_name(self) -> &'static str {
                match self { $(TypeRule::$variant => stringify!($trait),)* }
            }

            /// The error's first line.
            pub fn message(self) -> &'static str {
                match self { $(TypeRule::$variant => $message,)* }
            }

            /// The label under the offending code.
            pub fn label(self) -> &'static str {
                match self { $(TypeRule::$variant => $label,)* }
            }

            /// The note that says what to do.
            pub fn note(self) -> &'static str {
                match self { $(TypeRule::$variant => $note,)* }
            }
        }
    };
}

type_rules!(define_type_rule);

#[cfg(test)]
mod tests {
    use super::TypeRule;

    #[test]
    fn texts_are_worded_for_users() {
        for &r in TypeRule::ALL {
            let m = r.message();
            assert!(m.chars().next().is_some_and(char::is_lowercase), "{m}");
            assert!(!m.ends_with('.'), "{m}");
            assert!(r.trait_name().ends_with("Shape"));
        }
    }
}
