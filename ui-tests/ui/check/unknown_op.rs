use exactgrad::graph;

graph! {
    fn model(x: [2, 3]) -> [2, 3] {
        softmax(x)
    }
}

fn main() {}
