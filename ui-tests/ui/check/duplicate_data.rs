use exactgrad::graph;

graph! {
    fn model(w: [3]; x: [3], x: [3]) -> [3] {
        x * w
    }
}

fn main() {}
