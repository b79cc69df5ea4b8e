//! The items `graph!` generates beside the graph: the data struct is `Clone` and `Debug` whenever
//! its fields are (and compiles without them when a field is not), and the handles name the
//! inputs in pack order (`input_names`, the names parameters are saved under).
#![allow(clippy::unwrap_used)]

use exactgrad::typenum::U2;
use exactgrad::{graph, Tensor};

graph! {
    /// Data tensor and labels: both `Clone` and `Debug`.
    fn mlp<B>(w1: [3, 2], b1: [2]; x: [B, 3], labels: Vec<usize>) -> [] {
        cross_entropy(x.matmul(w1) + b1, labels)
    }
}

/// A data type with neither `Clone` nor `Debug`.
pub struct Opaque(pub f64);

graph! {
    /// A data parameter of a type without `Clone` or `Debug`: the data struct has neither, and the
    /// graph compiles.
    fn plain(r#type: [2]; cfg: Opaque) -> [] {
        sum(r#type)
    }
}

graph! {
    /// No data at all: the data type is `()`.
    fn bare(a: [2]) -> [] {
        sum(a * a)
    }
}

/// `T: Clone + Debug`, checked at compile time.
fn clone_and_debug<T: Clone + core::fmt::Debug>(t: &T) -> (T, String) {
    (t.clone(), format!("{t:?}"))
}

#[test]
fn the_data_struct_is_clone_and_debug_when_its_fields_are() {
    let data = MlpData::<f64, U2> { x: Tensor::from_fn(|i| i as f64), labels: vec![1, 0] };
    let (copy, text) = clone_and_debug(&data);
    assert_eq!(copy.x.data(), data.x.data());
    assert_eq!(copy.labels, [1, 0]);
    assert_eq!(text, "MlpData { x: RawTensor[2, 3] [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], labels: [1, 0] }");
    // A data struct without `Clone` still builds and compiles its graph.
    let (g, h) = plain::<f32>();
    let saved = g.compile(h.inputs(Tensor::full(2.0)), PlainData { cfg: Opaque(1.0) }).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[4.0]);
    assert_eq!(saved.raw().data().cfg.0, 1.0);
}

#[test]
fn the_handles_name_the_inputs_in_pack_order() {
    assert_eq!(mlp::<f64, U2>().1.input_names(), ["w1", "b1"]);
    assert_eq!(plain::<f64>().1.input_names(), ["type"]); // a raw identifier, unraw
    assert_eq!(bare::<f64>().1.input_names(), ["a"]);
}
