//! Iris classification end to end: a 4-16-3 MLP written with `graph!`, trained on Fisher's Iris
//! data (`examples/data/iris.csv`) by full-batch Adam through the input-gradient pass.
//!
//! * `load` / `parse` read the scikit-learn CSV (a header `rows,features,class names…`, then
//!   `f0,f1,f2,f3,label` lines) and report a malformed line by its number, never by a panic;
//! * `split` makes a stratified 120/30 train/test split (40/10 per class) from a fixed seed, and
//!   standardises the features with the training split's mean and standard deviation;
//! * `train` fits the model with Adam, evaluates the test split with the same graph built at the
//!   test batch size, and returns a `Report`; the same seed gives the same bits on every run. The
//!   features are a data tensor (`; x: [B, 4]`), not an input: no gradient is computed for them
//!   (the first layer is `matmul_data`), so every input is a parameter and Adam steps them all.
//!   The inputs do not mention the batch dim, so the training and test graphs take the same
//!   parameter pack; only their data (features and labels) differ;
//! * `plot_losses` draws the train and test loss curves as a PNG with a title, axis labels, tick
//!   numbers and a legend, in the `DejaVu` Sans font bundled in `examples/data/fonts/` (so no system
//!   font is needed).
//!
//! `cargo run --release --example iris` (writes `target/iris_loss.png`, or
//! `$CARGO_TARGET_DIR/iris_loss.png`)

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use exactgrad::typenum::{U120, U30, U4};
use exactgrad::{graph, Adam, Init, Optimizer, RawTensor, Seeds, Tensor};
use indicatif::{ProgressBar, ProgressStyle};

use exactgrad_example_support::plot::plot_losses;
use exactgrad_example_support::SplitMix64;

graph! {
    /// A 4-16-3 perceptron with a batch dim `B`: the mean softmax cross-entropy against the
    /// labels and the class probabilities. The features `x` and the labels are data: only the
    /// weights and biases get gradients.
    fn mlp<B>(w1: [4, 16], b1: [16], w2: [16, 3], b2: [3]; x: [B, 4], labels: Vec<usize>) -> ([], [B, 3]) {
        let h = relu(x.matmul(w1) + b1);
        let logits = h.matmul(w2) + b2;
        (cross_entropy(logits, labels), softmax(logits))
    }
}

/// Number of features per flower.
pub(crate) const FEATURES: usize = 4;
/// Number of classes.
pub(crate) const CLASSES: usize = 3;
/// Rows of the training split (the graph's batch dim for training).
pub(crate) const TRAIN_ROWS: usize = 120;
/// Rows of the test split.
pub(crate) const TEST_ROWS: usize = 30;

/// The seed of the train/test split.
pub(crate) const SPLIT_SEED: u64 = 20_240_601;
/// The seed of the initial parameters.
pub(crate) const INIT_SEED: u64 = 7;

/// The path of the data set.
pub(crate) fn data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/iris.csv")
}

/// A data set: one row of features and one label per sample.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dataset {
    /// The class names of the header.
    pub(crate) classes: Vec<String>,
    /// The features, one row per sample.
    pub(crate) features: Vec<[f64; FEATURES]>,
    /// The labels, in `0..classes.len()`.
    pub(crate) labels: Vec<usize>,
}

/// Why the data could not be read.
#[derive(Debug)]
pub(crate) enum DataError {
    /// The file could not be read.
    Io { path: PathBuf, source: std::io::Error },
    /// A line of the file is malformed (`line` counts from 1, the header is line 1).
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

fn parse_error(line: usize, message: impl Into<String>) -> DataError {
    DataError::Parse { line, message: message.into() }
}

/// Reads and parses the CSV file at `path`.
pub(crate) fn load(path: &Path) -> Result<Dataset, DataError> {
    let text = std::fs::read_to_string(path).map_err(|source| DataError::Io { path: path.to_owned(), source })?;
    parse(&text)
}

/// Parses scikit-learn's CSV format with the `csv` crate: a header `rows,features,class
/// names…`, then one record per sample with the features and the label (an integer class index).
/// Fields are trimmed; blank lines are skipped.
pub(crate) fn parse(text: &str) -> Result<Dataset, DataError> {
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    // The line a record starts on (1-based), for messages.
    let line_of = |r: &csv::StringRecord| r.position().map_or(1, |p| p.line() as usize);
    let mut records = reader.records();
    let header = match records.next() {
        None => return Err(parse_error(1, "empty file: expected a header")),
        Some(r) => r.map_err(|e| parse_error(e.position().map_or(1, |p| p.line() as usize), e.to_string()))?,
    };
    let header_line = line_of(&header);
    if header.len() < 3 {
        let joined = header.iter().collect::<Vec<_>>().join(",");
        return Err(parse_error(header_line, format!("the header `{joined}` must be `rows,features,class names…`")));
    }
    let rows: usize = header[0]
        .parse()
        .map_err(|_| parse_error(header_line, format!("the row count `{}` is not an integer", &header[0])))?;
    let features: usize = header[1]
        .parse()
        .map_err(|_| parse_error(header_line, format!("the feature count `{}` is not an integer", &header[1])))?;
    if features != FEATURES {
        return Err(parse_error(header_line, format!("expected {FEATURES} features, the header says {features}")));
    }
    let classes: Vec<String> = header.iter().skip(2).map(str::to_owned).collect();

    let mut data = Dataset { classes, features: Vec::with_capacity(rows), labels: Vec::with_capacity(rows) };
    let mut last_line = header_line;
    for record in records {
        let record =
            record.map_err(|e| parse_error(e.position().map_or(last_line, |p| p.line() as usize), e.to_string()))?;
        let n = line_of(&record);
        last_line = n;
        if record.len() != FEATURES + 1 {
            return Err(parse_error(
                n,
                format!("expected {} comma-separated fields, found {}", FEATURES + 1, record.len()),
            ));
        }
        let mut row = [0.0; FEATURES];
        for (j, (value, field)) in row.iter_mut().zip(record.iter()).enumerate() {
            *value = field
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| parse_error(n, format!("feature {j} `{field}` is not a finite number")))?;
        }
        let label_field = &record[FEATURES];
        let label: usize = label_field
            .parse()
            .map_err(|_| parse_error(n, format!("the label `{label_field}` is not a class index")))?;
        if label >= data.classes.len() {
            return Err(parse_error(
                n,
                format!("the label {label} is out of range for {} classes", data.classes.len()),
            ));
        }
        data.features.push(row);
        data.labels.push(label);
    }
    if data.labels.len() != rows {
        return Err(parse_error(
            last_line,
            format!("the header announces {rows} rows, the file has {}", data.labels.len()),
        ));
    }
    Ok(data)
}

/// A train/test split with standardised features.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Split {
    /// Training features, standardised, row-major (`rows × FEATURES`).
    pub(crate) train_x: Vec<f64>,
    /// Training labels.
    pub(crate) train_y: Vec<usize>,
    /// Test features, standardised with the training split's statistics.
    pub(crate) test_x: Vec<f64>,
    /// Test labels.
    pub(crate) test_y: Vec<usize>,
    /// The training split's per-feature mean and (population) standard deviation.
    pub(crate) mean: [f64; FEATURES],
    /// See `mean`.
    pub(crate) std: [f64; FEATURES],
}

/// A stratified split: in each class, a fifth of the samples (rounded) go to the test split,
/// chosen by a shuffle seeded with `seed`; both splits are then shuffled. The features are
/// standardised with the mean and standard deviation of the training split only.
pub(crate) fn split(data: &Dataset, seed: u64) -> Split {
    let mut rng = SplitMix64(seed);
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for class in 0..data.classes.len() {
        let mut members: Vec<usize> = (0..data.labels.len()).filter(|&i| data.labels[i] == class).collect();
        rng.shuffle(&mut members);
        let n_test = (members.len() + 2) / 5;
        test.extend_from_slice(&members[..n_test]);
        train.extend_from_slice(&members[n_test..]);
    }
    rng.shuffle(&mut train);
    rng.shuffle(&mut test);

    let n = train.len() as f64;
    let mut mean = [0.0; FEATURES];
    let mut std = [0.0; FEATURES];
    for j in 0..FEATURES {
        mean[j] = train.iter().map(|&i| data.features[i][j]).sum::<f64>() / n;
        let var = train.iter().map(|&i| (data.features[i][j] - mean[j]).powi(2)).sum::<f64>() / n;
        // A constant feature carries no information: leave it centred, unscaled.
        std[j] = if var > 0.0 { var.sqrt() } else { 1.0 };
    }
    let standardise = |rows: &[usize]| -> Vec<f64> {
        rows.iter().flat_map(|&i| (0..FEATURES).map(move |j| (data.features[i][j] - mean[j]) / std[j])).collect()
    };
    Split {
        train_x: standardise(&train),
        train_y: train.iter().map(|&i| data.labels[i]).collect(),
        test_x: standardise(&test),
        test_y: test.iter().map(|&i| data.labels[i]).collect(),
        mean,
        std,
    }
}

/// What `train` does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Number of full-batch Adam steps.
    pub(crate) epochs: usize,
    /// Adam's learning rate.
    pub(crate) lr: f64,
    /// The seed of the initial parameters.
    pub(crate) seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { epochs: 500, lr: 0.01, seed: INIT_SEED }
    }
}

/// The result of `train`.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The training loss before each step, then after the last one (`epochs + 1` values).
    pub(crate) train_losses: Vec<f64>,
    /// The test loss with the same parameters (`epochs + 1` values).
    pub(crate) test_losses: Vec<f64>,
    /// Fraction of the training split classified correctly at the end.
    pub(crate) train_accuracy: f64,
    /// Fraction of the test split classified correctly at the end.
    pub(crate) test_accuracy: f64,
    /// The trained parameters (`w1`, `b1`, `w2`, `b2`), as bits.
    pub(crate) params: Vec<Vec<u64>>,
}

/// The fraction of rows of `probs` (`rows × CLASSES`) whose largest entry (the first one on a
/// tie) is at the label.
fn accuracy(probs: &RawTensor<f64>, labels: &[usize]) -> f64 {
    let correct = probs
        .data()
        .chunks(CLASSES)
        .zip(labels)
        .filter(|(row, &label)| {
            let best = row.iter().enumerate().fold(0, |best, (k, &p)| if p > row[best] { k } else { best });
            best == label
        })
        .count();
    correct as f64 / labels.len() as f64
}

/// Trains the MLP on `split.train_*` for `config.epochs` full-batch Adam steps and evaluates it
/// on both splits. `on_epoch(epoch, train_loss)` is called before each step (a progress bar).
pub(crate) fn train(
    split: &Split,
    config: Config,
    mut on_epoch: impl FnMut(usize, f64),
) -> Result<Report, Box<dyn Error>> {
    if split.train_y.len() != TRAIN_ROWS || split.test_y.len() != TEST_ROWS {
        return Err(format!(
            "the graphs are built for a {TRAIN_ROWS}/{TEST_ROWS} split, this one is {}/{}",
            split.train_y.len(),
            split.test_y.len()
        )
        .into());
    }
    let (g, h) = mlp::<f64, U120>();
    let (test_g, test_h) = mlp::<f64, U30>();

    let mut init = Init::seeded(config.seed);
    let mut params = h.inputs(init.kaiming_uniform(), init.zeros(), init.xavier_uniform(), init.zeros());
    let train_x: Tensor<f64, (U120, U4)> = Tensor::from_vec(split.train_x.clone())?;
    let test_x: Tensor<f64, (U30, U4)> = Tensor::from_vec(split.test_x.clone())?;
    let train_data = || MlpData { x: train_x.clone(), labels: split.train_y.clone() };
    // The test split goes through the same graph at batch size 30, with the current parameters.
    let test_data = || MlpData { x: test_x.clone(), labels: split.test_y.clone() };

    let mut adam = Adam::with_lr(config.lr)?;
    let mut train_losses = Vec::with_capacity(config.epochs + 1);
    let mut test_losses = Vec::with_capacity(config.epochs + 1);
    for epoch in 0..config.epochs {
        let saved = g.compile(params.clone(), train_data())?;
        let loss = saved.value(h.output0)?.data()[0];
        train_losses.push(loss);
        let test = test_g.eval(params.clone(), test_data())?;
        test_losses.push(test.get(test_h.output0)?.data()[0]);
        on_epoch(epoch, loss);
        let grads = saved.backprop_inputs_stored(Seeds::single(&g, h.output0, Tensor::full(1.0))?)?;
        adam.step(&mut params, &grads)?;
    }

    let final_train = g.eval(params.clone(), train_data())?;
    train_losses.push(final_train.get(h.output0)?.data()[0]);
    let final_test = test_g.eval(params.clone(), test_data())?;
    test_losses.push(final_test.get(test_h.output0)?.data()[0]);
    Ok(Report {
        train_losses,
        test_losses,
        train_accuracy: accuracy(final_train.get(h.output1)?, &split.train_y),
        test_accuracy: accuracy(final_test.get(test_h.output1)?, &split.test_y),
        params: params.as_slice().iter().map(|t| t.data().iter().map(|v| v.to_bits()).collect()).collect(),
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let data = load(&data_path())?;
    let split = split(&data, SPLIT_SEED);
    println!(
        "Iris: {} flowers, classes {}; split {}/{} (stratified, seed {SPLIT_SEED})",
        data.labels.len(),
        data.classes.join(", "),
        split.train_y.len(),
        split.test_y.len()
    );

    let config = Config::default();
    let bar = ProgressBar::new(config.epochs as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} epochs  loss {msg}  [{elapsed}]")?);
    let start = Instant::now();
    let report = train(&split, config, |epoch, loss| {
        bar.set_position(epoch as u64 + 1);
        bar.set_message(format!("{loss:.4}"));
    })?;
    bar.finish();
    let elapsed = start.elapsed();

    let (first, last) = (report.train_losses[0], report.train_losses[report.train_losses.len() - 1]);
    println!(
        "4-16-3 MLP ({} parameters), Adam lr {}, {} full-batch epochs in {:.2} s",
        report.params.iter().map(Vec::len).sum::<usize>(),
        config.lr,
        config.epochs,
        elapsed.as_secs_f64()
    );
    println!("train loss {first:.4} -> {last:.4}, test loss {:.4}", report.test_losses[report.test_losses.len() - 1]);
    println!("train accuracy {:.1} %", 100.0 * report.train_accuracy);
    println!("test accuracy  {:.1} %", 100.0 * report.test_accuracy);

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"), PathBuf::from);
    std::fs::create_dir_all(&target)?;
    let png = target.join("iris_loss.png");
    plot_losses(&png, "Iris MLP: training and test loss", &report.train_losses, &report.test_losses)?;
    println!(
        "loss curve: {} (blue train, orange test; x: epochs 0..{}, grid every 100; y: loss 0..{:.2}, grid every 0.1)",
        png.display(),
        config.epochs,
        report.train_losses.iter().chain(&report.test_losses).copied().fold(0.1, f64::max) * 1.05
    );
    Ok(())
}
