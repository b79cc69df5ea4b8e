use exactgrad::graph;

// A constant goes with `x * c`, `x + c`, `c + x`, `x - c` and `x / c`; on the left of `-` or `/`
// the rewrites that look equal round (or treat NaNs) otherwise, so the macro asks for the one meant.
graph! {
    fn model(x: [3]) -> [] {
        let a = 1.0 - x;
        let b = 2.0 / x;
        sum(x / 4.0 + 1.0)
    }
}

fn main() {}
