//! One training step of the character-level GPT of `examples/gpt_char.rs` (issue 25), without
//! the optimizer: the forward, the loss and the gradients of all 29 parameter tensors, for a
//! vocabulary of 65 characters (tiny Shakespeare's) and one batch of 8 windows of 64 seeded
//! random tokens, `f32`. The model is `examples/support/gpt_model.rs`, the example's own. Four
//! benchmarks in one group, so one run compares them:
//!
//! * `runtime`: `compile` (the saved forward) and the single-output pass from the loss
//!   (`backprop_from`, which also returns every node's gradient), the parameters and the batch
//!   moved into `compile` and taken back, as a training loop runs it;
//! * `runtime_inputs_array`: the same with the array pass seeded at the loss, input gradients
//!   only (`backprop_inputs_array`);
//! * `program`: the generated program (`Gpt::program`), `gradients_from` the loss;
//! * `gemm_only`: the step's products alone (`benches/gpt_gemms`), the floor of the step.
//!
//! The three passes give the same gradients bit for bit (checked once before measuring).
//!
//! `cargo bench --bench gpt_step -- --warm-up-time 2 --measurement-time 5`
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

mod gpt_gemms;
#[path = "../examples/support/gpt_model.rs"]
mod gpt_model;
mod product_floor;

use criterion::{criterion_group, criterion_main, Criterion};
use exactgrad::typenum::U65;
use exactgrad::{Seeds, Tensor};
use exactgrad_example_support::SplitMix64;
use gpt_model::{gpt, Gpt, GptData, BATCH, CONTEXT, PARAMETERS};

fn gpt_step(c: &mut Criterion) {
    let (g, h) = gpt::<f32, U65>();
    let mut params = gpt_model::init::<U65>(25).expect("valid initialisation");
    // A seeded random text of 65 characters; 8 windows of it, each with its next characters.
    let mut rng = SplitMix64(25);
    let text: Vec<usize> = (0..4096).map(|_| rng.below(65)).collect();
    let starts: Vec<usize> = (0..BATCH).map(|_| rng.below(text.len() - CONTEXT)).collect();
    let data = GptData {
        ids: starts.iter().flat_map(|&s| text[s..s + CONTEXT].iter().copied()).collect(),
        targets: starts.iter().flat_map(|&s| text[s + 1..s + CONTEXT + 1].iter().copied()).collect(),
    };
    let seed = Tensor::full(1.0);
    let mut program = Gpt::program::<f32, U65>();
    // One check: the program's gradients are the runtime's, all 29 of them.
    {
        let saved = g.compile(params.clone(), data.clone()).expect("compiles");
        let want = saved.backprop_from(h.output0, seed.clone()).expect("runtime pass");
        let array = saved
            .backprop_inputs_array(Seeds::single(&g, h.output0, seed.clone()).expect("seed"))
            .expect("runtime pass");
        let got = program.gradients_from(h.output0, &mut params, &data, &seed).expect("program");
        assert_eq!(got.len(), PARAMETERS);
        assert!(
            got.as_slice().iter().zip(want.raw().iter()).all(|(a, b)| a.storage_eq(b)),
            "the program's gradients differ from the runtime's"
        );
        assert!(
            got.as_slice().iter().zip(array.as_slice()).all(|(a, b)| a.storage_eq(b)),
            "the program's gradients differ from the runtime's array pass"
        );
    }
    let mut group = c.benchmark_group("gpt_step");
    group.sample_size(10);
    // The parameters and the batch moved into `compile` and taken back (no copies).
    let mut state = Some((params.clone(), data.clone()));
    group.bench_function("runtime", |b| {
        b.iter(|| {
            let (p, d) = state.take().expect("put back by the previous step");
            let saved = g.compile(p, d).expect("compiles");
            let grads = saved.backprop_from(h.output0, seed.clone()).expect("runtime pass");
            state = Some(saved.into_inputs_and_data());
            grads
        });
    });
    let seeds = Seeds::single(&g, h.output0, seed.clone()).expect("seed");
    group.bench_function("runtime_inputs_array", |b| {
        b.iter(|| {
            let (p, d) = state.take().expect("put back by the previous step");
            let saved = g.compile(p, d).expect("compiles");
            let grads = saved.backprop_inputs_array(seeds.clone()).expect("runtime pass");
            state = Some(saved.into_inputs_and_data());
            grads
        });
    });
    group.bench_function("program", |b| {
        b.iter(|| program.gradients_from(h.output0, &mut params, &data, &seed).map(exactgrad::Pack::len));
    });
    let mut gemms = gpt_gemms::gpt_gemms();
    group.bench_function("gemm_only", |b| b.iter(|| gemms.run()));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(5));
    targets = gpt_step
}
criterion_main!(benches);
