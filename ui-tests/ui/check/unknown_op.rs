use exactgrad::graph;

graph! {
    fn model(x: [2, 3]) -> [2, 3] {
        conv3d(x)
    }
}

fn main() {}
