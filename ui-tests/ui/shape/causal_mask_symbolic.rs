use exactgrad::graph;

graph! {
    fn model<T, S>(scores: [2, T, S]) -> [2, T, S] {
        causal_mask(scores, -1e9)
    }
}

fn main() {}
