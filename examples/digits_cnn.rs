//! A small convolutional network on scikit-learn's 8 × 8 handwritten digits
//! (`examples/data/digits.csv.gz`: 1 797 images, CC BY 4.0; see `examples/data/README.md`):
//! conv 3 × 3 (16 filters) → relu → 2 × 2 max pool → conv 3 × 3 (32) → relu → 2 × 2 max pool →
//! linear (the two conv blocks one `conv_block` helper), trained with Adam on mini-batches of 64
//! (the last batch of each epoch partial), on a seeded 80/20 split. The batch is a run-time dim:
//! one compiled model serves the full batches, the partial last one and the test split.
//!
//! * `load` reads the gzip-compressed CSV with `flate2` and `csv` and reports a malformed record by
//!   its line, never by a panic;
//! * `split` shuffles the images with a fixed seed: the first 80 % train, the rest test;
//! * `train` runs the epochs, evaluating the test split after each one, and returns a `Report`;
//! * `main` prints the test accuracy, saves the parameters as safetensors, loads them back into a
//!   fresh pack and checks the accuracy is the same, and draws the loss curves as a PNG.
//!
//! `cargo run --release --example digits_cnn` (writes `digits_cnn.safetensors` and
//! `digits_cnn_loss.png` into `target/`, or `$CARGO_TARGET_DIR`)

use std::error::Error;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use exactgrad::{graph, Adam, Dims, Init, Optimizer, Pack, RawTensor, Seeds, Tensor};
use indicatif::{ProgressBar, ProgressStyle};

use exactgrad_example_support::{plot, SplitMix64};

graph! {
    /// A 3 × 3 convolution (padding 1, so the planes keep their size), relu, and a 2 × 2 max
    /// pool (halving them).
    fn conv_block(x, w) {
        max_pool2d(relu(conv2d(x, w, padding = 1)), kernel = 2)
    }

    /// The CNN on a batch of `batch` images, a run-time dim: one compiled model serves the full
    /// batches, the partial last one and the whole test split. Outputs the mean cross-entropy
    /// against the labels and the class probabilities. The images `x` (`[batch, 1, 8, 8]`, one
    /// channel) and the labels are data: only the filters and the classifier get gradients. The
    /// classifier is a linear layer over the 32 × 2 × 2 = 128 features left by the second pool.
    pub(crate) fn cnn<batch: dyn>(w1: [16, 1, 3, 3], w2: [32, 16, 3, 3], w3: [128, 10], b3: [10]; x: [batch, 1, 8, 8], labels: Vec<usize>) -> ([], [batch, 10]) {
        let features: [batch, 128] = reshape(conv_block(conv_block(x, w1), w2));
        let logits = features.matmul(w3) + b3;
        (cross_entropy(logits, labels), softmax(logits))
    }
}

/// Pixels per image.
pub(crate) const PIXELS: usize = 64;
/// Classes (the digits 0–9).
pub(crate) const CLASSES: usize = 10;
/// Images per mini-batch.
pub(crate) const BATCH: usize = 64;
/// The seed of the split, the parameters and the batch order.
pub(crate) const SEED: u64 = 8;

/// The model's parameters (`w1`, `w2`, `w3`, `b3`).
pub(crate) type Params = Pack<f32, CnnInputs>;

/// The path of the data set.
pub(crate) fn data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/digits.csv.gz")
}

/// The images (pixels scaled to `[0, 1]`, row-major) and their labels.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Digits {
    /// One image per entry.
    pub(crate) images: Vec<[f32; PIXELS]>,
    /// The digit of each image.
    pub(crate) labels: Vec<usize>,
}

/// Why the data could not be read.
#[derive(Debug)]
pub(crate) enum DataError {
    /// The file could not be read or decompressed.
    Io { path: PathBuf, source: std::io::Error },
    /// A record is malformed (`line` counts from 1).
    Parse { line: usize, message: String },
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            DataError::Parse { line, message } => write!(f, "line {line}: {message}"),
        }
    }
}

impl Error for DataError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            DataError::Io { source, .. } => Some(source),
            DataError::Parse { .. } => None,
        }
    }
}

/// Reads and decompresses the file at `path`, then parses it.
pub(crate) fn load(path: &Path) -> Result<Digits, DataError> {
    let io = |source| DataError::Io { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).map_err(io)?;
    parse(&text)
}

/// Parses one image per record: 64 pixel counts in `0..=16`, then the label in `0..10`.
pub(crate) fn parse(text: &str) -> Result<Digits, DataError> {
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    let mut digits = Digits { images: Vec::new(), labels: Vec::new() };
    for record in reader.records() {
        let line_of = |p: Option<&csv::Position>| p.map_or(0, |p| p.line() as usize);
        let record = record.map_err(|e| DataError::Parse { line: line_of(e.position()), message: e.to_string() })?;
        let line = line_of(record.position());
        let error = |message: String| DataError::Parse { line, message };
        if record.len() != PIXELS + 1 {
            return Err(error(format!("expected {} fields, found {}", PIXELS + 1, record.len())));
        }
        let mut image = [0.0f32; PIXELS];
        for (j, (pixel, field)) in image.iter_mut().zip(record.iter()).enumerate() {
            let count: u8 = field
                .parse()
                .ok()
                .filter(|&c| c <= 16)
                .ok_or_else(|| error(format!("pixel {j} `{field}` is not a count in 0..=16")))?;
            *pixel = f32::from(count) / 16.0;
        }
        let label_field = &record[PIXELS];
        let label: usize = label_field
            .parse()
            .ok()
            .filter(|&l| l < CLASSES)
            .ok_or_else(|| error(format!("the label `{label_field}` is not a digit")))?;
        digits.images.push(image);
        digits.labels.push(label);
    }
    Ok(digits)
}

/// A train/test split: indices into the data set.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Split {
    /// 80 % of the images (rounded down).
    pub(crate) train: Vec<usize>,
    /// The rest.
    pub(crate) test: Vec<usize>,
}

/// Shuffles the indices with `seed`; the first 80 % train, the rest test.
pub(crate) fn split(n: usize, seed: u64) -> Split {
    let mut order: Vec<usize> = (0..n).collect();
    SplitMix64(seed).shuffle(&mut order);
    let test = order.split_off(n * 4 / 5);
    Split { train: order, test }
}

/// What `train` does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Passes over the training split.
    pub(crate) epochs: usize,
    /// Adam's learning rate.
    pub(crate) lr: f32,
    /// The seed of the parameters and of the batch order.
    pub(crate) seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { epochs: 30, lr: 0.005, seed: SEED }
    }
}

/// The result of `train`.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The mean training loss of each epoch (over its batches, before their updates).
    pub(crate) train_losses: Vec<f64>,
    /// The test loss after each epoch.
    pub(crate) test_losses: Vec<f64>,
    /// The batch sizes of one epoch.
    pub(crate) batch_sizes: Vec<usize>,
    /// Fraction of the test split classified correctly at the end.
    pub(crate) test_accuracy: f64,
    /// The trained parameters.
    pub(crate) params: Params,
}

/// The data of the images `indices`: `x` is `[indices.len(), 1, 8, 8]`.
fn batch(digits: &Digits, indices: &[usize]) -> Result<CnnData<f32>, Box<dyn Error>> {
    let x: Vec<f32> = indices.iter().flat_map(|&i| digits.images[i]).collect();
    let dims = Dims::new(&[indices.len(), 1, 8, 8]).ok_or("the batch has too many elements")?;
    Ok(CnnData { x: RawTensor::from_vec(dims, x)?, labels: indices.iter().map(|&i| digits.labels[i]).collect() })
}

/// The loss and the class probabilities of the images `indices` under `params`.
pub(crate) fn evaluate(
    (g, h): &(CnnGraph<f32>, CnnHandles),
    digits: &Digits,
    params: &Params,
    indices: &[usize],
) -> Result<(f64, RawTensor<f32>), Box<dyn Error>> {
    let values = g.eval(params.clone(), batch(digits, indices)?)?;
    Ok((f64::from(values.get(h.output0)?.data()[0]), values.get(h.output1)?.clone()))
}

/// The fraction of rows of `probs` whose largest entry (the first on a tie) is at the label.
pub(crate) fn accuracy(probs: &RawTensor<f32>, digits: &Digits, indices: &[usize]) -> f64 {
    let correct = probs
        .data()
        .chunks(CLASSES)
        .zip(indices)
        .filter(|(row, &i)| {
            let best = row.iter().enumerate().fold(0, |best, (k, &p)| if p > row[best] { k } else { best });
            best == digits.labels[i]
        })
        .count();
    correct as f64 / indices.len() as f64
}

/// One Adam step on the images `indices`; returns the batch loss before the step.
fn step(
    (g, h): &(CnnGraph<f32>, CnnHandles),
    digits: &Digits,
    params: &mut Params,
    adam: &mut Adam<f32>,
    indices: &[usize],
) -> Result<f64, Box<dyn Error>> {
    let saved = g.compile(params.clone(), batch(digits, indices)?)?;
    let loss = f64::from(saved.value(h.output0)?.data()[0]);
    let grads = saved.backprop_inputs_stored(Seeds::single(g, h.output0, Tensor::full(1.0))?)?;
    adam.step(params, &grads)?;
    Ok(loss)
}

/// Fresh parameters drawn from `seed`.
pub(crate) fn init(seed: u64) -> Result<Params, Box<dyn Error>> {
    let (_, h) = cnn::<f32>();
    let mut init = Init::seeded(seed);
    // Kaiming-uniform bounds for the fan-in of each layer: 9, 144 and 128 taps.
    Ok(h.inputs(
        init.uniform(-(6.0f32 / 9.0).sqrt(), (6.0f32 / 9.0).sqrt())?,
        init.uniform(-(6.0f32 / 144.0).sqrt(), (6.0f32 / 144.0).sqrt())?,
        init.uniform(-(6.0f32 / 128.0).sqrt(), (6.0f32 / 128.0).sqrt())?,
        init.zeros(),
    ))
}

/// Trains a fresh model for `config.epochs` epochs of shuffled mini-batches of 64 (the last one of
/// each epoch holds the rest); `on_epoch(epoch, train_loss, test_loss)` after each epoch.
pub(crate) fn train(
    digits: &Digits,
    split: &Split,
    config: Config,
    mut on_epoch: impl FnMut(usize, f64, f64),
) -> Result<Report, Box<dyn Error>> {
    let mut params = init(config.seed)?;
    let mut adam = Adam::with_lr(config.lr)?;
    let mut rng = SplitMix64(config.seed);
    let mut order = split.train.clone();
    let (mut train_losses, mut test_losses) = (Vec::new(), Vec::new());
    let batch_sizes: Vec<usize> = order.chunks(BATCH).map(<[usize]>::len).collect();
    // One model for the full batches, the partial last one and the test split.
    let model = cnn::<f32>();
    let mut test_probs = None;
    for epoch in 0..config.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for chunk in order.chunks(BATCH) {
            let loss = step(&model, digits, &mut params, &mut adam, chunk)?;
            total += loss * chunk.len() as f64;
        }
        train_losses.push(total / order.len() as f64);
        let (test_loss, probs) = evaluate(&model, digits, &params, &split.test)?;
        test_losses.push(test_loss);
        test_probs = Some(probs);
        on_epoch(epoch, train_losses[epoch], test_loss);
    }
    let test_accuracy = test_probs.map_or(0.0, |p| accuracy(&p, digits, &split.test));
    Ok(Report { train_losses, test_losses, batch_sizes, test_accuracy, params })
}

fn main() -> Result<(), Box<dyn Error>> {
    let digits = load(&data_path())?;
    let split = split(digits.labels.len(), SEED);
    println!(
        "digits: {} images of 8 × 8; split {}/{} (seed {SEED})",
        digits.labels.len(),
        split.train.len(),
        split.test.len()
    );

    let config = Config::default();
    let bar = ProgressBar::new(config.epochs as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} epochs  loss {msg}  [{elapsed}]")?);
    let start = Instant::now();
    let report = train(&digits, &split, config, |epoch, train, test| {
        bar.set_position(epoch as u64 + 1);
        bar.set_message(format!("{train:.4} (test {test:.4})"));
    })?;
    bar.finish();
    let sizes = &report.batch_sizes;
    println!(
        "{} epochs of {} batches ({} × {BATCH} and a last one of {}) in {:.1} s",
        config.epochs,
        sizes.len(),
        sizes.len() - 1,
        sizes[sizes.len() - 1],
        start.elapsed().as_secs_f64()
    );
    let (first, last) = (report.train_losses[0], report.train_losses[report.train_losses.len() - 1]);
    println!("train loss {first:.4} -> {last:.4}, test loss {:.4}", report.test_losses[report.test_losses.len() - 1]);
    println!("test accuracy {:.2} %", 100.0 * report.test_accuracy);

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"), PathBuf::from);
    std::fs::create_dir_all(&target)?;
    let model = cnn::<f32>();
    let (g, h) = &model;
    let file = target.join("digits_cnn.safetensors");
    report.params.save_safetensors_file(h.input_names(), &file)?;
    let reloaded = g.load_safetensors_file(h.input_names(), &file)?;
    let (_, probs) = evaluate(&model, &digits, &reloaded, &split.test)?;
    let again = accuracy(&probs, &digits, &split.test);
    println!("saved {} and loaded it back: test accuracy {:.2} %", file.display(), 100.0 * again);
    if again != report.test_accuracy {
        return Err("the reloaded model classifies differently".into());
    }

    let png = target.join("digits_cnn_loss.png");
    plot::plot_losses(&png, "Digits CNN: training and test loss", &report.train_losses, &report.test_losses)?;
    println!("loss curve: {}", png.display());
    Ok(())
}
