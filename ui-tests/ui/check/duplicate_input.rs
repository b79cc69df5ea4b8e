use exactgrad::graph;

graph! {
    fn model(x: [2, 3], x: [2, 3]) -> [2, 3] {
        x + x
    }
}

fn main() {}
