use exactgrad::graph;

graph! {
    fn model(x: [3], y: [3]) -> [3] {
        scale(x, y)
    }
}

fn main() {}
