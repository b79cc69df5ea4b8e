use exactgrad::graph;

graph! {
    fn model(x: [2, 3]) -> [] {
        let t: [3, 2] = tanh(x);
        sum(t)
    }
}

fn main() {}
