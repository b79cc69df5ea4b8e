//! The MLP of the benchmarks (issue 4's W1, the MLP step of issues 10 and 13): 784-256-128-10,
//! `ReLU`, softmax cross-entropy, on a batch of `B` rows; the image batch `x` and the labels are
//! data, so the first layer is `matmul_data` (no gradient of `x`). With the parameters and the
//! batch of 64 every benchmark uses (one seeded stream: the parameters, then the images).
#![allow(dead_code)] // each benchmark uses a part

use exactgrad::typenum::{U64, U784};
use exactgrad::{graph, Init, Pack, Tensor};

graph! {
    /// The MLP on a batch of `B` rows.
    pub(crate) fn mlp<B>(w1: [784, 256], b1: [256], w2: [256, 128], b2: [128], w3: [128, 10], b3: [10];
                         x: [B, 784], labels: Vec<usize>) -> [] {
        let r1 = relu(x.matmul(w1) + b1);
        let r2 = relu(r1.matmul(w2) + b2);
        cross_entropy(r2.matmul(w3) + b3, labels)
    }
}

/// Rows of the batch.
pub(crate) const BATCH: usize = 64;
/// Classes.
pub(crate) const OUT: usize = 10;

/// The parameters (Kaiming-uniform weights, biases uniform in ±0.1) and a batch of 64 images
/// uniform in `[0, 1)` with labels `(7i + 3) mod 10`, from `Init::seeded(4)`.
pub(crate) fn params_and_batch() -> (Pack<f32, MlpInputs>, Tensor<f32, (U64, U784)>, Vec<usize>) {
    let (_, h) = mlp::<f32, U64>();
    let mut init = Init::seeded(4);
    let params = h.inputs(
        init.kaiming_uniform(),
        init.uniform(-0.1, 0.1).expect("valid range"),
        init.kaiming_uniform(),
        init.uniform(-0.1, 0.1).expect("valid range"),
        init.kaiming_uniform(),
        init.uniform(-0.1, 0.1).expect("valid range"),
    );
    let x = init.uniform(0.0, 1.0).expect("valid range");
    let labels = (0..BATCH).map(|i| (i * 7 + 3) % OUT).collect();
    (params, x, labels)
}
