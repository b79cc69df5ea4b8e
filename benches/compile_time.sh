#!/usr/bin/env bash
# Compile time of `graph!`: builds throw-away crates whose one graph has N nodes (a chain
# `v_k = tanh(v_{k-1} * a)`), with its graph and its generated backward program instantiated and
# run once, and reports the seconds a debug build of that crate takes, with the dependencies
# already built. Usage: benches/compile_time.sh [N ...]   (default: 50 200 1000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50 200 1000)
export CARGO_TARGET_DIR="$work/target"

make_crate() { # name nodes
  local dir="$work/$1" n="$2"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
exactgrad = { path = "$root" }
TOML
  {
    echo "exactgrad::graph! {"
    echo "    pub fn chain(x: [16], a: [16]) -> [] {"
    echo "        let v0 = tanh(x * a);"
    # two nodes per line (mul, tanh), then a final sum
    local layers=$(( (n - 1) / 2 ))
    for ((k = 1; k < layers; k++)); do echo "        let v$k = tanh(v$((k - 1)) * a);"; done
    echo "        sum(v$((layers - 1)))"
    echo "    }"
    echo "}"
    # The graph and its generated backward program, both instantiated (monomorphised) and run once.
    echo "fn main() {"
    echo "    let (g, h) = chain::<f32>();"
    echo "    let mut inputs = h.inputs(exactgrad::Tensor::full(0.5), exactgrad::Tensor::full(0.9));"
    echo "    let mut prog = Chain::program::<f32>();"
    echo "    let grads = prog.gradients(&mut inputs, &(), &exactgrad::Tensor::full(1.0)).expect(\"runs\");"
    echo "    assert_eq!(grads.len(), 2);"
    echo "    println!(\"{}\", g.raw().nodes().len());"
    echo "}"
  } > "$dir/src/main.rs"
}

make_crate warmup 10
(cd "$work/warmup" && cargo build -q)
printf '%8s %8s %10s\n' nodes built seconds
for n in "${sizes[@]}"; do
  make_crate "chain$n" "$n"
  start=$(date +%s.%N)
  (cd "$work/chain$n" && cargo build -q)
  end=$(date +%s.%N)
  built=$("$CARGO_TARGET_DIR/debug/chain$n")
  printf '%8s %8s %10.2f\n' "$n" "$built" "$(echo "$end - $start" | bc)"
done
