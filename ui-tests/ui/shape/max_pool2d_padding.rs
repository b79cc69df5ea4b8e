use exactgrad::graph;

graph! {
    fn model(x: [1, 2, 6, 6]) -> [1, 2, 4, 4] {
        max_pool2d(x, kernel = (3, 2), padding = (1, 2))
    }
}

fn main() {}
