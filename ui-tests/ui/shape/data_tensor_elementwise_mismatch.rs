use exactgrad::graph;

graph! {
    fn model(w: [2, 3]; x: [3, 2]) -> [2, 3] {
        x * w
    }
}

fn main() {}
