use exactgrad::graph;

graph! {
    fn model(x: [2, 3], w: [3, 4]) -> [4, 2] {
        x.matmul(w)
    }
}

fn main() {}
