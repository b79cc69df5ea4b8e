use exactgrad::graph;

graph! {
    fn model<B>(x: [B, 4]) -> [B, 4] {
        let mut h = x;
        for i in 0..B {
            h = relu(h);
        }
        h
    }
}

graph! {
    fn other(x: [2, 4]) -> [2, 4] {
        let mut h = x;
        for i in 0..sum(x) {
            h = relu(h);
        }
        h
    }
}

fn main() {}
