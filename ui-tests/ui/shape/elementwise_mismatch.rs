use exactgrad::graph;

graph! {
    fn model(x: [2, 3], y: [3, 2]) -> [2, 3] {
        x * y
    }
}

fn main() {}
