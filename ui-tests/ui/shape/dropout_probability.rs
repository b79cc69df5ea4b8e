use exactgrad::graph;

graph! {
    fn model(x: [2, 3]; seed: u64) -> [2, 3] {
        dropout(x, 1.5, seed)
    }
}

fn main() {}
