use exactgrad::graph;

graph! {
    fn model(x: [4, 8]) -> [] {
        let mut h = slice(x, 1, 0, 2);
        for i in 1..4 {
            h = h + slice(x, 1, i * 2, i);
        }
        sum(h)
    }
}

graph! {
    fn reassigned(x: [4, 4], v: [4, 2]) -> [] {
        let mut h = x;
        for i in 0..2 {
            h = h.matmul(v);
        }
        sum(h)
    }
}

fn main() {}
