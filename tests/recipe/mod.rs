//! The random graphs of the property tests (shared by `tests/equivalence.rs` and
//! `tests/reference.rs`): a *recipe* of small choice integers interpreted deterministically into
//! a graph of every built-in op, opaque nodes and a user compact op with uniforms, with inputs and
//! seeds drawn from an adversarial mix of values; and the bit comparison of packs.
// Each test crate that says `mod recipe;` uses only part of it.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use core::fmt::Debug;
use core::num::Wrapping;
use core::ops::{Div, Mul, Neg, Sub};

use exactgrad::{ops, CompactOp, Contrib, Contributions, Dims, RawGraph, RawNode, RawTensor, SavedValues, Scalar};
use num_traits::FromPrimitive;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Scalars under test
// ---------------------------------------------------------------------------------------------

/// What the generator and the checks need of a scalar.
pub trait TestScalar:
    Scalar
    + Copy
    + Debug
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + Div<Output = Self>
    + PartialOrd
    + FromPrimitive
{
    /// The encoding of the value (storage equality is equality of this).
    fn bits(self) -> u64;
    /// Ordinary values (including both zeros).
    fn ordinary() -> Vec<Self>;
    /// Adversarial values: NaN payloads, infinities, subnormals, extremes.
    fn special() -> Vec<Self>;
    /// A small integer as a scalar.
    fn small(i: i8) -> Self;
    /// The NaN an opaque node puts in its forward.
    fn nan_forward() -> Self;
    /// The NaN an opaque node puts in its VJP.
    fn nan_vjp() -> Self;
    /// `tanh(a)` (`exp(a)` when `exp`) for floats; a built-in op that fits for other scalars.
    fn transcendental(exp: bool, a: usize) -> RawNode<Self, ()>;
    /// For floats, one of `sigmoid`, `softplus`, `log`, `sqrt`, `gelu`, `silu` (by `which`); a built-in op
    /// that fits for other scalars.
    fn elementary(which: u8, a: usize) -> RawNode<Self, ()>;
    /// `div(a, b)` for floats; `mul(a, b)` for integers (whose `/` panics on a zero divisor).
    fn quotient(a: usize, b: usize) -> RawNode<Self, ()>;
    /// For floats, one of `softmax`, `log_softmax`, `layer_norm` (by `which`) on positions whose
    /// shapes allow it; `None` when no position fits (and always for other scalars).
    fn rowwise(which: u8, dims: &[Dims], a: usize, b: usize) -> Option<RawNode<Self, ()>>;
}

/// The row-wise float ops (over the last axis), by `which`, on positions that fit.
pub fn float_rowwise<T: TestScalar + num_traits::Float>(
    which: u8,
    dims: &[Dims],
    a: usize,
    b: usize,
) -> Option<RawNode<T, ()>> {
    let rows: Vec<usize> = (0..dims.len()).filter(|&q| dims[q].as_slice().last().is_some_and(|&n| n > 0)).collect();
    if which % 3 == 2 {
        // layer_norm(x, gain, bias): x is m×n, gain and bias have n elements (maybe one position).
        let mut triples = Vec::new();
        for (x, &dx) in dims.iter().enumerate() {
            let Some((_, n)) = matrix(dx) else { continue };
            let vs: Vec<usize> = (0..dims.len()).filter(|&q| dims[q].as_slice() == [n]).collect();
            for &g in &vs {
                for &bias in &vs {
                    triples.push((x, g, bias));
                }
            }
        }
        if !triples.is_empty() {
            let (x, g, bias) = triples[(a * 7 + b) % triples.len()];
            return Some(RawNode::compact(ops::LayerNorm::new(x, g, bias, T::from_f64(1e-5)?)));
        }
    }
    let x = *rows.get(a % rows.len().max(1))?;
    Some(if which % 3 == 1 {
        RawNode::compact(ops::LogSoftmax::new(x))
    } else {
        RawNode::compact(ops::Softmax::new(x))
    })
}

/// The float ops without an integer counterpart, by `which`.
pub fn float_elementary<T: TestScalar + num_traits::Float>(which: u8, a: usize) -> RawNode<T, ()> {
    match which % 6 {
        0 => RawNode::compact(ops::Sigmoid::new(a)),
        1 => RawNode::compact(ops::Softplus::new(a)),
        2 => RawNode::compact(ops::Log::new(a)),
        3 => RawNode::compact(ops::Sqrt::new(a)),
        4 => RawNode::compact(ops::Gelu::new(a)),
        _ => RawNode::compact(ops::Silu::new(a)),
    }
}

impl TestScalar for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn ordinary() -> Vec<Self> {
        vec![0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 0.1, -0.75, f64::powi(2.0, -53), 1e16, -1e-3]
    }
    fn special() -> Vec<Self> {
        vec![
            f64::from_bits(0x7ff8_0000_0000_0001),
            f64::from_bits(0x7ff8_0000_0000_0002),
            f64::from_bits(0xfff8_0000_0000_0000), // negative quiet NaN
            f64::from_bits(0x7ff0_0000_0000_0001), // signalling pattern
            f64::from_bits(0xfff4_0000_0000_00ab), // negative signalling pattern with payload
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(1), // smallest subnormal
            -f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff), // largest subnormal
            f64::from(f32::from_bits(1)),
            f64::MIN_POSITIVE,
            1e-300,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
            0.0,
            -0.0,
        ]
    }
    fn small(i: i8) -> Self {
        f64::from(i)
    }
    fn nan_forward() -> Self {
        f64::from_bits(0x7ff8_0000_0000_0bad)
    }
    fn nan_vjp() -> Self {
        f64::from_bits(0xfff8_0000_0000_0042)
    }
    fn transcendental(exp: bool, a: usize) -> RawNode<Self, ()> {
        if exp {
            RawNode::compact(ops::Exp::new(a))
        } else {
            RawNode::compact(ops::Tanh::new(a))
        }
    }
    fn elementary(which: u8, a: usize) -> RawNode<Self, ()> {
        float_elementary(which, a)
    }
    fn quotient(a: usize, b: usize) -> RawNode<Self, ()> {
        RawNode::compact(ops::Div::new(a, b))
    }
    fn rowwise(which: u8, dims: &[Dims], a: usize, b: usize) -> Option<RawNode<Self, ()>> {
        float_rowwise(which, dims, a, b)
    }
}

impl TestScalar for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn ordinary() -> Vec<Self> {
        vec![0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 0.1, -0.75, f32::powi(2.0, -24), 1e8, -1e-3]
    }
    fn special() -> Vec<Self> {
        vec![
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0x7fc0_0002),
            f32::from_bits(0xffc0_0000), // negative quiet NaN
            f32::from_bits(0x7f80_0001), // signalling pattern
            f32::from_bits(0xffa0_00ab), // negative signalling pattern with payload
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1), // smallest subnormal
            -f32::from_bits(1),
            f32::from_bits(0x007f_ffff), // largest subnormal
            f32::MIN_POSITIVE,
            1e-38,
            1e38,
            -1e38,
            f32::MAX,
            f32::MIN,
            0.0,
            -0.0,
        ]
    }
    fn small(i: i8) -> Self {
        f32::from(i)
    }
    fn nan_forward() -> Self {
        f32::from_bits(0x7fc0_0bad)
    }
    fn nan_vjp() -> Self {
        f32::from_bits(0xffc0_0042)
    }
    fn transcendental(exp: bool, a: usize) -> RawNode<Self, ()> {
        if exp {
            RawNode::compact(ops::Exp::new(a))
        } else {
            RawNode::compact(ops::Tanh::new(a))
        }
    }
    fn elementary(which: u8, a: usize) -> RawNode<Self, ()> {
        float_elementary(which, a)
    }
    fn quotient(a: usize, b: usize) -> RawNode<Self, ()> {
        RawNode::compact(ops::Div::new(a, b))
    }
    fn rowwise(which: u8, dims: &[Dims], a: usize, b: usize) -> Option<RawNode<Self, ()>> {
        float_rowwise(which, dims, a, b)
    }
}

/// An exact scalar (wrapping integer arithmetic is associative and commutative, `x + 0 == x`).
pub type Int = Wrapping<i64>;

impl TestScalar for Int {
    fn bits(self) -> u64 {
        u64::from_ne_bytes(self.0.to_ne_bytes())
    }
    fn ordinary() -> Vec<Self> {
        [0, 1, -1, 2, -3, 5, 7, -8].into_iter().map(Wrapping).collect()
    }
    fn special() -> Vec<Self> {
        [i64::MIN, i64::MAX, 1 << 40, -(1 << 40), 0].into_iter().map(Wrapping).collect()
    }
    fn small(i: i8) -> Self {
        Wrapping(i64::from(i))
    }
    fn nan_forward() -> Self {
        Wrapping(i64::MIN)
    }
    fn nan_vjp() -> Self {
        Wrapping(i64::MAX)
    }
    fn transcendental(exp: bool, a: usize) -> RawNode<Self, ()> {
        if exp {
            RawNode::compact(ops::Relu::new(a))
        } else {
            RawNode::compact(ops::Neg::new(a))
        }
    }
    fn elementary(which: u8, a: usize) -> RawNode<Self, ()> {
        Self::transcendental(which.is_multiple_of(2), a)
    }
    fn quotient(a: usize, b: usize) -> RawNode<Self, ()> {
        RawNode::compact(ops::Mul::new(a, b))
    }
    fn rowwise(_: u8, _: &[Dims], _: usize, _: usize) -> Option<RawNode<Self, ()>> {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Bit comparison
// ---------------------------------------------------------------------------------------------

/// Compares two packs element by element on their encodings; the error names the first position
/// and element that differ.
pub fn compare_bits<'t, T: TestScalar>(
    what: &str,
    a: impl IntoIterator<Item = &'t RawTensor<T>>,
    b: impl IntoIterator<Item = &'t RawTensor<T>>,
) -> Result<(), String> {
    let a: Vec<&RawTensor<T>> = a.into_iter().collect();
    let b: Vec<&RawTensor<T>> = b.into_iter().collect();
    if a.len() != b.len() {
        return Err(format!("{what}: packs of {} and {} positions", a.len(), b.len()));
    }
    for (p, (x, y)) in a.iter().zip(b).enumerate() {
        if x.dims() != y.dims() {
            return Err(format!("{what}: position {p} has shapes {} and {}", x.dims(), y.dims()));
        }
        for (i, (u, v)) in x.data().iter().zip(y.data()).enumerate() {
            if u.bits() != v.bits() {
                return Err(format!(
                    "{what}: position {p}, element {i}: {u:?} (bits {:#018x}) vs {v:?} (bits {:#018x})\n  left  {x:?}\n  right {y:?}",
                    u.bits(),
                    v.bits()
                ));
            }
        }
    }
    Ok(())
}

/// Panics unless `a` and `b` have the same number of positions, the same shapes and the same
/// encoding (`to_bits`) at every element; the message gives the position and element.
pub fn assert_bits_eq<'t, T: TestScalar>(
    a: impl IntoIterator<Item = &'t RawTensor<T>>,
    b: impl IntoIterator<Item = &'t RawTensor<T>>,
) {
    let a: Vec<&RawTensor<T>> = a.into_iter().collect();
    let b: Vec<&RawTensor<T>> = b.into_iter().collect();
    if let Err(m) = compare_bits("packs differ", a, b) {
        panic!("{m}");
    }
}

// ---------------------------------------------------------------------------------------------
// Recipes and their interpretation
// ---------------------------------------------------------------------------------------------

/// The shapes inputs and opaque nodes may take (other shapes arise from matmul, e.g. 3×3, and from
/// concat, slice, `gather_rows`, the convolutions and the poolings). Ranks 3 and 4 give `permute`
/// more than a transpose to do, and the convolutions (`[n, c, l]`, `[n, c, h, w]`) and poolings
/// something to slide over; `[3, 1, 2]` and `[3, 2, 1]` are batches of matrices that batched
/// `matmul` pairs with each other and with `[2, n]` and `[1, n]` matrices.
pub const SHAPES: [&[usize]; 12] = [
    &[4],
    &[2, 2],
    &[2, 3],
    &[3, 2],
    &[],
    &[2],
    &[3],
    &[3, 1, 2],
    &[1, 2, 1, 2],
    &[2, 2, 3, 3],
    &[1, 2, 5],
    &[3, 2, 1],
];

/// Number of node kinds: 32 built-in kinds (kind 5 is `matmul`, batched ones included; kind 17
/// picks among five float ops, kind 20 among the row-wise float ops; 22 to 25 are permute, concat,
/// slice and `gather_rows`; 26 a convolution, 27 a pooling, 28 `masked_fill`, 29 `causal_mask`, 30
/// a concat of one to five parts, 31 a dropout), 3 opaque kinds and a user compact op with
/// uniforms (twice as likely as the others).
pub const KINDS: u8 = 37;
/// Built-in kinds only (0..BUILTIN).
pub const BUILTIN: u8 = 32;
/// The first kind of the user compact op [`Uniforms`].
pub const UNIFORMS: u8 = 35;

/// The flags `masked_fill` nodes read: a prefix of the length their operand needs (see
/// [`MASKS`]).
pub const MASK: [bool; 36] = {
    let mut m = [false; 36];
    let mut i = 0;
    while i < 36 {
        m[i] = (i * 5 + 2) % 7 < 3;
        i += 1;
    }
    m
};

fn mask_prefix<const N: usize>(_: &()) -> &[bool] {
    &MASK[..N]
}

macro_rules! masks {
    ($($n:literal)*) => { [$(mask_prefix::<$n> as ops::MaskAccessor<()>),*] };
}

/// `MASKS[n]` reads the first `n` flags of [`MASK`].
pub const MASKS: [ops::MaskAccessor<()>; 37] =
    masks!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36);

/// The seeds dropout nodes read (the data is `()`): two, so two nodes may share a mask or not.
pub fn dropout_seed(_: &()) -> u64 {
    0x5EED_0001
}

/// The other dropout seed.
pub fn dropout_seed_b(_: &()) -> u64 {
    u64::MAX
}

/// The drop probabilities of the recipes: 0 (the identity in value), a quarter, a half, nearly 1.
pub const DROPOUT_P: [f64; 4] = [0.0, 0.25, 0.5, 0.9];

/// The ids `gather_rows` nodes look up (row 1 twice: its VJP scatter-adds two cotangent rows).
pub const GATHER_IDS: [usize; 3] = [1, 0, 1];

pub fn gather_ids(_: &()) -> &[usize] {
    &GATHER_IDS
}

/// The `n`-th permutation of `0..rank` (any `n`; taken modulo `rank!` digit by digit).
pub fn nth_permutation(rank: usize, mut n: usize) -> Vec<usize> {
    let mut pool: Vec<usize> = (0..rank).collect();
    let mut perm = Vec::with_capacity(rank);
    while !pool.is_empty() {
        let k = n % pool.len();
        n /= pool.len();
        perm.push(pool.remove(k));
    }
    perm
}

/// Choices of one node: kind, first parent, second parent, extra (shape, factor, target…).
pub type NodeChoice = (u8, u8, u8, u8);

/// A random case: everything is a small integer, interpreted by [`Case::build`].
#[derive(Clone, Debug)]
pub struct Recipe {
    /// Input shapes (indices into [`SHAPES`]).
    pub inputs: Vec<u8>,
    /// One entry per node.
    pub nodes: Vec<NodeChoice>,
    /// Element draws for inputs, scale factors, seed packs and the single-output seed (cycled).
    pub values: Vec<u8>,
    /// Draw only ordinary values (no NaN, infinity or subnormal).
    pub tame: bool,
    /// The single-output position (modulo the number of positions).
    pub output: u16,
}

pub fn recipe() -> impl Strategy<Value = Recipe> {
    (
        prop::collection::vec(0u8..SHAPES.len() as u8, 1..=3),
        prop::collection::vec(any::<NodeChoice>(), 1..=40),
        prop::collection::vec(any::<u8>(), 0..=256),
        prop::bool::weighted(0.25),
        any::<u16>(),
    )
        .prop_map(|(inputs, nodes, values, tame, output)| Recipe { inputs, nodes, values, tame, output })
}

/// Deterministic source of values from a recipe.
pub struct Draw<'r, T> {
    pub values: &'r [u8],
    pub next: usize,
    pub tame: bool,
    pub ordinary: Vec<T>,
    pub special: Vec<T>,
}

impl<'r, T: TestScalar> Draw<'r, T> {
    pub fn new(r: &'r Recipe) -> Self {
        Draw { values: &r.values, next: 0, tame: r.tame, ordinary: T::ordinary(), special: T::special() }
    }

    pub fn byte(&mut self) -> u8 {
        if self.values.is_empty() {
            return 0;
        }
        let v = self.values[self.next % self.values.len()];
        self.next += 1;
        v
    }

    /// A value: half ordinary, half special (unless tame); draw 0 is `+0`.
    pub fn scalar(&mut self) -> T {
        let v = usize::from(self.byte());
        if self.tame || v < 128 {
            self.ordinary[v % self.ordinary.len()]
        } else {
            self.special[v % self.special.len()]
        }
    }

    /// A uniform for [`Uniforms`]: mostly zeros of both signs (runs of `-0` next to runs of `+0`
    /// are where a value-equality history would go wrong), `±1`, two NaN payloads, or any value.
    pub fn uniform(&mut self) -> T {
        match self.byte() % 8 {
            0 => T::zero(),
            1 | 2 => -T::zero(),
            3 => T::small(1),
            4 => T::small(-1),
            5 => self.special[0],
            6 => self.special[1],
            _ => self.scalar(),
        }
    }

    pub fn tensor(&mut self, dims: Dims) -> RawTensor<T> {
        RawTensor::from_fn(dims, |_| self.scalar())
    }

    /// A seed tensor: zeros, `-0`, one repeated value, or independent values.
    pub fn seed(&mut self, dims: Dims) -> RawTensor<T> {
        match self.byte() % 5 {
            0 => RawTensor::zeros(dims),
            1 => RawTensor::full(dims, -T::zero()),
            2 => {
                let v = self.scalar();
                RawTensor::full(dims, v)
            }
            _ => self.tensor(dims),
        }
    }
}

pub fn dims_of(shape: &[usize]) -> Dims {
    Dims::new(shape).unwrap()
}

pub fn matrix(d: Dims) -> Option<(usize, usize)> {
    match *d.as_slice() {
        [r, c] => Some((r, c)),
        _ => None,
    }
}

/// A position of the same shape as `pa`, chosen by `b`; one time in four it is `pa` itself.
pub fn same_shape(dims: &[Dims], pa: usize, b: usize) -> usize {
    let candidates: Vec<usize> = (0..dims.len()).filter(|&q| dims[q] == dims[pa]).collect();
    if b.is_multiple_of(4) {
        pa
    } else {
        candidates[b % candidates.len()]
    }
}

/// A built graph with its inputs.
pub struct Case<T: TestScalar> {
    pub graph: RawGraph<T, ()>,
    pub inputs: Vec<RawTensor<T>>,
}

/// `out[i] = f(x[i mod n], i)` for an output of `numel` elements.
pub fn spread<T: TestScalar>(x: &RawTensor<T>, dims: Dims, f: impl Fn(T, usize) -> T) -> RawTensor<T> {
    let n = x.numel();
    RawTensor::from_fn(dims, |i| f(x.data()[i % n], i))
}

/// The VJP of [`spread`] at its parent: `grad[j] = ((0 + h(g[j], j)) + h(g[j + n], j + n)) + …`.
pub fn gather<T: TestScalar>(g: &RawTensor<T>, parent: Dims, h: impl Fn(T, usize) -> T) -> RawTensor<T> {
    let n = parent.numel();
    RawTensor::from_fn(parent, |j| (j..g.numel()).step_by(n).fold(T::zero(), |acc, i| acc + h(g.data()[i], i)))
}

impl<T: TestScalar> Case<T> {
    /// Interprets a recipe. With `builtin_only`, only built-in ops are used (no opaque node, no
    /// [`Uniforms`]).
    pub fn build(r: &Recipe, draw: &mut Draw<'_, T>, builtin_only: bool) -> Self {
        let input_dims: Vec<Dims> = r.inputs.iter().map(|&s| dims_of(SHAPES[usize::from(s) % SHAPES.len()])).collect();
        let inputs: Vec<RawTensor<T>> = input_dims.iter().map(|&d| draw.tensor(d)).collect();
        let mut graph = RawGraph::new(input_dims);
        for &(kind, a, b, extra) in &r.nodes {
            let kind = if builtin_only { kind % BUILTIN } else { kind % KINDS };
            let (a, b) = (usize::from(a), usize::from(b));
            if kind >= UNIFORMS {
                // 0 to 3 `fill(u0)` nodes, then one node of the drawn variant: the history gets
                // runs of equal uniforms, and the last node (run first) writes its support in
                // the middle of such a run.
                let pa = a % graph.dims().len();
                let op = Uniforms {
                    parents: [pa, same_shape(graph.dims(), pa, b)],
                    variant: extra,
                    u: [draw.uniform(), draw.uniform()],
                };
                let fills = extra >> 6;
                for i in 0..=fills {
                    if graph.nodes().len() < r.nodes.len() {
                        let variant = if i == fills { op.variant } else { 0 };
                        graph.push(RawNode::compact(Uniforms { variant, ..op.clone() })).unwrap();
                    }
                }
            } else if graph.nodes().len() < r.nodes.len() {
                graph.push(Self::node(&graph, draw, kind, a, b, extra)).unwrap();
            }
        }
        Case { graph, inputs }
    }

    /// One node of the given kind reading positions of the graph so far.
    pub fn node(
        graph: &RawGraph<T, ()>,
        draw: &mut Draw<'_, T>,
        kind: u8,
        a: usize,
        b: usize,
        extra: u8,
    ) -> RawNode<T, ()> {
        let dims = graph.dims();
        let len = dims.len();
        let pa = a % len;
        let same = || same_shape(dims, pa, b);
        let fallback = || T::transcendental(extra.is_multiple_of(2), pa);
        match kind {
            0 => RawNode::compact(ops::Add::new(pa, same())),
            1 => RawNode::compact(ops::Sub::new(pa, same())),
            2 => RawNode::compact(ops::Mul::new(pa, same())),
            3 => RawNode::compact(ops::Neg::new(pa)),
            // A constant times or plus a value (`scale`, `offset`).
            4 if extra.is_multiple_of(2) => RawNode::compact(ops::Scale::new(pa, draw.scalar())),
            4 => RawNode::compact(ops::Offset::new(pa, draw.scalar())),
            5 => {
                // All pairs (x, y) the rule accepts: x: m×k, y: k×n (squares paired with themselves
                // count twice), and the batched x: [b, m, k] with y: [k, n] or [b, k, n].
                let mut pairs = Vec::new();
                for (x, &dx) in dims.iter().enumerate() {
                    for (y, &dy) in dims.iter().enumerate() {
                        if exactgrad::spec::rules::matmul(dx.as_slice(), dy.as_slice()).is_ok() {
                            pairs.push((x, y));
                            if x == y {
                                pairs.push((x, y));
                            }
                        }
                    }
                }
                if pairs.is_empty() {
                    return fallback();
                }
                let (x, y) = pairs[(a * 7 + b) % pairs.len()];
                RawNode::compact(ops::MatMul::new(x, y))
            }
            6 => {
                let ms: Vec<usize> = (0..len).filter(|&q| matrix(dims[q]).is_some()).collect();
                if ms.is_empty() {
                    return fallback();
                }
                RawNode::compact(ops::Transpose::new(ms[a % ms.len()]))
            }
            7 => RawNode::compact(ops::Sum::new(pa)),
            8 => RawNode::compact(ops::Mean::new(pa)),
            9 => {
                let mut pairs = Vec::new();
                for (x, &dx) in dims.iter().enumerate() {
                    let Some((_, c)) = matrix(dx) else { continue };
                    for (y, &dy) in dims.iter().enumerate() {
                        if dy.as_slice() == [c] {
                            pairs.push((x, y));
                        }
                    }
                }
                if pairs.is_empty() {
                    return fallback();
                }
                let (x, y) = pairs[(a * 7 + b) % pairs.len()];
                RawNode::compact(ops::AddRow::new(x, y))
            }
            10 => RawNode::compact(ops::Relu::new(pa)),
            11 => T::transcendental(false, pa),
            12 => T::transcendental(true, pa),
            13 => RawNode::compact(ops::Square::new(pa)),
            14 => T::quotient(pa, same()),
            15 => RawNode::compact(ops::Max::new(pa, same())),
            16 => RawNode::compact(ops::Min::new(pa, same())),
            17 => T::elementary(extra, pa),
            18 | 19 => {
                let rank = dims[pa].rank();
                if rank == 0 {
                    return fallback();
                }
                let axis = usize::from(extra) % rank;
                if kind == 18 {
                    RawNode::compact(ops::SumAxis::new(pa, axis))
                } else {
                    RawNode::compact(ops::MeanAxis::new(pa, axis))
                }
            }
            20 => T::rowwise(extra, dims, a, b).unwrap_or_else(fallback),
            21 => {
                // Any listed shape of the same element count (or a vector of it).
                let n = dims[pa].numel();
                let targets: Vec<Dims> =
                    SHAPES.iter().map(|s| dims_of(s)).filter(|d| d.numel() == n).chain([Dims::vector(n)]).collect();
                RawNode::compact(ops::Reshape::new(pa, targets[usize::from(extra) % targets.len()]))
            }
            22 => RawNode::compact(ops::Permute::new(pa, &nth_permutation(dims[pa].rank(), usize::from(extra)))),
            23 => {
                // concat(pa, y, axis) for every y (pa itself included) agreeing with pa off the axis.
                let sa = dims[pa].as_slice();
                let mut pairs = Vec::new();
                for (y, &dy) in dims.iter().enumerate() {
                    let sy = dy.as_slice();
                    if sy.len() != sa.len() {
                        continue;
                    }
                    for axis in 0..sa.len() {
                        if (0..sa.len()).all(|k| k == axis || sa[k] == sy[k]) {
                            pairs.push((y, axis));
                        }
                    }
                }
                if pairs.is_empty() {
                    return fallback();
                }
                let (y, axis) = pairs[(b * 7 + usize::from(extra)) % pairs.len()];
                RawNode::compact(ops::Concat::new(pa, y, axis))
            }
            24 => {
                // A non-empty range along one axis.
                let s = dims[pa].as_slice();
                if s.is_empty() || s[usize::from(extra) % s.len()] == 0 {
                    return fallback();
                }
                let axis = usize::from(extra) % s.len();
                let n = s[axis];
                let start = b % n;
                let len = 1 + (usize::from(extra) / 4) % (n - start);
                RawNode::compact(ops::Slice::new(pa, axis, start, len))
            }
            25 => {
                // Tables with at least two rows (GATHER_IDS looks up rows 0 and 1).
                let tables: Vec<usize> =
                    (0..len).filter(|&q| matrix(dims[q]).is_some_and(|(rows, _)| rows >= 2)).collect();
                if tables.is_empty() {
                    return fallback();
                }
                let table = tables[a % tables.len()];
                if extra.is_multiple_of(2) {
                    RawNode::compact(ops::GatherRows::new(table, gather_ids, GATHER_IDS.len()))
                } else {
                    // The embedding form: the ids as a [3, 1] batch, an output [3, 1, d].
                    RawNode::compact(ops::GatherRows::with_lead(table, gather_ids, Dims::matrix(3, 1)))
                }
            }
            28 => {
                // A mask of the operand's trailing axes (by `extra`), repeated over the others; a
                // fill value of either kind (NaN payloads and infinities among the special ones).
                let d = dims[pa].as_slice();
                let lens: Vec<usize> =
                    (0..=d.len()).map(|r| d[r..].iter().product::<usize>()).filter(|&n| n < MASKS.len()).collect();
                let Some(&n) = lens.get(usize::from(extra) % lens.len().max(1)) else { return fallback() };
                RawNode::compact(ops::MaskedFill::new(pa, MASKS[n], draw.scalar()))
            }
            29 => {
                let squares: Vec<usize> =
                    (0..len).filter(|&q| matches!(dims[q].as_slice(), [.., r, c] if r == c)).collect();
                if squares.is_empty() {
                    return fallback();
                }
                RawNode::compact(ops::CausalMask::new(squares[a % squares.len()], draw.scalar()))
            }
            26 => conv(dims, a, b, extra).unwrap_or_else(fallback),
            27 => pool(dims, a, extra).unwrap_or_else(fallback),
            30 => concat_parts(dims, pa, b, extra).unwrap_or_else(fallback),
            31 => {
                let seed = if extra & 4 == 0 { dropout_seed } else { dropout_seed_b };
                RawNode::compact(ops::Dropout::new(pa, DROPOUT_P[usize::from(extra) % 4], seed))
            }
            32 => Self::opaque_ordinary(dims, pa, extra),
            33 => Self::opaque_bias(dims, pa, b % len, extra),
            _ => Self::opaque_nan(dims, pa, b % len, extra),
        }
    }

    /// `y[i] = 3 * x[i mod n]`, with its exact VJP (zeros at every other position).
    pub fn opaque_ordinary(prefix: &[Dims], pa: usize, extra: u8) -> RawNode<T, ()> {
        let out = dims_of(SHAPES[usize::from(extra) % SHAPES.len()]);
        let prefix = prefix.to_vec();
        RawNode::opaque(
            "opaque_scale3",
            out,
            vec![pa],
            move |ctx, ()| spread(&ctx[pa], out, |x, _| T::small(3) * x),
            move |_, (), g| {
                prefix
                    .iter()
                    .enumerate()
                    .map(|(q, &d)| if q == pa { gather(g, d, |v, _| v * T::small(3)) } else { RawTensor::zeros(d) })
                    .collect()
            },
        )
    }

    /// `y[i] = x[i mod n] + 1`; its VJP passes the cotangent through to `x`, puts `full(1)` at
    /// `target` whatever the cotangent (added to the pass-through when `target == x`), and `-0`
    /// everywhere else.
    pub fn opaque_bias(prefix: &[Dims], pa: usize, target: usize, extra: u8) -> RawNode<T, ()> {
        let out = dims_of(SHAPES[usize::from(extra) % SHAPES.len()]);
        let prefix = prefix.to_vec();
        RawNode::opaque(
            "opaque_bias",
            out,
            vec![pa],
            move |ctx, ()| spread(&ctx[pa], out, |x, _| x + T::small(1)),
            move |_, (), g| {
                prefix
                    .iter()
                    .enumerate()
                    .map(|(q, &d)| match (q == pa, q == target) {
                        (true, true) => gather(g, d, |v, _| v).map(|&v| v + T::small(1)),
                        (true, false) => gather(g, d, |v, _| v),
                        (false, true) => RawTensor::full(d, T::small(1)),
                        (false, false) => RawTensor::full(d, -T::zero()),
                    })
                    .collect()
            },
        )
    }

    /// `y[i] = NaN` at even `i`, `x[i mod n]` at odd `i`; its VJP multiplies even cotangent
    /// elements by another NaN and puts `full(NaN)` at `target` (when it is not `x`).
    pub fn opaque_nan(prefix: &[Dims], pa: usize, target: usize, extra: u8) -> RawNode<T, ()> {
        let out = dims_of(SHAPES[usize::from(extra) % SHAPES.len()]);
        let prefix = prefix.to_vec();
        RawNode::opaque(
            "opaque_nan",
            out,
            vec![pa],
            move |ctx, ()| spread(&ctx[pa], out, |x, i| if i % 2 == 0 { T::nan_forward() } else { x }),
            move |_, (), g| {
                prefix
                    .iter()
                    .enumerate()
                    .map(|(q, &d)| {
                        if q == pa {
                            gather(g, d, |v, i| if i % 2 == 0 { v * T::nan_vjp() } else { v })
                        } else if q == target {
                            RawTensor::full(d, T::nan_vjp())
                        } else {
                            RawTensor::zeros(d)
                        }
                    })
                    .collect()
            },
        )
    }
}

/// `conv1d(x, w)` or `conv2d(x, w)` for a pair of positions of one rank (3 or 4) whose channels
/// agree (a position with itself included), with stride, padding and dilation drawn from the bits
/// of `extra` per spatial axis; constants that do not fit give way to stride 1, dilation 1 and a
/// padding of the kernel's size (which always fits). `None` when no pair fits.
pub fn concat_parts<T: TestScalar>(dims: &[Dims], pa: usize, b: usize, extra: u8) -> Option<RawNode<T, ()>> {
    // One to five parts along one axis of `pa`, each a position agreeing with `pa` off the axis
    // (`pa` itself among them, so parts repeat).
    let sa = dims[pa].as_slice();
    if sa.is_empty() {
        return None;
    }
    let axis = usize::from(extra) % sa.len();
    let fits: Vec<usize> = (0..dims.len())
        .filter(|&q| {
            let sq = dims[q].as_slice();
            sq.len() == sa.len() && (0..sa.len()).all(|k| k == axis || sa[k] == sq[k])
        })
        .collect();
    let count = 1 + (usize::from(extra) / 4) % 5;
    let parts = (0..count).map(|k| if k == 0 { pa } else { fits[(b + k * 3) % fits.len()] }).collect();
    Some(RawNode::compact(ops::Concat::parts(parts, axis)))
}

pub fn conv<T: TestScalar>(dims: &[Dims], a: usize, b: usize, extra: u8) -> Option<RawNode<T, ()>> {
    use exactgrad::spec::rules::{self, Sliding};
    let mut pairs = Vec::new();
    for (x, dx) in dims.iter().enumerate() {
        for (w, dw) in dims.iter().enumerate() {
            let (sx, sw) = (dx.as_slice(), dw.as_slice());
            if (3..=4).contains(&sx.len()) && sx.len() == sw.len() && sx[1] == sw[1] && sw[2..].iter().all(|&k| k > 0) {
                pairs.push((x, w));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let (x, w) = pairs[(a * 7 + b) % pairs.len()];
    let (sx, sw) = (dims[x].as_slice(), dims[w].as_slice());
    let bit = |k: u8| usize::from((extra >> k) & 1);
    if sx.len() == 3 {
        let drawn = Sliding { stride: [1 + bit(0)], padding: [bit(1) + 2 * bit(2)], dilation: [1 + bit(3)] };
        let safe = Sliding { padding: [sw[2]], ..Sliding::default() };
        let s = if rules::conv("conv1d", sx, sw, &drawn).is_ok() { drawn } else { safe };
        Some(RawNode::compact(ops::Conv1d::with_sliding(x, w, s)))
    } else {
        let drawn = Sliding {
            stride: [1 + bit(0), 1 + bit(4)],
            padding: [bit(1) + 2 * bit(2), bit(5)],
            dilation: [1 + bit(3), 1 + bit(6)],
        };
        let safe = Sliding { padding: [sw[2], sw[3]], ..Sliding::default() };
        let s = if rules::conv("conv2d", sx, sw, &drawn).is_ok() { drawn } else { safe };
        Some(RawNode::compact(ops::Conv2d::with_sliding(x, w, s)))
    }
}

/// `max_pool2d(x)` or `avg_pool2d(x)` (by the top bit of `extra`) of a position `[n, c, h, w]`
/// with `h, w ≥ 1`, kernel, stride and padding drawn from the other bits (a 1 × 1 window when
/// they do not fit). `None` when no position fits.
pub fn pool<T: TestScalar>(dims: &[Dims], a: usize, extra: u8) -> Option<RawNode<T, ()>> {
    let images: Vec<usize> =
        (0..dims.len()).filter(|&q| dims[q].rank() == 4 && dims[q].as_slice()[2..].iter().all(|&s| s > 0)).collect();
    let x = *images.get(a % images.len().max(1))?;
    let bit = |k: u8| usize::from((extra >> k) & 1);
    let (kernel, stride, padding) = ([1 + bit(0) + bit(1), 1 + bit(2)], [1 + bit(3), 1 + bit(4)], [bit(5), bit(6)]);
    let fits = exactgrad::spec::rules::pool("max_pool2d", dims[x].as_slice(), kernel, stride, padding).is_ok();
    let (kernel, stride, padding) = if fits { (kernel, stride, padding) } else { ([1, 1], [1, 1], [0, 0]) };
    Some(if extra >> 7 == 0 {
        RawNode::compact(ops::MaxPool2d::new(x, kernel, stride, padding))
    } else {
        RawNode::compact(ops::AvgPool2d::new(x, kernel, stride, padding))
    })
}

/// A user compact op (SEMANTICS §4 combinators) whose contributions have a non-zero uniform:
/// `y = a + b`, with a "VJP" that is `fill(u0)`, `add(single(a, δ), fill(u0))` or
/// `add(add(fill(u0), single(a, δ)), add(single(b, δ), fill(u1)))` by `variant`. Built-in ops only
/// ever push the uniform `+0`; this op puts adversarial uniforms (NaN payloads, `-0`, `1` next to
/// `1e16`, …) in the deferred history (§5) and reaches positions that are never materialised.
#[derive(Clone, Debug)]
pub struct Uniforms<T> {
    pub parents: [usize; 2],
    pub variant: u8,
    pub u: [T; 2],
}

impl<T: TestScalar> CompactOp<T, ()> for Uniforms<T> {
    fn name(&self) -> &str {
        match self.variant % 3 {
            0 => "uniforms_fill",
            1 => "uniforms_single",
            _ => "uniforms_tree",
        }
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let [a, b] = self.parents;
        if prefix[a] == prefix[b] {
            Ok(prefix[a])
        } else {
            Err(format!("uniforms needs operands of one shape, got {} and {}", prefix[a], prefix[b]))
        }
    }
    fn forward(&self, ctx: &[RawTensor<T>], (): &()) -> RawTensor<T> {
        ctx[self.parents[0]].add(&ctx[self.parents[1]]).unwrap()
    }
    fn contributions(&self, _: &SavedValues<'_, T, ()>, _: &RawTensor<T>, c: &mut Contributions<T>) -> Contrib {
        let [a, b] = self.parents;
        match self.variant % 3 {
            0 => c.fill(self.u[0]),
            1 => {
                let l = c.single_cotangent(a);
                let r = c.fill(self.u[0]);
                c.add(l, r)
            }
            _ => {
                let f0 = c.fill(self.u[0]);
                let sa = c.single_cotangent(a);
                let l = c.add(f0, sa);
                let sb = c.single_cotangent(b);
                let f1 = c.fill(self.u[1]);
                let r = c.add(sb, f1);
                c.add(l, r)
            }
        }
    }
}
