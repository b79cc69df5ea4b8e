use exactgrad::graph;

graph! {
    fn model(table: [10, 4]; ids: [3]) -> [3, 4] {
        let e: [3, 4] = gather_rows(table, ids);
        e
    }
}

fn main() {}
