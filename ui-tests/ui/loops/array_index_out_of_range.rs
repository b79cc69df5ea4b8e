use exactgrad::graph;

graph! {
    fn model(x: [2, 4], w: [[4, 4]; 3]) -> [2, 4] {
        let mut h = x;
        for i in 0..4 {
            h = tanh(h.matmul(w[i]));
        }
        h + x.matmul(w[7])
    }
}

fn main() {}
