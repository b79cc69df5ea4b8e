#!/usr/bin/env bash
# Build cost of `graph!` models as a user meets it: a crate depending on exactgrad (its
# dependencies already built), rebuilt after a one-line change of its `main.rs` (a constant's
# value), in the debug and the release profile (cargo's defaults: debug incremental, release not).
#
# Models (each a throw-away crate whose `main` builds the graph and runs its generated program once):
#   floor        a one-node model (`sum(x)`): the cost of any model crate, the figures' yardstick
#   loop N       `for i in 0..N { x = tanh(x * a[i] + b[i]) }` with `a, b: [[16]; N]` (3N + 1 nodes)
#   unrolled N   the same chain written out without a loop, N nodes (`v = tanh(v * a)`, ...)
# then the workspace's examples, rebuilt in release after a touch of their file (release builds
# are not incremental: a touch rebuilds the example's crate whole, as a one-line change does).
#
# Columns: nodes; debug and release rebuild seconds and their ratio to the floor's; the release
# binary's size and its `.text` (machine code) size; the expansion's lines per node
# (`-Zunpretty=expanded`, the generated source a reader of `cargo expand` sees).
#
# Each time is the fastest of REBUILDS (default 5) rebuilds, each after its own edit or touch.
#
# Usage: [REBUILDS=n] benches/compile_time.sh [--no-examples] [loop N ...] [unrolled N ...]
#   default: loop 10 100 1000 2000, unrolled 1000, and the examples.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$work/target"

examples=1
loops=()
unrolled=()
mode=""
for arg in "$@"; do
  case "$arg" in
    --no-examples) examples=0 ;;
    loop) mode=loop ;;
    unrolled) mode=unrolled ;;
    *) if [ "$mode" = loop ]; then loops+=("$arg"); else unrolled+=("$arg"); fi ;;
  esac
done
if [ ${#loops[@]} -eq 0 ] && [ ${#unrolled[@]} -eq 0 ]; then
  loops=(10 100 1000 2000)
  unrolled=(1000)
fi

crate() { # name; the graph! body on stdin
  local dir="$work/$1"
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
  cat > "$dir/src/main.rs"
}

# The graph and its generated program, both instantiated and run once.
main_fn() { # inputs expression
  cat <<RS
/// The line each measured rebuild changes.
const EDIT: u32 = 0;

fn main() {
    std::hint::black_box(EDIT);
    let (g, h) = model::<f32>();
    let mut inputs = $1;
    let mut prog = Model::program::<f32>();
    let grads = prog.gradients(&mut inputs, &(), &exactgrad::Tensor::full(1.0)).expect("runs");
    assert!(!grads.is_empty());
    println!("{}", g.raw().nodes().len());
}
RS
}

floor() {
  crate floor <<RS
exactgrad::graph! {
    fn model(x: [16]) -> [] {
        sum(x)
    }
}
$(main_fn 'h.inputs(exactgrad::Tensor::full(0.5))')
RS
}

loop_model() { # N
  crate "loop$1" <<RS
exactgrad::graph! {
    fn model(x: [16], a: [[16]; $1], b: [[16]; $1]) -> [] {
        let mut h = x;
        for i in 0..$1 {
            h = tanh(h * a[i] + b[i]);
        }
        sum(h)
    }
}
$(main_fn "h.inputs(exactgrad::Tensor::full(0.5), core::array::from_fn(|_| exactgrad::Tensor::full(0.9)), core::array::from_fn(|_| exactgrad::Tensor::full(0.1)))")
RS
}

unrolled_model() { # N nodes: (N - 1) / 2 layers of mul + tanh, then a sum
  local layers=$(( ($1 - 1) / 2 ))
  {
    echo "exactgrad::graph! {"
    echo "    fn model(x: [16], a: [16]) -> [] {"
    echo "        let v0 = tanh(x * a);"
    for ((k = 1; k < layers; k++)); do echo "        let v$k = tanh(v$((k - 1)) * a);"; done
    echo "        sum(v$((layers - 1)))"
    echo "    }"
    echo "}"
    main_fn 'h.inputs(exactgrad::Tensor::full(0.5), exactgrad::Tensor::full(0.9))'
  } | crate "unrolled$1"
}

seconds() { # command...: wall seconds
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

# The fastest of `REBUILDS` rebuilds (default 5), each after a new one-line edit: single figures on
# a shared VM move by a tenth of a second and more, and the least of several is the build's own
# cost (what noise can only add to).
REBUILDS="${REBUILDS:-5}"
rebuild() { # dir, cargo build arguments...: the fastest rebuild's seconds
  local dir="$1" best="" s k
  shift
  for ((k = 0; k < REBUILDS; k++)); do
    edit=$((edit + 1))
    sed -i "s/^const EDIT: u32 = .*;/const EDIT: u32 = $edit;/" "$dir/src/main.rs"
    s=$(cd "$dir" && seconds cargo build -q "$@")
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then best=$s; fi
  done
  echo "$best"
}
edit=0

# Per crate: nodes, debug s, release s, binary bytes, .text bytes, expanded lines.
measure() { # name
  local dir="$work/$1" d r nodes bin text lines
  (cd "$dir" && cargo build -q && cargo build -q --release)
  d=$(rebuild "$dir")
  r=$(rebuild "$dir" --release)
  nodes=$("$CARGO_TARGET_DIR/release/$1")
  bin=$(stat -c %s "$CARGO_TARGET_DIR/release/$1")
  text=$(size -A "$CARGO_TARGET_DIR/release/$1" | awk '$1 == ".text" { print $2 }')
  lines=$(cd "$dir" && RUSTC_BOOTSTRAP=1 cargo rustc -q -- -Zunpretty=expanded 2> /dev/null | wc -l)
  echo "$nodes $d $r $bin $text $lines"
}

# Dependencies built once, in both profiles.
floor
(cd "$work/floor" && cargo build -q && cargo build -q --release)
read -r f_nodes f_debug f_release f_bin f_text f_lines <<< "$(measure floor)"

row() { # label nodes debug release bin text lines
  local per_node_text="-" per_node_lines
  if [ "$2" -gt "$f_nodes" ]; then
    per_node_text=$(( ($6 - f_text) / ($2 - f_nodes) ))
  fi
  per_node_lines=$(echo "scale=1; $7 / $2" | bc)
  printf '| %-14s | %6s | %6.2f | %5.2f× | %6.2f | %5.2f× | %10s | %9s | %8s | %7s |\n' \
    "$1" "$2" "$3" "$(echo "$3 / $f_debug" | bc -l)" "$4" "$(echo "$4 / $f_release" | bc -l)" \
    "$5" "$6" "$per_node_text" "$per_node_lines"
}

echo "| model          |  nodes |  debug |  ratio | release |  ratio | binary (B) | .text (B) | text/node | lines/node |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
row floor "$f_nodes" "$f_debug" "$f_release" "$f_bin" "$f_text" "$f_lines"
for n in "${loops[@]}"; do
  loop_model "$n"
  read -r nodes d r bin text lines <<< "$(measure "loop$n")"
  row "loop $n" "$nodes" "$d" "$r" "$bin" "$text" "$lines"
done
for n in "${unrolled[@]}"; do
  unrolled_model "$n"
  read -r nodes d r bin text lines <<< "$(measure "unrolled$n")"
  row "unrolled $n" "$nodes" "$d" "$r" "$bin" "$text" "$lines"
done

if [ "$examples" = 1 ]; then
  echo
  echo "| example (release, after a touch) | seconds | ratio to the floor |"
  echo "|---|---:|---:|"
  for ex in graph_macro char_rnn digits_cnn gpt_char; do
    [ -f "$root/examples/$ex.rs" ] || continue
    # In the workspace's own target directory (its dev-dependencies are built there).
    (cd "$root" && env -u CARGO_TARGET_DIR cargo build -q --release --example "$ex")
    s=""
    for ((k = 0; k < REBUILDS; k++)); do
      touch "$root/examples/$ex.rs"
      t=$(cd "$root" && seconds env -u CARGO_TARGET_DIR cargo build -q --release --example "$ex")
      if [ -z "$s" ] || [ "$(echo "$t < $s" | bc)" = 1 ]; then s=$t; fi
    done
    printf '| %s | %.2f | %.2f× |\n' "$ex" "$s" "$(echo "$s / $f_release" | bc -l)"
  done
fi
