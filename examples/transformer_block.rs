//! One pre-LN transformer block written with `graph!`: layer norm, Q/K/V projections, scaled
//! dot-product attention with softmax over 4 heads, output projection, residual, and a GELU MLP
//! with its own layer norm and residual. It runs forward and backward (the gradients of every
//! parameter from one `backprop_from`), checks the fast pass against the dense reference bit for
//! bit, and checks sampled gradient entries against central finite differences.
//!
//! `cargo run --release --example transformer_block`

use exactgrad::typenum::{U128, U32, U64};
use exactgrad::{graph, Init, Tensor};

/// Any error of the example (graph errors, invalid initialiser parameters).
type Result<T> = core::result::Result<T, Box<dyn std::error::Error>>;

graph! {
    /// A pre-LN block on a sequence of 32 tokens of width 64, 4 heads of width 16; the output is
    /// the sum of the block's output times a fixed probe `p` (a scalar to differentiate).
    pub(crate) fn block(
        x: [32, 64], p: [32, 64],
        ln1_g: [64], ln1_b: [64], wq: [64, 64], wk: [64, 64], wv: [64, 64], wo: [64, 64],
        ln2_g: [64], ln2_b: [64], w1: [64, 128], b1: [128], w2: [128, 64], b2: [64]
    ) -> [] {
        let h = layer_norm(x, ln1_g, ln1_b);
        let q = h.matmul(wq);
        let k = h.matmul(wk);
        let v = h.matmul(wv);
        let a0 = softmax(slice(q, 1, 0, 16).matmul(slice(k, 1, 0, 16).t()) * 0.25).matmul(slice(v, 1, 0, 16));
        let a1 = softmax(slice(q, 1, 16, 16).matmul(slice(k, 1, 16, 16).t()) * 0.25).matmul(slice(v, 1, 16, 16));
        let a2 = softmax(slice(q, 1, 32, 16).matmul(slice(k, 1, 32, 16).t()) * 0.25).matmul(slice(v, 1, 32, 16));
        let a3 = softmax(slice(q, 1, 48, 16).matmul(slice(k, 1, 48, 16).t()) * 0.25).matmul(slice(v, 1, 48, 16));
        let heads = concat([a0, a1, a2, a3], 1); // one node: each head copied once
        let r = x + heads.matmul(wo);
        let m = gelu(layer_norm(r, ln2_g, ln2_b).matmul(w1) + b1).matmul(w2) + b2;
        let y = r + m;
        sum(y * p)
    }
}

/// What the example measured.
pub(crate) struct Report {
    /// The block's scalar output.
    pub(crate) output: f64,
    /// The fast single-output pass equals its dense reference bit for bit.
    pub(crate) fast_equals_dense: bool,
    /// Largest relative difference between sampled analytic and finite-difference gradients.
    pub(crate) worst_relative_error: f64,
    /// Number of sampled entries.
    pub(crate) samples: usize,
}

/// Builds the block, runs forward and backward, and checks `samples` gradient entries per
/// parameter against central differences.
pub(crate) fn run(samples: usize, verbose: bool) -> Result<Report> {
    let (g, h) = block::<f64>();
    let mut init = Init::seeded(11);
    let mat64 = |init: &mut Init| init.xavier_uniform::<f64, U64, U64>();
    let x: Tensor<f64, (U32, U64)> = init.normal(0.0, 1.0)?;
    let p: Tensor<f64, (U32, U64)> = init.uniform(-1.0, 1.0)?;
    let ones = Tensor::<f64, (U64,)>::full(1.0);
    let zeros = Tensor::<f64, (U64,)>::zeros();
    let (wq, wk, wv, wo) = (mat64(&mut init), mat64(&mut init), mat64(&mut init), mat64(&mut init));
    let w1 = init.xavier_uniform::<f64, U64, U128>();
    let w2 = init.xavier_uniform::<f64, U128, U64>();
    let b1 = Tensor::<f64, (U128,)>::full(0.01);
    let inputs = h.inputs(x, p, ones.clone(), zeros.clone(), wq, wk, wv, wo, ones, zeros.clone(), w1, b1, w2, zeros);
    if verbose {
        println!("{} nodes", g.raw().nodes().len());
    }

    let saved = g.compile(inputs.clone(), ())?;
    let output = saved.value(h.output)?.data()[0];
    let fast = saved.backprop_from(h.output, Tensor::full(1.0))?;
    let dense = saved.backprop_from_dense(h.output, Tensor::full(1.0))?;
    let fast_equals_dense = fast
        .iter()
        .zip(dense.iter())
        .all(|(a, b)| a.data().iter().zip(b.data()).all(|(u, v)| u.to_bits() == v.to_bits()));

    // Central differences on sampled entries of every input but the probe.
    let eps = 1e-5;
    let mut worst: f64 = 0.0;
    let mut count = 0;
    for q in (0..inputs.len()).filter(|&q| q != 1) {
        let n = inputs.as_slice()[q].numel();
        for s in 0..samples {
            let i = (s * 7919 + q * 131) % n;
            let at = |delta: f64| -> Result<f64> {
                let mut moved = inputs.clone();
                if let Some(data) = moved.data_mut(q) {
                    data[i] += delta;
                }
                Ok(g.compile(moved, ())?.value(h.output)?.data()[0])
            };
            let numeric = (at(eps)? - at(-eps)?) / (2.0 * eps);
            let analytic = fast.raw()[q].data()[i];
            let scale = 1e-3_f64.max(numeric.abs()).max(analytic.abs());
            worst = worst.max((numeric - analytic).abs() / scale);
            count += 1;
        }
    }
    if verbose {
        println!("output = {output:.6}");
        println!("backprop_from equals backprop_from_dense bit for bit: {fast_equals_dense}");
        println!("{count} sampled gradient entries, worst relative error vs finite differences: {worst:.2e}");
    }
    Ok(Report { output, fast_equals_dense, worst_relative_error: worst, samples: count })
}

fn main() -> Result<()> {
    let report = run(8, true)?;
    println!("checked {} entries; block output {:.6}", report.samples, report.output);
    assert!(report.fast_equals_dense, "the fast pass must equal its dense reference");
    assert!(report.worst_relative_error < 1e-5, "gradient check failed: {:.2e}", report.worst_relative_error);
    Ok(())
}
