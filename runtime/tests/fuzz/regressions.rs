//! Inputs the fuzzer found to crash the runtime, each a test named after the mistake (each
//! aborted before its fix).

use exactgrad_runtime::{ops, Dims, RawGraph, RawNode, RawSavedGraph, RawTensor};

/// `[0, 2^32]`: no element, and a last axis whose row buffer would take 32 GiB.
fn empty_wide() -> Dims {
    Dims::matrix(0, 1 << 32)
}

#[test]
fn log_softmax_of_an_empty_tensor_with_a_huge_last_axis_allocates_no_row() {
    // The forward reserved a row buffer of the last axis's length: an allocation failure, an abort.
    let mut g = RawGraph::<f64, ()>::new(vec![empty_wide()]);
    g.push(RawNode::compact(ops::LogSoftmax::new(0))).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![RawTensor::zeros(empty_wide())], ()).unwrap();
    assert_eq!(saved.values()[1].dims(), empty_wide());
    let grads = saved.backprop_from(g.position(1).unwrap(), RawTensor::zeros(empty_wide())).unwrap();
    assert_eq!(grads.get(0).unwrap().dims(), empty_wide());
}

/// `[2^32, 3, 0]`: no element, but 2^32 rows before axis 1.
fn many_empty_rows() -> Dims {
    Dims::new(&[1 << 32, 3, 0]).unwrap()
}

#[test]
fn axis_ops_on_many_empty_rows_finish_at_once() {
    // `mean_axis(x, 1)` looped over the 2^32 empty rows of the output (90 s in a debug build);
    // `slice` and `concat` copied 2^32 empty rows the same way. (No time limit is asserted: a
    // regression shows as this test taking minutes, not as a flaky failure.)
    for op in 0..4 {
        let mut g = RawGraph::<f64, ()>::new(vec![many_empty_rows(), many_empty_rows()]);
        let node = match op {
            0 => RawNode::compact(ops::MeanAxis::new(0, 1)),
            1 => RawNode::compact(ops::SumAxis::new(0, 1)),
            2 => RawNode::compact(ops::Slice::new(0, 1, 1, 2)),
            _ => RawNode::compact(ops::Concat::new(0, 1, 1)),
        };
        let y = g.push(node).unwrap();
        let x = || RawTensor::zeros(many_empty_rows());
        let saved = RawSavedGraph::compile(&g, vec![x(), x()], ()).unwrap();
        let seed = RawTensor::zeros(g.dims()[y.index()]);
        assert!(saved.backprop_from(y, seed.clone()).is_ok());
        assert!(saved.backprop_from_dense(y, seed.clone()).is_ok());
        assert!(saved.backprop_all_array(vec![x(), x(), seed]).is_ok());
    }
}
