use exactgrad::graph;

graph! {
    fn model(x: [4, 3], w: [2, 5]) -> [4, 5] {
        x.matmul(w)
    }
}

fn main() {}
