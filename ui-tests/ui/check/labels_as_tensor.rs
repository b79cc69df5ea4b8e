use exactgrad::graph;

graph! {
    fn model(w: [3]; labels: Vec<usize>) -> [3] {
        w * labels
    }
}

fn main() {}
