use exactgrad::graph;

graph! {
    fn model(scores: [2, 3, 4]) -> [2, 3, 4] {
        causal_mask(scores, f64::NEG_INFINITY)
    }
}

fn main() {}
