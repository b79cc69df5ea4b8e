use exactgrad::graph;

graph! {
    fn model(x: [2, 3], m: [2, 3]) -> [2, 3] {
        masked_fill(x, m, f64::NEG_INFINITY)
    }
}

fn main() {}
