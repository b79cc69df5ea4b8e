use exactgrad::graph;

graph! {
    /// `batch` is used as a run-time dim but never declared (`fn cnn<batch: dyn>(…)`).
    fn cnn(x: [batch, 1, 8, 8], w: [2, 1, 3, 3]) -> [] {
        sum(conv2d(x, w))
    }
}

fn main() {}
