use exactgrad::graph;

graph! {
    fn model<B, C>(x: [B, 3], y: [C, 3]) -> [C, 3] {
        relu(x)
    }
}

fn main() {}
