use exactgrad::graph;

graph! {
    const H: usize = 3;
    fn model<B>(x: [B, H], y: [B * 2, H], z: [4, H - 4]) -> [] {
        sum(x) + sum(y) + sum(z)
    }
}

fn main() {}
