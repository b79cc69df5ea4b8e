//! The random `graph!` corpus (`tests/corpus/models.rs`, written by `tests/corpus_generator.rs`):
//! every model's generated program equals the runtime passes on its graph bit for bit — the
//! all-inputs pass against `backprop_inputs_dense`, each output's single-output pass against
//! `backprop_from` — on `f32` and `f64`, for `SALTS` inputs and seeds each (ordinary values and
//! every mix of adversarial ones: −0.0, NaN payloads, ±∞, subnormals), one program per model
//! reused across all of them.
#![allow(clippy::unwrap_used, missing_docs, clippy::too_many_lines)]

mod floats;

use exactgrad::{graph, RawPack, RawTensor, Seeds, Tensor};
use floats::{adv, all_bits, TestFloat};

/// Inputs per model and scalar type.
const SALTS: u64 = 100;

fn inputs_of<A: TestFloat>(g: &RawPack<A>, n: usize) -> Vec<RawTensor<A>> {
    (0..n).map(|k| g.get(k).unwrap().clone()).collect()
}

/// The program's input gradients are the runtime pass's, bit for bit.
fn same<A: TestFloat>(model: &str, pass: &str, salt: u64, got: &[RawTensor<A>], want: &[RawTensor<A>]) {
    assert_eq!(all_bits(got), all_bits(want), "{model}: {pass}, salt {salt}");
}

/// The model's static support (derived from its plan and the op table) names the positions its
/// graph's does: each node's `CompactOp::support`, every position below an opaque node. (The
/// model's lists one entry per term of the VJP — `square`'s `a` twice — the graph's one per
/// position, so the two are compared as sets.)
fn same_support<A: TestFloat>(model: &str, g: &exactgrad::RawGraph<A, ()>, support: &[Vec<usize>]) {
    let n_in = g.num_inputs();
    let set = |q: &[usize]| q.iter().copied().collect::<std::collections::BTreeSet<usize>>();
    assert_eq!(support.len(), g.nodes().len(), "{model}: one support per node");
    for (k, (node, got)) in g.nodes().iter().zip(support).enumerate() {
        let want: Vec<usize> = node.support().map_or_else(|| (0..n_in + k).collect(), <[usize]>::to_vec);
        assert_eq!(set(got), set(&want), "{model}: node {k} ({})", node.name());
    }
}

macro_rules! corpus_case {
    ($f:ident, $m:ident, [$($i:literal),*], one) => {
        mod $f {
            use super::*;

            fn check<A: TestFloat>() {
                let (g, h) = super::$f::<A>();
                let n = [$($i),*].len();
                let mut prog = super::$m::program::<A>();
                same_support(stringify!($f), g.raw(), &super::$m::support());
                for salt in 0..SALTS {
                    let mut inputs = h.inputs($(adv(salt, $i)),*);
                    let s: Tensor<A, _> = adv(salt, 40);
                    let saved = g.compile(inputs.clone(), ()).unwrap();
                    let dense = saved.backprop_inputs_dense(Seeds::single(&g, h.output, s.clone()).unwrap()).unwrap();
                    let got = prog.gradients(&mut inputs, &(), &s).unwrap();
                    same(stringify!($f), "all inputs", salt, got.as_slice(), dense.as_slice());
                    let from = saved.backprop_from(h.output, s.clone()).unwrap();
                    let got = prog.gradients_from(h.output, &mut inputs, &(), &s).unwrap();
                    same(stringify!($f), "from the output", salt, got.as_slice(), &inputs_of(from.raw(), n));
                }
            }

            #[test]
            fn program_equals_the_runtime() {
                check::<f32>();
                check::<f64>();
            }
        }
    };
    ($f:ident, $m:ident, [$($i:literal),*], two) => {
        mod $f {
            use super::*;

            fn check<A: TestFloat>() {
                let (g, h) = super::$f::<A>();
                let n = [$($i),*].len();
                let mut prog = super::$m::program::<A>();
                same_support(stringify!($f), g.raw(), &super::$m::support());
                for salt in 0..SALTS {
                    let mut inputs = h.inputs($(adv(salt, $i)),*);
                    let (s0, s1): (Tensor<A, _>, Tensor<A, _>) = (adv(salt, 40), adv(salt, 41));
                    let saved = g.compile(inputs.clone(), ()).unwrap();
                    let mut seeds = Seeds::zeros(&g);
                    seeds.set(h.output0, s0.clone()).unwrap();
                    seeds.set(h.output1, s1.clone()).unwrap();
                    let dense = saved.backprop_inputs_dense(seeds).unwrap();
                    let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
                    same(stringify!($f), "all inputs", salt, got.as_slice(), dense.as_slice());
                    let from = saved.backprop_from(h.output0, s0.clone()).unwrap();
                    let got = prog.gradients_from(h.output0, &mut inputs, &(), &s0).unwrap();
                    same(stringify!($f), "from output 0", salt, got.as_slice(), &inputs_of(from.raw(), n));
                    let from = saved.backprop_from(h.output1, s1.clone()).unwrap();
                    let got = prog.gradients_from(h.output1, &mut inputs, &(), &s1).unwrap();
                    same(stringify!($f), "from output 1", salt, got.as_slice(), &inputs_of(from.raw(), n));
                }
            }

            #[test]
            fn program_equals_the_runtime() {
                check::<f32>();
                check::<f64>();
            }
        }
    };
}

include!("corpus/models.rs");
