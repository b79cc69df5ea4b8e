//! Loops, loop-carried `let mut` bindings, parameter arrays and `const`s in `graph!`: a model
//! written with them is the unrolled model written by hand, bit for bit — the same `describe()`
//! listing, values, and results of every reverse pass (all positions seeded, inputs only,
//! `backprop_from` every position, the generated program's all-inputs and single-output passes),
//! in `f64` and `f32`, on adversarial inputs and seeds.
#![allow(clippy::unwrap_used)]

mod floats;

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
