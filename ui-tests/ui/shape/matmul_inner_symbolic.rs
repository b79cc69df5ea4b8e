use exactgrad::graph;

graph! {
    fn model<B, K>(x: [B, K], w: [3, 5]) -> [B, 5] {
        x.matmul(w)
    }
}

fn main() {}
