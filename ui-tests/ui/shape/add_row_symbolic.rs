use exactgrad::graph;

graph! {
    fn model<B, N>(x: [B, 3], b: [N]) -> [B, 3] {
        x + b
    }
}

fn main() {}
