use exactgrad::graph;

graph! {
    fn model<B, C>(a: [B, 2], b: [B, 1], c: [C, 3]) -> [B, 6] {
        concat([a, b, c], 1)
    }
}

fn main() {}
