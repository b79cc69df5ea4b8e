use exactgrad::graph;

graph! {
    fn model(x: [2, 3, 4], w: [5, 6]) -> [2, 3, 6] {
        x.matmul(w)
    }
}

fn main() {}
