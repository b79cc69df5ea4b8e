//! Data-parallel gradients (SEMANTICS §8.5): the sum of the micro-batch gradients of an MLP step
//! is bit-identical for 1, 2, 3 and 4 workers (threads, and worker states per pool), equal to the
//! micro-batches computed one after another on one program and added by the fixed tree; and the
//! tree itself adds in exactly the order its definition gives (a symbolic scalar records it).
#![allow(clippy::unwrap_used)]

mod dp_model;
mod floats;
mod sym;

use dp_model::{micro_batch, one_by_one, params, Mlp};
use exactgrad::data_parallel::{self, tree_sum, Threads};
use exactgrad::{Dims, RawTensor, Tensor};
use floats::{adv, all_bits, Bits, TestFloat};
use proptest::prelude::*;
use sym::{Expr, Sym};

/// The summed gradient of `count` micro-batches on `threads` threads with `states` workers.
fn on_workers<A: TestFloat>(salt: u64, count: usize, threads: usize, states: usize) -> Vec<Bits> {
    let (p, seed): (_, Tensor<A, ()>) = (params::<A>(salt), adv(salt, 7));
    let mut states: Vec<_> = (0..states).map(|_| (Mlp::program::<A>(), p.clone())).collect();
    let workers = Threads::new(threads).unwrap();
    let sum = data_parallel::gradients(&workers, &mut states, count, |(program, copy), i| {
        program.gradients(copy, &micro_batch(salt, i), &seed).cloned()
    })
    .unwrap();
    all_bits(sum.as_slice())
}

fn check<A: TestFloat>(salt: u64, count: usize) {
    let reference = one_by_one::<A>(salt, count);
    for threads in 1..=4 {
        for states in [1, threads, 5] {
            assert!(
                on_workers::<A>(salt, count, threads, states) == reference,
                "salt {salt}, {count} micro-batches: {threads} threads with {states} workers differ from one by one"
            );
        }
    }
}

#[test]
fn mlp_gradients_are_the_same_for_1_to_4_workers() {
    for count in [1, 3, 8] {
        for salt in [0, 3] {
            check::<f32>(salt, count);
            check::<f64>(salt, count);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    /// Any salt (ordinary and adversarial values: signed zeros, NaN payloads, infinities,
    /// subnormals) and any micro-batch count.
    #[test]
    fn any_values_and_counts(salt in 0u64..1000, count in 1usize..10, threads in 1usize..5) {
        let reference = one_by_one::<f32>(salt, count);
        prop_assert!(on_workers::<f32>(salt, count, threads, threads) == reference);
    }
}

/// The tree by its definition: neighbours in pairs, level by level, an odd last one carried up.
fn tree(leaves: &[Sym]) -> Sym {
    let mut level = leaves.to_vec();
    while level.len() > 1 {
        level = level.chunks(2).map(|p| if let [l, r] = p { Sym::intern(Expr::Add(*l, *r)) } else { p[0] }).collect();
    }
    level[0]
}

#[test]
fn the_tree_adds_in_its_defined_order() {
    Sym::reset();
    let dims = Dims::new(&[2]).unwrap();
    for count in 1..=9 {
        let parts: Vec<Vec<RawTensor<Sym>>> = (0..count).map(|i| vec![sym::leaves(dims, &format!("g{i}_"))]).collect();
        let sum = tree_sum(parts.clone()).unwrap();
        for e in 0..2 {
            let leaves: Vec<Sym> = parts.iter().map(|p| p[0].data()[e]).collect();
            assert!(sum[0].data()[e] == tree(&leaves), "{count} parts, element {e}: {}", sum[0].data()[e].render(8));
        }
    }
    // For 5: ((g0 + g1) + (g2 + g3)) + g4.
    let g: Vec<Sym> = (0..5).map(|i| Sym::leaf(format!("h{i}"))).collect();
    let add = |l, r| Sym::intern(Expr::Add(l, r));
    assert!(tree(&g) == add(add(add(g[0], g[1]), add(g[2], g[3])), g[4]));
}
