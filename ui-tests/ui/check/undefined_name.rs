use exactgrad::graph;

graph! {
    fn model(x: [2, 3]) -> [2, 3] {
        let h = relu(x);
        tanh(hidden)
    }
}

fn main() {}
