//! Random `graph!` sources from the DSL's grammar: headers with random generic dims, scalar bounds,
//! inputs and data parameters of random shapes (rank 0 to 5; dims 0, small, huge, overflowing or
//! undeclared), `let` bindings with and without annotations, and expressions over every op name
//! with right or wrong arities and extra arguments, operators, constants and method calls; `const`
//! items (before or after the `fn`, in the body, some of the wrong type), parameter arrays indexed
//! by literals and loop variables, `let mut` bindings reassigned in `for` loops (nested, with
//! constant, generic or huge bounds), and helper `fn`s (annotated or not, calling each other,
//! sometimes recursively) called with values, constants and arrays;
//! `concat` of an array of parts, `dropout` with probabilities in and out of range, and `split`
//! into a tuple of names.

use exactgrad_spec::ops::call_names;

use super::mutate::NUMBERS;
use super::Rng;

/// Dims a shape draws from: mostly small literals, sometimes zero, huge, overflowing or symbolic
/// (declared or not).
const DIMS: &[&str] =
    &["1", "2", "3", "4", "2", "3", "0", "4294967296", "18446744073709551615", "B", "N", "Q", "r#Q", "x0"];

/// Graph names: plain, raw, snake case with empty parts, starting with a digit once capitalised,
/// non-ASCII, reserved by the generated items.
const NAMES: &[&str] = &["g", "mlp", "r#match", "r#g", "_1", "__", "a__b_", "ñandú", "Graph", "g_graph", "Self_", "_"];

fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len())]
}

fn shape(rng: &mut Rng) -> String {
    let rank = [0, 1, 1, 2, 2, 2, 3, 4, 5][rng.below(9)];
    let dims: Vec<&str> = (0..rank).map(|_| pick(rng, DIMS)).collect();
    format!("[{}]", dims.join(", "))
}

/// A small number: an axis, a start, a length (sometimes out of range or huge).
fn small(rng: &mut Rng) -> &'static str {
    if rng.below(6) == 0 {
        pick(rng, NUMBERS)
    } else {
        pick(rng, &["0", "1", "2", "1", "0", "3"])
    }
}

struct Scope {
    names: Vec<String>,
    data: Vec<String>,
    /// Helpers and their parameter counts.
    helpers: Vec<(String, usize)>,
    /// Constants and loop variables.
    consts: Vec<String>,
    /// Parameter arrays.
    arrays: Vec<String>,
}

fn expr(rng: &mut Rng, scope: &Scope, depth: usize) -> String {
    let leaf = |rng: &mut Rng| -> String {
        match rng.below(10) {
            0 if !scope.data.is_empty() => scope.data[rng.below(scope.data.len())].clone(),
            1 => pick(rng, NUMBERS).to_owned(),
            2 => pick(rng, &["undefined", "B", "output", "labels", "_", "OUTSIDE"]).to_owned(),
            3 if !scope.consts.is_empty() => scope.consts[rng.below(scope.consts.len())].clone(),
            4 if !scope.arrays.is_empty() => {
                let index = if scope.consts.is_empty() || rng.below(2) == 0 {
                    small(rng).to_owned()
                } else {
                    scope.consts[rng.below(scope.consts.len())].clone()
                };
                format!("{}[{index}]", scope.arrays[rng.below(scope.arrays.len())])
            }
            _ => scope.names[rng.below(scope.names.len())].clone(),
        }
    };
    if depth == 0 || rng.below(4) == 0 {
        return leaf(rng);
    }
    let sub = |rng: &mut Rng| expr(rng, scope, depth - 1);
    match rng.below(17) {
        15 | 16 if !scope.helpers.is_empty() => {
            // A helper call, with a right or wrong argument count, in function or method form;
            // arguments are values, constants or whole arrays.
            let (name, arity) = scope.helpers[rng.below(scope.helpers.len())].clone();
            let n = if rng.below(8) == 0 { rng.below(4) } else { arity };
            let args: Vec<String> = (0..n)
                .map(|_| match rng.below(6) {
                    0 if !scope.arrays.is_empty() => scope.arrays[rng.below(scope.arrays.len())].clone(),
                    1 => pick(rng, &["0.5", "2", "1e39", "K"]).to_owned(),
                    _ => sub(rng),
                })
                .collect();
            if n > 0 && rng.below(3) == 0 {
                format!("({}).{name}({})", args[0], args[1..].join(", "))
            } else {
                format!("{name}({})", args.join(", "))
            }
        }
        0 => format!("{} + {}", sub(rng), sub(rng)),
        1 => format!("{} - {}", sub(rng), sub(rng)),
        2 => format!("{} * {}", sub(rng), sub(rng)),
        3 => format!("-{}", sub(rng)),
        4 => format!("({}) * {}", sub(rng), pick(rng, NUMBERS)),
        5 => format!("{}.matmul({})", sub(rng), sub(rng)),
        6 => format!("{}.t()", sub(rng)),
        7 => format!("({}, {})", sub(rng), sub(rng)),
        8 => {
            let perm: Vec<&str> = (0..rng.below(5)).map(|_| small(rng)).collect();
            format!("permute({}, [{}])", sub(rng), perm.join(", "))
        }
        9 => format!("{} / {}", sub(rng), sub(rng)),
        10 => {
            // A window op with named constants (integers or pairs, some keys wrong or repeated).
            let name = pick(rng, &["conv1d", "conv2d", "max_pool2d", "avg_pool2d"]);
            let mut args: Vec<String> = (0..1 + rng.below(2)).map(|_| sub(rng)).collect();
            for _ in 0..rng.below(4) {
                let key = pick(rng, &["stride", "padding", "dilation", "kernel", "size"]);
                let value =
                    if rng.below(3) == 0 { format!("({}, {})", small(rng), small(rng)) } else { small(rng).to_owned() };
                args.push(format!("{key} = {value}"));
            }
            format!("{name}({})", args.join(", "))
        }
        11 => {
            // A mask with a fill value of every form (infinities, constants, a graph value, a NaN).
            let fill =
                pick(rng, &["f64::NEG_INFINITY", "-f64::INFINITY", "f32::INFINITY", "-1e9", "0.5 * 2", "f64::NAN"]);
            let fill = if rng.below(5) == 0 { sub(rng) } else { fill.to_owned() };
            if rng.below(2) == 0 {
                format!("causal_mask({}, {fill})", sub(rng))
            } else {
                let mask = if scope.data.is_empty() {
                    "mask".to_owned()
                } else {
                    scope.data[rng.below(scope.data.len())].clone()
                };
                format!("masked_fill({}, {mask}, {fill})", sub(rng))
            }
        }
        12 => {
            // A concat of zero to four parts as an array literal.
            let parts: Vec<String> = (0..rng.below(5)).map(|_| sub(rng)).collect();
            format!("concat([{}], {})", parts.join(", "), small(rng))
        }
        13 => {
            // A dropout with a probability (in range or not) and a seed (data or not).
            let p = pick(rng, &["0.5", "0.0", "1.0", "-0.5", "0.999", "1e-300", "P"]);
            let seed = if scope.data.is_empty() { leaf(rng) } else { scope.data[rng.below(scope.data.len())].clone() };
            format!("dropout({}, {p}, {seed})", sub(rng))
        }
        _ => {
            // Any op by name, with one to three values and zero to three integer arguments.
            let names = call_names();
            let name = names[rng.below(names.len())];
            let mut args: Vec<String> = (0..=rng.below(3)).map(|_| sub(rng)).collect();
            args.extend((0..rng.below(4)).map(|_| small(rng).to_owned()));
            if rng.below(3) == 0 {
                format!("{}.{name}({})", args[0], args[1..].join(", "))
            } else {
                format!("{name}({})", args.join(", "))
            }
        }
    }
}

/// `const` items: integers (some negative or huge) and floats, some of a wrong type or naming
/// constants not declared yet.
fn const_items(rng: &mut Rng, scope: &mut Scope) -> String {
    let mut out = String::new();
    for k in 0..rng.below(3) {
        let name = format!("K{k}");
        let item = match rng.below(5) {
            0 => format!("const {name}: f64 = 1.0 / ({} as f64).sqrt();", small(rng)),
            1 => format!("const {name}: usize = {} * {};", small(rng), pick(rng, &["2", "K0", "K", "UNDECLARED"])),
            2 => format!("const {name}: {} = {};", pick(rng, &["u8", "String", "i64"]), small(rng)),
            _ => format!("const {name}: usize = {};", small(rng)),
        };
        out.push_str(&item);
        out.push('\n');
        scope.consts.push(name);
    }
    out
}

/// Helper `fn`s over `a`, `b` (and `c`): annotated or not, with loops, calling earlier helpers
/// (or, sometimes, themselves).
fn helpers(rng: &mut Rng, scope: &mut Scope) -> String {
    let mut out = String::new();
    for k in 0..rng.below(3) {
        let name = pick(rng, &["block", "layer", "relu", "Block", "h"]).to_owned() + &k.to_string();
        let arity = 1 + rng.below(3);
        let params: Vec<String> = ["a", "b", "c"][..arity]
            .iter()
            .map(|p| match rng.below(4) {
                0 => format!("{p}: {}", shape(rng)),
                1 => format!("{p}: [n, d]"),
                _ => (*p).to_owned(),
            })
            .collect();
        let mut inner = Scope {
            names: ["a", "b", "c"][..arity].iter().map(|s| (*s).to_owned()).collect(),
            data: scope.data.clone(),
            helpers: scope.helpers.clone(),
            consts: scope.consts.clone(),
            arrays: Vec::new(),
        };
        if rng.below(6) == 0 {
            // Recursion: the helper may call itself.
            inner.helpers.push((name.clone(), arity));
        }
        let mut body = String::new();
        if rng.below(3) == 0 {
            body.push_str(&format!(
                "let mut t = {};
",
                expr(rng, &inner, 2)
            ));
            inner.consts.push("j".to_owned());
            body.push_str(&format!(
                "for j in 0..{} {{ t = {}; }}
",
                small(rng),
                expr(rng, &inner, 2)
            ));
            inner.consts.pop();
            inner.names.push("t".to_owned());
        }
        let result = expr(rng, &inner, 3);
        out.push_str(&format!(
            "fn {name}({}) {{
{body}{result}
}}
",
            params.join(", ")
        ));
        scope.helpers.push((name, arity));
    }
    out
}

/// `let mut` bindings reassigned in (possibly nested) loops.
fn loops(rng: &mut Rng, scope: &mut Scope, k: usize) -> String {
    let var = format!("m{k}");
    let mut out = format!(
        "let mut {var} = {};
",
        expr(rng, scope, 2)
    );
    scope.names.push(var.clone());
    let bound = |rng: &mut Rng| pick(rng, &["0", "1", "2", "3", "K0", "B", "x0", "4294967296", "2 + 1"]).to_owned();
    let nested = rng.below(3) == 0;
    scope.consts.push("i".to_owned());
    out.push_str(&format!(
        "for i in {}..{} {{
",
        small(rng),
        bound(rng)
    ));
    if nested {
        scope.consts.push("j".to_owned());
        out.push_str(&format!(
            "for j in 0..{} {{
",
            bound(rng)
        ));
    }
    let stmt = if rng.below(5) == 0 {
        format!(
            "let {var} = {};
",
            expr(rng, scope, 2)
        )
    } else {
        format!(
            "{var} = {};
",
            expr(rng, scope, 2)
        )
    };
    out.push_str(&stmt);
    if rng.below(4) == 0 {
        out.push_str(&format!(
            "const C{k}: usize = i + 1;
"
        ));
    }
    if nested {
        out.push_str(
            "}
",
        );
        scope.consts.pop();
    }
    out.push_str(
        "}
",
    );
    scope.consts.pop();
    out
}

/// One random source.
pub(super) fn source(rng: &mut Rng) -> String {
    let name = pick(rng, NAMES);
    let mut generics: Vec<String> =
        ["B", "N", "r#Q", "x0"].iter().filter(|_| rng.below(3) == 0).map(|s| (*s).to_owned()).collect();
    if rng.below(4) == 0 {
        generics.insert(0, "T: num_traits::Float".to_owned());
    }
    let n_inputs = rng.below(5);
    let mut inputs: Vec<String> = (0..n_inputs).map(|i| format!("x{i}: {}", shape(rng))).collect();
    let mut data = Vec::new();
    let mut scope = Scope {
        names: (0..n_inputs).map(|i| format!("x{i}")).collect(),
        data: Vec::new(),
        helpers: Vec::new(),
        consts: Vec::new(),
        arrays: Vec::new(),
    };
    let consts = const_items(rng, &mut scope);
    for k in 0..rng.below(3) {
        let count = pick(rng, &["2", "3", "K0", "0", "B", "18446744073709551615"]);
        inputs.push(format!("xs{k}: [{}; {count}]", shape(rng)));
        scope.arrays.push(format!("xs{k}"));
    }
    for i in 0..rng.below(3) {
        let ty = match rng.below(4) {
            0 => "Vec<usize>".to_owned(),
            1 => "[u8; 2]".to_owned(),
            2 => "Vec<bool>".to_owned(),
            _ => shape(rng),
        };
        data.push(format!("d{i}: {ty}"));
        scope.data.push(format!("d{i}"));
    }
    if scope.names.is_empty() {
        scope.names.push("x0".to_owned());
    }
    let helpers = helpers(rng, &mut scope);
    let mut lets = String::new();
    for k in 0..rng.below(3) {
        lets.push_str(&loops(rng, &mut scope, k));
    }
    for k in 0..rng.below(8) {
        let e = expr(rng, &scope, 3);
        let annotation = if rng.below(3) == 0 { format!(": {}", shape(rng)) } else { String::new() };
        if rng.below(8) == 0 {
            // A split into one to three names, by sizes or by a count.
            let names: Vec<String> = (0..1 + rng.below(3)).map(|j| format!("s{k}_{j}")).collect();
            let sizes = if rng.below(2) == 0 {
                small(rng).to_owned()
            } else {
                format!("[{}]", (0..rng.below(4)).map(|_| small(rng)).collect::<Vec<_>>().join(", "))
            };
            lets.push_str(&format!("let ({}) = split({e}, {}, {sizes});\n", names.join(", "), small(rng)));
            scope.names.extend(names);
            continue;
        }
        let e = match rng.below(8) {
            0 => format!("reshape({e})"),
            1 => {
                let written = pick(rng, &["gather_rows", "embedding"]);
                format!("{written}({e}, {})", scope.data.first().map_or("ids", String::as_str))
            }
            2 => format!("opaque({e}, forward = |a| a.clone(), vjp = |a, g| [g.clone()])"),
            3 => format!("UserOp({e}, {e})"),
            _ => e,
        };
        lets.push_str(&format!("let v{k}{annotation} = {e};\n"));
        scope.names.push(format!("v{k}"));
    }
    let n_out = 1 + rng.below(3);
    let outputs: Vec<String> = (0..n_out).map(|_| shape(rng)).collect();
    let results: Vec<String> = (0..n_out).map(|_| expr(rng, &scope, 2)).collect();
    let (outputs, result) = if n_out == 1 && rng.below(2) == 0 {
        (outputs[0].clone(), results[0].clone())
    } else {
        (format!("({})", outputs.join(", ")), format!("({})", results.join(", ")))
    };
    let generics = if generics.is_empty() { String::new() } else { format!("<{}>", generics.join(", ")) };
    let data = if data.is_empty() { String::new() } else { format!("; {}", data.join(", ")) };
    let graph = format!("pub fn {name}{generics}({}{data}) -> {outputs} {{\n{lets}{result}\n}}", inputs.join(", "));
    // Constants and helpers go before or after the graph's `fn`.
    match rng.below(3) {
        0 => format!("{consts}{helpers}{graph}"),
        1 => format!("{graph}\n{consts}{helpers}"),
        _ => format!("{helpers}{graph}\n{consts}"),
    }
}
