use exactgrad::graph;

graph! {
    /// A concat along a run-time dim would need its size to add it.
    fn model<batch: dyn>(x: [batch, 3], y: [2, 3]) -> [] {
        sum(concat(x, y, 0))
    }
}

fn main() {}
