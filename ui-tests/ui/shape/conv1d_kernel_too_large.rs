use exactgrad::graph;

graph! {
    fn model(x: [2, 1, 4], w: [1, 1, 3]) -> [2, 1, 1] {
        conv1d(x, w, dilation = 2)
    }
}

fn main() {}
