use exactgrad::graph;

graph! {
    fn model(x: [4, 3]) -> [4] {
        sum_axis(x, 2)
    }
}

fn main() {}
