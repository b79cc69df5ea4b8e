//! The crate docs' op table (`docs/ops.md`) is the one `exactgrad_spec` generates. After changing
//! an op's spec entry, regenerate it with `BLESS=1 cargo test --test op_table`.

#[test]
fn docs_op_table_is_generated_from_the_spec() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ops.md");
    let want = exactgrad::spec::docs::op_table();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(path, &want).expect("docs/ops.md is writable");
    }
    let have = std::fs::read_to_string(path).expect("docs/ops.md exists");
    assert_eq!(have, want, "docs/ops.md is stale: run `BLESS=1 cargo test --test op_table`");
}
