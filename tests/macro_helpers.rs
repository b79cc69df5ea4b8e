//! Helper `fn`s in `graph!`: a model written with helpers (called several times, from a loop,
//! from other helpers, with constants, parameter arrays and annotated parameters) is the model
//! written out by hand, bit for bit — the same `describe()` listing, values, and results of every
//! reverse pass and of the generated programs, in `f64` and `f32`, on adversarial inputs and
//! seeds; and its nodes are labelled with the call path.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::{graph, Tensor};
use floats::{adv, all_bits, outcome, TestFloat};

graph! {
    const D: usize = 3;

    /// A dense layer (a helper's doc comment documents nothing generated).
    fn dense(x: [n, d], w: [d, e], b: [e]) {
        let z: [n, e] = x.matmul(w) + b;
        tanh(z)
    }

    /// The graph.
    fn helped(x: [2, D], w: [[3, 3]; 3], b: [[3]; 3], g: [3]) -> [] {
        let mut h = x;
        for i in 0..2 {
            h = residual(h, w, b, i, 0.5);
        }
        let y = dense(h, w[2], g);
        norm(y, D) * 2.0
    }

    fn residual(h, ws, bs, k, c) {
        h + dense(h, ws[k], bs[k]) * c
    }

    const EPS: f64 = 1e-5;

    fn norm(y, k) {
        let m = mean(y * y);
        sum(y) * (1.0 / (k as f64)) + m * EPS
    }
}

graph! {
    fn by_hand(x: [2, 3], w0: [3, 3], w1: [3, 3], w2: [3, 3], b0: [3], b1: [3], b2: [3], g: [3]) -> [] {
        let h1 = x + tanh(x.matmul(w0) + b0) * 0.5;
        let h2 = h1 + tanh(h1.matmul(w1) + b1) * 0.5;
        let y = tanh(h2.matmul(w2) + g);
        let m = mean(y * y);
        (sum(y) * (1.0 / 3.0f64) + m * 1e-5) * 2.0
    }
}

fn check<A: TestFloat>(salt: u64) {
    let (hg, hh) = helped::<A>();
    let (ug, uh) = by_hand::<A>();
    assert_eq!(hg.describe(), ug.describe());
    let helped_inputs = hh.inputs(
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
    assert_eq!(
        outcome(&hg, helped_inputs.clone(), hh.output, salt),
        outcome(&ug, flat_inputs.clone(), uh.output, salt)
    );
    let seed: Tensor<A, ()> = adv(salt, 8);
    let (mut hi, mut ui) = (helped_inputs, flat_inputs);
    let mut hp = Helped::program::<A>();
    let mut up = ByHand::program::<A>();
    let h = all_bits(hp.gradients(&mut hi, &(), &seed).unwrap().as_slice());
    let u = all_bits(up.gradients(&mut ui, &(), &seed).unwrap().as_slice());
    assert_eq!(h, u);
    let h = all_bits(hp.gradients_from(hh.output, &mut hi, &(), &seed).unwrap().as_slice());
    let u = all_bits(up.gradients_from(uh.output, &mut ui, &(), &seed).unwrap().as_slice());
    assert_eq!(h, u);
}

#[test]
fn a_model_with_helpers_is_its_inlined_model_bit_for_bit() {
    for salt in 0..6 {
        check::<f64>(salt);
        check::<f32>(salt);
    }
}

#[test]
fn nodes_are_labelled_with_the_call_path() {
    let text = Helped::describe_backward();
    for label in [
        "(residual#1/dense#1/z@i=0) = matmul",
        "(residual#2/dense#2/result@i=1) = tanh",
        "(residual#2/result@i=1) = add",
        "(dense#3/z) = add_row",
        "(norm#1/m) = mean",
        "(norm#1/result) = add",
    ] {
        assert!(text.contains(label), "{label} missing from\n{text}");
    }
}

graph! {
    /// Three consecutive calls of one helper: built as a loop of calls.
    fn stacked(x: [2, 3], w: [[3, 3]; 3]) -> [] {
        let h = layer(x, w[0]);
        let h = layer(h, w[1]);
        let h = layer(h, w[2]);
        sum(h)
    }

    fn layer(h, w) {
        tanh(h.matmul(w)) * 0.5 + h
    }
}

graph! {
    fn stacked_by_hand(x: [2, 3], w: [[3, 3]; 3]) -> [] {
        let h1 = tanh(x.matmul(w[0])) * 0.5 + x;
        let h2 = tanh(h1.matmul(w[1])) * 0.5 + h1;
        let h3 = tanh(h2.matmul(w[2])) * 0.5 + h2;
        sum(h3)
    }
}

fn check_stacked<A: TestFloat>(salt: u64) {
    let (sg, sh) = stacked::<A>();
    let (ug, uh) = stacked_by_hand::<A>();
    assert_eq!(sg.describe(), ug.describe());
    let inputs = |h: &StackedHandles| h.inputs(adv(salt, 0), [adv(salt, 1), adv(salt, 2), adv(salt, 3)]);
    let by_hand = uh.inputs(adv(salt, 0), [adv(salt, 1), adv(salt, 2), adv(salt, 3)]);
    assert_eq!(outcome(&sg, inputs(&sh), sh.output, salt), outcome(&ug, by_hand.clone(), uh.output, salt));
    let seed: Tensor<A, ()> = adv(salt, 8);
    let (mut si, mut ui) = (inputs(&sh), by_hand);
    let s = all_bits(Stacked::program::<A>().gradients(&mut si, &(), &seed).unwrap().as_slice());
    let u = all_bits(StackedByHand::program::<A>().gradients(&mut ui, &(), &seed).unwrap().as_slice());
    assert_eq!(s, u);
}

#[test]
fn consecutive_calls_of_a_helper_are_built_as_a_loop_and_are_the_inlined_model() {
    assert!(core::any::type_name::<StackedNodes>().contains("Repeat<"));
    assert!(!core::any::type_name::<StackedByHandNodes>().contains("Repeat<"));
    for salt in 0..2 * floats::MODES {
        check_stacked::<f64>(salt);
        check_stacked::<f32>(salt);
    }
}
