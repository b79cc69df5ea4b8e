use exactgrad::graph;

graph! {
    fn model(a: [2, 3], b: [2, 1], c: [3, 1]) -> [2, 5] {
        concat([a, b, c], 1)
    }
}

fn main() {}
