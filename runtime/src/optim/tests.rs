use super::*;
use crate::graph::GraphData;
use crate::tensor::Tensor;
use typenum::{U1, U2, U3};

fn raw(v: &[f64]) -> RawTensor<f64> {
    RawTensor::from_fn(Dims::vector(v.len()), |i| v[i])
}

fn bits(t: &RawTensor<f64>) -> Vec<u64> {
    t.data().iter().map(|v| v.to_bits()).collect()
}

fn pack2(
    a: [f64; 2],
    b: [f64; 3],
) -> Pack<f64, crate::shape::Snoc<crate::shape::Snoc<crate::shape::Nil, (U2,)>, (U3,)>> {
    Pack::new().push(Tensor::<f64, (U2,)>::from_fn(|i| a[i])).push(Tensor::<f64, (U3,)>::from_fn(|i| b[i]))
}

#[test]
fn plain_sgd_matches_hand_values() {
    let (lr, p0, g1, g2) = (0.1f64, [1.0, -2.0], [0.5, -0.25], [3.0, 7.0]);
    let mut p = vec![raw(&p0)];
    let mut sgd = Sgd::new(lr, 0.0).unwrap();
    sgd.step_raw(&mut p, &[raw(&g1)], None).unwrap();
    sgd.step_raw(&mut p, &[raw(&g2)], None).unwrap();
    let expected: Vec<f64> = (0..2).map(|i| (p0[i] - lr * g1[i]) - lr * g2[i]).collect();
    assert_eq!(bits(&p[0]), bits(&raw(&expected)));
    assert_eq!(sgd.velocity(0), None, "plain SGD keeps no buffer");
}

#[test]
fn momentum_sgd_matches_hand_values_and_keeps_buffers() {
    let (lr, mu) = (0.05f64, 0.9f64);
    let gs = [[1.0, -2.0], [0.5, 0.5], [-3.0, 0.125]];
    let mut p = pack2([0.3, -0.7], [0.0; 3]);
    let mut sgd = Sgd::new(lr, mu).unwrap();
    // Hand computation, PyTorch's formulas written out per element.
    let (mut hp, mut hv) = ([0.3f64, -0.7], [0.0f64; 2]);
    for (k, g) in gs.iter().enumerate() {
        let grads = pack2(*g, [1.0; 3]);
        sgd.step_only(&mut p, &grads, &Trainable::new().with_index(0)).unwrap();
        for i in 0..2 {
            hv[i] = if k == 0 { g[i] } else { mu * hv[i] + g[i] };
            hp[i] -= lr * hv[i];
        }
        assert_eq!(bits(&p.as_slice()[0]), bits(&raw(&hp)), "step {k}");
        assert_eq!(sgd.velocity(0).map(<[f64]>::to_vec), Some(hv.to_vec()), "buffer at step {k}");
    }
    // Step 2 by hand, as numbers: v = 0.9 · 1 + 0.5 = 1.4 and 0.9 · -2 + 0.5 = -1.3.
    assert!((0.3 - 0.05 * 1.0 - 0.05 * 1.4 - 0.05 * (0.9 * 1.4 - 3.0) - hp[0]).abs() < 1e-15);
    assert_eq!(p.as_slice()[1].data(), &[0.0; 3], "untrained position untouched");
    assert_eq!(sgd.velocity(1), None, "no buffer for an untrained position");
}

/// Adam written out per element in f64 with `powi` bias corrections.
fn adam_by_hand(lr: f64, b1: f64, b2: f64, eps: f64, p0: f64, gs: &[f64]) -> (f64, f64, f64) {
    let (mut p, mut m, mut v) = (p0, 0.0, 0.0);
    for (k, &g) in gs.iter().enumerate() {
        let t = k as i32 + 1;
        m = b1 * m + (1.0 - b1) * g;
        v = b2 * v + (1.0 - b2) * g * g;
        let m_hat = m / (1.0 - b1.powi(t));
        let v_hat = v / (1.0 - b2.powi(t));
        p -= lr * m_hat / (v_hat.sqrt() + eps);
    }
    (p, m, v)
}

#[test]
fn adam_matches_hand_values_for_three_steps() {
    let (lr, b1, b2, eps) = (0.01, 0.9, 0.999, 1e-8);
    let gs = [[0.5, -4.0], [0.25, 1.0], [-1.5, 2e-3]];
    let p0 = [1.0, 2.0];
    let mut p = vec![raw(&p0)];
    let mut adam = Adam::new(lr, b1, b2, eps).unwrap();
    for (k, g) in gs.iter().enumerate() {
        adam.step_raw(&mut p, &[raw(g)], None).unwrap();
        assert_eq!(adam.steps(0), k as u64 + 1);
        for i in 0..2 {
            let col: Vec<f64> = gs[..=k].iter().map(|g| g[i]).collect();
            let (hp, hm, hv) = adam_by_hand(lr, b1, b2, eps, p0[i], &col);
            let (m, v) = adam.moments(0).unwrap();
            assert!((p[0].data()[i] - hp).abs() <= 1e-14, "p step {k}: {} vs {hp}", p[0].data()[i]);
            assert!((m[i] - hm).abs() <= 1e-15 && (v[i] - hv).abs() <= 1e-15, "moments step {k}");
        }
    }
    // Numbers for the first element after step 1: m = 0.05, v = 0.00025, p = 1 - 0.01 · 0.5 / (0.5 + 1e-8).
    let mut q = vec![raw(&[1.0])];
    let mut a = Adam::new(lr, b1, b2, eps).unwrap();
    a.step_raw(&mut q, &[raw(&[0.5])], None).unwrap();
    assert!((q[0].data()[0] - (1.0 - 0.01 * 0.5 / (0.5 + 1e-8))).abs() < 1e-15);
}

#[test]
fn adam_f32_follows_the_documented_order_bit_for_bit() {
    let (lr, b1, b2, eps) = (0.1f32, 0.8f32, 0.99f32, 1e-6f32);
    let gs = [0.7f32, -0.2, 0.05];
    let mut p = vec![RawTensor::from_fn(Dims::vector(1), |_| 0.5f32)];
    let mut adam = Adam::new(lr, b1, b2, eps).unwrap();
    let (mut hp, mut m, mut v, mut b1t, mut b2t) = (0.5f32, 0.0f32, 0.0f32, 1.0f32, 1.0f32);
    for g in gs {
        adam.step_raw(&mut p, &[RawTensor::from_fn(Dims::vector(1), |_| g)], None).unwrap();
        b1t *= b1;
        b2t *= b2;
        let step_size = lr / (1.0 - b1t);
        let c2 = (1.0 - b2t).sqrt();
        m = b1 * m + (1.0 - b1) * g;
        v = b2 * v + (1.0 - b2) * (g * g);
        hp -= step_size * (m / (v.sqrt() / c2 + eps));
        assert_eq!(p[0].data()[0].to_bits(), hp.to_bits());
    }
}

#[test]
fn adam_bias_correction_makes_the_first_step_lr_times_sign() {
    for g in [1e-3, 0.5, -7.0, 1e3] {
        let mut p = vec![raw(&[0.0])];
        let mut adam = Adam::new(0.01, 0.9, 0.999, 0.0).unwrap();
        adam.step_raw(&mut p, &[raw(&[g])], None).unwrap();
        // Without correction the step would be lr · (1 - β1) / sqrt(1 - β2) ≈ 3.16 · lr.
        assert!((p[0].data()[0] + 0.01 * g.signum()).abs() < 1e-15, "g = {g}: {}", p[0].data()[0]);
    }
    // The second step with the same gradient is also lr · sign (m̂ = g, v̂ = g²).
    let mut p = vec![raw(&[0.0])];
    let mut adam = Adam::new(0.01, 0.9, 0.999, 0.0).unwrap();
    for _ in 0..2 {
        adam.step_raw(&mut p, &[raw(&[3.0])], None).unwrap();
    }
    assert!((p[0].data()[0] + 0.02).abs() < 1e-15);
}

#[test]
fn adam_counts_steps_per_position() {
    let mut p = pack2([0.0; 2], [0.0; 3]);
    let g = pack2([1.0; 2], [1.0; 3]);
    let mut adam = Adam::with_lr(0.1).unwrap();
    adam.step(&mut p, &g).unwrap();
    adam.step_only(&mut p, &g, &Trainable::new().with_index(1).with_index(1)).unwrap();
    assert_eq!((adam.steps(0), adam.steps(1)), (1, 2));
    // Position 1 ran two bias-corrected steps of lr each; position 0 one.
    // (each off by about lr · eps / |g| = 1e-9)
    assert!((p.as_slice()[1].data()[0] + 0.2).abs() < 1e-8);
    assert!((p.as_slice()[0].data()[0] + 0.1).abs() < 1e-8);
    assert_eq!(p.as_slice()[1].data()[1..], p.as_slice()[1].data()[..2]);
    Optimizer::reset(&mut adam);
    assert_eq!(adam.steps(1), 0);
    assert!(adam.moments(1).is_none());
}

#[test]
fn wrong_shapes_are_errors_and_change_nothing() {
    let mut p = vec![raw(&[1.0, 2.0])];
    let mut sgd = Sgd::new(0.1, 0.9).unwrap();
    let e = sgd.step_raw(&mut p, &[raw(&[1.0, 2.0, 3.0])], None).unwrap_err();
    assert!(matches!(e, Error::PackShapes { .. }), "{e}");
    let e = sgd.step_raw(&mut p, &[], None).unwrap_err();
    assert!(matches!(e, Error::PackShapes { .. }), "{e}");
    assert_eq!(p[0].data(), &[1.0, 2.0]);
    assert_eq!(sgd.velocity(0), None);

    // State belongs to the first pack; another pack's shapes are an error until reset.
    let mut adam = Adam::with_lr(0.1).unwrap();
    let mut q = vec![raw(&[1.0, 2.0])];
    adam.step_raw(&mut q, &[raw(&[1.0, 1.0])], None).unwrap();
    let before = q[0].clone();
    let mut other = vec![raw(&[1.0, 2.0, 3.0])];
    let e = adam.step_raw(&mut other, &[raw(&[1.0, 1.0, 1.0])], None).unwrap_err();
    assert!(e.to_string().contains("optimizer state"), "{e}");
    assert_eq!(other[0].data(), &[1.0, 2.0, 3.0]);
    adam.reset();
    adam.step_raw(&mut other, &[raw(&[1.0, 1.0, 1.0])], None).unwrap();
    assert_eq!(q[0], before);

    // Trainable positions: out of range, wrong shape.
    let e = sgd.step_raw(&mut p, &[raw(&[1.0, 1.0])], Some(&Trainable::new().with_index(1))).unwrap_err();
    assert_eq!(e, Error::ForeignPosition { index: 1, len: 1 });
    let wrong = Position::<(U3,)>::new(0, 0);
    let e = sgd.step_raw(&mut p, &[raw(&[1.0, 1.0])], Some(&Trainable::new().with(wrong))).unwrap_err();
    assert_eq!(e, Error::ShapeMismatch { expected: Dims::vector(3), actual: Dims::vector(2) });
    assert_eq!(p[0].data(), &[1.0, 2.0]);
    assert_eq!(sgd.velocity(0), None, "a failed step creates no state");
}

#[test]
fn handles_of_another_graph_are_errors() {
    let (g, x) = GraphData::<f64, ()>::new().input::<(U1,)>();
    let (g, y) = g.push(crate::ops::sum(x));
    let (other, x_other) = GraphData::<f64, ()>::new().input::<(U1,)>();
    let _ = other;
    let mut params = Pack::new().push(Tensor::<f64, (U1,)>::full(2.0));
    let saved = g.compile(params.clone(), ()).unwrap();
    let grads = saved.backprop_inputs_stored(crate::pack::Seeds::single(&g, y, Tensor::full(1.0)).unwrap()).unwrap();
    let mut sgd = Sgd::new(0.5, 0.0).unwrap();
    let e = sgd.step_only(&mut params, &grads, &Trainable::new().with(x_other)).unwrap_err();
    assert!(matches!(e, Error::ForeignPosition { index: 0, .. }), "{e}");
    assert_eq!(params.as_slice()[0].data(), &[2.0]);
    sgd.step_only(&mut params, &grads, &Trainable::new().with(x)).unwrap();
    assert_eq!(params.as_slice()[0].data(), &[1.5]);
}

#[cfg(feature = "half")]
#[test]
fn half_precision_scalars_train() {
    use half::f16;
    let d = Dims::vector(1);
    let mut p = vec![RawTensor::full(d, f16::from_f32(1.0))];
    let g = [RawTensor::full(d, f16::from_f32(0.5))];
    let mut sgd = Sgd::new(f16::from_f32(0.5), f16::from_f32(0.0)).unwrap();
    sgd.step_raw(&mut p, &g, None).unwrap();
    assert_eq!(p[0].data()[0], f16::from_f32(0.75));
    let mut adam = Adam::<f16>::with_lr(f16::from_f32(0.125)).unwrap();
    adam.step_raw(&mut p, &g, None).unwrap();
    assert!((p[0].data()[0].to_f32() - 0.625).abs() < 1e-3);
}

#[test]
fn hyperparameters_are_checked() {
    assert_eq!(Sgd::new(-0.1f64, 0.0).unwrap_err().name, "lr");
    assert_eq!(Sgd::new(0.1f64, f64::NAN).unwrap_err().name, "momentum");
    assert_eq!(Sgd::new(f64::INFINITY, 0.0).unwrap_err().name, "lr");
    assert_eq!(Adam::new(0.1f32, 0.9, 1.0, 1e-8).unwrap_err().name, "beta2");
    assert_eq!(Adam::new(0.1f32, -0.1, 0.9, 1e-8).unwrap_err().name, "beta1");
    assert_eq!(Adam::new(0.1f32, 0.9, 0.9, -1.0).unwrap_err().name, "eps");
    let mut sgd = Sgd::new(0.1f64, 0.0).unwrap();
    assert!(sgd.set_lr(-1.0).is_err());
    assert_eq!(sgd.lr(), 0.1);
    let adam = Adam::<f64>::with_lr(1e-3).unwrap();
    assert_eq!((adam.betas(), adam.eps()), ((0.9, 0.999), 1e-8));
    assert_eq!(
        Sgd::new(-1.0f32, 0.0).unwrap_err().to_string(),
        "invalid hyper-parameter lr = -1: must be finite and >= 0"
    );
}
