use exactgrad::graph;

graph! {
    const BIG: usize = 18446744073709551615;
    fn model(x: [2, 4]) -> [] {
        let a = x * 1e400;
        let b = slice(x, 1, BIG + 1, 2);
        const C: f64 = 1e300 * 1e300;
        sum(a) + sum(x * C)
    }
}

fn main() {}
