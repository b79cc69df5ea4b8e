//! A character-level recurrent network, written once with a `for` loop over 24 time steps and
//! trained on 16 KB of Shakespeare (`examples/data/coriolanus.txt`, the opening of *Coriolanus*
//! from char-rnn's public-domain tiny-shakespeare; see `examples/data/README.md`).
//!
//! * The model is an Elman RNN: `h_t = tanh(embed[c_t] + h_{t-1} · wh + bh)`, logits
//!   `h_t · wy + by`, and the mean cross-entropy of the next character over all `T × B` positions
//!   of a batch of `B` windows. The graph has one node per op and step (`describe()` labels them
//!   `h@t=5`, …), but its iterations have one structure — only the slices' starts change with `t`
//!   — so `graph!` writes the loop as a loop: its body's typed constructors (every shape checked
//!   once) and the backward program's rows of one step, over a table of the starts.
//! * The characters are ids into the embedding table (`gather_rows`, one lookup for the whole
//!   batch, time-major); the targets are a one-hot data tensor, sliced per step.
//! * `step` is the same cell for one character, used to sample text before and after training,
//!   with the trained parameters.
//! * It prints the unigram entropy of the text (the loss of the best model that ignores the
//!   context) and the final loss over the whole text, both in nats per character.
//!
//! `cargo run --release --example char_rnn`

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use exactgrad::{graph, Adam, Init, Optimizer, Pack, Seeds, Tensor};
use indicatif::{ProgressBar, ProgressStyle};

use exactgrad_example_support::{text, SplitMix64};

graph! {
    // Distinct characters of the text, hidden units, time steps per window (the loop's length),
    // windows per batch, and `-1 / (T · B)`, which turns the summed log-likelihood into the mean.
    const V: usize = 58;
    const H: usize = 96;
    const T: usize = 24;
    const B: usize = 32;
    const NEG_MEAN: f64 = -1.0 / ((T * B) as f64);

    /// The RNN over a batch of `B` windows of `T` characters: the mean cross-entropy of
    /// the next character. `ids` are the `T · B` input characters, time-major (step `t` of window
    /// `b` at `t · B + b`); `next` is the one-hot next character, in the same order.
    fn char_rnn(embed: [V, H], wh: [H, H], bh: [H], wy: [H, V], by: [V]; ids: Vec<usize>, next: [T * B, V]) -> [] {
        let e: [T * B, H] = gather_rows(embed, ids);
        let mut h = tanh(slice(e, 0, 0, B) + bh);
        let mut total = sum(log_softmax(h.matmul(wy) + by) * slice(next, 0, 0, B));
        for t in 1..T {
            h = tanh(slice(e, 0, t * B, B) + h.matmul(wh) + bh);
            total = total + sum(log_softmax(h.matmul(wy) + by) * slice(next, 0, t * B, B));
        }
        total * NEG_MEAN
    }
}

graph! {
    const V: usize = 58;
    const H: usize = 96;

    /// One step of the same cell for one character: the next hidden state and the probabilities
    /// of the next character.
    fn step(embed: [V, H], wh: [H, H], bh: [H], wy: [H, V], by: [V], h: [1, H]; id: Vec<usize>) -> ([1, H], [1, V]) {
        let e: [1, H] = gather_rows(embed, id);
        let next = tanh(e + h.matmul(wh) + bh);
        (next, softmax(next.matmul(wy) + by))
    }
}

/// Distinct characters the model is built for (the graph's `V`).
const VOCAB: usize = 58;
/// Hidden units (the graph's `H`).
const HIDDEN: usize = 96;
/// Time steps per window (the graph's `T`).
const STEPS: usize = 24;
/// Windows per batch (the graph's `B`).
const BATCH: usize = 32;
/// Adam steps.
const ITERATIONS: usize = 1500;
/// Adam's learning rate.
const LR: f32 = 0.005;
/// The seed of the parameters, the batches and the samples.
const SEED: u64 = 2026;

/// The text as character ids, and the characters in id order (sorted).
pub(crate) struct Corpus {
    pub(crate) chars: Vec<char>,
    pub(crate) ids: Vec<usize>,
}

impl Corpus {
    fn new(text: &str) -> Result<Self, Box<dyn Error>> {
        let (chars, ids) = text::encode(text, VOCAB)?;
        Ok(Corpus { chars, ids })
    }

    /// The entropy of the character frequencies, in nats: the loss of the best model that
    /// predicts every character without looking at the context.
    pub(crate) fn unigram_entropy(&self) -> f64 {
        text::unigram_entropy(&self.ids, self.chars.len())
    }

    /// The data of a batch of windows starting at `starts` (each needs `STEPS + 1` characters).
    fn batch(&self, starts: &[usize]) -> CharRnnData<f32> {
        let mut ids = Vec::with_capacity(STEPS * BATCH);
        let mut next = vec![0.0f32; STEPS * BATCH * VOCAB];
        for t in 0..STEPS {
            for (b, &s) in starts.iter().enumerate() {
                ids.push(self.ids[s + t]);
                next[(t * BATCH + b) * VOCAB + self.ids[s + t + 1]] = 1.0;
            }
        }
        CharRnnData { ids, next: Tensor::from_vec(next).expect("STEPS · BATCH one-hot rows") }
    }
}

/// The trained parameters: the inputs of `char_rnn`.
pub(crate) type Params = Pack<f32, CharRnnInputs>;

/// Samples `len` characters after `prompt` (which is fed first; an empty prompt starts from the
/// first character of the alphabet), with the parameters `params`.
pub(crate) fn sample(
    corpus: &Corpus,
    params: &Params,
    prompt: &str,
    len: usize,
    rng: &mut SplitMix64,
) -> Result<String, Box<dyn Error>> {
    let prompt_ids = prompt
        .chars()
        .map(|c| corpus.chars.binary_search(&c).map_err(|_| format!("`{c}` is not in the text")))
        .collect::<Result<Vec<usize>, String>>()?;
    let (g, h) = step::<f32>();
    let p = params.as_slice();
    // The parameters are copied into the step's pack once: each step takes the pack back from
    // the values (`into_inputs`) and overwrites only the hidden state.
    let mut inputs = h.inputs(
        Tensor::try_from_raw(p[0].clone())?,
        Tensor::try_from_raw(p[1].clone())?,
        Tensor::try_from_raw(p[2].clone())?,
        Tensor::try_from_raw(p[3].clone())?,
        Tensor::try_from_raw(p[4].clone())?,
        Tensor::zeros(),
    );
    let mut state = vec![0.0f32; HIDDEN];
    let mut out = String::from(prompt);
    let mut next = 0;
    for k in 0..prompt_ids.len() + len {
        let id = match prompt_ids.get(k) {
            Some(&id) => id,
            None => {
                out.push(corpus.chars[next]);
                next
            }
        };
        let values = g.eval(inputs, StepData { id: vec![id] })?;
        let probs: Vec<f64> = values.get(h.output1)?.data().iter().map(|&p| f64::from(p)).collect();
        next = rng.pick(&probs);
        state.copy_from_slice(values.get(h.output0)?.data());
        inputs = values.into_inputs();
        inputs.data_mut(h.h.index()).ok_or("the state is an input")?.copy_from_slice(&state);
    }
    Ok(out)
}

/// The mean loss over the whole text: consecutive batches of windows tiling it (the tail that
/// does not fill a batch is left out).
pub(crate) fn text_loss(corpus: &Corpus, params: &Params) -> Result<f64, Box<dyn Error>> {
    let (g, h) = char_rnn::<f32>();
    let windows: Vec<usize> = (0..(corpus.ids.len() - 1) / STEPS).map(|w| w * STEPS).collect();
    let (mut total, mut count) = (0.0f64, 0usize);
    for starts in windows.chunks_exact(BATCH) {
        let values = g.eval(params.clone(), corpus.batch(starts))?;
        total += f64::from(values.get(h.output)?.data()[0]);
        count += 1;
    }
    Ok(total / count as f64)
}

/// What `train` does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Adam steps.
    pub(crate) iterations: usize,
    /// Adam's learning rate.
    pub(crate) lr: f32,
    /// The seed of the parameters and of the windows.
    pub(crate) seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { iterations: ITERATIONS, lr: LR, seed: SEED }
    }
}

/// Reads the vendored text.
pub(crate) fn load() -> Result<Corpus, Box<dyn Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/coriolanus.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Corpus::new(&text)
}

/// Fresh parameters drawn from `seed`.
pub(crate) fn init(seed: u64) -> Result<Params, Box<dyn Error>> {
    let (_, h) = char_rnn::<f32>();
    let mut init = Init::seeded(seed);
    Ok(h.inputs(init.normal(0.0, 0.1)?, init.xavier_uniform(), init.zeros(), init.xavier_uniform(), init.zeros()))
}

/// Trains `params` with Adam on random windows of the text; `on_step(step, loss)` sees every
/// batch's loss before its update. Returns the losses.
pub(crate) fn train(
    corpus: &Corpus,
    params: &mut Params,
    config: Config,
    mut on_step: impl FnMut(usize, f64),
) -> Result<Vec<f64>, Box<dyn Error>> {
    let (g, h) = char_rnn::<f32>();
    let mut rng = SplitMix64(config.seed);
    let mut adam = Adam::with_lr(config.lr)?;
    let mut losses = Vec::with_capacity(config.iterations);
    for i in 0..config.iterations {
        let starts: Vec<usize> = (0..BATCH).map(|_| rng.below(corpus.ids.len() - STEPS)).collect();
        let saved = g.compile(params.clone(), corpus.batch(&starts))?;
        let loss = f64::from(saved.value(h.output)?.data()[0]);
        losses.push(loss);
        on_step(i, loss);
        let grads = saved.backprop_inputs_stored(Seeds::single(&g, h.output, Tensor::full(1.0))?)?;
        adam.step(params, &grads)?;
    }
    Ok(losses)
}

fn main() -> Result<(), Box<dyn Error>> {
    let corpus = load()?;
    let entropy = corpus.unigram_entropy();
    println!(
        "{} characters, {} distinct; unigram entropy {entropy:.3} nats/char (the loss of a model that ignores the context)",
        corpus.ids.len(),
        corpus.chars.len()
    );
    let (g, _) = char_rnn::<f32>();
    println!("the graph: {} nodes over {STEPS} steps", g.raw().nodes().len());

    let config = Config::default();
    let mut params = init(config.seed)?;
    let mut rng = SplitMix64(!config.seed);
    println!("\nsample before training:\n{}\n", sample(&corpus, &params, "First Citizen:\n", 160, &mut rng)?);

    let bar = ProgressBar::new(config.iterations as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} steps  loss {msg}  [{elapsed}]")?);
    let start = Instant::now();
    let mut smoothed = 0.0;
    let mut checkpoints = Vec::new();
    let losses = train(&corpus, &mut params, config, |i, loss| {
        smoothed = if i == 0 { loss } else { 0.95 * smoothed + 0.05 * loss };
        if i % 250 == 0 || i + 1 == config.iterations {
            checkpoints.push((i, smoothed));
        }
        bar.set_position(i as u64 + 1);
        bar.set_message(format!("{smoothed:.3}"));
    })?;
    bar.finish();
    println!(
        "{} Adam steps (lr {}, {BATCH} windows of {STEPS} characters) in {:.1} s; first batch loss {:.3}",
        config.iterations,
        config.lr,
        start.elapsed().as_secs_f64(),
        losses[0]
    );
    for (i, s) in &checkpoints {
        println!("  step {i:>5}: training loss {s:.3} (running mean of the batches)");
    }

    let loss = text_loss(&corpus, &params)?;
    println!("\nloss over the whole text {loss:.3} nats/char, unigram entropy {entropy:.3}");
    if loss >= entropy {
        return Err(format!("the final loss {loss:.3} is not below the unigram entropy {entropy:.3}").into());
    }
    println!("the model beats the unigram entropy by {:.3} nats/char", entropy - loss);
    println!("\nsample after training:\n{}", sample(&corpus, &params, "First Citizen:\n", 320, &mut rng)?);
    Ok(())
}
