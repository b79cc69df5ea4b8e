//! A generated program's forward runs by levels (SEMANTICS §8.4; `macros/src/plan/levels.rs`):
//! a level's built-in nodes may be computed at the same time, so nodes do not run in index order.
//! What a user sees must not change: on pools of 1–4 threads, every split forced, a failing
//! forward returns `compile`'s error (the first failing node in index order, even when a node of
//! higher index in a lower level fails first), an opaque closure runs exactly when it runs in
//! index order, and the program stays usable afterwards.
#![allow(clippy::unwrap_used)] // the shared `floats` helpers unwrap

use core::num::Wrapping;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use exactgrad::typenum::U2;
use exactgrad::{graph, parallel, Error, Seeds, Tensor};
use floats::{adv, all_bits, Bits, TestFloat};
use proptest::prelude::*;

mod floats;

type W = Wrapping<i64>;

graph! {
    /// Levels: {0 x + y, 2 x / z}, {1 (x + y) / y}. Node 2 fails at level 0 on a zero in `z`,
    /// node 1 at level 1 on a zero in `y`: index order names node 1.
    fn divisions(x: [2], y: [2], z: [2]) -> ([2], [2]) {
        let q = div(x + y, y);
        let r = div(x, z);
        (q, r)
    }
}

static OPAQUE_RUNS: AtomicUsize = AtomicUsize::new(0);

fn counted<A: Clone>(x: &exactgrad::RawTensor<A>) -> exactgrad::RawTensor<A> {
    OPAQUE_RUNS.fetch_add(1, Ordering::SeqCst);
    x.clone()
}

graph! {
    /// Levels: {0 tanh(table), 3 the second gather}, {1 the first gather}, {2 the opaque node}.
    /// Node 3 (level 0) comes after the opaque node in index order, node 1 (level 1) before it;
    /// each gather fails on an id out of range.
    fn around_an_opaque(table: [3, 2], x: [2]; ids: Vec<usize>, more: Vec<usize>) -> ([2, 2], [2], [2, 2]) {
        let r1: [2, 2] = gather_rows(tanh(table), ids);
        let o: [2] = opaque(x, forward = |x| counted(x), vjp = |_x, g| [g.clone()]);
        let r2: [2, 2] = gather_rows(table, more);
        (r1, o, r2)
    }
}

graph! {
    /// Four heads over a shared layer: each level past the first holds four built-in nodes
    /// (products, `tanh`, `softmax`, sums), computed at the same time when the split is forced.
    fn heads(x: [6, 8], w0: [8, 5], w1: [8, 5], w2: [8, 5], w3: [8, 5], v: [8]) -> ([], [], [], []) {
        let h = tanh(x + v);
        (
            sum(tanh(h.matmul(w0))),
            sum(softmax(h.matmul(w1))),
            sum(relu(h.matmul(w2)) * h.matmul(w3)),
            mean(exp(h.matmul(w3))),
        )
    }
}

/// Every output value and the gradients of the program's all-inputs pass and of each
/// single-output pass, on the current pool; then the runtime's dense reference on the same
/// inputs and seeds (the program must equal it on every pool).
fn heads_run<A: TestFloat>(salt: u64) -> (Vec<Vec<Bits>>, Vec<Vec<Bits>>) {
    let (g, h) = heads::<A>();
    let inputs = h.inputs(adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4), adv(salt, 5), adv(salt, 6));
    let seeds: [Tensor<A, ()>; 4] = [adv(salt, 7), adv(salt, 8), adv(salt, 9), adv(salt, 10)];
    let outputs = [h.output0, h.output1, h.output2, h.output3];
    let mut prog = Heads::program::<A>();
    let mut params = inputs.clone();
    let tuple = (seeds[0].clone(), seeds[1].clone(), seeds[2].clone(), seeds[3].clone());
    let mut got = vec![all_bits(prog.gradients(&mut params, &(), &tuple).expect("runs").as_slice())];
    got.push(all_bits(outputs.iter().map(|&o| prog.value(o).expect("an output is kept"))));
    for (&o, s) in outputs.iter().zip(&seeds) {
        got.push(all_bits(prog.gradients_from(o, &mut params, &(), s).expect("runs").as_slice()));
    }
    let saved = g.compile(inputs, ()).expect("compiles");
    let mut all = Seeds::zeros(&g);
    for (&o, s) in outputs.iter().zip(&seeds) {
        all.set(o, s.clone()).expect("seed");
    }
    let mut want = vec![all_bits(saved.backprop_inputs_dense(all).expect("dense pass").as_slice())];
    want.push(all_bits(outputs.iter().map(|&o| saved.value(o).expect("a value"))));
    for (&o, s) in outputs.iter().zip(&seeds) {
        let from = saved.backprop_from(o, s.clone()).expect("single-output pass");
        want.push(all_bits(from.iter().take(6)));
    }
    (got, want)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// The heads program on pools of 1–4 threads, every split forced, ordinary and adversarial
    /// values (signed zeros, NaN payloads, infinities, subnormals): the dense reference's bits.
    #[test]
    fn a_program_of_heads_is_the_same_on_1_to_4_threads(salt in any::<u64>()) {
        on_every_pool(|threads| {
            let (got, want) = heads_run::<f64>(salt);
            assert!(got == want, "f64, salt {salt}, {threads} threads");
            let (got, want) = heads_run::<f32>(salt);
            assert!(got == want, "f32, salt {salt}, {threads} threads");
        });
    }
}

fn t(a: i64, b: i64) -> Tensor<W, (U2,)> {
    Tensor::from_vec(vec![Wrapping(a), Wrapping(b)]).expect("two elements")
}

/// `f` on pools of 1, 2, 3 and 4 threads with every split forced (one test at a time: the
/// thresholds are the process's).
fn on_every_pool(mut f: impl FnMut(usize) + Send) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (work, pointwise, node) = (parallel::min_work(), parallel::min_pointwise_work(), parallel::min_node_work());
    parallel::set_min_work(0);
    parallel::set_min_pointwise_work(0);
    parallel::set_min_node_work(0);
    for threads in 1..=4 {
        let pool = parallel::pool(threads).expect("a thread pool");
        pool.install(|| f(threads));
    }
    parallel::set_min_work(work);
    parallel::set_min_pointwise_work(pointwise);
    parallel::set_min_node_work(node);
}

#[test]
fn the_first_failing_node_in_index_order_is_reported() {
    let (g, h) = divisions::<W>();
    let seeds = (t(1, 1), t(1, 1));
    on_every_pool(|threads| {
        let mut prog = Divisions::program::<W>();
        // y and z both hold a zero: node 2 fails on level 0, node 1 on level 1.
        let mut bad = h.inputs(t(3, 4), t(0, 2), t(5, 0));
        let want = g.compile(bad.clone(), ()).expect_err("compile fails");
        assert!(matches!(want, Error::Node { node: 1, .. }), "{want}");
        let got = prog.gradients(&mut bad, &(), &seeds).expect_err("the program fails");
        assert_eq!(got.to_string(), want.to_string(), "{threads} threads");
        // Only node 2 fails: it is the error.
        let mut late = h.inputs(t(3, 4), t(1, 2), t(5, 0));
        let got = prog.gradients(&mut late, &(), &seeds).expect_err("the program fails");
        assert!(matches!(got, Error::Node { node: 2, .. }), "{got}");
        assert_eq!(got.to_string(), g.compile(late.clone(), ()).expect_err("compile fails").to_string());
        // And the program is usable again, giving the runtime's gradients.
        let mut good = h.inputs(t(3, 4), t(1, 2), t(5, 7));
        let saved = g.compile(good.clone(), ()).expect("compiles");
        let mut s = Seeds::zeros(&g);
        s.set(h.output0, seeds.0.clone()).expect("seed");
        s.set(h.output1, seeds.1.clone()).expect("seed");
        let dense = saved.backprop_inputs_dense(s).expect("dense pass");
        let got = prog.gradients(&mut good, &(), &seeds).expect("runs");
        assert_eq!(got.as_slice(), dense.as_slice(), "{threads} threads");
    });
}

#[test]
fn an_opaque_node_runs_exactly_when_it_does_in_index_order() {
    let (g, h) = around_an_opaque::<f64>();
    let inputs = || h.inputs(Tensor::from_fn(|i| i as f64 - 2.5), Tensor::from_fn(|i| i as f64 + 0.5));
    let seeds = (Tensor::full(1.0), Tensor::full(1.0), Tensor::full(1.0));
    let data = |ids: [usize; 2], more: [usize; 2]| AroundAnOpaqueData { ids: ids.to_vec(), more: more.to_vec() };
    on_every_pool(|threads| {
        let mut prog = AroundAnOpaque::program::<f64>();
        // One run: its error and how many times the opaque closure ran in it.
        let mut run = |d: &AroundAnOpaqueData| {
            let before = OPAQUE_RUNS.load(Ordering::SeqCst);
            let error = prog.gradients(&mut inputs(), d, &seeds).err();
            let runs = OPAQUE_RUNS.load(Ordering::SeqCst) - before;
            let want = g.compile(inputs(), d.clone()).err();
            assert_eq!(error.as_ref().map(Error::to_string), want.as_ref().map(Error::to_string), "{threads} threads");
            (error, runs)
        };
        // Both gathers fail; node 3's runs first (level 0), node 1's is the error and the
        // opaque node (node 2) does not run, as in index order.
        let (error, n) = run(&data([0, 9], [9, 0]));
        assert!(matches!(error, Some(Error::Node { node: 1, .. })), "{error:?}");
        assert_eq!(n, 0, "{threads} threads");
        // Only node 3 fails: the opaque node ran once, as it does before node 3 in index order.
        let (error, n) = run(&data([0, 1], [9, 0]));
        assert!(matches!(error, Some(Error::Node { node: 3, .. })), "{error:?}");
        assert_eq!(n, 1, "{threads} threads");
        // Nothing fails: once.
        let (error, n) = run(&data([0, 1], [2, 0]));
        assert!(error.is_none(), "{error:?}");
        assert_eq!(n, 1, "{threads} threads");
    });
}
