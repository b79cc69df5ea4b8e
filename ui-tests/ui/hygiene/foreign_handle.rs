use exactgrad::{graph, Tensor};

graph! {
    fn first(x: [3]) -> [] {
        sum(x)
    }
}

graph! {
    fn second(x: [3]) -> [] {
        sum(tanh(x))
    }
}

fn main() {
    let (g1, _h1) = first::<f64>();
    let (_g2, h2) = second::<f64>();
    let saved = g1.compile(exactgrad::Pack::new().push(Tensor::zeros()), ()).unwrap();
    // A handle of `second` used with `first`'s saved graph.
    let _ = saved.backprop_from(h2.output, Tensor::full(1.0));
}
