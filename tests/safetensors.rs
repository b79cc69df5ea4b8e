//! Parameters saved and loaded by name in the safetensors format (`safetensors` feature):
//!
//! 1. **Bit-exact round trip** of a `graph!` model's parameter pack, named by its handles, for
//!    every float scalar the format stores — `f32` and `f64` on adversarial values (signed zeros,
//!    NaN payloads quiet and signalling, infinities, subnormals) and random encodings, `f16` and
//!    `bf16` on every one of their 65 536 encodings — through bytes and through a file; and the
//!    integers. A model trained, saved and loaded computes the same gradient bits.
//! 2. **Typed errors**: a missing tensor, a wrong shape (naming the tensor and both shapes), a
//!    wrong dtype, names that do not fit, unreadable files.
//! 3. **Hostile data never panics**: every truncation of a file, every single-byte corruption of
//!    its header, headers with lying lengths and offsets, and random bytes (proptest) are each
//!    an `Error::Safetensors` (or another typed error), or load tensors of the asked shapes.
//! 4. **Interop**: data written by another tool (the layout PyTorch writes: `__metadata__`,
//!    tensors in any order, extra tensors) loads.
#![cfg(feature = "safetensors")]
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod floats;

use std::path::PathBuf;

use exactgrad::io::safetensors::{load_raw, Element};
use exactgrad::typenum::{U2, U3};
use exactgrad::{graph, Adam, Dims, Error, Optimizer, Pack, Scalar, Tensor};
use floats::{adversarial, splitmix, TestFloat, MODES};
use proptest::prelude::*;

graph! {
    /// A small model over any scalar with order (floats and integers): its parameters, a scalar
    /// one among them, are what is saved.
    fn model<B>(w1: [3, 4], b1: [4], w2: [4, 2], scale: []; x: [B, 3]) -> [] {
        let h = relu(x.matmul(w1) + b1);
        sum(h.matmul(w2)) * scale
    }
}

type Params<A> = Pack<A, ModelInputs>;

/// What `model` asks of its scalar, and what saving asks: every scalar type of these tests.
trait Param: Element + core::ops::Mul<Output = Self> + PartialOrd + core::fmt::Debug {}
impl<A: Element + core::ops::Mul<Output = A> + PartialOrd + core::fmt::Debug> Param for A {}

fn names() -> &'static [&'static str] {
    model::<f64, U2>().1.input_names()
}

/// A parameter pack whose elements are `value(salt, k)` for element `k` of the whole pack.
fn params_from<A: Param>(mut value: impl FnMut(usize) -> A) -> Params<A> {
    let (_, h) = model::<A, U2>();
    let mut k = 0;
    let mut next = |_| {
        k += 1;
        value(k - 1)
    };
    h.inputs(
        Tensor::from_fn(&mut next),
        Tensor::from_fn(&mut next),
        Tensor::from_fn(&mut next),
        Tensor::from_fn(&mut next),
    )
}

fn same_bits<A: Scalar + core::fmt::Debug>(a: &Params<A>, b: &Params<A>) {
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.as_slice().iter().zip(b.as_slice()).enumerate() {
        assert!(x.storage_eq(y), "tensor {k}: {x:?} != {y:?}");
    }
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> Self {
        TempFile(std::env::temp_dir().join(format!("exactgrad-{}-{tag}.safetensors", std::process::id())))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Saves `params` to bytes and to a file, loads both back, and checks every bit.
fn round_trip<A: Param>(params: &Params<A>, tag: &str) {
    let (g, _) = model::<A, U2>();
    let bytes = params.save_safetensors(names()).unwrap();
    same_bits(&g.load_safetensors(names(), &bytes).unwrap(), params);
    let file = TempFile::new(tag);
    params.save_safetensors_file(names(), &file.0).unwrap();
    assert_eq!(std::fs::read(&file.0).unwrap(), bytes, "the file holds the same bytes");
    same_bits(&g.load_safetensors_file(names(), &file.0).unwrap(), params);
}

// ---------------------------------------------------------------------------------------------
// 1. Round trips

fn float_round_trips<A: TestFloat + Param>(tag: &str) {
    for salt in 0..MODES {
        let specials = adversarial::<A>(Dims::vector(64), salt);
        round_trip(&params_from(|k| specials.data()[k % 64]), &format!("{tag}-adv-{salt}"));
        round_trip(&params_from(|k| A::from_raw_bits(splitmix(salt * 1000 + k as u64))), &format!("{tag}-raw-{salt}"));
    }
}

#[test]
fn f32_and_f64_round_trip_bit_for_bit() {
    float_round_trips::<f32>("f32");
    float_round_trips::<f64>("f64");
}

#[test]
fn integers_round_trip() {
    round_trip(&params_from(|k| i64::MIN + k as i64 * 3), "i64");
    round_trip(&params_from(|k| (k as u8).wrapping_mul(37)), "u8");
    round_trip(&params_from(|k| i16::MAX - k as i16), "i16");
}

/// Every encoding of a 16-bit float through a raw tensor of 65 536 elements.
#[cfg(feature = "half")]
fn every_encoding<A: Param>(from_bits: fn(u16) -> A) {
    use exactgrad::{io::safetensors::save_raw, RawTensor};
    let dims = Dims::matrix(256, 256);
    let all = RawTensor::from_fn(dims, |i| from_bits(i as u16));
    let bytes = save_raw(&["all"], core::slice::from_ref(&all)).unwrap();
    let back = load_raw::<A>(&["all"], &[dims], &bytes).unwrap();
    assert!(back[0].storage_eq(&all));
    round_trip(&params_from(|k| from_bits(splitmix(k as u64) as u16)), "half");
}

#[cfg(feature = "half")]
#[test]
fn f16_and_bf16_round_trip_every_encoding() {
    use exactgrad::half::{bf16, f16};
    every_encoding(f16::from_bits);
    every_encoding(bf16::from_bits);
    // And the dtype is what other tools expect.
    let bytes = params_from(|_| f16::ONE).save_safetensors(names()).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains(r#""dtype":"F16""#));
    let bytes = params_from(|_| bf16::ONE).save_safetensors(names()).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains(r#""dtype":"BF16""#));
}

/// Train, save, load into a fresh pack: the next step's gradients have the same bits.
#[test]
fn a_trained_model_saved_and_loaded_computes_the_same_gradients() {
    let (g, h) = model::<f32, U2>();
    let x: Tensor<f32, (U2, U3)> = Tensor::from_fn(|i| i as f32 * 0.25 - 0.5);
    let mut params = params_from(|k| ((k * 7 % 11) as f32 - 5.0) * 0.1);
    let mut adam = Adam::with_lr(0.05).unwrap();
    let grads = |p: &Params<f32>| {
        let saved = g.compile(p.clone(), ModelData { x: x.clone() }).unwrap();
        saved.backprop_from(h.output, Tensor::full(1.0)).unwrap().into_inputs()
    };
    for _ in 0..3 {
        let gr = grads(&params);
        adam.step(&mut params, &gr).unwrap();
    }
    let loaded = g.load_safetensors(h.input_names(), &params.save_safetensors(h.input_names()).unwrap()).unwrap();
    same_bits(&loaded, &params);
    same_bits(&grads(&loaded), &grads(&params));
}

// ---------------------------------------------------------------------------------------------
// 2. Typed errors

fn saved_f64() -> Vec<u8> {
    params_from(|k| k as f64).save_safetensors(names()).unwrap()
}

#[test]
fn a_missing_tensor_is_named() {
    let (g, _) = model::<f64, U2>();
    let e = g.load_safetensors(&["w1", "b1", "w2", "gain"], &saved_f64()).unwrap_err();
    assert_eq!(e, Error::MissingTensor { name: "gain".into() });
    assert_eq!(e.to_string(), "there is no tensor named `gain` in the safetensors data");
}

#[test]
fn a_wrong_shape_names_the_tensor_and_both_shapes() {
    // The same names on a model whose `w2` is [4, 3]: the file's is [4, 2].
    graph! {
        fn wider(w1: [3, 4], b1: [4], w2: [4, 3], scale: []) -> [] {
            sum(w1) + sum(b1) + sum(w2) * scale
        }
    }
    let (g, h) = wider::<f64>();
    let e = g.load_safetensors(h.input_names(), &saved_f64()).unwrap_err();
    assert_eq!(e, Error::TensorShape { name: "w2".into(), expected: Dims::matrix(4, 3), actual: vec![4, 2] });
    assert_eq!(e.to_string(), "tensor `w2` has shape [4, 2] in the safetensors data, expected [4, 3]");
}

#[test]
fn a_wrong_dtype_names_both_types() {
    let (g, _) = model::<f32, U2>();
    let e = g.load_safetensors(names(), &saved_f64()).unwrap_err();
    assert_eq!(e, Error::TensorDtype { name: "w1".into(), expected: "F32".into(), actual: "F64".into() });
    let (g, _) = model::<i64, U2>();
    assert!(matches!(g.load_safetensors(names(), &saved_f64()), Err(Error::TensorDtype { .. })));
}

#[test]
fn names_must_fit_the_tensors() {
    let (g, _) = model::<f64, U2>();
    let params = params_from(|k| k as f64);
    let e = params.save_safetensors(&["w1", "b1"]).unwrap_err();
    assert_eq!(e.to_string(), "tensor names: 2 names for 4 tensors");
    let e = params.save_safetensors(&["w1", "b1", "w1", "scale"]).unwrap_err();
    assert_eq!(e.to_string(), "tensor names: `w1` is given twice");
    assert!(matches!(g.load_safetensors(&["w1"], &saved_f64()), Err(Error::TensorNames { .. })));
    assert!(matches!(g.load_safetensors(&["w1", "w1", "w2", "scale"], &saved_f64()), Err(Error::TensorNames { .. })));
}

#[test]
fn files_that_cannot_be_read_or_written_are_io_errors() {
    let (g, _) = model::<f64, U2>();
    let missing = std::env::temp_dir().join("exactgrad-no-such-dir").join("none.safetensors");
    let e = g.load_safetensors_file(names(), &missing).unwrap_err();
    assert!(matches!(&e, Error::Io { path, .. } if *path == missing), "{e}");
    let e = params_from(|k| k as f64).save_safetensors_file(names(), &missing).unwrap_err();
    assert!(matches!(&e, Error::Io { path, .. } if *path == missing), "{e}");
}

// ---------------------------------------------------------------------------------------------
// 3. Hostile data

/// Loading `bytes` as the model's `f64` parameters returns (never panics), and when it succeeds
/// every tensor has the shape asked for.
fn load_is_safe(bytes: &[u8]) -> Result<(), Error> {
    let (g, _) = model::<f64, U2>();
    let dims = g.raw().dims()[..4].to_vec();
    let p = g.load_safetensors(names(), bytes)?;
    assert!(p.as_slice().iter().zip(dims).all(|(t, d)| t.dims() == d));
    Ok(())
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = saved_f64();
    for end in 0..bytes.len() {
        assert!(matches!(load_is_safe(&bytes[..end]), Err(Error::Safetensors { .. })), "truncated at {end}");
    }
    assert!(load_is_safe(&bytes).is_ok());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(load_is_safe(&longer), Err(Error::Safetensors { .. })));
}

#[test]
fn every_corrupted_header_byte_is_handled() {
    let bytes = saved_f64();
    let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    for i in 0..header_end {
        for flip in [0x01u8, 0x20, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            let _ = load_is_safe(&bad); // an error or tensors of the right shapes, never a panic
        }
    }
}

/// A header with a JSON body `json` and `data` after it.
fn with_header(json: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

#[test]
fn lying_headers_are_errors() {
    let cases: Vec<Vec<u8>> = vec![
        // A header length past the end, and one of 2^64 - 1.
        [u64::MAX.to_le_bytes().as_slice(), b"{}"].concat(),
        [1000u64.to_le_bytes().as_slice(), b"{}"].concat(),
        // Not JSON, not UTF-8, not an object.
        with_header("{\"w1\":", &[]),
        with_header("\u{1}", &[]),
        [2u64.to_le_bytes().as_slice(), &[0xff, 0xfe]].concat(),
        with_header("[]", &[]),
        // Offsets past the data, overlapping, reversed, or a gap.
        with_header(r#"{"w1":{"dtype":"F64","shape":[3,4],"data_offsets":[0,96]}}"#, &[0; 8]),
        with_header(
            r#"{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"F64","shape":[1],"data_offsets":[4,12]}}"#,
            &[0; 12],
        ),
        with_header(r#"{"w1":{"dtype":"F64","shape":[1],"data_offsets":[8,0]}}"#, &[0; 8]),
        with_header(r#"{"w1":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}"#, &[0; 16]),
        // A shape that does not match its bytes, or whose element count overflows.
        with_header(r#"{"w1":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}"#, &[0; 8]),
        with_header(r#"{"w1":{"dtype":"F64","shape":[4294967296,4294967296,2],"data_offsets":[0,8]}}"#, &[0; 8]),
        // An unknown dtype, and a sub-byte one.
        with_header(r#"{"w1":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#, &[0; 16]),
        with_header(r#"{"w1":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, &[0; 2]),
    ];
    for (k, bytes) in cases.iter().enumerate() {
        assert!(matches!(load_is_safe(bytes), Err(Error::Safetensors { .. })), "case {k}: {:?}", load_is_safe(bytes));
    }
    // Well-formed, but of rank 5, and of the wrong rank for `w1`: shape errors.
    let five = with_header(r#"{"w1":{"dtype":"F64","shape":[1,1,1,1,1],"data_offsets":[0,8]}}"#, &[0; 8]);
    let e = load_raw::<f64>(&["w1"], &[Dims::matrix(3, 4)], &five).unwrap_err();
    assert_eq!(e.to_string(), "tensor `w1` has shape [1, 1, 1, 1, 1] in the safetensors data, expected [3, 4]");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = load_is_safe(&bytes);
    }

    #[test]
    fn random_headers_never_panic(json in "\\{(\"[a-z0-9]{1,3}\":\\{\"dtype\":\"(F64|F32|U8|BOOL|F4)\",\"shape\":\\[[0-9]{0,20}(,[0-9]{0,20}){0,4}\\],\"data_offsets\":\\[[0-9]{1,20},[0-9]{1,20}\\]\\},?){0,4}\\}", data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = load_is_safe(&with_header(&json, &data));
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Interop

/// Data laid out as PyTorch's `safetensors.torch.save_file` writes it: a `__metadata__` entry,
/// tensors in any order, offsets from the end of the header, one tensor more than asked for.
#[test]
fn data_written_by_another_tool_loads() {
    let f64s = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (w1, b1, w2) = ((0..12).map(f64::from).collect::<Vec<_>>(), vec![-0.0; 4], vec![0.5; 8]);
    let data = [f64s(&[7.0]), f64s(&w2), f64s(&[1.0, 2.0]), f64s(&w1), f64s(&b1)].concat();
    let json = r#"{"__metadata__":{"format":"pt"},"scale":{"dtype":"F64","shape":[],"data_offsets":[0,8]},"w2":{"dtype":"F64","shape":[4,2],"data_offsets":[8,72]},"extra":{"dtype":"F64","shape":[2],"data_offsets":[72,88]},"w1":{"dtype":"F64","shape":[3,4],"data_offsets":[88,184]},"b1":{"dtype":"F64","shape":[4],"data_offsets":[184,216]}}"#;
    let padded = format!("{json:<width$}", width = json.len().next_multiple_of(8));
    let (g, h) = model::<f64, U2>();
    let p = g.load_safetensors(h.input_names(), &with_header(&padded, &data)).unwrap();
    assert_eq!(p.get(h.w1).unwrap().data(), &w1[..]);
    assert!(p.get(h.b1).unwrap().data().iter().all(|x| x.to_bits() == (-0.0f64).to_bits()));
    assert_eq!(p.get(h.w2).unwrap().data(), &w2[..]);
    assert_eq!(p.get(h.scale).unwrap().data(), &[7.0]);
}
