//! Data-parallel training with a fixed reduction tree: the 784-256-128-10 MLP on batches of 64,
//! each split into 8 micro-batches of 8 rows. Each step computes the summed gradient three
//! times — on 1, 2 and 4 workers (threads, `data_parallel::Threads`) — checks that the three are
//! bit-identical, and takes one Adam step with it. The micro-batch gradients are added in the
//! fixed binary tree over micro-batch index (`data_parallel::tree_sum`), so the number of workers
//! changes where they run, never a bit of the sum.
//!
//! The data is synthetic and seeded: inputs uniform in `[0, 1)`, labels the argmax of a fixed
//! random linear "teacher", so the loss falls as the MLP learns the teacher.
//!
//! `cargo run --release --example data_parallel`

use std::error::Error;
use std::time::Instant;

use exactgrad::data_parallel::{self, Threads};
use exactgrad::{graph, Adam, Init, Optimizer, RawTensor, Tensor};

use exactgrad_example_support::SplitMix64;

graph! {
    /// One micro-batch of the MLP: 8 rows of 784 features, two ReLU layers, the mean softmax
    /// cross-entropy against the labels.
    pub(crate) fn mlp(
        w1: [784, 256], b1: [256], w2: [256, 128], b2: [128], w3: [128, 10], b3: [10];
        x: [8, 784], labels: Vec<usize>
    ) -> [] {
        let h1 = relu(x.matmul(w1) + b1);
        let h2 = relu(h1.matmul(w2) + b2);
        cross_entropy(h2.matmul(w3) + b3, labels)
    }
}

/// Features per row.
const FEATURES: usize = 784;
/// Classes.
const CLASSES: usize = 10;
/// Rows per micro-batch (the graph's batch dim).
const MICRO_ROWS: usize = 8;
/// Micro-batches per batch: a batch has 64 rows.
pub(crate) const MICRO_BATCHES: usize = 8;
/// The worker counts every step is checked on.
pub(crate) const WORKERS: [usize; 3] = [1, 2, 4];

/// What a run did.
#[derive(Debug)]
pub(crate) struct Report {
    /// The batch loss (mean over its 64 rows) before each step.
    pub(crate) losses: Vec<f32>,
    /// Steps whose summed gradients were bit-identical for every worker count (all of them,
    /// or the run stops with an error).
    pub(crate) identical_steps: usize,
}

/// One synthetic batch: `MICRO_BATCHES` micro-batches of data.
fn batch(rng: &mut SplitMix64, teacher: &[f32]) -> Result<Vec<MlpData<f32>>, Box<dyn Error>> {
    (0..MICRO_BATCHES)
        .map(|_| {
            let x: Vec<f32> = (0..MICRO_ROWS * FEATURES).map(|_| rng.unit()).collect();
            let labels = x
                .chunks(FEATURES)
                .map(|row| {
                    let score = |c: usize| row.iter().zip(&teacher[c * FEATURES..]).map(|(a, b)| a * b).sum::<f32>();
                    (0..CLASSES).max_by(|&a, &b| score(a).total_cmp(&score(b))).unwrap_or(0)
                })
                .collect();
            Ok(MlpData { x: Tensor::from_vec(x)?, labels })
        })
        .collect()
}

/// Trains for `steps` steps, checking every step's gradient on 1, 2 and 4 workers.
///
/// # Errors
/// A worker pool the system refuses, a failing micro-batch, or gradients that differ between
/// worker counts.
pub(crate) fn run(steps: usize) -> Result<Report, Box<dyn Error>> {
    let (_, h) = mlp::<f32>();
    let mut init = Init::seeded(11);
    let mut params = h.inputs(
        init.kaiming_uniform(),
        Tensor::zeros(),
        init.kaiming_uniform(),
        Tensor::zeros(),
        init.kaiming_uniform(),
        Tensor::zeros(),
    );
    let mut rng = SplitMix64(2026);
    let teacher: Vec<f32> = (0..CLASSES * FEATURES).map(|_| rng.unit() - 0.5).collect();
    // Each micro-batch's loss is the mean over its 8 rows; seeding it with 1/8 makes the sum of
    // the 8 micro-batches the mean over the batch of 64.
    let seed = Tensor::full(1.0 / MICRO_BATCHES as f32);
    let mut adam = Adam::with_lr(1e-3)?;
    // One set of workers per count; each worker has its own program, parameter copy, and the
    // losses of the micro-batches it ran (index, loss).
    let mut sets = Vec::new();
    for n in WORKERS {
        let states: Vec<_> = (0..n).map(|_| (Mlp::program::<f32>(), params.clone(), Vec::new())).collect();
        sets.push((Threads::new(n)?, states));
    }
    let mut report = Report { losses: Vec::new(), identical_steps: 0 };
    for _ in 0..steps {
        let data = batch(&mut rng, &teacher)?;
        let mut sums = Vec::new();
        for (workers, states) in &mut sets {
            for (_, copy, losses) in states.iter_mut() {
                copy.clone_from(&params);
                losses.clear();
            }
            let sum = data_parallel::gradients(workers, states, MICRO_BATCHES, |(program, copy, losses), i| {
                let grads = program.gradients(copy, &data[i], &seed)?.clone();
                losses.push((i, program.value(h.output)?.data()[0]));
                Ok(grads)
            })?;
            sums.push(sum);
        }
        for (sum, n) in sums.iter().zip(WORKERS).skip(1) {
            if !same_bits(sums[0].as_slice(), sum.as_slice()) {
                return Err(format!("the gradients on {n} workers differ from those on one").into());
            }
        }
        report.identical_steps += 1;
        // The batch loss: the mean of the micro-batch losses, in micro-batch order.
        let mut losses: Vec<(usize, f32)> = sets[0].1.iter().flat_map(|(_, _, l)| l.iter().copied()).collect();
        losses.sort_by_key(|&(i, _)| i);
        report.losses.push(losses.iter().map(|&(_, l)| l).sum::<f32>() / MICRO_BATCHES as f32);
        adam.step(&mut params, &sums[0])?;
    }
    Ok(report)
}

/// Whether two gradient lists hold the same bits.
fn same_bits(a: &[RawTensor<f32>], b: &[RawTensor<f32>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.storage_eq(y))
}

fn main() -> Result<(), Box<dyn Error>> {
    let steps = 30;
    let start = Instant::now();
    let report = run(steps)?;
    for (k, loss) in report.losses.iter().enumerate().step_by(5) {
        println!("step {k:3}: batch loss {loss:.4}");
    }
    println!("final batch loss {:.4}", report.losses.last().copied().unwrap_or(f32::NAN));
    println!(
        "gradients bit-identical on {:?} workers at all {} of {steps} steps ({} micro-batches of {MICRO_ROWS} rows, {:.1} s)",
        WORKERS,
        report.identical_steps,
        MICRO_BATCHES,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
