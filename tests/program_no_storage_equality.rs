//! A generated program's single-output pass on a scalar **without storage equality** is the dense
//! all-seeds pass with the one seed (SEMANTICS §7), as `SavedGraph::backprop_from` is: every node
//! runs, none is pruned. The scalar counts the additions behind each value, so a pruned sweep
//! (fewer `+ 0`s) is told apart from the full one even where the numbers agree.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

use core::ops;

use exactgrad::{graph, RawTensor, Storage, Tensor};

/// An integer with the number of additions that produced it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Counted {
    value: i64,
    additions: u32,
}

impl ops::Add for Counted {
    type Output = Counted;
    fn add(self, rhs: Counted) -> Counted {
        Counted { value: self.value + rhs.value, additions: self.additions + rhs.additions + 1 }
    }
}

impl num_traits::Zero for Counted {
    fn zero() -> Counted {
        Counted { value: 0, additions: 0 }
    }
    fn is_zero(&self) -> bool {
        self.value == 0
    }
}

impl Storage for Counted {
    const HAS_STORAGE_EQUALITY: bool = false;
    fn storage_eq(&self, _: &Counted) -> bool {
        panic!("storage_eq called on a scalar type that declares no storage equality")
    }
}

graph! {
    fn two_sums(x: [3]) -> ([], []) {
        (sum(x), sum(x + x))
    }
}

fn counts(ts: &[RawTensor<Counted>]) -> Vec<Vec<(i64, u32)>> {
    ts.iter().map(|t| t.data().iter().map(|c| (c.value, c.additions)).collect()).collect()
}

#[test]
fn the_single_output_program_runs_every_node_without_storage_equality() {
    let (g, h) = two_sums::<Counted>();
    let mut inputs = h.inputs(Tensor::from_fn(|i| Counted { value: i as i64 + 1, additions: 0 }));
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let seed: Tensor<Counted, ()> = Tensor::from_fn(|_| Counted { value: 2, additions: 0 });
    let mut prog = TwoSums::program::<Counted>();
    let got = counts(prog.gradients_from(h.output0, &mut inputs, &(), &seed).unwrap().as_slice());
    let from = saved.backprop_from(h.output0, seed.clone()).unwrap();
    let want = counts(&[from.raw().get(0).unwrap().clone()]);
    assert_eq!(got, want);
    // The pruned sweep does fewer additions: the test would see a program that pruned.
    let pruned = saved.backprop_from_dense(h.output0, seed.clone()).unwrap();
    assert_ne!(got, counts(&[pruned.raw().get(0).unwrap().clone()]));
}
