//! The examples' logic, run as tests (each example file is included as a module; its `run`
//! function is what `main` calls).
#![allow(clippy::unwrap_used)] // a failure is a test failure

#[path = "../examples/custom_ops.rs"]
#[allow(dead_code)]
mod custom_ops;
#[path = "../examples/exact.rs"]
#[allow(dead_code)]
mod exact;
#[path = "../examples/graphviz.rs"]
#[allow(dead_code)]
mod graphviz;

use num_rational::Ratio;

#[test]
fn custom_ops_skips_unrelated_heads() {
    let report = custom_ops::run(false).unwrap();
    // Nodes: 0 axpy, 1 side = a * a, 2 opaque softplus, 3 loss = sum, 4 x * x, 5 other = sum.
    // `side` runs for `loss` because the opaque node reaches its whole prefix.
    assert_eq!(report.visited, [vec![0, 1, 2, 3], vec![4, 5], vec![1]]);
    assert_eq!(report.runs_from_loss, (1, 1));
    assert_eq!(report.runs_from_other, (0, 0));
    // d loss / d a = sigmoid(a * x + x) * x; at a = -1, x = 3: sigmoid(0) * 3.
    assert_eq!(report.grad_a[2], 1.5);
}

#[test]
fn exact_gradients_are_fractions() {
    let (loss, [w1, b1, w2]) = exact::run(false).unwrap();
    assert_eq!(loss, Ratio::new(192_503, 172_800));
    assert_eq!((w1.len(), b1.len(), w2.len()), (12, 4, 8));
    assert_eq!(b1, [Ratio::new(3169, 4320), Ratio::new(0, 1), Ratio::new(347, 4320), Ratio::new(-1649, 4320)]);
}

#[test]
fn graphviz_writes_a_dot_file() {
    let dir = std::env::temp_dir().join(format!("exactgrad-graphviz-test-{}", std::process::id()));
    let written = graphviz::run(&dir, false).unwrap();
    let dot = std::fs::read_to_string(&written.dot).unwrap();
    assert!(dot.starts_with("digraph exactgrad {"));
    // 4 inputs and 7 nodes; 10 distinct read edges.
    assert_eq!(dot.lines().filter(|l| l.contains("[label=") && !l.contains("->")).count(), 11);
    assert_eq!(dot.matches("->").count(), 10);
    if let Some(svg) = &written.svg {
        assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
