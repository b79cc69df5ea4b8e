//! Training end to end: a linear regression written with `graph!`, data and initial parameters
//! from a seeded `Init`, trained by SGD (with momentum) and by Adam through the input-gradient
//! pass; only the weights are trained, the features and targets (also inputs) are not.
use exactgrad::typenum::{U1, U3, U32};
use exactgrad::{graph, Adam, Init, Optimizer, Seeds, Sgd, Tensor, Trainable};

graph! {
    /// `mean((x · w + b - t)²)`: the target `t` is an input, so the loss is a graph output.
    fn linreg(x: [32, 3], w: [3, 1], b: [1], t: [32, 1]) -> [] {
        let y = x.matmul(w) + b;
        let d = y - t;
        mean(d * d)
    }
}

const W_TRUE: [f64; 3] = [2.0, -1.0, 0.5];
const B_TRUE: f64 = 0.3;

/// Trains for `steps` steps and returns the loss before each step and after the last, and the
/// final parameter pack's bits.
fn train<O: Optimizer<f64>>(opt: &mut O, steps: usize) -> (Vec<f64>, Vec<Vec<u64>>) {
    let (g, h) = linreg::<f64>();
    let mut init = Init::seeded(2024);
    let x: Tensor<f64, (U32, U3)> = init.uniform(-1.0, 1.0).expect("valid bounds");
    let noise: Tensor<f64, (U32, U1)> = init.normal(0.0, 0.01).expect("valid std");
    let t = Tensor::<f64, (U32, U1)>::from_fn(|r| {
        let row = &x.data()[3 * r..3 * r + 3];
        row[0] * W_TRUE[0] + row[1] * W_TRUE[1] + row[2] * W_TRUE[2] + B_TRUE + noise.data()[r]
    });
    let w0: Tensor<f64, (U3, U1)> = init.xavier_uniform();
    let b0: Tensor<f64, (U1,)> = init.zeros();
    let (x_bits, t_bits) = (bits(x.data()), bits(t.data()));

    let mut params = h.inputs(x, w0, b0, t);
    let trainable = Trainable::new().with(h.w).with(h.b);
    let mut losses = Vec::with_capacity(steps + 1);
    for _ in 0..steps {
        let saved = g.compile(params.clone(), ()).expect("compiles");
        losses.push(saved.value(h.output).expect("own handle").data()[0]);
        let seeds = Seeds::single(&g, h.output, Tensor::full(1.0)).expect("own handle");
        let grads = saved.backprop_inputs_stored(seeds).expect("runs");
        opt.step_only(&mut params, &grads, &trainable).expect("same pack, own handles");
    }
    losses.push(g.eval(params.clone(), ()).expect("compiles").get(h.output).expect("own handle").data()[0]);

    // Data-like inputs are never trained.
    let tensors = params.as_slice();
    assert_eq!(bits(tensors[0].data()), x_bits, "x changed");
    assert_eq!(bits(tensors[3].data()), t_bits, "t changed");
    (losses, tensors.iter().map(|t| bits(t.data())).collect())
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The loss fell by a large factor and the weights are near the true ones.
fn assert_trained(losses: &[f64], params: &[Vec<u64>]) {
    let w: Vec<f64> = params[1].iter().map(|&b| f64::from_bits(b)).collect();
    let b = f64::from_bits(params[2][0]);
    for (w, w_true) in w.iter().zip(W_TRUE) {
        assert!((w - w_true).abs() < 0.05, "w = {w:?}");
    }
    assert!((b - B_TRUE).abs() < 0.05, "b = {b}");
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    assert!(first > 0.5, "initial loss {first}");
    assert!(last < first / 1000.0, "loss {first} -> {last}");
    // Loss floor: the noise variance (1e-4).
    assert!(last < 1e-3, "final loss {last}");
}

#[test]
fn sgd_with_momentum_fits_a_linear_model() {
    let (losses, params) = train(&mut Sgd::new(0.1, 0.9).expect("valid"), 300);
    assert_trained(&losses, &params);
}

#[test]
fn plain_sgd_decreases_the_loss_at_every_step() {
    let (losses, params) = train(&mut Sgd::new(0.2, 0.0).expect("valid"), 400);
    assert_trained(&losses, &params);
    // Gradient descent with a small enough step on a convex quadratic is monotone (until the
    // loss reaches its floor, where rounding decides the last bits).
    let head = &losses[..100];
    assert!(head.windows(2).all(|w| w[1] <= w[0]), "{head:?}");
}

#[test]
fn adam_fits_a_linear_model() {
    let (losses, params) = train(&mut Adam::with_lr(0.05).expect("valid"), 400);
    assert_trained(&losses, &params);
}

#[test]
fn training_is_deterministic() {
    let a = train(&mut Adam::with_lr(0.05).expect("valid"), 50);
    let b = train(&mut Adam::with_lr(0.05).expect("valid"), 50);
    assert_eq!(bits(&a.0), bits(&b.0));
    assert_eq!(a.1, b.1);
}
