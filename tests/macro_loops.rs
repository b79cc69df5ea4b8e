//! Loops, loop-carried `let mut` bindings, parameter arrays and `const`s in `graph!`: a model
//! written with them is the unrolled model written by hand, bit for bit — the same `describe()`
//! listing, values, and results of every reverse pass (all positions seeded, inputs only,
//! `backprop_from` every position, the generated program's all-inputs and single-output passes),
//! in `f64` and `f32`, on adversarial inputs and seeds.
#![allow(clippy::unwrap_used)]

mod floats;
mod sym;

use exactgrad::{graph, Tensor};
use floats::{adv, all_bits, outcome, TestFloat};

graph! {
    const D: usize = 4;
    const SCALE: f64 = 1.0 / (D as f64).sqrt();
    /// A residual stack of 3 layers over a parameter array, with a slice per layer.
    fn looped(x: [2, D], w: [[4, 4]; 3], b: [[4]; 3], z: [2, 12]) -> [] {
        let mut h = x;
        for i in 0..3 {
            let a = tanh(h.matmul(w[i]) + b[i]);
            h = h + a * SCALE + slice(z, 1, i * D, D);
        }
        const K: usize = 3 - 1;
        let mut s = sum(h);
        for j in 0..K {
            s = s * 0.5 + mean(w[j + 1]);
        }
        s
    }
}

graph! {
    fn unrolled(x: [2, 4], w0: [4, 4], w1: [4, 4], w2: [4, 4], b0: [4], b1: [4], b2: [4], z: [2, 12]) -> [] {
        let a0 = tanh(x.matmul(w0) + b0);
        let h1 = x + a0 * (1.0 / 4.0f64.sqrt()) + slice(z, 1, 0, 4);
        let a1 = tanh(h1.matmul(w1) + b1);
        let h2 = h1 + a1 * (1.0 / 4.0f64.sqrt()) + slice(z, 1, 4, 4);
        let a2 = tanh(h2.matmul(w2) + b2);
        let h3 = h2 + a2 * (1.0 / 4.0f64.sqrt()) + slice(z, 1, 8, 4);
        let s0 = sum(h3);
        let s1 = s0 * 0.5 + mean(w1);
        s1 * 0.5 + mean(w2)
    }
}

fn check<A: TestFloat>(salt: u64) {
    let (lg, lh) = looped::<A>();
    let (ug, uh) = unrolled::<A>();
    assert_eq!(lg.describe(), ug.describe());
    let loop_inputs = lh.inputs(
        adv(salt, 0),
        [adv(salt, 1), adv(salt, 2), adv(salt, 3)],
        [adv(salt, 4), adv(salt, 5), adv(salt, 6)],
        adv(salt, 7),
    );
    let flat_inputs = uh.inputs(
        adv(salt, 0),
        adv(salt, 1),
        adv(salt, 2),
        adv(salt, 3),
        adv(salt, 4),
        adv(salt, 5),
        adv(salt, 6),
        adv(salt, 7),
    );
    assert_eq!(outcome(&lg, loop_inputs.clone(), lh.output, salt), outcome(&ug, flat_inputs.clone(), uh.output, salt));
    // The generated programs agree too, on every pass.
    let seed: Tensor<A, ()> = adv(salt, 8);
    let (mut li, mut ui) = (loop_inputs, flat_inputs);
    let mut lp = Looped::program::<A>();
    let mut up = Unrolled::program::<A>();
    let l = all_bits(lp.gradients(&mut li, &(), &seed).unwrap().as_slice());
    let u = all_bits(up.gradients(&mut ui, &(), &seed).unwrap().as_slice());
    assert_eq!(l, u);
    let l = all_bits(lp.gradients_from(lh.output, &mut li, &(), &seed).unwrap().as_slice());
    let u = all_bits(up.gradients_from(uh.output, &mut ui, &(), &seed).unwrap().as_slice());
    assert_eq!(l, u);
}

#[test]
fn a_looped_model_is_its_unrolled_model_bit_for_bit() {
    // The first loop (its slice's start changes with `i`) is rolled.
    assert!(core::any::type_name::<LoopedNodes>().contains("Repeat<"));
    for salt in 0..6 {
        check::<f64>(salt);
        check::<f32>(salt);
    }
}

#[test]
fn handles_and_descriptions_name_iterations_and_array_elements() {
    let (g, h) = looped::<f64>();
    assert_eq!(h.w.len(), 3);
    assert_eq!((h.w[0].index(), h.w[2].index(), h.b[0].index(), h.z.index()), (1, 3, 4, 7));
    assert!(g.describe().contains("matmul"));
    let text = Looped::describe_backward();
    assert!(text.contains("(a@i=0) = matmul") || text.contains("(a@i=0) = "), "{text}");
    assert!(text.contains("(h@i=2)"), "{text}");
    assert!(text.contains("(s@j=1)"), "{text}");
    assert!(text.contains("input %1 (w[0])"), "{text}");
}

graph! {
    const N: usize = 2;
    /// A const dim in a data tensor's shape, and a size (1500) typenum does not predefine.
    fn with_data(w: [4, 1500]; x: [N, 4]) -> [N, 1500] {
        x.matmul(w)
    }
}

graph! {
    const N: usize = 2 + 1;
    const T: usize = 3;
    const B: usize = N - 1;
    /// Computed dims: constant expressions of literals and `const`s, in data and annotations.
    fn computed_dims(w: [4, 1500]; x: [T * B - 4, (2 + 2)]) -> [T * B - 4, 3 * 500] {
        let y: [2 * 1, 1500] = x.matmul(w);
        y
    }
}

graph! {
    fn with_data_by_hand(w: [4, 1500]; x: [2, 4]) -> [2, 1500] {
        x.matmul(w)
    }
}

#[test]
fn const_dims_type_data_tensors() {
    use exactgrad::typenum::{U2, U4};
    let (g, h) = with_data::<f64>();
    let (ug, uh) = with_data_by_hand::<f64>();
    // The data struct's field has the const's size.
    let x: Tensor<f64, (U2, U4)> = adv(3, 0);
    let w = adv(3, 1);
    let values = g.compile(h.inputs(w.clone()), WithDataData { x: x.clone() }).unwrap().raw().values().to_vec();
    let by_hand = ug.compile(uh.inputs(w), WithDataByHandData { x: x.clone() }).unwrap().raw().values().to_vec();
    assert_eq!(all_bits(&values), all_bits(&by_hand));
    // Computed dims are the literal dims: the same data type, the same values.
    let (g, h) = computed_dims::<f64>();
    let values = g.compile(h.inputs(adv(3, 1)), ComputedDimsData { x }).unwrap().raw().values().to_vec();
    assert_eq!(all_bits(&values), all_bits(&by_hand));
}

// ---------------------------------------------------------------------------------------------
// Rolled loops: a loop whose iterations have one structure is built by one body called per
// iteration (its node list `Repeat<…>`); the graph, the values and every pass are the hand-unrolled
// model's, on every scalar.

graph! {
    /// Carried state (`h`, `s`), a table (`w[i]`, `b[i]`), a value from before the loop (`c`), a
    /// node of the iteration itself (`z`) and a slice whose start changes with the iteration.
    fn rolled_chain(x: [2, 3], w: [[3, 3]; 4], b: [[3]; 4], c: [2, 3], e: [2, 12]) -> ([2, 3], []) {
        let mut h = x;
        let mut s = sum(x);
        for i in 0..4 {
            let z = h.matmul(w[i]) + b[i] + slice(e, 1, 3 * i, 3);
            h = z * c - h;
            s = s + sum(h);
        }
        (h, s)
    }
}

graph! {
    fn unrolled_chain(x: [2, 3], w: [[3, 3]; 4], b: [[3]; 4], c: [2, 3], e: [2, 12]) -> ([2, 3], []) {
        let s0 = sum(x);
        let h1 = (x.matmul(w[0]) + b[0] + slice(e, 1, 0, 3)) * c - x;
        let s1 = s0 + sum(h1);
        let h2 = (h1.matmul(w[1]) + b[1] + slice(e, 1, 3, 3)) * c - h1;
        let s2 = s1 + sum(h2);
        let h3 = (h2.matmul(w[2]) + b[2] + slice(e, 1, 6, 3)) * c - h2;
        let s3 = s2 + sum(h3);
        let h4 = (h3.matmul(w[3]) + b[3] + slice(e, 1, 9, 3)) * c - h3;
        let s4 = s3 + sum(h4);
        (h4, s4)
    }
}

/// Dims and storage-equality of every element.
fn same_storage<A: exactgrad::Scalar>(what: &str, got: &[exactgrad::RawTensor<A>], want: &[exactgrad::RawTensor<A>]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (q, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.dims(), w.dims(), "{what}: position {q}");
        assert!(g.data().iter().zip(w.data()).all(|(a, b)| a.storage_eq(b)), "{what}: position {q} differs");
    }
}

/// The rolled and the unrolled model on inputs and seeds from `leaf(name, element)`: the same
/// graph, values, dense passes and programs (all inputs, each output's single-output pass).
fn check_rolled<A>(leaf: impl Fn(&str, usize) -> A)
where
    A: exactgrad::Scalar + core::ops::Mul<Output = A> + core::ops::Sub<Output = A> + core::ops::Neg<Output = A>,
{
    use exactgrad::{RawTensor, Seeds, Shape};
    fn typed<A: exactgrad::Scalar, S: Shape>(leaf: &impl Fn(&str, usize) -> A, name: &str, k: usize) -> Tensor<A, S> {
        Tensor::try_from_raw(RawTensor::from_fn(S::dims(), |i| leaf(&format!("{name}{k}_"), i))).unwrap()
    }
    let leaf = &leaf;
    let (rg, rh) = rolled_chain::<A>();
    let (ug, uh) = unrolled_chain::<A>();
    assert_eq!(rg.describe(), ug.describe());
    let mut ri = rh.inputs(
        typed(leaf, "x", 0),
        core::array::from_fn(|k| typed(leaf, "w", k)),
        core::array::from_fn(|k| typed(leaf, "b", k)),
        typed(leaf, "c", 0),
        typed(leaf, "e", 0),
    );
    let mut ui = uh.inputs(
        typed(leaf, "x", 0),
        core::array::from_fn(|k| typed(leaf, "w", k)),
        core::array::from_fn(|k| typed(leaf, "b", k)),
        typed(leaf, "c", 0),
        typed(leaf, "e", 0),
    );
    let (s0, s1): (Tensor<A, _>, Tensor<A, ()>) = (typed(leaf, "s", 0), typed(leaf, "u", 0));
    let (rs, us) = (rg.compile(ri.clone(), ()).unwrap(), ug.compile(ui.clone(), ()).unwrap());
    same_storage("values", rs.raw().values(), us.raw().values());
    let mut seeds = Seeds::zeros(&rg);
    seeds.set(rh.output0, s0.clone()).unwrap();
    seeds.set(rh.output1, s1.clone()).unwrap();
    let dense = rs.backprop_inputs_dense(seeds).unwrap();
    let mut rp = RolledChain::program::<A>();
    let mut up = UnrolledChain::program::<A>();
    let r = rp.gradients(&mut ri, &(), &(s0.clone(), s1.clone())).unwrap().as_slice().to_vec();
    let u = up.gradients(&mut ui, &(), &(s0.clone(), s1.clone())).unwrap().as_slice().to_vec();
    same_storage("all inputs: rolled vs unrolled", &r, &u);
    same_storage("all inputs: rolled vs the dense pass", &r, dense.as_slice());
    let r = rp.gradients_from(rh.output0, &mut ri, &(), &s0).unwrap().as_slice().to_vec();
    let u = up.gradients_from(uh.output0, &mut ui, &(), &s0).unwrap().as_slice().to_vec();
    same_storage("from output 0", &r, &u);
    let r = rp.gradients_from(rh.output1, &mut ri, &(), &s1).unwrap().as_slice().to_vec();
    let u = up.gradients_from(uh.output1, &mut ui, &(), &s1).unwrap().as_slice().to_vec();
    same_storage("from output 1", &r, &u);
}

#[test]
fn a_rolled_loop_is_its_unrolled_model_on_every_scalar() {
    // The loop was rolled: its node list has one `Repeat` entry; the hand-unrolled one has none.
    assert!(core::any::type_name::<RolledChainNodes>().contains("Repeat<"));
    assert!(!core::any::type_name::<UnrolledChainNodes>().contains("Repeat<"));
    for salt in 0..2 * floats::MODES {
        // Every element from the salt's mix of adversarial values (NaN payloads, signed zeros,
        // infinities, subnormals), one draw per input and element.
        let salt_of =
            |name: &str, i: usize| salt + floats::MODES * (name.bytes().map(u64::from).sum::<u64>() * 1_000 + i as u64);
        check_rolled(|name, i| floats::adversarial::<f64>(exactgrad::Dims::vector(1), salt_of(name, i)).data()[0]);
        check_rolled(|name, i| floats::adversarial::<f32>(exactgrad::Dims::vector(1), salt_of(name, i)).data()[0]);
    }
    for salt in 0..8u64 {
        check_rolled(|name, i| {
            let h = floats::splitmix(salt * 1_000 + i as u64 + name.bytes().map(u64::from).sum::<u64>() * 7);
            core::num::Wrapping(match h % 5 {
                0 => 0,
                1 => i64::MIN,
                2 => i64::MAX,
                _ => (h % 9) as i64 - 4,
            })
        });
    }
    sym::Sym::reset();
    check_rolled(|name, i| sym::Sym::leaf(format!("{name}{i}")));
}

/// `describe_backward` without the nodes' labels (`(h@i=2)`), which only loops give.
fn without_labels(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" (") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        match tail.find(')') {
            Some(end) if tail[..end].contains('@') => rest = &tail[end + 1..],
            _ => {
                out.push_str(" (");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn a_rolled_loop_plans_the_unrolled_schedule_in_tables_that_do_not_grow_with_it() {
    // The plan of the rolled model is written with repeats, but reads as the hand-unrolled
    // model's: the same levels, visits, pending uniforms and buffers, line for line.
    // (Its forward is written out: a level there holds nodes of two iterations; so are its
    // sweeps: of 4 iterations only 2 are alike, the first reading `x` and the last the seed.)
    let (rolled, unrolled) = (RolledChain::plan(), UnrolledChain::plan());
    assert!(!rolled.nodes.repeats.is_empty() && unrolled.nodes.repeats.is_empty());
    assert_eq!(without_labels(&RolledChain::describe_backward()), without_labels(&UnrolledChain::describe_backward()));
    let text = RolledChain::describe_backward();
    assert!(text.contains("(h@i=3) = sub"), "{text}");
}

graph! {
    /// A chain whose levels are its iterations' nodes one by one: every table repeats.
    fn tanh_chain(x: [3], a: [[3]; 6]) -> [] {
        let mut h = x;
        for i in 0..6 {
            h = tanh(h * a[i]);
        }
        sum(h)
    }
}

#[test]
fn repeated_levels_and_steps_run_as_written_out() {
    let plan = TanhChain::plan();
    assert!(!plan.forward.repeats.is_empty() && !plan.nodes.repeats.is_empty());
    for pass in plan.passes {
        match pass {
            exactgrad::program::PassPlan::Planned(sweep) => assert!(!sweep.steps.repeats.is_empty()),
            exactgrad::program::PassPlan::Runtime => panic!("a planned pass"),
        }
    }
    for salt in 0..2 * floats::MODES {
        let (g, h) = tanh_chain::<f64>();
        let mut inputs = h.inputs(adv(salt, 0), core::array::from_fn(|k| adv(salt, 1 + k as u64)));
        let seed: Tensor<f64, ()> = adv(salt, 9);
        let saved = g.compile(inputs.clone(), ()).unwrap();
        let dense = saved.backprop_inputs_dense(exactgrad::Seeds::single(&g, h.output, seed.clone()).unwrap()).unwrap();
        let from = saved.backprop_from(h.output, seed.clone()).unwrap();
        let mut program = TanhChain::program::<f64>();
        let got = all_bits(program.gradients(&mut inputs, &(), &seed).unwrap().as_slice());
        assert_eq!(got, all_bits(dense.as_slice()));
        assert_eq!(all_bits(program.value(h.output).into_iter()), all_bits([saved.value(h.output).unwrap()]));
        let got = all_bits(program.gradients_from(h.output, &mut inputs, &(), &seed).unwrap().as_slice());
        let from: Vec<_> = (0..7).map(|q| from.raw().get(q).unwrap().clone()).collect();
        assert_eq!(got, all_bits(&from));
    }
}
