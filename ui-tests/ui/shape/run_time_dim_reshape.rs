use exactgrad::graph;

graph! {
    /// A reshape that would merge the run-time dim into another axis.
    fn model<batch: dyn>(x: [batch, 4, 4]) -> [] {
        let flat: [16, batch] = reshape(x);
        let merged: [64] = reshape(flat);
        sum(merged)
    }
}

fn main() {}
