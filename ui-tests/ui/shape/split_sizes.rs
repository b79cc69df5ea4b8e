use exactgrad::graph;

graph! {
    fn model(x: [2, 9]) -> [2, 3] {
        let (a, b) = split(x, 1, [2, 3]);
        b
    }
}

fn main() {}
