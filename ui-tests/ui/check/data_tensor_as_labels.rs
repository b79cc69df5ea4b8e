use exactgrad::graph;

graph! {
    fn model(logits: [4, 3]; labels: [4]) -> [] {
        cross_entropy(logits, labels)
    }
}

fn main() {}
