use exactgrad::graph;

graph! {
    fn model<B, C>(a: [B, 2], b: [C, 3]) -> [B, 5] {
        concat(a, b, 1)
    }
}

fn main() {}
