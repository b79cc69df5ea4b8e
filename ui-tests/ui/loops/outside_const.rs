use exactgrad::graph;

// A procedural macro cannot read a `const` declared outside it: each use says how to fix it.
const N: usize = 4;
const SCALE: f64 = 0.5;

graph! {
    fn model(x: [N, 3]) -> [] {
        let mut h = x;
        for i in 0..N {
            h = h * SCALE;
        }
        sum(h * SCALE)
    }
}

fn main() {
    let _ = (N, SCALE);
}
