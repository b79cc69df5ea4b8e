use exactgrad::graph;

graph! {
    /// A slice along a run-time dim needs its size when the macro expands.
    fn model<batch: dyn>(x: [batch, 3]) -> [2, 3] {
        slice(x, 0, 0, 2)
    }
}

fn main() {}
