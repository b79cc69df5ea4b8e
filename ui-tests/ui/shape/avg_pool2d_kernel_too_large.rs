use exactgrad::graph;

graph! {
    fn model(x: [1, 1, 2, 5]) -> [1, 1, 1, 1] {
        avg_pool2d(x, kernel = 3)
    }
}

fn main() {}
