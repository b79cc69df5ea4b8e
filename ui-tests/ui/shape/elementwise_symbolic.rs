use exactgrad::graph;

graph! {
    fn model<B, C>(x: [B, 3], y: [C, 3]) -> [B, 3] {
        x * y
    }
}

fn main() {}
