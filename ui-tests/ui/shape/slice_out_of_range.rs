use exactgrad::graph;

graph! {
    fn model(x: [2, 5]) -> [2, 3] {
        slice(x, 1, 3, 3)
    }
}

fn main() {}
