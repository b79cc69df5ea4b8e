use exactgrad::graph;

graph! {
    fn model(x: [2, 3], v: [2, 3]; mask: Vec<bool>) -> [2, 3] {
        masked_fill(x, mask, v)
    }
}

fn main() {}
