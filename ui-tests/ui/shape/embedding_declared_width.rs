use exactgrad::graph;

graph! {
    fn model(table: [10, 4]; ids: Vec<usize>) -> [2, 3, 5] {
        let e: [2, 3, 5] = embedding(table, ids);
        e
    }
}

fn main() {}
