use exactgrad::graph;

graph! {
    fn model(x: [2, 4], w: [[4, 4]; 2]) -> [2, 4] {
        let h = x;
        for i in 0..2 {
            h = relu(h);
            x = relu(x);
        }
        h + w
    }
}

fn main() {}
