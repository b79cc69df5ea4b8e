//! Shared helpers of the integration tests: a shape-level planner for random graphs (scalar-free,
//! so every test file maps its [`Step`]s to nodes of its own scalar type) and a tiny
//! deterministic PRNG for values that depend on the planned shapes.
#![allow(dead_code, unreachable_pub)]

use exactgrad::Dims;
use proptest::prelude::*;

/// The ops a test may plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Add,
    Sub,
    Mul,
    Neg,
    Scale,
    MatMul,
    Transpose,
    Sum,
    Mean,
    AddRow,
    Relu,
    Opaque,
}

/// One planned node: the op and the positions it reads (all below the node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Add(usize, usize),
    Sub(usize, usize),
    Mul(usize, usize),
    Neg(usize),
    /// Operand and a raw number the test turns into a factor.
    Scale(usize, u32),
    MatMul(usize, usize),
    Transpose(usize),
    Sum(usize),
    Mean(usize),
    AddRow(usize, usize),
    Relu(usize),
    /// An opaque elementwise node reading `a` and `b` (same shape, possibly equal); `variant`
    /// selects the test's flavour (e.g. a VJP that is non-zero at a zero cotangent).
    Opaque {
        a: usize,
        b: usize,
        variant: u32,
    },
}

/// A planned graph: input dims, nodes, and the dims of every position (Γ ++ ss).
#[derive(Clone, Debug)]
pub struct Plan {
    pub inputs: Vec<Dims>,
    pub steps: Vec<Step>,
    pub dims: Vec<Dims>,
}

impl Plan {
    /// Number of positions (inputs and nodes).
    pub fn len(&self) -> usize {
        self.dims.len()
    }
}

/// Shapes inputs are drawn from. Input 0 is always one of the first three (a matrix), so
/// `matmul`, `transpose` and `add_row` always find an operand.
const PALETTE: [&[usize]; 7] = [&[2, 3], &[3, 2], &[2, 2], &[3], &[2], &[], &[2, 3]];

fn dims(d: &[usize]) -> Dims {
    Dims::new(d).expect("rank at most 4")
}

/// Random plans with 1–`max_inputs` inputs and 1–`max_nodes` nodes drawn from `kinds`.
pub fn plans(kinds: &'static [Kind], max_inputs: usize, max_nodes: usize) -> impl Strategy<Value = Plan> {
    (
        proptest::collection::vec(0..PALETTE.len(), 1..=max_inputs),
        proptest::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), any::<u32>()), 1..=max_nodes),
    )
        .prop_map(move |(shapes, raw)| resolve(kinds, &shapes, &raw))
}

/// Turns raw random numbers into a well-formed plan.
pub fn resolve(kinds: &[Kind], shapes: &[usize], raw: &[(u8, u32, u32, u32)]) -> Plan {
    let mut all: Vec<Dims> =
        shapes.iter().enumerate().map(|(i, &s)| dims(PALETTE[if i == 0 { s % 3 } else { s }])).collect();
    let inputs = all.clone();
    let mut steps = Vec::with_capacity(raw.len());
    for &(k, r1, r2, r3) in raw {
        let kind = kinds[k as usize % kinds.len()];
        let pick = |c: &[usize], r: u32| c[r as usize % c.len()];
        let any_pos = r1 as usize % all.len();
        let same_as = |a: usize, r: u32| {
            if r.is_multiple_of(4) {
                a
            } else {
                let c: Vec<usize> = (0..all.len()).filter(|&q| all[q] == all[a]).collect();
                pick(&c, r / 4)
            }
        };
        let matrices: Vec<usize> = (0..all.len()).filter(|&q| all[q].rank() == 2).collect();
        let step = match kind {
            Kind::Add => Step::Add(any_pos, same_as(any_pos, r2)),
            Kind::Sub => Step::Sub(any_pos, same_as(any_pos, r2)),
            Kind::Mul => Step::Mul(any_pos, same_as(any_pos, r2)),
            Kind::Neg => Step::Neg(any_pos),
            Kind::Scale => Step::Scale(any_pos, r2),
            Kind::Sum => Step::Sum(any_pos),
            Kind::Mean => Step::Mean(any_pos),
            Kind::Relu => Step::Relu(any_pos),
            Kind::Opaque => Step::Opaque { a: any_pos, b: same_as(any_pos, r2), variant: r3 },
            Kind::Transpose => Step::Transpose(pick(&matrices, r1)),
            Kind::MatMul => {
                let a = pick(&matrices, r1);
                let k = all[a].as_slice()[1];
                let bs: Vec<usize> = matrices.iter().copied().filter(|&q| all[q].as_slice()[0] == k).collect();
                if bs.is_empty() {
                    Step::Transpose(a)
                } else {
                    Step::MatMul(a, pick(&bs, r2))
                }
            }
            Kind::AddRow => {
                let x = pick(&matrices, r1);
                let n = all[x].as_slice()[1];
                let bs: Vec<usize> = (0..all.len()).filter(|&q| all[q] == Dims::vector(n)).collect();
                if bs.is_empty() {
                    Step::Transpose(x)
                } else {
                    Step::AddRow(x, pick(&bs, r2))
                }
            }
        };
        all.push(output_dims(&all, step));
        steps.push(step);
    }
    Plan { inputs, steps, dims: all }
}

fn output_dims(all: &[Dims], step: Step) -> Dims {
    match step {
        Step::Add(a, _)
        | Step::Sub(a, _)
        | Step::Mul(a, _)
        | Step::Neg(a)
        | Step::Scale(a, _)
        | Step::Relu(a)
        | Step::AddRow(a, _)
        | Step::Opaque { a, .. } => all[a],
        Step::Sum(_) | Step::Mean(_) => Dims::scalar(),
        Step::Transpose(a) => {
            let s = all[a].as_slice();
            Dims::matrix(s[1], s[0])
        }
        Step::MatMul(a, b) => Dims::matrix(all[a].as_slice()[0], all[b].as_slice()[1]),
    }
}

/// `SplitMix64` (the examples' generator): a deterministic stream of numbers from one
/// proptest-generated seed.
#[derive(Clone, Debug)]
pub struct Rng(exactgrad_example_support::SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(exactgrad_example_support::SplitMix64(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
