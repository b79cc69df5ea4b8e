use exactgrad::graph;

graph! {
    fn dense(x, w, b) {
        x.matmul(w) + b
    }

    fn model(x: [2, 4], w: [4, 3]) -> [] {
        sum(dense(x, w))
    }
}

fn main() {}
