//! Literal sizes of any value, not only typenum's predefined aliases.
use exactgrad::{graph, Tensor};

graph! {
    fn wide(x: [1, 2921], w: [2921, 3]) -> [1, 3] {
        x.matmul(w)
    }
}

fn main() {
    let (g, h) = wide::<f32>();
    let saved = g.compile(h.inputs(Tensor::full(1.0), Tensor::full(1.0)), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[2921.0; 3]);
}
