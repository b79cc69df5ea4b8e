use exactgrad::graph;

graph! {
    fn model(x: [2, 3], w: [2, 4], b: [5]) -> [2, 4] {
        let h = x.matmul(w);
        let z = relu(x) + b;
        h
    }
}

fn main() {}
