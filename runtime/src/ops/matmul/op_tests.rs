//! The `matmul` op: values, gradients, shape errors, and batched products against their items.

use super::*;
use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

#[test]
fn value_and_gradient() {
    let a = RawTensor::from_vec(Dims::matrix(2, 3), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let b = RawTensor::from_vec(Dims::matrix(3, 1), vec![1.0, 0.0, -1.0]).unwrap();
    assert_eq!(forward(MatMul::new(0, 1), &[a, b]).data(), &[-2.0, -2.0]);
    gradcheck(MatMul::new(0, 1), &[sample(&[3, 4], 17), sample(&[4, 2], 18)], 1e-7);
    gradcheck(MatMul::new(0, 0), &[sample(&[3, 3], 19)], 1e-7);
}

fn slab(t: &RawTensor<f64>, p: usize, rows: usize, cols: usize) -> RawTensor<f64> {
    RawTensor::from_vec(Dims::matrix(rows, cols), t.data()[p * rows * cols..(p + 1) * rows * cols].to_vec()).unwrap()
}

#[test]
fn batched_products_are_the_items_products_bit_for_bit() {
    let (a, b) = (sample(&[3, 2, 4], 20), sample(&[3, 4, 5], 21));
    let y = forward(MatMul::new(0, 1), &[a.clone(), b.clone()]);
    assert_eq!(y.dims().as_slice(), [3, 2, 5]);
    let g = sample(&[3, 2, 5], 22);
    let grads = vjp(MatMul::new(0, 1), &[a.clone(), b.clone()], &g);
    for p in 0..3 {
        let (ap, bp, gp) = (slab(&a, p, 2, 4), slab(&b, p, 4, 5), slab(&g, p, 2, 5));
        assert_eq!(bits(&slab(&y, p, 2, 5)), bits(&forward(MatMul::new(0, 1), &[ap.clone(), bp.clone()])));
        let item = vjp(MatMul::new(0, 1), &[ap, bp], &gp);
        assert_eq!(bits(&slab(&grads[0], p, 2, 4)), bits(&item[0]));
        assert_eq!(bits(&slab(&grads[1], p, 4, 5)), bits(&item[1]));
    }
}

#[test]
fn a_shared_right_matrix_is_the_product_of_all_rows() {
    // [3, 2, 4] · [4, 5] is [6, 4] · [4, 5]: the same bits, values and both gradients.
    let (a, b) = (sample(&[3, 2, 4], 23), sample(&[4, 5], 24));
    let flat = RawTensor::from_vec(Dims::matrix(6, 4), a.data().to_vec()).unwrap();
    let y = forward(MatMul::new(0, 1), &[a.clone(), b.clone()]);
    assert_eq!(y.dims().as_slice(), [3, 2, 5]);
    assert_eq!(bits(&y), bits(&forward(MatMul::new(0, 1), &[flat.clone(), b.clone()])));
    let g = sample(&[3, 2, 5], 25);
    let g_flat = RawTensor::from_vec(Dims::matrix(6, 5), g.data().to_vec()).unwrap();
    let (batched, rows) = (vjp(MatMul::new(0, 1), &[a, b.clone()], &g), vjp(MatMul::new(0, 1), &[flat, b], &g_flat));
    assert_eq!((bits(&batched[0]), bits(&batched[1])), (bits(&rows[0]), bits(&rows[1])));
}

#[test]
fn batched_gradients() {
    gradcheck(MatMul::new(0, 1), &[sample(&[2, 3, 4], 26), sample(&[2, 4, 2], 27)], 1e-7);
    gradcheck(MatMul::new(0, 1), &[sample(&[2, 3, 4], 28), sample(&[4, 2], 29)], 1e-7);
    gradcheck(MatMul::new(0, 0), &[sample(&[2, 3, 3], 30)], 1e-7);
}

#[test]
fn batch_mismatch_is_reported() {
    let d = |s: &[usize]| Dims::new(s).unwrap();
    let e = <MatMul as CompactOp<f64, ()>>::output_dims(&MatMul::new(0, 1), &[d(&[2, 3, 4]), d(&[3, 4, 5])]);
    assert_eq!(
        e.unwrap_err(),
        "matmul needs both operands' batch sizes to be equal, got shapes [2, 3, 4] and [3, 4, 5]"
    );
    let e = <MatMul as CompactOp<f64, ()>>::output_dims(&MatMul::new(0, 1), &[d(&[3, 4]), d(&[2, 4, 5])]);
    assert!(e.unwrap_err().starts_with("matmul needs two matrices, a batch"));
}

#[test]
fn inner_mismatch_is_reported_in_decimal() {
    let e = <MatMul as CompactOp<f64, ()>>::output_dims(&MatMul::new(0, 1), &[Dims::matrix(2, 3), Dims::matrix(2, 2)]);
    assert_eq!(e.unwrap_err(), "matmul needs the left operand's columns (3) to equal the right operand's rows (2)");
}
