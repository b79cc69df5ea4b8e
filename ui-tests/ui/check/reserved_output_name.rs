use exactgrad::graph;

graph! {
    fn model(output: [3]) -> [] {
        sum(output)
    }
}

fn main() {}
