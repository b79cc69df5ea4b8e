//! The model of the data-parallel tests (`tests/data_parallel.rs`, and `tests/mpi.rs` under
//! `mpirun`): a small MLP step on micro-batches of 6 rows, its data and parameters from the
//! adversarial generator, and the reference sum (every micro-batch on one program, in order, then
//! the fixed tree).
#![allow(dead_code, unreachable_pub)]

use exactgrad::data_parallel::tree_sum;
use exactgrad::{graph, Pack, RawTensor, Tensor};

use crate::floats::{adv, all_bits, Bits, TestFloat};

graph! {
    /// One micro-batch of 6 rows: two layers, softmax cross-entropy.
    pub fn mlp(w1: [12, 16], b1: [16], w2: [16, 5]; x: [6, 12], labels: Vec<usize>) -> [] {
        let h = tanh(x.matmul(w1) + b1);
        cross_entropy(h.matmul(w2), labels)
    }
}

/// The data of micro-batch `i` (ordinary or adversarial values by the salt, see `floats::adversarial`).
pub fn micro_batch<A: TestFloat>(salt: u64, i: usize) -> MlpData<A> {
    MlpData { x: adv(salt + 17 * i as u64, 6), labels: (0..6).map(|r| (r * 3 + i) % 5).collect() }
}

pub fn params<A: TestFloat>(salt: u64) -> Pack<A, MlpInputs> {
    let (_, h) = mlp::<A>();
    h.inputs(adv(salt, 1), adv(salt, 2), adv(salt, 3))
}

/// The reference: every micro-batch on one program, in order, then the tree.
pub fn one_by_one<A: TestFloat>(salt: u64, count: usize) -> Vec<Bits> {
    let (mut p, seed): (_, Tensor<A, ()>) = (params::<A>(salt), adv(salt, 7));
    let mut program = Mlp::program::<A>();
    let parts: Vec<Vec<RawTensor<A>>> = (0..count)
        .map(|i| program.gradients(&mut p, &micro_batch(salt, i), &seed).unwrap().clone().into_vec())
        .collect();
    all_bits(&tree_sum(parts).unwrap())
}
