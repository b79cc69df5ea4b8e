//! Errors of the runtime: every one names what went wrong and where.

use core::fmt;

use crate::shape::Dims;

/// Everything that can go wrong when building tensors, lowering a graph or running a pass.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Data of the wrong length for a shape.
    #[error("a tensor of shape {dims} needs {expected} elements, got {actual}")]
    DataLength {
        /// The shape asked for.
        dims: Dims,
        /// Its number of elements.
        expected: usize,
        /// The length of the data given.
        actual: usize,
    },
    /// A shape whose element count overflows `usize` (`[2^63, 2]` on a 64-bit target), given to a
    /// tensor constructor or declared as a graph input. (A node's shape that overflows is an
    /// [`Error::Node`] naming the node and op.)
    #[error("{what} has shape {dims}, whose element count overflows usize")]
    ShapeOverflow {
        /// What has the shape: `a tensor`, `input 2`.
        what: String,
        /// The shape.
        dims: Dims,
    },
    /// A tensor of the wrong shape.
    #[error("expected a tensor of shape {expected}, got {actual}")]
    ShapeMismatch {
        /// The shape asked for.
        expected: Dims,
        /// The shape given.
        actual: Dims,
    },
    /// A pack with the wrong number of tensors or a tensor of the wrong shape in it.
    #[error("{what}: expected shapes {}, got {}", DimsList(expected), DimsList(actual))]
    PackShapes {
        /// Which pack.
        what: &'static str,
        /// The shapes asked for.
        expected: Vec<Dims>,
        /// The shapes given.
        actual: Vec<Dims>,
    },
    /// A node failed checked lowering (`compile`): validation, a bad parent, a shape whose element
    /// count overflows `usize`, a forward result of the wrong shape, or a panic in the node's code
    /// (a user closure or compact op; the message says what panicked and with which message).
    #[error("node {node} ({op}) with parent shapes {}: {message}", DimsList(parent_shapes))]
    Node {
        /// Index of the node (0 = first node after the inputs).
        node: usize,
        /// The op's name.
        op: String,
        /// Shapes of the positions the node reads.
        parent_shapes: Vec<Dims>,
        /// What is wrong.
        message: String,
    },
    /// A VJP (opaque closure or compact program) returned something that does not fit the prefix,
    /// or panicked (the message says so, with the panic's message).
    #[error("the VJP of node {node} ({op}) is malformed: {message}")]
    Vjp {
        /// Index of the node.
        node: usize,
        /// The op's name.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// The inputs (or the data) of a graph with run-time dims do not fit it: two of them give a
    /// run-time dim different sizes ("run-time dim `batch` is 64 in input `x` but 39 in input
    /// `y`"), a run-time dim is 0, or an input's other axes differ from the declared ones (the
    /// shapes are printed with the run-time dims' names).
    #[error("{message}")]
    RunTimeDim {
        /// The run-time dim's name (empty when the error is about a static axis).
        dim: String,
        /// What is wrong, naming the inputs and sizes.
        message: String,
    },
    /// A position handle that does not belong to this graph.
    #[error("position {index} does not belong to this graph (it has {len} positions)")]
    ForeignPosition {
        /// The handle's index.
        index: usize,
        /// Number of positions of the graph it was used with.
        len: usize,
    },
    /// An array pass was asked for on a scalar type without storage equality.
    #[error("the array passes need storage equality, which `{scalar}` does not have; use the stored or dense pass")]
    NoStorageEquality {
        /// The scalar type's name.
        scalar: &'static str,
    },
    /// A shape of more axes than a tensor can have ([`MAX_RANK`](crate::MAX_RANK)), e.g. of an
    /// `ndarray` array converted to a tensor.
    #[error("{what} has shape {shape:?}, of rank {}; a tensor has rank at most {max}", shape.len(), max = crate::MAX_RANK)]
    Rank {
        /// What has the shape: `an array`.
        what: &'static str,
        /// The shape.
        shape: Vec<usize>,
    },
    /// A shape `ndarray` refuses (converting a tensor to an array), in `ndarray`'s words.
    #[error("ndarray: {message}")]
    Ndarray {
        /// `ndarray`'s message.
        message: String,
    },
    /// Names that do not fit the tensors they name (saving or loading a pack by name): another
    /// number of names than of tensors, or a name given twice.
    #[error("tensor names: {message}")]
    TensorNames {
        /// What is wrong.
        message: String,
    },
    /// A tensor asked for by name is not in the file (safetensors data).
    #[error("there is no tensor named `{name}` in the safetensors data")]
    MissingTensor {
        /// The name asked for.
        name: String,
    },
    /// A tensor in a file (safetensors data) whose shape is not the one expected.
    #[error("tensor `{name}` has shape {actual:?} in the safetensors data, expected {expected}")]
    TensorShape {
        /// The tensor's name.
        name: String,
        /// The shape expected (the parameter's).
        expected: Dims,
        /// The shape in the file (of any rank).
        actual: Vec<usize>,
    },
    /// A tensor in a file (safetensors data) whose element type is not the scalar type.
    #[error("tensor `{name}` holds {actual} elements in the safetensors data, expected {expected}")]
    TensorDtype {
        /// The tensor's name.
        name: String,
        /// The safetensors dtype of the scalar type (`F32`, `BF16`, …).
        expected: String,
        /// The dtype in the file.
        actual: String,
    },
    /// Safetensors data that cannot be read (truncated, a malformed header, offsets that do not
    /// cover the data, …) or written (a header over the format's limit).
    #[error("safetensors: {message}")]
    Safetensors {
        /// What is wrong, in the words of the `safetensors` crate.
        message: String,
    },
    /// A file that cannot be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error's message.
        message: String,
    },
    /// A micro-batch of a data-parallel step failed: its `compute` returned an error or
    /// panicked (on this process or, through a transport such as MPI, on another).
    #[error("micro-batch {index}: {message}")]
    MicroBatch {
        /// The micro-batch's index.
        index: usize,
        /// What went wrong, with the error's or the panic's message.
        message: String,
    },
    /// A set of data-parallel workers could not combine its micro-batches: none to sum, gradients
    /// of different shapes, no worker state, or a transport failure.
    #[error("data-parallel workers: {message}")]
    Workers {
        /// What is wrong.
        message: String,
    },
}

/// Displays a list of dims as `[[2, 3], [3]]`.
pub(crate) struct DimsList<'a>(pub(crate) &'a [Dims]);

impl fmt::Display for DimsList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_error_names_node_op_shapes_and_message() {
        let e = Error::Node {
            node: 3,
            op: "matmul".into(),
            parent_shapes: vec![Dims::matrix(2, 3), Dims::matrix(2, 2)],
            message: "the left operand's columns (3) must equal the right operand's rows (2)".into(),
        };
        assert_eq!(
            e.to_string(),
            "node 3 (matmul) with parent shapes [[2, 3], [2, 2]]: the left operand's columns (3) \
             must equal the right operand's rows (2)"
        );
    }
}
