//! `ndarray` conversions (`ndarray` feature) in a model's workflow: parameters built from arrays,
//! gradients read back as arrays of their rank, bit for bit, and the untyped pack as `ArrayD`s.
#![cfg(feature = "ndarray")]
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

use exactgrad::ndarray::{array, Array1, Array2, ArrayD};
use exactgrad::typenum::U2;
use exactgrad::{graph, Error, RawTensor, Tensor};

graph! {
    fn affine<B>(w: [3, 2], b: [2]; x: [B, 3]) -> [] {
        sum(tanh(x.matmul(w) + b))
    }
}

#[test]
fn parameters_from_arrays_and_gradients_back_to_arrays() {
    let (g, h) = affine::<f64, U2>();
    let w: Array2<f64> = array![[0.5, -1.0], [0.25, -0.0], [2.0, 1.5]];
    let b: Array1<f64> = array![f64::from_bits(0x7ff8_0000_0000_0001), 0.1];
    let x: Array2<f64> = array![[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]];
    // A transposed array (not in standard layout) converts in logical order too.
    let x_t: Array2<f64> = x.t().to_owned().reversed_axes();
    let params = h.inputs(Tensor::try_from(w.clone()).unwrap(), Tensor::try_from(b.clone()).unwrap());
    let saved = g.compile(params.clone(), AffineData { x: Tensor::try_from(x_t).unwrap() }).unwrap();
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();

    // A gradient is untyped: an `ArrayD`, then the rank `ndarray` is told.
    let gw: Array2<f64> = ArrayD::try_from(grads.get(h.w).unwrap().clone()).unwrap().into_dimensionality().unwrap();
    assert_eq!(gw.shape(), &[3, 2]);
    let raw_gw = grads.get(h.w).unwrap();
    assert!(gw.iter().zip(raw_gw.data()).all(|(a, b)| a.to_bits() == b.to_bits()));
    // The parameters round-trip through arrays bit for bit (the NaN payload included).
    let back: Vec<ArrayD<f64>> = params.into_vec().into_iter().map(|t| ArrayD::try_from(t).unwrap()).collect();
    assert_eq!(back[0], w.into_dyn());
    assert_eq!(back[1][[0]].to_bits(), b[0].to_bits());
    let again = RawTensor::try_from(back[1].clone()).unwrap();
    assert_eq!(again.data()[0].to_bits(), 0x7ff8_0000_0000_0001);
}

#[test]
fn an_array_of_another_shape_is_an_error() {
    let w: Array2<f32> = Array2::zeros((2, 3));
    let e = Tensor::<f32, (exactgrad::typenum::U3, U2)>::try_from(w).unwrap_err();
    assert_eq!(e.to_string(), "expected a tensor of shape [3, 2], got [2, 3]");
    assert!(matches!(e, Error::ShapeMismatch { .. }));
}
