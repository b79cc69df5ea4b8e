use exactgrad::graph;

graph! {
    fn model<B>(w: [2, 5]; x: [B, 3]) -> [B, 5] {
        x.matmul(w)
    }
}

fn main() {}
