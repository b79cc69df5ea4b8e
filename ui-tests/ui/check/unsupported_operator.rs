use exactgrad::graph;

graph! {
    fn model(x: [3], y: [3]) -> [3] {
        x % y
    }
}

fn main() {}
