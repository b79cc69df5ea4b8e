use exactgrad::graph;

graph! {
    fn model(x: [2, 3], b: [4]) -> [2, 3] {
        x + b
    }
}

fn main() {}
