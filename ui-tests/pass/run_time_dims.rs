//! A model with a run-time batch and a generic width: one instantiation per width, any batch.
use exactgrad::typenum::U3;
use exactgrad::{graph, Dims, RawTensor, Tensor};

graph! {
    /// Two run-time dims, a generic one, and reshapes that keep each run-time dim an axis.
    pub fn model<W, batch: dyn, time: dyn>(x: [batch, time, 3], w: [W, 2]) -> [] {
        let rows: [batch, 3, time] = reshape(x);
        let t: [time, batch, 3] = permute(rows, [2, 0, 1]);
        let flat: [time, 3, batch] = reshape(t);
        mean(tanh(flat)) + sum(w)
    }
}

fn main() {
    let (g, h) = model::<f64, U3>();
    for (b, t) in [(2, 5), (7, 1)] {
        let x = RawTensor::from_vec(Dims::new(&[b, t, 3]).unwrap(), vec![0.25; b * t * 3]).unwrap();
        let saved = g.compile(h.inputs(x, Tensor::full(1.0)), ()).unwrap();
        assert_eq!(saved.raw().dims()[2], Dims::new(&[b, 3, t]).unwrap());
        assert_eq!(saved.raw().dims()[4], Dims::new(&[t, 3, b]).unwrap());
    }
}
