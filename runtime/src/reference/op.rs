//! What the reference knows of a built-in op: [`RefOp`], its name and parameters, and the scalar
//! arithmetic it needs as plain functions ([`FloatKit`], the `fn` fields), so that the reference's
//! formulas run over any scalar the op accepts without the reference asking for more than
//! [`Scalar`](crate::Scalar). Each op file builds its `RefOp` with one of the constructors here
//! (`CompactOp::reference`); the formulas themselves live in `forward.rs` and `vjp.rs`.

use core::cmp::Ordering;
use core::ops::{Div, Mul, Neg, Sub};

use num_traits::{Float, FromPrimitive};

use crate::ops::{LabelAccessor, MaskAccessor, TensorAccessor};

/// Float arithmetic of a scalar for the reference: elementary functions and constants.
///
/// `exp` and `tanh` are the engine's deterministic kernels (`crate::math`), which every op calls
/// (SEMANTICS §8); `ln`, `ln_1p` and `sqrt` are the scalar's own.
pub struct FloatKit<A> {
    pub(crate) sub: fn(A, A) -> A,
    pub(crate) mul: fn(A, A) -> A,
    pub(crate) div: fn(A, A) -> A,
    pub(crate) neg: fn(A) -> A,
    pub(crate) exp: fn(A) -> A,
    pub(crate) tanh: fn(A) -> A,
    pub(crate) ln: fn(A) -> A,
    pub(crate) ln_1p: fn(A) -> A,
    pub(crate) sqrt: fn(A) -> A,
    pub(crate) cmp: fn(&A, &A) -> Option<Ordering>,
    pub(crate) one: A,
    /// A constant given in `f64` (rounded to nearest), NaN when it does not convert.
    pub(crate) constant: fn(f64) -> A,
    /// An element count (`FromPrimitive::from_usize` when the op asks for it, else `NumCast`).
    pub(crate) count: fn(usize) -> Option<A>,
}

impl<A: Float + 'static> FloatKit<A> {
    /// The kit of a [`Float`] scalar.
    #[must_use]
    pub fn new() -> Self {
        FloatKit {
            sub: |a, b| a - b,
            mul: super::tensor::pinned_product,
            div: |a, b| a / b,
            neg: |a| -a,
            exp: crate::math::exp,
            tanh: crate::math::tanh,
            ln: A::ln,
            ln_1p: A::ln_1p,
            sqrt: A::sqrt,
            cmp: A::partial_cmp,
            one: A::one(),
            constant: |v| A::from(v).unwrap_or_else(A::nan),
            count: |n| <A as num_traits::NumCast>::from(n),
        }
    }
}

impl<A: Float + FromPrimitive + 'static> FloatKit<A> {
    /// The kit of a scalar whose op counts elements with `FromPrimitive::from_usize`.
    #[must_use]
    pub fn counting() -> Self {
        FloatKit { count: A::from_usize, ..Self::new() }
    }
}

impl<A: Float + 'static> Default for FloatKit<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// A pointwise function (the `Pointwise` ops), with the arithmetic its formula needs.
#[non_exhaustive]
pub enum Unary<A> {
    /// `-x`; VJP `0 - δ`.
    Neg {
        /// `-x`.
        neg: fn(A) -> A,
        /// `a - b`.
        sub: fn(A, A) -> A,
    },
    /// `x < 0 ? 0 : x`; VJP `x > 0 ? δ : 0`.
    Relu {
        /// The scalar's `partial_cmp`.
        cmp: fn(&A, &A) -> Option<Ordering>,
    },
    /// `tanh`.
    Tanh(FloatKit<A>),
    /// `exp`.
    Exp(FloatKit<A>),
    /// `1 / (1 + exp(-x))`.
    Sigmoid(FloatKit<A>),
    /// `ln(1 + exp(x))`, stable form.
    Softplus(FloatKit<A>),
    /// `ln`.
    Log(FloatKit<A>),
    /// `sqrt`.
    Sqrt(FloatKit<A>),
    /// GELU, tanh approximation.
    Gelu(FloatKit<A>),
    /// SiLU `x / (1 + exp(-x))`.
    Silu(FloatKit<A>),
}

/// A built-in op as the reference sees it: its name, the positions it reads, its parameters and
/// the scalar arithmetic its formulas need. Returned by `CompactOp::reference`; a user op returns
/// `None` and is run by its own code (its dense contributions are its definition).
///
/// In every variant `a`, `b`, `x`, `w`, `gain`, `bias`, `logits` and `table` are context
/// positions; `fn` fields are the scalar's operations (`sub`: `x - y`, `mul`: `x * y`, `div`:
/// `x / y`, `mul_add`: the fused `a · b + acc` of the products, `Storage::pinned_mul_add`,
/// `cmp`: `partial_cmp`, `count`: an element count as a scalar); `k` is the float kit.
#[non_exhaustive]
#[allow(missing_docs)] // the fields are described above, once for all variants
pub enum RefOp<A, D> {
    /// `a + b`.
    Add { a: usize, b: usize },
    /// `a - b`.
    Sub { a: usize, b: usize, sub: fn(A, A) -> A },
    /// `a * b`.
    Mul { a: usize, b: usize, mul: fn(A, A) -> A },
    /// `a / b`.
    Div { a: usize, b: usize, div: fn(A, A) -> A, mul: fn(A, A) -> A, sub: fn(A, A) -> A },
    /// `a * a`.
    Square { a: usize, mul: fn(A, A) -> A },
    /// `a * factor`.
    Scale { a: usize, factor: A, mul: fn(A, A) -> A },
    /// `a + constant`.
    Offset { a: usize, constant: A },
    /// `a / divisor`.
    DivConst { a: usize, divisor: A, div: fn(A, A) -> A },
    /// `max(a, b)` (`max`) or `min(a, b)`.
    Select { a: usize, b: usize, max: bool, cmp: fn(&A, &A) -> Option<Ordering> },
    /// A pointwise function of `a`.
    Unary { a: usize, f: Unary<A> },
    /// `a · b`.
    MatMul { a: usize, b: usize, mul_add: fn(A, A, A) -> A },
    /// `x(data) · w`, `x` having `rows` rows.
    MatMulData { w: usize, rows: usize, x: TensorAccessor<A, D>, mul_add: fn(A, A, A) -> A },
    /// `aᵀ`.
    Transpose { a: usize },
    /// `a` under the dims `dims`.
    Reshape { a: usize, dims: Vec<usize> },
    /// Output axis `k` is axis `perm[k]` of `a`.
    Permute { a: usize, perm: Vec<usize> },
    /// The `parts` joined along `axis`, in order.
    Concat { parts: Vec<usize>, axis: usize },
    /// `len` entries of `a` along `axis` from `start`.
    Slice { a: usize, axis: usize, start: usize, len: usize },
    /// The sum of every element.
    Sum { a: usize },
    /// The mean of every element.
    Mean { a: usize, div: fn(A, A) -> A, count: fn(usize) -> Option<A> },
    /// The sum along `axis`.
    SumAxis { a: usize, axis: usize },
    /// The mean along `axis`.
    MeanAxis { a: usize, axis: usize, div: fn(A, A) -> A, count: fn(usize) -> Option<A> },
    /// `x + b` for every row `b`.
    AddRow { x: usize, b: usize },
    /// Softmax over the last axis.
    Softmax { a: usize, k: FloatKit<A> },
    /// Log-softmax over the last axis.
    LogSoftmax { a: usize, k: FloatKit<A> },
    /// Layer normalisation of the rows of `x`.
    LayerNorm { x: usize, gain: usize, bias: usize, eps: A, k: FloatKit<A> },
    /// Mean softmax cross-entropy against labels from the data.
    CrossEntropy { logits: usize, labels: LabelAccessor<D>, k: FloatKit<A> },
    /// Mean squared error.
    Mse { a: usize, b: usize, k: FloatKit<A> },
    /// Rows of `table` looked up by ids from the data, one per row of an output `[lead…, dim]`.
    GatherRows { table: usize, ids: LabelAccessor<D>, lead: Vec<usize> },
    /// `value` where `mask(data)[i mod mask.len()]` holds, `a[i]` elsewhere.
    MaskedFill { a: usize, mask: MaskAccessor<D>, value: A },
    /// `value` at `[…, i, j]` with `j > i`, `a` elsewhere.
    CausalMask { a: usize, value: A },
    /// `a * m` with the dropout mask `m` of probability `p` drawn from the seed in the data;
    /// `factor` is `FromPrimitive::from_f64` (SEMANTICS §8.3).
    Dropout { a: usize, p: f64, seed: fn(&D) -> u64, factor: fn(f64) -> Option<A>, mul: fn(A, A) -> A },
    /// A copy of a data tensor of dims `dims`.
    DataTensor { dims: Vec<usize>, x: TensorAccessor<A, D> },
    /// The convolution of `x` (`[n, c_in, spatial…]`) with `w` (`[c_out, c_in, kernel…]`): one
    /// stride, padding and dilation per spatial axis (one or two).
    Conv {
        x: usize,
        w: usize,
        stride: Vec<usize>,
        padding: Vec<usize>,
        dilation: Vec<usize>,
        mul_add: fn(A, A, A) -> A,
    },
    /// Max pooling of `x` (`[n, c, spatial…]`): one kernel size, stride and padding per spatial
    /// axis.
    MaxPool {
        x: usize,
        kernel: Vec<usize>,
        stride: Vec<usize>,
        padding: Vec<usize>,
        cmp: fn(&A, &A) -> Option<Ordering>,
    },
    /// Average pooling of `x`, the padding not counted.
    AvgPool {
        x: usize,
        kernel: Vec<usize>,
        stride: Vec<usize>,
        padding: Vec<usize>,
        div: fn(A, A) -> A,
        count: fn(usize) -> Option<A>,
    },
}

impl<A, D> RefOp<A, D> {
    /// `a - b`.
    #[must_use]
    pub fn sub(a: usize, b: usize) -> Self
    where
        A: Sub<Output = A>,
    {
        RefOp::Sub { a, b, sub: |x, y| x - y }
    }

    /// `a * b`.
    #[must_use]
    pub fn mul(a: usize, b: usize) -> Self
    where
        A: Clone + 'static + Mul<Output = A>,
    {
        RefOp::Mul { a, b, mul: super::tensor::pinned_product }
    }

    /// `a / b`.
    #[must_use]
    pub fn div(a: usize, b: usize) -> Self
    where
        A: Clone + 'static + Div<Output = A> + Mul<Output = A> + Sub<Output = A>,
    {
        RefOp::Div { a, b, div: |x, y| x / y, mul: super::tensor::pinned_product, sub: |x, y| x - y }
    }

    /// `a * a`.
    #[must_use]
    pub fn square(a: usize) -> Self
    where
        A: Clone + 'static + Mul<Output = A>,
    {
        RefOp::Square { a, mul: super::tensor::pinned_product }
    }

    /// `a * factor`.
    pub fn scale(a: usize, factor: A) -> Self
    where
        A: Mul<Output = A>,
    {
        RefOp::Scale { a, factor, mul: |x, y| x * y }
    }

    /// `a + constant`.
    pub fn offset(a: usize, constant: A) -> Self {
        RefOp::Offset { a, constant }
    }

    /// `a / divisor`.
    pub fn div_const(a: usize, divisor: A) -> Self
    where
        A: Div<Output = A>,
    {
        RefOp::DivConst { a, divisor, div: |x, y| x / y }
    }

    /// `max(a, b)` or `min(a, b)`.
    #[must_use]
    pub fn select(a: usize, b: usize, max: bool) -> Self
    where
        A: PartialOrd,
    {
        RefOp::Select { a, b, max, cmp: A::partial_cmp }
    }

    /// `a · b`.
    #[must_use]
    pub fn matmul(a: usize, b: usize) -> Self
    where
        A: crate::Scalar + Mul<Output = A>,
    {
        RefOp::MatMul { a, b, mul_add: A::pinned_mul_add }
    }

    /// `x(data) · w`.
    pub fn matmul_data(w: usize, rows: usize, x: TensorAccessor<A, D>) -> Self
    where
        A: crate::Scalar + Mul<Output = A>,
    {
        RefOp::MatMulData { w, rows, x, mul_add: A::pinned_mul_add }
    }

    /// The convolution of `x` with `w` (one entry per spatial axis in each list).
    pub fn conv(x: usize, w: usize, stride: Vec<usize>, padding: Vec<usize>, dilation: Vec<usize>) -> Self
    where
        A: crate::Scalar + Mul<Output = A>,
    {
        RefOp::Conv { x, w, stride, padding, dilation, mul_add: A::pinned_mul_add }
    }

    /// Max pooling of `x` (one entry per spatial axis in each list).
    pub fn max_pool(x: usize, kernel: Vec<usize>, stride: Vec<usize>, padding: Vec<usize>) -> Self
    where
        A: PartialOrd,
    {
        RefOp::MaxPool { x, kernel, stride, padding, cmp: A::partial_cmp }
    }

    /// Average pooling of `x` (one entry per spatial axis in each list).
    pub fn avg_pool(x: usize, kernel: Vec<usize>, stride: Vec<usize>, padding: Vec<usize>) -> Self
    where
        A: Div<Output = A> + FromPrimitive,
    {
        RefOp::AvgPool { x, kernel, stride, padding, div: |p, q| p / q, count: A::from_usize }
    }

    /// The mean of every element of `a`.
    #[must_use]
    pub fn mean(a: usize) -> Self
    where
        A: Div<Output = A> + FromPrimitive,
    {
        RefOp::Mean { a, div: |x, y| x / y, count: A::from_usize }
    }

    /// The mean of `a` along `axis`.
    #[must_use]
    pub fn mean_axis(a: usize, axis: usize) -> Self
    where
        A: Div<Output = A> + FromPrimitive,
    {
        RefOp::MeanAxis { a, axis, div: |x, y| x / y, count: A::from_usize }
    }
}

impl<A> Unary<A> {
    /// `-x`.
    #[must_use]
    pub fn neg() -> Self
    where
        A: Neg<Output = A> + Sub<Output = A>,
    {
        Unary::Neg { neg: |x| -x, sub: |x, y| x - y }
    }

    /// `relu(x)`.
    #[must_use]
    pub fn relu() -> Self
    where
        A: PartialOrd,
    {
        Unary::Relu { cmp: A::partial_cmp }
    }
}
