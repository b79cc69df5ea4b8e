//! The examples' logic, run as tests (each example file is included as a module; its `run`
//! function is what `main` calls).
// A failure is a test failure.
#![allow(clippy::unwrap_used)]

#[path = "../examples/char_rnn.rs"]
#[allow(dead_code)]
mod char_rnn;
#[path = "../examples/custom_ops.rs"]
#[allow(dead_code)]
mod custom_ops;
#[path = "../examples/data_parallel.rs"]
#[allow(dead_code)]
mod data_parallel;
#[path = "../examples/digits_cnn.rs"]
#[allow(dead_code)]
mod digits_cnn;
#[path = "../examples/exact.rs"]
#[allow(dead_code)]
mod exact;
#[path = "../examples/gpt_char.rs"]
#[allow(dead_code)]
mod gpt_char;
#[path = "../examples/graphviz.rs"]
#[allow(dead_code)]
mod graphviz;
#[path = "../examples/iris.rs"]
#[allow(dead_code)]
mod iris;
#[path = "../examples/transformer_block.rs"]
#[allow(dead_code)]
mod transformer_block;

use num_rational::Ratio;

#[test]
fn custom_ops_skips_unrelated_heads() {
    let report = custom_ops::run(false).unwrap();
    // Nodes: 0 axpy, 1 side = a * a, 2 opaque softplus, 3 loss = sum, 4 x * x, 5 other = sum.
    // `side` runs for `loss` because the opaque node reaches its whole prefix.
    assert_eq!(report.visited, [vec![0, 1, 2, 3], vec![4, 5], vec![1]]);
    assert_eq!(report.runs_from_loss, (1, 1));
    assert_eq!(report.runs_from_other, (0, 0));
    // d loss / d a = sigmoid(a * x + x) * x; at a = -1, x = 3: sigmoid(0) * 3.
    assert_eq!(report.grad_a[2], 1.5);
}

#[test]
fn exact_gradients_are_fractions() {
    let (loss, [w1, b1, w2]) = exact::run(false).unwrap();
    assert_eq!(loss, Ratio::new(192_503, 172_800));
    assert_eq!((w1.len(), b1.len(), w2.len()), (12, 4, 8));
    assert_eq!(b1, [Ratio::new(3169, 4320), Ratio::new(0, 1), Ratio::new(347, 4320), Ratio::new(-1649, 4320)]);
}

#[test]
fn graphviz_writes_a_dot_file() {
    let dir = std::env::temp_dir().join(format!("exactgrad-graphviz-test-{}", std::process::id()));
    let written = graphviz::run(&dir, false).unwrap();
    let dot = std::fs::read_to_string(&written.dot).unwrap();
    assert!(dot.starts_with("digraph exactgrad {"));
    // 4 inputs and 7 nodes; 10 distinct read edges.
    assert_eq!(dot.lines().filter(|l| l.contains("[label=") && !l.contains("->")).count(), 11);
    assert_eq!(dot.matches("->").count(), 10);
    if let Some(svg) = &written.svg {
        assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn iris_parses_the_data_set_and_reports_bad_lines_by_number() {
    let data = iris::load(&iris::data_path()).unwrap();
    assert_eq!(data.classes, ["setosa", "versicolor", "virginica"]);
    assert_eq!(data.features.len(), 150);
    assert_eq!(data.features[0], [5.1, 3.5, 1.4, 0.2]);
    assert_eq!((0..3).map(|c| data.labels.iter().filter(|&&l| l == c).count()).collect::<Vec<_>>(), [50, 50, 50]);

    let header = "2,4,a,b\n";
    let message = |text: &str| iris::parse(text).unwrap_err().to_string();
    assert_eq!(message(""), "line 1: empty file: expected a header");
    assert_eq!(message("x,4,a,b\n"), "line 1: the row count `x` is not an integer");
    assert_eq!(message("2,5,a,b\n"), "line 1: expected 4 features, the header says 5");
    assert_eq!(message(&format!("{header}1,2,3,4,0\n1,2,3,0\n")), "line 3: expected 5 comma-separated fields, found 4");
    assert_eq!(
        message(&format!("{header}1,2,3,4,0\n1,2,oops,4,1\n")),
        "line 3: feature 2 `oops` is not a finite number"
    );
    assert_eq!(message(&format!("{header}1,2,3,NaN,0\n")), "line 2: feature 3 `NaN` is not a finite number");
    assert_eq!(
        message(&format!("{header}1,2,3,4,0\n1,2,3,4,2\n")),
        "line 3: the label 2 is out of range for 2 classes"
    );
    assert_eq!(message(&format!("{header}1,2,3,4,-1\n")), "line 2: the label `-1` is not a class index");
    assert_eq!(message(&format!("{header}1,2,3,4,0\n")), "line 2: the header announces 2 rows, the file has 1");
    let ok = iris::parse(&format!("{header}1,2,3,4,0\n\n 1.5, 2,3,4,1 \n")).unwrap();
    assert_eq!(ok.features, [[1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 3.0, 4.0]]);
    assert_eq!(ok.labels, [0, 1]);
    let missing = iris::load(std::path::Path::new("/nonexistent/iris.csv")).unwrap_err().to_string();
    assert!(missing.starts_with("cannot read /nonexistent/iris.csv: "), "{missing}");
}

#[test]
fn iris_split_is_stratified_standardised_and_seeded() {
    let data = iris::load(&iris::data_path()).unwrap();
    let split = iris::split(&data, iris::SPLIT_SEED);
    assert_eq!((split.train_y.len(), split.test_y.len()), (iris::TRAIN_ROWS, iris::TEST_ROWS));
    for class in 0..3 {
        assert_eq!(split.train_y.iter().filter(|&&l| l == class).count(), 40);
        assert_eq!(split.test_y.iter().filter(|&&l| l == class).count(), 10);
    }
    // Shuffled: not sorted by class.
    assert!(split.train_y.windows(2).any(|w| w[0] > w[1]));
    // Standardised with the training split's statistics: mean 0 and variance 1 there.
    for j in 0..iris::FEATURES {
        let column: Vec<f64> = split.train_x.iter().skip(j).step_by(iris::FEATURES).copied().collect();
        let mean = column.iter().sum::<f64>() / column.len() as f64;
        let var = column.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / column.len() as f64;
        assert!(mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-12, "feature {j}: mean {mean}, var {var}");
    }
    // Every sample is in exactly one split: the standardised rows map back to the data's rows.
    let unstandardise = |x: &[f64]| -> Vec<[f64; 4]> {
        x.chunks(4).map(|r| std::array::from_fn(|j| r[j] * split.std[j] + split.mean[j])).collect()
    };
    let mut rows = unstandardise(&split.train_x);
    rows.extend(unstandardise(&split.test_x));
    let key = |r: &[f64; 4]| r.map(|v| (v * 10.0).round() as i64);
    let mut got: Vec<_> = rows.iter().map(key).collect();
    let mut want: Vec<_> = data.features.iter().map(key).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    // The seed decides the split.
    assert_eq!(iris::split(&data, iris::SPLIT_SEED), split);
    assert_ne!(iris::split(&data, iris::SPLIT_SEED + 1).test_y, split.test_y);
}

#[test]
fn iris_trains_deterministically_at_small_size() {
    let data = iris::load(&iris::data_path()).unwrap();
    let split = iris::split(&data, iris::SPLIT_SEED);
    let config = iris::Config { epochs: 30, ..iris::Config::default() };
    let mut seen = Vec::new();
    let report = iris::train(&split, config, |epoch, loss| seen.push((epoch, loss))).unwrap();
    assert_eq!(report.train_losses.len(), 31);
    assert_eq!(report.test_losses.len(), 31);
    assert_eq!(seen, report.train_losses[..30].iter().copied().enumerate().collect::<Vec<_>>());

    let (first, last) = (report.train_losses[0], report.train_losses[30]);
    assert!(last < 0.5 * first, "train loss {first} -> {last}");
    assert!(report.test_losses[30] < report.test_losses[0], "{:?}", report.test_losses);
    assert!(report.train_accuracy > 0.6, "train accuracy {}", report.train_accuracy);
    assert!(report.test_accuracy > 0.6, "test accuracy {}", report.test_accuracy);
    assert_eq!(report.params.iter().map(Vec::len).collect::<Vec<_>>(), [64, 16, 48, 3]);

    // Same seeds, same bits; another initialisation seed, other parameters.
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let again = iris::train(&split, config, |_, _| {}).unwrap();
    assert_eq!(bits(&again.train_losses), bits(&report.train_losses));
    assert_eq!(bits(&again.test_losses), bits(&report.test_losses));
    assert_eq!(again.params, report.params);
    let other = iris::train(&split, iris::Config { seed: iris::INIT_SEED + 1, ..config }, |_, _| {}).unwrap();
    assert_ne!(other.params, report.params);

    let dir = std::env::temp_dir().join(format!("exactgrad-iris-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("loss.png");
    exactgrad_example_support::plot::plot_losses(
        &png,
        "Iris MLP: training and test loss",
        &report.train_losses,
        &report.test_losses,
    )
    .unwrap();
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn iris_rejects_a_split_of_other_sizes() {
    let data = iris::parse("6,4,a,b\n1,2,3,4,0\n2,3,4,5,1\n1,1,1,1,0\n2,2,2,2,1\n0,1,0,1,0\n3,2,1,0,1\n").unwrap();
    let split = iris::split(&data, 1);
    assert_eq!((split.train_y.len(), split.test_y.len()), (4, 2));
    let err = iris::train(&split, iris::Config::default(), |_, _| {}).unwrap_err().to_string();
    assert_eq!(err, "the graphs are built for a 120/30 split, this one is 4/2");
}

#[test]
fn transformer_block_gradients_match_finite_differences() {
    let report = transformer_block::run(1, false).unwrap();
    assert!(report.fast_equals_dense);
    assert_eq!(report.samples, 13);
    assert!(report.worst_relative_error < 1e-5, "{:.2e}", report.worst_relative_error);
    assert!(report.output.is_finite() && report.output != 0.0);
}

#[test]
fn char_rnn_learns_and_samples_from_its_alphabet() {
    let corpus = char_rnn::load().unwrap();
    assert_eq!(corpus.chars.len(), 58);
    let entropy = corpus.unigram_entropy();
    // At most the entropy of 58 equally frequent characters; far below it for English text.
    assert!(entropy > 2.0 && entropy < 58f64.ln(), "{entropy}");
    let config = char_rnn::Config { iterations: 12, lr: 0.01, ..char_rnn::Config::default() };
    let mut params = char_rnn::init(config.seed).unwrap();
    let losses = char_rnn::train(&corpus, &mut params, config, |_, _| {}).unwrap();
    // The first loss is about ln 58 (near-uniform predictions); 12 Adam steps lower it.
    assert!((losses[0] - 58f64.ln()).abs() < 0.5, "{}", losses[0]);
    let early: f64 = losses[..3].iter().sum::<f64>() / 3.0;
    let late: f64 = losses[9..].iter().sum::<f64>() / 3.0;
    assert!(late < early - 0.2, "{early} -> {late}");
    // The same seed gives the same sample; every character of it is one of the text's.
    let sample = |seed| {
        char_rnn::sample(&corpus, &params, "All:\n", 40, &mut exactgrad_example_support::SplitMix64(seed)).unwrap()
    };
    let s = sample(5);
    assert_eq!(s, sample(5));
    assert_eq!(s.chars().count(), "All:\n".len() + 40);
    assert!(s.chars().all(|c| corpus.chars.contains(&c)));
}

#[test]
fn digits_cnn_reads_the_data_and_reports_bad_records_by_line() {
    let digits = digits_cnn::load(&digits_cnn::data_path()).unwrap();
    assert_eq!(digits.labels.len(), 1797);
    // Every digit occurs (about 180 times each in this data set).
    for d in 0..10 {
        let n = digits.labels.iter().filter(|&&l| l == d).count();
        assert!((170..=190).contains(&n), "digit {d}: {n}");
    }
    assert!(digits.images.iter().flatten().all(|&p| (0.0..=1.0).contains(&p)));
    let row = |label: &str| format!("{}{label}\n", "0,".repeat(64));
    let message = |text: &str| digits_cnn::parse(text).unwrap_err().to_string();
    assert_eq!(message(&format!("{}{}", row("1"), row("12"))), "line 2: the label `12` is not a digit");
    assert_eq!(message(&format!("{}1,2\n", row("3"))), "line 2: expected 65 fields, found 2");
    let bright = format!("17,{}", &row("0")[2..]);
    assert_eq!(message(&bright), "line 1: pixel 0 `17` is not a count in 0..=16");
    let missing = digits_cnn::load(std::path::Path::new("/nonexistent/digits.csv.gz")).unwrap_err().to_string();
    assert!(missing.starts_with("cannot read /nonexistent/digits.csv.gz"), "{missing}");
}

#[test]
fn digits_cnn_splits_80_20_and_learns_in_one_epoch() {
    let digits = digits_cnn::load(&digits_cnn::data_path()).unwrap();
    let split = digits_cnn::split(digits.labels.len(), digits_cnn::SEED);
    assert_eq!((split.train.len(), split.test.len()), (1437, 360));
    let mut all: Vec<usize> = split.train.iter().chain(&split.test).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..1797).collect::<Vec<_>>());
    assert_eq!(digits_cnn::split(1797, digits_cnn::SEED), split);
    assert_ne!(digits_cnn::split(1797, digits_cnn::SEED + 1).test, split.test);

    let config = digits_cnn::Config { epochs: 1, ..digits_cnn::Config::default() };
    let report = digits_cnn::train(&digits, &split, config, |_, _, _| {}).unwrap();
    // 22 full batches and the partial rest, on one model.
    assert_eq!(report.batch_sizes.len(), 23);
    assert!(report.batch_sizes[..22].iter().all(|&b| b == 64));
    assert_eq!(report.batch_sizes[22], 1437 - 22 * 64);
    // Chance is 10 % (a loss of ln 10 ≈ 2.30); one epoch gets most test digits right (the seeded
    // run: 1.32 after one epoch).
    assert!(report.test_accuracy > 0.7, "{}", report.test_accuracy);
    assert!(report.test_losses[0] < 10f64.ln() * 2.0 / 3.0, "{}", report.test_losses[0]);
    // Saved and loaded back, the parameters are the same bits.
    let names = ["w1", "w2", "w3", "b3"];
    let bytes = report.params.save_safetensors(&names).unwrap();
    let (g, _) = digits_cnn::cnn::<f32>();
    let back = g.load_safetensors(&names, &bytes).unwrap();
    for (a, b) in report.params.as_slice().iter().zip(back.as_slice()) {
        assert_eq!(
            a.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn data_parallel_gradients_agree_on_1_2_and_4_workers() {
    // `run` fails if any step's summed gradient differs between worker counts.
    let report = data_parallel::run(2).unwrap();
    assert_eq!(report.identical_steps, 2);
    // The first loss of a freshly initialised 10-class classifier is near chance, ln 10.
    assert!((report.losses[0] - 10f32.ln()).abs() < 0.5, "first loss {}", report.losses[0]);
}

#[test]
fn gpt_char_learns_saves_and_samples_at_small_size() {
    let dir = std::env::temp_dir().join(format!("exactgrad-gpt-char-test-{}", std::process::id()));
    // The model at full size (about 3 s per forward in a debug build): 3 steps, one batch of each
    // part of the text evaluated, samples of 2 characters.
    let config = gpt_char::Config {
        iterations: 3,
        eval_every: 3,
        sample_len: 2,
        max_eval_batches: 1,
        verbose: false,
        ..gpt_char::Config::default()
    };
    let report = gpt_char::run(config, &dir).unwrap();
    // 29 parameter tensors, saved under the model's input names.
    assert_eq!(report.names.len(), gpt_char::PARAMETERS);
    assert_eq!(report.names[..4], ["tok_emb", "pos_emb", "ln1_g[0]", "ln1_g[1]"]);
    assert_eq!(report.names[26..], ["lnf_g", "lnf_b", "w_head"]);
    // The first loss is about ln 58 (near-uniform predictions of small logits); 3 Adam steps lower
    // the batch loss and the held-out loss.
    assert!((report.losses[0] - 58f64.ln()).abs() < 0.2, "{}", report.losses[0]);
    assert_eq!(report.losses.len(), 3);
    assert!(report.losses[2] < report.losses[0] - 0.05, "{:?}", report.losses);
    assert_eq!(report.held_out_curve.len(), 2);
    assert!(report.held_out_curve[1] < report.held_out_curve[0] - 0.05, "{:?}", report.held_out_curve);
    assert_eq!(report.train_curve.len(), 2);
    let entropy = report.entropy;
    assert!(entropy > 2.0 && entropy < 58f64.ln(), "{entropy}");
    // Saved and reloaded: the same loss bits; the file holds the 29 tensors by name.
    assert!(report.reload_same_bits);
    let (g, _) = gpt_char::gpt::<f32, gpt_char::Vocab>();
    let back = g.load_safetensors_file(report.names, dir.join("gpt_char.safetensors")).unwrap();
    assert!(back.as_slice().iter().zip(report.params.as_slice()).all(|(a, b)| a.storage_eq(b)));
    assert!(std::fs::read(dir.join("gpt_char_loss.png")).unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
    // 8 samples (one per window) of the prompt and 2 characters of the text's alphabet.
    let corpus = gpt_char::load().unwrap();
    for samples in [&report.samples_before, &report.samples_after] {
        assert_eq!(samples.len(), gpt_char::BATCH);
        for s in samples {
            assert!(s.starts_with(gpt_char::PROMPT), "{s:?}");
            assert_eq!(s.chars().count(), gpt_char::PROMPT.len() + 2, "{s:?}");
            assert!(s.chars().all(|c| corpus.chars.contains(&c)), "{s:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gpt_char_is_causal() {
    // The logits at position t of a window do not depend on the characters after t (the causal
    // mask), and do depend on those before (attention reaches back).
    let corpus = gpt_char::load().unwrap();
    // Fresh parameters: small random weights already make every row depend on every earlier
    // character.
    let params = gpt_char::init::<gpt_char::Vocab>(7).unwrap();
    let (g, h) = gpt_char::gpt::<f32, gpt_char::Vocab>();
    let (t, v) = (gpt_char::CONTEXT, corpus.chars.len());
    let ids: Vec<usize> = corpus.ids[..gpt_char::BATCH * t].to_vec();
    let logits = |ids: Vec<usize>| {
        let values = g.eval(params.clone(), gpt_char::GptData { ids, targets: vec![0; gpt_char::BATCH * t] }).unwrap();
        values.get(h.output1).unwrap().data().to_vec()
    };
    let base = logits(ids.clone());
    // Change position 40 of window 2: its rows from 40 on change, every other row (the earlier
    // ones of window 2 and all of the other windows) keeps its bits.
    let mut later = ids.clone();
    later[2 * t + 40] = (later[2 * t + 40] + 1) % v;
    let moved = logits(later);
    let row = |l: &[f32], r: usize| l[r * v..(r + 1) * v].iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for r in 0..gpt_char::BATCH * t {
        let same = row(&base, r) == row(&moved, r);
        let affected = r / t == 2 && r % t >= 40;
        assert_eq!(same, !affected, "row {r}");
    }
}
