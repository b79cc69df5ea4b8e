use exactgrad::graph;

// The second call passes a weight whose rows do not match: the error is at the helper's `matmul`,
// names the call, and the call site is underlined too.
graph! {
    fn dense(x, w) {
        tanh(x.matmul(w))
    }

    fn model(x: [2, 4], w1: [4, 8], w2: [4, 3]) -> [] {
        let h = dense(x, w1);
        sum(dense(h, w2))
    }
}

// An annotated parameter: the call passes a shape that does not fit it.
graph! {
    fn layer(x: [n, d], w: [d, d]) {
        relu(x.matmul(w))
    }

    fn annotated(x: [2, 4], w: [3, 3]) -> [] {
        sum(layer(x, w))
    }
}

fn main() {}
