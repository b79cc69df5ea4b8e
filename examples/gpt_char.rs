//! A character-level GPT (a decoder-only transformer) written with `graph!`, trained on 16 KB of
//! Shakespeare (`examples/data/coriolanus.txt`, the opening of *Coriolanus*; see
//! `examples/data/README.md`).
//!
//! * The model is `examples/support/gpt_model.rs` (shared with `benches/gpt_step.rs`): context 64,
//!   width 128, 2 pre-LayerNorm blocks of causal attention (4 heads of 32, the heads the batch
//!   axis of batched products) and a GELU MLP, written once as a `for` loop over parameter arrays
//!   with an `attention` and an `mlp` helper; 29 parameter tensors. Its vocabulary is a generic
//!   dim, here the text's 58 distinct characters.
//! * The first 90 % of the text trains it: batches of 8 random windows of 64 characters, the loss
//!   the mean cross-entropy of all 8 · 64 next characters, Adam (lr 1e-3) on the gradients of the
//!   model's generated backward program (`Gpt::program`). The last 10 % is held out: its loss is
//!   measured every `eval_every` steps and drawn beside the training loss as
//!   `target/gpt_char_loss.png`.
//! * Samples are drawn before and after training from the logits (the model's second output),
//!   8 at a time (one per window of the batch), the context the last 64 characters.
//! * It prints the unigram entropy of the text (the loss of the best model that ignores the
//!   context) against the final losses, in nats per character, saves the parameters as
//!   safetensors (`target/gpt_char.safetensors`, under the model's input names), loads them back
//!   and checks the reloaded model gives the same loss bits.
//!
//! `cargo run --release --example gpt_char` (about 3 minutes on two cores: 4 000 steps of about
//! 30 ms, the samples about 10 s)

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use exactgrad::typenum::{Unsigned, U58};
use exactgrad::{Adam, Optimizer, Tensor};
use indicatif::{ProgressBar, ProgressStyle};

#[path = "support/gpt_model.rs"]
mod gpt_model;
use exactgrad_example_support::{plot, text, SplitMix64};
pub(crate) use gpt_model::{gpt, init, Gpt, GptData, BATCH, CONTEXT, PARAMETERS};

/// The model's vocabulary: the distinct characters of the text.
pub(crate) type Vocab = U58;
/// The parameters of the model for this text.
pub(crate) type Params = gpt_model::Params<Vocab>;
/// Adam steps.
const ITERATIONS: usize = 4000;
/// Adam's learning rate.
const LR: f32 = 1e-3;
/// Steps between two measurements of the held-out loss.
const EVAL_EVERY: usize = 100;
/// The seed of the parameters, the batches and the samples.
const SEED: u64 = 2025;
/// The prompt of the samples.
pub(crate) const PROMPT: &str = "First Citizen:\n";

/// The text as character ids, the characters in id order (sorted), and where the held-out tail
/// starts.
pub(crate) struct Corpus {
    pub(crate) chars: Vec<char>,
    pub(crate) ids: Vec<usize>,
    /// The first 90 % of `ids` train, the rest is held out.
    pub(crate) split: usize,
}

impl Corpus {
    fn new(text: &str) -> Result<Self, Box<dyn Error>> {
        let (chars, ids) = text::encode(text, Vocab::USIZE)?;
        let split = ids.len() * 9 / 10;
        Ok(Corpus { chars, ids, split })
    }

    /// The entropy of the character frequencies of the whole text, in nats: the loss of the
    /// best model that predicts every character without looking at the context.
    pub(crate) fn unigram_entropy(&self) -> f64 {
        text::unigram_entropy(&self.ids, self.chars.len())
    }

    /// The data of the windows starting at `starts` (`BATCH` of them, each needing
    /// `CONTEXT + 1` characters): the characters and the next ones, window-major.
    fn batch(&self, starts: &[usize]) -> GptData {
        let mut ids = Vec::with_capacity(BATCH * CONTEXT);
        let mut targets = Vec::with_capacity(BATCH * CONTEXT);
        for &s in starts {
            ids.extend_from_slice(&self.ids[s..s + CONTEXT]);
            targets.extend_from_slice(&self.ids[s + 1..s + CONTEXT + 1]);
        }
        GptData { ids, targets }
    }

    /// Batches of consecutive windows tiling `range` of the text (the tail that does not fill a
    /// batch is left out): the starts of each batch's windows.
    fn tiling(&self, range: std::ops::Range<usize>) -> Vec<Vec<usize>> {
        let windows: Vec<usize> = (0..(range.len() - 1) / CONTEXT).map(|w| range.start + w * CONTEXT).collect();
        windows.chunks_exact(BATCH).map(<[usize]>::to_vec).collect()
    }

    /// The ids of `text`, an error naming a character that is not in the text.
    fn encode(&self, text: &str) -> Result<Vec<usize>, String> {
        text.chars().map(|c| self.chars.binary_search(&c).map_err(|_| format!("`{c}` is not in the text"))).collect()
    }
}

/// Reads the vendored text.
pub(crate) fn load() -> Result<Corpus, Box<dyn Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/coriolanus.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Corpus::new(&text)
}

/// The loss of each batch of `batches` under `params` (a forward each, through the runtime).
pub(crate) fn batch_losses(
    corpus: &Corpus,
    params: &Params,
    batches: &[Vec<usize>],
) -> Result<Vec<f32>, Box<dyn Error>> {
    let (g, h) = gpt::<f32, Vocab>();
    let mut inputs = params.clone();
    let mut losses = Vec::with_capacity(batches.len());
    for starts in batches {
        let values = g.eval(inputs, corpus.batch(starts))?;
        losses.push(values.get(h.output0)?.data()[0]);
        inputs = values.into_inputs();
    }
    Ok(losses)
}

/// The mean of `losses`, in `f64`.
fn mean(losses: &[f32]) -> f64 {
    losses.iter().map(|&l| f64::from(l)).sum::<f64>() / losses.len().max(1) as f64
}

/// `BATCH` samples of `len` characters after `prompt` (non-empty), drawn from the model's
/// probabilities with `rng`; the context of each prediction is the last `CONTEXT` characters.
/// Each character costs one forward of the whole batch, whose windows are the samples.
pub(crate) fn sample(
    corpus: &Corpus,
    params: &Params,
    prompt: &str,
    len: usize,
    rng: &mut SplitMix64,
) -> Result<Vec<String>, Box<dyn Error>> {
    let prompt_ids = corpus.encode(prompt)?;
    if prompt_ids.is_empty() {
        return Err("the prompt must not be empty".into());
    }
    let (g, h) = gpt::<f32, Vocab>();
    let mut streams = vec![prompt_ids; BATCH];
    let mut inputs = params.clone();
    for _ in 0..len {
        let (mut ids, mut last) = (Vec::with_capacity(BATCH * CONTEXT), 0);
        for stream in &streams {
            let window = &stream[stream.len().saturating_sub(CONTEXT)..];
            last = window.len() - 1;
            ids.extend_from_slice(window);
            // Positions after `last` are padding: a causal model's row `last` does not see them.
            ids.resize(ids.len() + CONTEXT - window.len(), 0);
        }
        let values = g.eval(inputs, GptData { ids, targets: vec![0; BATCH * CONTEXT] })?;
        let logits = values.get(h.output1)?.data();
        for (b, stream) in streams.iter_mut().enumerate() {
            let row = (b * CONTEXT + last) * Vocab::USIZE;
            stream.push(rng.pick(&softmax_weights(&logits[row..row + Vocab::USIZE])));
        }
        inputs = values.into_inputs();
    }
    Ok(streams.iter().map(|s| s.iter().map(|&c| corpus.chars[c]).collect()).collect())
}

/// The weights `exp(l - max)` of `softmax(logits)` (unnormalised), for drawing a character.
fn softmax_weights(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    logits.iter().map(|&l| f64::from(l - max).exp()).collect()
}

/// What `run` does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Adam steps.
    pub(crate) iterations: usize,
    /// Steps between two measurements of the held-out loss (after every whole interval).
    pub(crate) eval_every: usize,
    /// Characters sampled after the prompt, before and after training.
    pub(crate) sample_len: usize,
    /// At most this many batches of each part of the text are evaluated (the first ones).
    pub(crate) max_eval_batches: usize,
    /// The seed of the parameters, the windows and the samples.
    pub(crate) seed: u64,
    /// Print progress, samples and losses.
    pub(crate) verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            iterations: ITERATIONS,
            eval_every: EVAL_EVERY,
            sample_len: 240,
            max_eval_batches: usize::MAX,
            seed: SEED,
            verbose: true,
        }
    }
}

/// What `run` measured.
#[derive(Debug)]
#[allow(dead_code)] // `main` reads a part of it, `tests/examples.rs` the rest
pub(crate) struct Report {
    /// The unigram entropy of the text (nats per character).
    pub(crate) entropy: f64,
    /// Every step's batch loss, before its update.
    pub(crate) losses: Vec<f64>,
    /// At step 0 and then every `eval_every` steps: the first batch's loss, then the mean batch
    /// loss since the previous point.
    pub(crate) train_curve: Vec<f64>,
    /// The held-out loss at the same steps (before the first update, then after each interval).
    pub(crate) held_out_curve: Vec<f64>,
    /// The loss over the training part of the text after training.
    pub(crate) train_loss: f64,
    /// The loss over the held-out part after training.
    pub(crate) held_out_loss: f64,
    /// The reloaded parameters give the same held-out loss bits, batch by batch.
    pub(crate) reload_same_bits: bool,
    /// The names the parameters were saved under.
    pub(crate) names: &'static [&'static str],
    /// Samples before and after training.
    pub(crate) samples_before: Vec<String>,
    pub(crate) samples_after: Vec<String>,
    /// Seconds per training step (forward, backward, Adam).
    pub(crate) seconds_per_step: f64,
    /// The trained parameters.
    pub(crate) params: Params,
}

/// Trains a fresh model (`config.iterations` Adam steps on random windows of the training part),
/// samples before and after, saves the parameters into `out` (`gpt_char.safetensors`), loads
/// them back and compares, and draws the loss curves (`gpt_char_loss.png`).
pub(crate) fn run(config: Config, out: &Path) -> Result<Report, Box<dyn Error>> {
    if config.eval_every == 0 {
        return Err("eval_every must be at least 1".into());
    }
    let corpus = load()?;
    let entropy = corpus.unigram_entropy();
    let (g, h) = gpt::<f32, Vocab>();
    let say = |s: String| {
        if config.verbose {
            println!("{s}");
        }
    };
    say(format!(
        "{} characters, {} distinct ({} train, {} held out); unigram entropy {entropy:.3} nats/char",
        corpus.ids.len(),
        corpus.chars.len(),
        corpus.split,
        corpus.ids.len() - corpus.split
    ));
    say(format!(
        "the model: {} nodes, {} parameter tensors, {} parameters",
        Gpt::NODES,
        h.input_names().len(),
        init::<Vocab>(0)?.as_slice().iter().map(exactgrad::RawTensor::numel).sum::<usize>()
    ));

    let mut params = init::<Vocab>(config.seed)?;
    let mut sample_rng = SplitMix64(!config.seed);
    let samples_before = sample(&corpus, &params, PROMPT, config.sample_len, &mut sample_rng)?;
    say(format!("\nsample before training:\n{}\n", samples_before[0]));

    let mut held_out = corpus.tiling(corpus.split..corpus.ids.len());
    let mut train_tiles = corpus.tiling(0..corpus.split);
    held_out.truncate(config.max_eval_batches);
    train_tiles.truncate(config.max_eval_batches);
    let mut held_out_curve = vec![mean(&batch_losses(&corpus, &params, &held_out)?)];
    let mut train_curve = Vec::new();

    let bar = if config.verbose { ProgressBar::new(config.iterations as u64) } else { ProgressBar::hidden() };
    bar.set_style(ProgressStyle::with_template(
        "{bar:40.cyan/blue} {pos}/{len} steps  loss {msg}  [{elapsed} < {eta}]",
    )?);
    let mut program = Gpt::program::<f32, Vocab>();
    let mut adam = Adam::with_lr(LR)?;
    let mut rng = SplitMix64(config.seed);
    let seed = Tensor::full(1.0);
    let mut losses = Vec::with_capacity(config.iterations);
    let start = Instant::now();
    let mut training = 0.0;
    for i in 0..config.iterations {
        let starts: Vec<usize> = (0..BATCH).map(|_| rng.below(corpus.split - CONTEXT)).collect();
        let data = corpus.batch(&starts);
        let grads = program.gradients_from(h.output0, &mut params, &data, &seed)?;
        adam.step(&mut params, grads)?;
        let loss = f64::from(program.value(h.output0)?.data()[0]);
        losses.push(loss);
        if i == 0 {
            train_curve.push(loss);
        }
        if (i + 1) % config.eval_every == 0 {
            let since = i + 1 - config.eval_every;
            train_curve.push(losses[since..].iter().sum::<f64>() / config.eval_every as f64);
            // The held-out measurements are not counted in the training time.
            let paused = Instant::now();
            held_out_curve.push(mean(&batch_losses(&corpus, &params, &held_out)?));
            training -= paused.elapsed().as_secs_f64();
            bar.suspend(|| {
                say(format!(
                    "step {:>5}: training loss {:.3} (mean of the last {} batches), held-out loss {:.3}",
                    i + 1,
                    train_curve[train_curve.len() - 1],
                    config.eval_every,
                    held_out_curve[held_out_curve.len() - 1]
                ));
            });
        }
        bar.set_position(i as u64 + 1);
        bar.set_message(format!("{loss:.3}"));
    }
    bar.finish_and_clear();
    training += start.elapsed().as_secs_f64();
    let seconds_per_step = training / config.iterations.max(1) as f64;
    say(format!(
        "{} Adam steps (lr {LR}, {BATCH} windows of {CONTEXT} characters) in {training:.1} s: {:.1} ms per step",
        config.iterations,
        1e3 * seconds_per_step
    ));

    let train_loss = mean(&batch_losses(&corpus, &params, &train_tiles)?);
    let held_out_losses = batch_losses(&corpus, &params, &held_out)?;
    let held_out_loss = mean(&held_out_losses);
    say(format!(
        "\nloss over the training text {train_loss:.3}, held-out text {held_out_loss:.3} nats/char; unigram entropy {entropy:.3}"
    ));

    let samples_after = sample(&corpus, &params, PROMPT, config.sample_len, &mut sample_rng)?;
    say(format!("\nsamples after training:\n{}\n---\n{}\n", samples_after[0], samples_after[1]));

    std::fs::create_dir_all(out)?;
    let file = out.join("gpt_char.safetensors");
    params.save_safetensors_file(h.input_names(), &file)?;
    let reloaded = g.load_safetensors_file(h.input_names(), &file)?;
    let again = batch_losses(&corpus, &reloaded, &held_out)?;
    let reload_same_bits = again.len() == held_out_losses.len()
        && again.iter().zip(&held_out_losses).all(|(a, b)| a.to_bits() == b.to_bits());
    say(format!(
        "saved {} ({} tensors) and loaded it back: held-out loss {:.3}, the same bits: {reload_same_bits}",
        file.display(),
        h.input_names().len(),
        mean(&again)
    ));

    let png = out.join("gpt_char_loss.png");
    plot::plot_curves(
        &png,
        "Character-level GPT on Coriolanus",
        "step",
        config.eval_every,
        [("training loss", &train_curve), ("held-out loss", &held_out_curve)],
    )?;
    say(format!("loss curves: {}", png.display()));

    Ok(Report {
        entropy,
        losses,
        train_curve,
        held_out_curve,
        train_loss,
        held_out_loss,
        reload_same_bits,
        names: h.input_names(),
        samples_before,
        samples_after,
        seconds_per_step,
        params,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"), PathBuf::from);
    let report = run(Config::default(), &target)?;
    if report.names.len() != PARAMETERS {
        return Err(format!("{} parameter tensors, expected {PARAMETERS}", report.names.len()).into());
    }
    if !report.reload_same_bits {
        return Err("the reloaded model gives other loss bits".into());
    }
    let (first, entropy) = (report.losses[0], report.entropy);
    println!(
        "first batch loss {first:.3} (ln {} = {:.3}), final training-text loss {:.3}, held-out {:.3}, unigram entropy {entropy:.3}",
        Vocab::USIZE,
        (Vocab::USIZE as f64).ln(),
        report.train_loss,
        report.held_out_loss
    );
    if report.train_loss >= entropy {
        return Err(
            format!("the final loss {:.3} is not below the unigram entropy {entropy:.3}", report.train_loss).into()
        );
    }
    println!(
        "the model beats the unigram entropy by {:.3} nats/char on the training text",
        entropy - report.train_loss
    );
    // The text is small for 420 000 parameters: the held-out loss reaches its lowest early, then
    // rises as the model memorises the training part.
    let (best_at, best) =
        report
            .held_out_curve
            .iter()
            .enumerate()
            .fold((0, f64::INFINITY), |(k, b), (i, &l)| if l < b { (i, l) } else { (k, b) });
    println!(
        "lowest held-out loss {best:.3} at step {} ({:.3} below the unigram entropy); {:.3} at the end",
        best_at * EVAL_EVERY,
        entropy - best,
        report.held_out_loss
    );
    Ok(())
}
