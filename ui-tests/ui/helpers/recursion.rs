use exactgrad::graph;

// Helpers are inlined, so a helper that calls itself (here through another) is an error, not an
// endless expansion.
graph! {
    fn ping(x) {
        pong(relu(x))
    }

    fn pong(x) {
        ping(tanh(x))
    }

    fn model(x: [3]) -> [] {
        sum(ping(x))
    }
}

fn main() {}
