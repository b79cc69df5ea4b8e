use exactgrad::typenum::U3;
use exactgrad::{graph, Tensor};

graph! {
    fn model(x: [3]) -> [] {
        sum(x)
    }
}

fn main() {
    let (g, h) = model::<f64>();
    let saved = g.compile(h.inputs(Tensor::zeros()), ()).unwrap();
    // The output is a scalar; its seed must have shape [].
    let _ = saved.backprop_from(h.output, Tensor::<f64, (U3,)>::full(1.0));
}
