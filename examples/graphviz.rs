//! A graph as a picture: `to_dot` writes a Graphviz DOT document of the `graph!` MLP (one box per
//! node with op, position and shape; one edge per read; opaque nodes dashed). When Graphviz's
//! `dot` is on the `PATH` the example also renders it to SVG.
//!
//! `cargo run --release --example graphviz` (writes `target/graphviz/mlp.dot` and, with `dot`,
//! `target/graphviz/mlp.svg`)

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use exactgrad::graph;
use exactgrad::typenum::U2;

graph! {
    /// A two-layer perceptron with a batch dim `B`.
    pub fn mlp<B>(x: [B, 3], w1: [3, 4], b1: [4], w2: [4, 2]) -> [] {
        let h = relu(x.matmul(w1) + b1);
        let y = h.matmul(w2);
        mean(tanh(y) * 0.5)
    }
}

/// Where the files of [`run`] went.
pub(crate) struct Written {
    /// The DOT document.
    pub(crate) dot: PathBuf,
    /// The SVG rendering, when `dot` ran.
    pub(crate) svg: Option<PathBuf>,
}

/// Writes `mlp.dot` into `dir` (created if needed) and, if the `dot` program is available, renders
/// `mlp.svg` next to it.
pub(crate) fn run(dir: &Path, verbose: bool) -> io::Result<Written> {
    let (g, _) = mlp::<f64, U2>();
    std::fs::create_dir_all(dir)?;
    let dot = dir.join("mlp.dot");
    std::fs::write(&dot, g.to_dot())?;
    if verbose {
        println!("wrote {}", dot.display());
    }
    let svg = dir.join("mlp.svg");
    let svg = match Command::new("dot").arg("-Tsvg").arg(&dot).arg("-o").arg(&svg).output() {
        Ok(out) if out.status.success() => {
            if verbose {
                println!("rendered {}", svg.display());
            }
            Some(svg)
        }
        Ok(out) => {
            if verbose {
                println!("`dot` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
            }
            None
        }
        Err(_) => {
            if verbose {
                println!("Graphviz `dot` is not on the PATH: no SVG (try `dot -Tsvg {} -o mlp.svg`)", dot.display());
            }
            None
        }
    };
    Ok(Written { dot, svg })
}

fn main() -> io::Result<()> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let written = run(&target.join("graphviz"), true)?;
    assert!(written.dot.is_file());
    assert!(written.svg.as_deref().is_none_or(Path::is_file));
    Ok(())
}
