#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;
use crate::scalar::Storage;
use crate::shape::Dims;

fn one(v: f64) -> Vec<RawTensor<f64>> {
    vec![RawTensor::from_vec(Dims::new(&[1]).unwrap(), vec![v]).unwrap()]
}

/// The tree of `tree_sum` by its other description: the left subtree holds the largest power
/// of two below the count.
fn reference(parts: &[f64]) -> f64 {
    if parts.len() == 1 {
        return parts[0];
    }
    let left = parts.len().next_power_of_two() / 2;
    f64::pinned_add(reference(&parts[..left]), reference(&parts[left..]))
}

proptest! {
    #[test]
    fn blocks_cover_the_range_in_order(start in 0usize..50, n in 0usize..40, workers in 1usize..9) {
        let range = start..start + n;
        let mut next = range.start;
        for w in 0..workers {
            let b = block(range.clone(), workers, w);
            prop_assert_eq!(b.start, next);
            prop_assert!(b.len() == n / workers || b.len() == n / workers + 1);
            next = b.end;
        }
        prop_assert_eq!(next, range.end);
    }

    #[test]
    fn the_tree_is_the_power_of_two_split(values in prop::collection::vec(-1e6f64..1e6, 1..40)) {
        let sum = tree_sum(values.iter().map(|&v| one(v)).collect()).unwrap();
        prop_assert_eq!(sum[0].data()[0].to_bits(), reference(&values).to_bits());
    }
}

#[test]
fn nothing_to_sum_and_mismatched_shapes_are_errors() {
    assert_eq!(tree_sum::<f64>(Vec::new()), Err(Error::Workers { message: "no micro-batches to sum".to_owned() }));
    let two = vec![RawTensor::from_vec(Dims::new(&[2]).unwrap(), vec![1.0, 2.0]).unwrap()];
    let e = tree_sum(vec![one(1.0), one(2.0), two]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "data-parallel workers: micro-batch 2 has gradients of shapes [[2]], micro-batch 0 of shapes [[1]]"
    );
    let e = tree_sum(vec![one(1.0), Vec::new()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "data-parallel workers: micro-batch 1 has gradients of shapes [], micro-batch 0 of shapes [[1]]"
    );
}

#[test]
fn every_micro_batch_runs_once_whatever_the_workers() {
    for threads in 1..=4 {
        let workers = Threads::new(threads).unwrap();
        for states in 1..=5 {
            let mut seen = vec![Vec::new(); states];
            let parts = workers
                .gather(&mut seen, 7, &|s: &mut Vec<usize>, i| {
                    s.push(i);
                    Ok(one(i as f64))
                })
                .unwrap();
            let values: Vec<f64> = parts.iter().map(|p| p[0].data()[0]).collect();
            assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
            let order: Vec<usize> = seen.concat();
            assert_eq!(order, [0, 1, 2, 3, 4, 5, 6], "{threads} threads, {states} states");
        }
    }
}

#[test]
fn the_lowest_failing_micro_batch_is_reported_and_panics_are_caught() {
    let workers = Threads::new(3).unwrap();
    let mut states = vec![(); 3];
    let compute = |_: &mut (), i: usize| -> MicroBatchResult<f64> {
        match i {
            2 => Err(Error::Workers { message: "bad data".to_owned() }),
            5 => panic!("micro-batch five"),
            _ => Ok(one(1.0)),
        }
    };
    let e = workers.gather(&mut states, 8, &compute).unwrap_err();
    assert_eq!(e, Error::MicroBatch { index: 2, message: "data-parallel workers: bad data".to_owned() });
    let e = workers.gather(&mut states, 8, &|s, i| if i == 2 { Ok(one(0.0)) } else { compute(s, i) }).unwrap_err();
    assert_eq!(e, Error::MicroBatch { index: 5, message: "compute panicked: micro-batch five".to_owned() });
    // The workers stay usable.
    assert_eq!(workers.gather(&mut states, 2, &|_, _| Ok(one(1.0))).unwrap().len(), 2);
    let mut none: Vec<()> = Vec::new();
    assert!(matches!(workers.gather(&mut none, 1, &|_, _| Ok(one(1.0))), Err(Error::Workers { .. })));
    let sum: Result<Pack<f64, ()>, _> = gradients(&workers, &mut states, 0, |_, _| Ok(Pack::from_raw(None, one(1.0))));
    assert!(matches!(sum, Err(Error::Workers { .. })));
}
