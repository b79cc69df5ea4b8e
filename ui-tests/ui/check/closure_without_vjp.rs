use exactgrad::graph;

graph! {
    fn model(x: [3]) -> [3] {
        let y: [3] = opaque(x, forward = |x| x.clone());
        y
    }
}

fn main() {}
