use exactgrad::graph;

graph! {
    fn model<B, C>(q: [B, 3, 4], k: [C, 4, 3]) -> [B, 3, 3] {
        q.matmul(k)
    }
}

fn main() {}
