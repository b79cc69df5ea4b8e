//! Random graph descriptions for the runtime fuzzer: inputs of random dims (rank 0 to 5, dims 0,
//! small, huge or overflowing), nodes of every built-in op with parent positions that may be out of
//! range or forward-referencing, random axes, slice ranges, permutations, reshape targets and
//! constants (NaN, ±inf, huge, −0), window constants of the convolutions and poolings (zero, small,
//! huge), data tensors and labels, and opaque nodes whose closures may panic or return the wrong
//! shapes. A description is plain data, built into a `RawGraph` by
//! `main.rs`.

use exactgrad_runtime::Dims;

/// `SplitMix64`: every part of a case comes from one proptest-drawn seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Dims: mostly small, sometimes 0, huge or at the edge of `usize`.
const DIMS: &[usize] = &[1, 2, 3, 2, 3, 4, 1, 2, 0, 1 << 32, usize::MAX, 1 << 63];

/// Scalars: ordinary, zero of both signs, huge, tiny, infinite, NaN.
pub(crate) const VALUES: &[f64] =
    &[0.5, -1.25, 2.0, 3.0, -0.0, 0.0, 1e300, -1e300, 1e-310, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];

/// Random dims of rank 0 to 4 (a rank of 5 is refused by `Dims::new`, so it becomes a scalar):
/// most of the time a shape from a small palette, so that operands often agree.
pub(crate) fn dims(rng: &mut Rng) -> Dims {
    if rng.below(10) < 7 {
        let d: &[usize] =
            rng.pick(&[&[2, 3][..], &[3, 2], &[3], &[2], &[], &[2, 3], &[3, 3], &[1, 2, 3], &[1, 2, 3, 3], &[2, 2, 2]]);
        return Dims::new(d).unwrap_or_else(Dims::scalar);
    }
    let rank = rng.pick(&[0, 1, 1, 2, 2, 2, 3, 4, 5]);
    let d: Vec<usize> = (0..rank).map(|_| rng.pick(DIMS)).collect();
    Dims::new(&d).unwrap_or_else(Dims::scalar)
}

/// How an opaque node's closures misbehave.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Opaque {
    /// Copies its first parent (when the shapes agree) and passes the cotangent back.
    Honest,
    /// Its forward returns another shape.
    WrongForward,
    /// Its forward panics.
    PanicForward,
    /// Its VJP returns too few tensors.
    ShortVjp,
    /// Its VJP returns tensors of the wrong shapes.
    MisshapenVjp,
    /// Its VJP panics.
    PanicVjp,
}

/// One node of a description. Positions are raw (`usize`), so possibly invalid.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Binary(u8, usize, usize),
    Unary(u8, usize),
    Scale(usize, f64),
    AddRow(usize, usize),
    Axis(bool, usize, usize),
    Concat(usize, usize, usize),
    /// `concat` of any number of parts (none included).
    ConcatParts(Vec<usize>, usize),
    /// `dropout` with a probability in range or not.
    Dropout(usize, f64),
    Slice(usize, usize, usize, usize),
    Permute(usize, Vec<usize>),
    Reshape(usize, Dims),
    LayerNorm(usize, usize, usize, f64),
    CrossEntropy(usize),
    GatherRows(usize, usize),
    /// `gather_rows` with leading output dims (`embedding`).
    Embedding(usize, Dims),
    MaskedFill(usize, f64),
    CausalMask(usize, f64),
    DataTensor(Dims),
    MatMulData(usize, usize),
    /// `conv1d`, `conv2d`, `max_pool2d`, `avg_pool2d` (by the number) of `x` (and weight `w`),
    /// with three constants per axis (stride, padding, dilation; or kernel, stride, padding).
    Window(u8, usize, usize, [usize; 6]),
    Opaque(Dims, Vec<usize>, Opaque),
}

/// A position: usually one that exists, sometimes the node's own, a later one, or a huge one.
fn position(rng: &mut Rng, len: usize) -> usize {
    match rng.below(16) {
        0 => len,
        1 => len + 1 + rng.below(3),
        2 => usize::MAX,
        _ => rng.below(len.max(1)),
    }
}

/// An axis, start or length: small, sometimes out of range or huge.
fn small(rng: &mut Rng) -> usize {
    rng.pick(&[0, 1, 2, 0, 1, 3, 4, usize::MAX, 1 << 63])
}

/// A random node for a graph whose prefix has `len` positions.
pub(crate) fn op(rng: &mut Rng, len: usize) -> Op {
    let p = |rng: &mut Rng| position(rng, len);
    match rng.below(17) {
        0..=2 => Op::Binary(rng.below(8) as u8, p(rng), p(rng)),
        3..=5 => Op::Unary(rng.below(16) as u8, p(rng)),
        6 => Op::Scale(p(rng), rng.pick(VALUES)),
        7 => Op::AddRow(p(rng), p(rng)),
        8 => Op::Axis(rng.below(2) == 0, p(rng), small(rng)),
        9 => match rng.below(3) {
            0 => Op::Concat(p(rng), p(rng), small(rng)),
            1 => Op::ConcatParts((0..rng.below(6)).map(|_| p(rng)).collect(), small(rng)),
            _ => Op::Dropout(p(rng), rng.pick(&[0.0, 0.5, 0.999, 1.0, -0.5, f64::NAN, f64::INFINITY])),
        },
        10 => Op::Slice(p(rng), small(rng), small(rng), small(rng)),
        11 => {
            let perm: Vec<usize> = (0..rng.below(6)).map(|_| small(rng)).collect();
            Op::Permute(p(rng), perm)
        }
        12 => Op::Reshape(p(rng), dims(rng)),
        13 => match rng.below(8) {
            5 => Op::Embedding(p(rng), dims(rng)),
            6 => Op::MaskedFill(p(rng), rng.pick(VALUES)),
            7 => Op::CausalMask(p(rng), rng.pick(VALUES)),
            0 => Op::LayerNorm(p(rng), p(rng), p(rng), rng.pick(&[1e-5, 0.0, -1.0, f64::NAN, f64::INFINITY])),
            1 => Op::CrossEntropy(p(rng)),
            2 => Op::GatherRows(p(rng), small(rng)),
            3 => Op::DataTensor(dims(rng)),
            _ => Op::MatMulData(small(rng), p(rng)),
        },
        14 => {
            let constants = core::array::from_fn(|_| rng.pick(&[0, 1, 1, 2, 1, 3, 1 << 32, usize::MAX]));
            Op::Window(rng.below(4) as u8, p(rng), p(rng), constants)
        }
        _ => {
            let parents: Vec<usize> = (0..rng.below(3)).map(|_| p(rng)).collect();
            let kinds = [
                Opaque::Honest,
                Opaque::Honest,
                Opaque::WrongForward,
                Opaque::PanicForward,
                Opaque::ShortVjp,
                Opaque::MisshapenVjp,
                Opaque::PanicVjp,
            ];
            Op::Opaque(dims(rng), parents, rng.pick(&kinds))
        }
    }
}

/// A description: input dims and nodes.
#[derive(Clone, Debug)]
pub(crate) struct Description {
    pub(crate) inputs: Vec<Dims>,
    pub(crate) ops: Vec<Op>,
}

/// A random description of up to 4 inputs and 12 nodes.
pub(crate) fn description(rng: &mut Rng) -> Description {
    let inputs: Vec<Dims> = (0..rng.below(5)).map(|_| dims(rng)).collect();
    let n = rng.below(13);
    let ops = (0..n).map(|k| op(rng, inputs.len() + k)).collect();
    Description { inputs, ops }
}
