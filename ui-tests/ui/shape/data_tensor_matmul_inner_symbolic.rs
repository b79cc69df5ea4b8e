use exactgrad::graph;

graph! {
    fn model<B, K>(w: [3, 5]; x: [B, K]) -> [B, 5] {
        x.matmul(w)
    }
}

fn main() {}
