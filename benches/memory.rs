//! Peak heap of the inputs-only pass vs the all-seeds pass (array and dense) on a 10 000-node
//! chain, measured with `dhat`'s heap statistics (bytes allocated during the pass that were live at
//! the same time, on top of the saved forward).
//!
//! `cargo bench --bench memory` prints one line per pass and the ratios.

use exactgrad::{RawSavedGraph, RawTensor};

mod common;
use common::{last_seed, tanh_chain};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Peak bytes live during `f`, counting only allocations made inside it.
fn peak<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let _profiler = dhat::Profiler::builder().testing().build();
    let out = f();
    let stats = dhat::HeapStats::get();
    (stats.max_bytes, out)
}

fn main() {
    let n = 10_000;
    let (g, inputs) = tanh_chain(n);
    let saved = RawSavedGraph::compile(&g, inputs, ()).expect("chain compiles");
    let last = g.dims().len() - 1;
    let seed = || RawTensor::full(g.dims()[last], 1.0f32);

    // Every pass builds its seeds inside the measured closure: one seed tensor at the output,
    // the other positions zeros that cost no buffer.
    let seeds = || {
        let mut s = saved.zero_seeds();
        s.set(g.position(last).expect("the output exists"), seed()).expect("the seed fits");
        s
    };
    let (all_array, r1) = peak(|| saved.backprop_all_array(seeds()).map(|v| v.len()));
    let (inputs_array, r2) = peak(|| saved.backprop_inputs_array(seeds()).map(|v| v.len()));
    let (from, r3) =
        peak(|| saved.backprop_from(g.position(last).expect("the output exists"), seed()).map(|v| v.len()));
    assert_eq!((r1, r2, r3), (Ok(n + 3), Ok(3), Ok(n + 3)));
    let (inputs_dense, r4) = peak(|| saved.backprop_inputs_dense(seeds()).map(|v| v.len()));
    assert_eq!(r4, Ok(3));
    let (dense_seed_pack, _) = peak(|| last_seed(&g));

    println!("peak heap during the pass, {n}-node chain of 16 x f32 (values saved beforehand):");
    println!("  backprop_all_array     {all_array:>10} bytes");
    println!("  backprop_inputs_array  {inputs_array:>10} bytes");
    println!("  backprop_inputs_dense  {inputs_dense:>10} bytes");
    println!("  backprop_from          {from:>10} bytes");
    println!("  (a dense seed pack alone: {dense_seed_pack} bytes)");
    println!("  inputs_array / all_array = {:.3}", inputs_array as f64 / all_array as f64);
}
