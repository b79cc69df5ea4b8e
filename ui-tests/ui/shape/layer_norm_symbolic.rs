use exactgrad::graph;

graph! {
    fn model<B, N, G>(x: [B, N], gain: [G], bias: [N]) -> [B, N] {
        layer_norm(x, gain, bias)
    }
}

fn main() {}
