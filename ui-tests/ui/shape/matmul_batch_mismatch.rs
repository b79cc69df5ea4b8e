use exactgrad::graph;

graph! {
    fn model(q: [2, 3, 4], k: [3, 4, 3]) -> [2, 3, 3] {
        q.matmul(k)
    }
}

fn main() {}
