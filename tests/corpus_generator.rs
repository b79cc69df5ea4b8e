//! The generator of the random `graph!` corpus (`tests/corpus/models.rs`, run by
//! `tests/program_corpus.rs`): from one seed it writes `MODELS` models of 3 to 16 nodes over the
//! float ops, with inputs of mixed shapes, repeated parents, broadcasts, constants, reductions,
//! structure ops and one or two outputs; then `CONTROL_MODELS` models with `const` items, helper
//! `fn`s, loops and `let mut` bindings.
//!
//! This test fails when the committed corpus is not what the generator writes; regenerate it with
//! `BLESS=1 cargo test --test corpus_generator`.

/// Models in the corpus.
const MODELS: usize = 120;
/// The corpus seed.
const SEED: u64 = 0x5EED_C0DE_2026_1203;

/// `SplitMix64` (the examples' generator; the corpus depends on its exact stream).
struct Rng(exactgrad_example_support::SplitMix64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, p_percent: u64) -> bool {
        self.next() % 100 < p_percent
    }
}

type Shape = Vec<usize>;

fn show(s: &[usize]) -> String {
    format!("[{}]", s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
}

const INPUT_SHAPES: &[&[usize]] = &[&[2, 3], &[3, 2], &[3, 3], &[2, 2], &[3], &[2], &[]];

struct Model {
    text: String,
}

fn model(rng: &mut Rng, index: usize) -> Model {
    let n_inputs = 1 + rng.below(4);
    let mut values: Vec<(String, Shape)> = Vec::new();
    let mut params = Vec::new();
    for i in 0..n_inputs {
        let s: Shape = INPUT_SHAPES[rng.below(INPUT_SHAPES.len())].to_vec();
        params.push(format!("x{i}: {}", show(&s)));
        values.push((format!("x{i}"), s));
    }
    let target = 3 + rng.below(14);
    let mut lets = Vec::new();
    let mut guard = 0;
    while lets.len() < target && guard < 400 {
        guard += 1;
        let pick = |rng: &mut Rng, values: &[(String, Shape)]| rng.below(values.len());
        let a = pick(rng, &values);
        let (an, as_) = values[a].clone();
        // A second operand of the same shape (the same value a quarter of the time).
        let same: Vec<usize> = (0..values.len()).filter(|&j| values[j].1 == as_).collect();
        let b = if rng.chance(25) { a } else { same[rng.below(same.len())] };
        let bn = values[b].0.clone();
        let (expr, shape): (String, Shape) = match rng.below(22) {
            0 => (format!("{an} + {bn}"), as_.clone()),
            1 => (format!("{an} - {bn}"), as_.clone()),
            2 => (format!("{an} * {bn}"), as_.clone()),
            3 => (format!("div({an}, {bn})"), as_.clone()),
            4 => (format!("{}({an}, {bn})", ["max", "min"][rng.below(2)]), as_.clone()),
            5 => (format!("-{an}"), as_.clone()),
            6 | 7 => {
                let f = ["relu", "tanh", "sigmoid", "softplus", "gelu", "square", "sqrt", "exp", "log"][rng.below(9)];
                (format!("{f}({an})"), as_.clone())
            }
            8 => (format!("{an} * {}", ["0.5", "-2", "3.0", "0.25"][rng.below(4)]), as_.clone()),
            9 => (format!("sum({an})"), vec![]),
            10 => (format!("mean({an})"), vec![]),
            11 if as_.len() == 2 => {
                let ks: Vec<usize> =
                    (0..values.len()).filter(|&j| values[j].1.len() == 2 && values[j].1[0] == as_[1]).collect();
                if ks.is_empty() {
                    continue;
                }
                let (wn, ws) = values[ks[rng.below(ks.len())]].clone();
                (format!("{an}.matmul({wn})"), vec![as_[0], ws[1]])
            }
            12 if as_.len() == 2 => (format!("{an}.t()"), vec![as_[1], as_[0]]),
            13 if as_.len() == 2 => {
                let rs: Vec<usize> = (0..values.len()).filter(|&j| values[j].1 == [as_[1]]).collect();
                if rs.is_empty() {
                    continue;
                }
                (format!("{an} + {}", values[rs[rng.below(rs.len())]].0), as_.clone())
            }
            14 if !as_.is_empty() => {
                let f = ["softmax", "log_softmax"][rng.below(2)];
                (format!("{f}({an})"), as_.clone())
            }
            15 if !as_.is_empty() => {
                let axis = rng.below(as_.len());
                let f = ["sum_axis", "mean_axis"][rng.below(2)];
                let mut s = as_.clone();
                s.remove(axis);
                (format!("{f}({an}, {axis})"), s)
            }
            16 if !as_.is_empty() => {
                let axis = rng.below(as_.len());
                let cs: Vec<usize> = (0..values.len())
                    .filter(|&j| {
                        let s = &values[j].1;
                        s.len() == as_.len() && (0..s.len()).all(|k| k == axis || s[k] == as_[k])
                    })
                    .collect();
                let (cn, cs_) = values[cs[rng.below(cs.len())]].clone();
                let mut s = as_.clone();
                s[axis] += cs_[axis];
                (format!("concat({an}, {cn}, {axis})"), s)
            }
            17 if !as_.is_empty() && as_.iter().all(|&d| d > 1) => {
                let axis = rng.below(as_.len());
                let len = 1 + rng.below(as_[axis] - 1);
                let start = rng.below(as_[axis] - len + 1);
                let mut s = as_.clone();
                s[axis] = len;
                (format!("slice({an}, {axis}, {start}, {len})"), s)
            }
            18 if as_.len() == 2 => (format!("permute({an}, [1, 0])"), vec![as_[1], as_[0]]),
            19 => (format!("mse({an}, {bn})"), vec![]),
            20 if as_.len() == 2 => {
                let gs: Vec<usize> = (0..values.len()).filter(|&j| values[j].1 == [as_[1]]).collect();
                if gs.is_empty() {
                    continue;
                }
                let g = &values[gs[rng.below(gs.len())]].0;
                let b = &values[gs[rng.below(gs.len())]].0;
                (format!("layer_norm({an}, {g}, {b})"), as_.clone())
            }
            21 if !as_.is_empty() => {
                let n: usize = as_.iter().product();
                let to: Shape = if as_.len() == 1 && n > 2 && n.is_multiple_of(2) { vec![2, n / 2] } else { vec![n] };
                let name = format!("v{}", lets.len());
                lets.push(format!("let {name}: {} = reshape({an});", show(&to)));
                values.push((name, to));
                continue;
            }
            _ => continue,
        };
        let name = format!("v{}", lets.len());
        lets.push(format!("let {name} = {expr};"));
        values.push((name, shape));
    }
    let last = values.last().cloned().unwrap_or_else(|| values[0].clone());
    let two = rng.chance(50) && values.len() > 2;
    let (outputs, result) = if two {
        let other = values[rng.below(values.len() - 1)].0.clone();
        // Sometimes the first output is an input itself: its seed then sits on an input's slot,
        // where the pending uniforms of every node that does not touch it must still be added.
        let first = if rng.chance(30) { values[rng.below(n_inputs)].clone() } else { last.clone() };
        (format!("({}, [])", show(&first.1)), format!("({}, sum({other}))", first.0))
    } else {
        (show(&last.1), last.0.clone())
    };
    let body: String = lets.iter().map(|l| format!("        {l}\n")).collect();
    let text = format!(
        "graph! {{\n    pub fn m{index:03}({}) -> {outputs} {{\n{body}        {result}\n    }}\n}}\n",
        params.join(", ")
    );
    let indices: Vec<String> = (0..n_inputs).map(|i| i.to_string()).collect();
    let outputs_kind = if two { "two" } else { "one" };
    Model { text: format!("{text}corpus_case!(m{index:03}, M{index:03}, [{}], {outputs_kind});\n", indices.join(", ")) }
}

/// Models with `const` items, helpers (called several times, one calling another, with
/// annotated parameters and a constant argument), loops (one nested) and `let mut` bindings,
/// after the random ones and from a stream of their own (so those stay as they are).
const CONTROL_MODELS: usize = 12;
/// Their seed.
const CONTROL_SEED: u64 = 0xC0DE_F10E_2026_1203;

fn control_model(rng: &mut Rng, index: usize) -> Model {
    let n = 2 + rng.below(2);
    let k = 1 + rng.below(3);
    let n_inputs = 2 + rng.below(2);
    let unary = ["tanh", "sigmoid", "relu", "softplus", "square", "gelu"][rng.below(6)];
    let op = ["+", "-", "*"][rng.below(3)];
    let c = ["0.5", "-2", "0.25", "S", "S * 0.5"][rng.below(5)];
    let reduce = ["sum", "mean"][rng.below(2)];
    let params: Vec<String> = (0..n_inputs).map(|i| format!("x{i}: [N, N]")).collect();
    let second = if n_inputs > 2 && rng.chance(50) {
        format!(
            "        for i in 0..K {{
            for j in i..K {{
                h = outer(h, x2, {c});
            }}
        }}
"
        )
    } else {
        String::new()
    };
    let helpers_first = rng.chance(50);
    let helpers = format!(
        "    fn inner(a, b) {{
        {unary}(a {op} b)
    }}

    fn outer(h: [n, d], w: [d, d], c) {{
        let t: [n, d] = inner(h.matmul(w), h);
        h + t * c
    }}
"
    );
    let graph = format!(
        "    pub fn c{index:03}({}) -> [] {{
        let mut h = x0;
        for i in 0..K {{
            h = outer(h, x1, {c});
        }}
{second}        {reduce}(h)
    }}
",
        params.join(", ")
    );
    let consts = format!(
        "    const N: usize = {n};
    const K: usize = {k};
    const S: f64 = 1.0 / (N as f64).sqrt();
"
    );
    let items = if helpers_first {
        format!(
            "{consts}
{helpers}
{graph}"
        )
    } else {
        format!(
            "{consts}
{graph}
{helpers}"
        )
    };
    let indices: Vec<String> = (0..n_inputs).map(|i| i.to_string()).collect();
    Model {
        text: format!(
            "graph! {{
{items}}}
corpus_case!(c{index:03}, C{index:03}, [{}], one);
",
            indices.join(", ")
        ),
    }
}

/// The whole corpus file.
fn corpus() -> String {
    let mut rng = Rng(exactgrad_example_support::SplitMix64(SEED));
    let mut out = String::from(
        "// @generated by tests/corpus_generator.rs (seed and size there): do not edit;\n\
         // regenerate with `BLESS=1 cargo test --test corpus_generator`.\n\n",
    );
    for i in 0..MODELS {
        out.push_str(&model(&mut rng, i).text);
        out.push('\n');
    }
    let mut rng = Rng(exactgrad_example_support::SplitMix64(CONTROL_SEED));
    for i in 0..CONTROL_MODELS {
        out.push_str(&control_model(&mut rng, i).text);
        out.push('\n');
    }
    out
}

#[test]
fn the_committed_corpus_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/models.rs");
    let want = corpus();
    if std::env::var_os("BLESS").is_some() {
        std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus")).expect("creatable");
        std::fs::write(path, &want).expect("writable");
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(have == want, "tests/corpus/models.rs is stale: run `BLESS=1 cargo test --test corpus_generator`");
}
