#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

fn tensor(dims: &[usize], bits: &[u32]) -> RawTensor<f32> {
    RawTensor::from_vec(Dims::new(dims).unwrap(), bits.iter().map(|&b| f32::from_bits(b)).collect()).unwrap()
}

fn bits(results: &[MicroBatchResult<f32>]) -> Vec<Result<Vec<(Dims, Vec<u32>)>, Error>> {
    results
        .iter()
        .map(|r| {
            r.clone().map(|ts| ts.iter().map(|t| (t.dims(), t.data().iter().map(|v| v.to_bits()).collect())).collect())
        })
        .collect()
}

proptest! {
    #[test]
    fn a_payload_round_trips_every_bit(words in prop::collection::vec(any::<u32>(), 0..12), fail in any::<bool>()) {
        // Adversarial bits: whatever u32 comes (NaN payloads, -0.0, subnormals, infinities).
        let n = words.len();
        let mut results = vec![Ok(vec![tensor(&[n], &words), tensor(&[1, 2], &[0x8000_0000, 0x7fc0_1234])]), Ok(Vec::new())];
        if fail {
            results.push(Err(Error::MicroBatch { index: 9, message: "compute panicked: boom".to_owned() }));
        }
        let payload = encode(&results);
        let mut back = Vec::new();
        decode(&payload, 7..7 + results.len(), &mut back).unwrap();
        if fail {
            // Renamed by the receiver after the index it expects.
            results[2] = Err(Error::MicroBatch { index: 9, message: "compute panicked: boom".to_owned() });
        }
        prop_assert_eq!(bits(&back), bits(&results));
        // A truncated payload is an error, never a panic.
        for cut in 0..payload.len() {
            let mut out = Vec::new();
            prop_assert!(decode::<f32>(&payload[..cut], 7..7 + results.len(), &mut out).is_err());
        }
    }
}

#[test]
fn malformed_payloads_are_errors() {
    let mut out = Vec::<MicroBatchResult<f32>>::new();
    let mut p = vec![OK, OK];
    put_len(&mut p, 1);
    put_len(&mut p, 9); // rank 9
    assert_eq!(decode(&p, 0..1, &mut out), Err("a tensor of rank 9".to_owned()));
    let mut p = vec![OK, OK];
    put_len(&mut p, 1);
    put_len(&mut p, 2);
    put_len(&mut p, usize::MAX);
    put_len(&mut p, 2);
    assert!(decode(&p, 0..1, &mut out).unwrap_err().contains("overflows"));
    let mut p = vec![OK, OK];
    put_len(&mut p, 0);
    p.push(0);
    assert_eq!(decode(&p, 0..1, &mut out), Err("1 bytes left over".to_owned()));
    // A process that had no worker state.
    let mut out = Vec::<MicroBatchResult<f32>>::new();
    decode(&failure("no state"), 0..3, &mut out).unwrap();
    assert_eq!(out, vec![Err(Error::Workers { message: "no state".to_owned() })]);
}

#[test]
fn the_partition_fits_mpi_counts_or_is_refused() {
    assert_eq!(partition(&[3, 0, 5]), Some((vec![3, 0, 5], vec![0, 3, 3], 8)));
    assert_eq!(partition(&[1 << 30, 1 << 30]), None);
    assert_eq!(partition(&[u64::MAX]), None);
}
