use exactgrad::graph;

graph! {
    fn model(x: [1, 3, 8, 8], w: [4, 2, 3, 3]) -> [1, 4, 8, 8] {
        conv2d(x, w, padding = 1)
    }
}

fn main() {}
