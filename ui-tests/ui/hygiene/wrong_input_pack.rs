use exactgrad::typenum::{U2, U3};
use exactgrad::{graph, Pack, Tensor};

graph! {
    fn model(x: [2, 3]) -> [] {
        sum(x)
    }
}

fn main() {
    let (g, _h) = model::<f64>();
    // The pack holds a [3, 2] tensor where the graph takes [2, 3].
    let inputs = Pack::new().push(Tensor::<f64, (U3, U2)>::zeros());
    let _ = g.compile(inputs, ());
}
