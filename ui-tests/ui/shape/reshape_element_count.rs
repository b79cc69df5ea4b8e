use exactgrad::graph;

graph! {
    fn model(x: [2, 3]) -> [] {
        let y: [4] = reshape(x);
        sum(y)
    }
}

fn main() {}
