//! Build a small typed graph, save one forward execution, and run every reverse pass.
//!
//! `cargo run --release --example quickstart`
//!
//! The fast passes (array, stored, single-output) are checked bit for bit against their dense
//! references before the gradients are printed.

use exactgrad::typenum::{U1, U3, U4};
use exactgrad::{ops, Error, GraphData, Pack, RawTensor, Seeds, Tensor};

fn same_bits<'t>(
    a: impl IntoIterator<Item = &'t RawTensor<f64>>,
    b: impl IntoIterator<Item = &'t RawTensor<f64>>,
) -> bool {
    let a: Vec<&RawTensor<f64>> = a.into_iter().collect();
    let b: Vec<&RawTensor<f64>> = b.into_iter().collect();
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x.data().iter().zip(y.data()).all(|(u, v)| u.to_bits() == v.to_bits()))
}

fn main() -> Result<(), Error> {
    // loss = mean(tanh(x · w + b)²), x: 1×3 data, w: 3×4, b: 4
    let g = GraphData::<f64, ()>::new();
    let (g, x) = g.input::<(U1, U3)>();
    let (g, w) = g.input::<(U3, U4)>();
    let (g, b) = g.input::<(U4,)>();
    let (g, h) = g.push(ops::matmul(x, w));
    let (g, z) = g.push(ops::add_row(h, b));
    let (g, t) = g.push(ops::tanh(z));
    let (g, sq) = g.push(ops::mul(t, t));
    let (g, loss) = g.push(ops::mean(sq));
    println!("{g}");

    let inputs = Pack::new()
        .push(Tensor::from_vec(vec![0.5, -1.0, 2.0])?)
        .push(Tensor::from_fn(|i| (i as f64 - 5.5) / 10.0))
        .push(Tensor::from_vec(vec![0.1, -0.1, 0.0, 0.2])?);
    let saved = g.compile(inputs, ())?;
    println!("loss = {:?}", saved.value(loss)?.data());

    // All seeds: 1 at the loss, zeros elsewhere.
    let seeds = Seeds::single(&g, loss, Tensor::full(1.0))?;
    let dense = saved.backprop_all_dense(seeds.clone())?;
    let array = saved.backprop_all_array(seeds.clone())?;
    let stored = saved.backprop_all_stored(seeds.clone())?;
    let inputs_only = saved.backprop_inputs_array(seeds)?;
    let from = saved.backprop_from(loss, Tensor::full(1.0))?;
    let from_dense = saved.backprop_from_dense(loss, Tensor::full(1.0))?;
    assert!(same_bits(array.iter(), dense.iter()));
    assert!(same_bits(stored.iter(), dense.iter()));
    assert!(same_bits(inputs_only.as_slice(), dense.iter().take(3)));
    assert!(same_bits(from.iter(), from_dense.iter()));
    println!("fast passes are bit-identical to the dense references");

    println!("d loss / d w = {:?}", from.get(w)?.data());
    println!("d loss / d b = {:?}", from.get(b)?.data());
    println!("d loss / d x = {:?}", from.get(x)?.data());
    Ok(())
}
