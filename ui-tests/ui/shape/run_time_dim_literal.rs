use exactgrad::graph;

graph! {
    /// A run-time dim is never equal to a number (nor to a generic dim), and errors print its name.
    fn model<B, batch: dyn>(x: [batch, 3], y: [4, 3], z: [B, 3]) -> [] {
        sum(x * y) + sum(x + z)
    }
}

fn main() {}
