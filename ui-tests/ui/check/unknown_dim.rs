use exactgrad::graph;

graph! {
    fn model<B>(x: [B, 3], w: [C, 4]) -> [B, 4] {
        x.matmul(w)
    }
}

fn main() {}
