//! Mutations of valid sources at the token level: tokens deleted, duplicated, swapped, replaced
//! (numbers by huge, zero, negative or malformed ones; identifiers by op names, keywords, reserved
//! and raw names), brackets dropped or inserted, random tokens inserted — and token soups built from
//! the same pools.

use super::Rng;

/// Numbers that stress literal handling: zero, the edges of `u32`/`u64`, overflow, floats that are
/// not finite in `f32`/`f64`, suffixes and radixes.
pub(super) const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "0.0",
    "-1",
    "-0.0",
    "4294967295",
    "4294967296",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "1e308",
    "1e309",
    "3.5e38",
    "1e-400",
    "0x10",
    "0b11",
    "1_000",
    "2usize",
    "2.5f32",
    "1u8",
    "2i128",
    "0.",
];

/// Identifiers: op names and aliases, names of the seeds, names the macro reserves, keywords, raw
/// identifiers, `_`.
pub(super) const IDENTS: &[&str] = &[
    "x",
    "y",
    "w",
    "b",
    "h",
    "_1",
    "__",
    "ñ",
    "v0",
    "x0",
    "x1",
    "B",
    "N",
    "T",
    "f",
    "labels",
    "ids",
    "relu",
    "sum",
    "mean",
    "matmul",
    "t",
    "concat",
    "slice",
    "permute",
    "reshape",
    "gather_rows",
    "embedding",
    "masked_fill",
    "causal_mask",
    "opaque",
    "sum_axis",
    "mean_axis",
    "layer_norm",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "mse",
    "div",
    "max",
    "min",
    "conv1d",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "stride",
    "padding",
    "dilation",
    "kernel",
    "exp",
    "log",
    "sqrt",
    "square",
    "tanh",
    "sigmoid",
    "softplus",
    "gelu",
    "silu",
    "transpose",
    "neg",
    "scale",
    "add",
    "sub",
    "mul",
    "add_row",
    "matmul_data",
    "data_tensor",
    "Axpy",
    "Vec",
    "usize",
    "output",
    "output0",
    "output1",
    "output2",
    "r#match",
    "r#fn",
    "r#x",
    "_",
    "self",
    "Self",
    "crate",
    "super",
    "fn",
    "let",
    "pub",
    "mut",
    "forward",
    "vjp",
    "Float",
    "num_traits",
];

/// Punctuation and brackets.
pub(super) const PUNCT: &[&str] = &[
    "(", ")", "[", "]", "{", "}", "<", ">", ",", ";", ":", "::", "->", "=", "+", "-", "*", "/", "%", ".", "..", "|",
    "&", "!", "?", "#", "'a", "\"s\"", "'c'", "@", "$", "^", "==", "=>", "+=",
];

/// Splits a source into tokens: identifiers, numbers (with their dots, exponents and suffixes),
/// two-character operators, string and char literals, single punctuation.
pub(super) fn tokens(src: &str) -> Vec<String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            // Comments are dropped: joined on one line they would swallow the rest.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        } else if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '#') {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '_'
                    || (chars[i] == '.' && !is_method(&chars, i))
                    || (matches!(chars[i], '-' | '+') && matches!(chars[i - 1], 'e' | 'E') && chars[start + 1] != 'x'))
            {
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if i + 1 < chars.len()
            && ["->", "::", "..", "=>", "==", "+="].contains(&&*format!("{c}{}", chars[i + 1]))
        {
            i += 2;
        } else {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

/// Whether the `.` at `i` starts a method call (`2.matmul`) or a range (`0..4`), not a fraction.
fn is_method(chars: &[char], i: usize) -> bool {
    chars.get(i + 1).is_some_and(|c| c.is_alphabetic() || *c == '_' || *c == '.')
}

fn pool(rng: &mut Rng) -> &'static str {
    match rng.below(3) {
        0 => NUMBERS[rng.below(NUMBERS.len())],
        1 => IDENTS[rng.below(IDENTS.len())],
        _ => PUNCT[rng.below(PUNCT.len())],
    }
}

/// `src` with `count` random mutations.
pub(super) fn mutate(src: &str, rng: &mut Rng, count: usize) -> String {
    let mut t = tokens(src);
    for _ in 0..count {
        if t.is_empty() {
            t.push(pool(rng).to_owned());
            continue;
        }
        let i = rng.below(t.len());
        let j = rng.below(t.len());
        let is_number = |s: &str| s.starts_with(|c: char| c.is_ascii_digit());
        let is_ident = |s: &str| s.starts_with(|c: char| c.is_alphabetic() || c == '_');
        match rng.below(10) {
            0 => {
                t.remove(i);
            }
            1 => {
                let x = t[i].clone();
                t.insert(i, x);
            }
            2 => t.swap(i, j),
            3 => {
                // Change a number (the first at or after `i`).
                if let Some(k) = (i..t.len()).chain(0..i).find(|&k| is_number(&t[k])) {
                    t[k] = NUMBERS[rng.below(NUMBERS.len())].to_owned();
                }
            }
            4 => {
                if let Some(k) = (i..t.len()).chain(0..i).find(|&k| is_ident(&t[k])) {
                    t[k] = IDENTS[rng.below(IDENTS.len())].to_owned();
                }
            }
            5 => {
                // Drop a bracket.
                let brackets = ["(", ")", "[", "]", "{", "}", "<", ">"];
                if let Some(k) = (i..t.len()).chain(0..i).find(|&k| brackets.contains(&t[k].as_str())) {
                    t.remove(k);
                }
            }
            6 => {
                // A shape gets one more dim (possibly making it rank 5), or a call one more argument.
                if let Some(k) = (i..t.len()).chain(0..i).find(|&k| t[k] == "[" || t[k] == "(") {
                    let dim = if rng.below(2) == 0 { NUMBERS[rng.below(NUMBERS.len())] } else { "B" };
                    t.insert(k + 1, ",".to_owned());
                    t.insert(k + 1, dim.to_owned());
                }
            }
            7 => t.insert(i, pool(rng).to_owned()),
            8 => {
                // Rename an identifier everywhere.
                if let Some(k) = (i..t.len()).chain(0..i).find(|&k| is_ident(&t[k])) {
                    let (from, to) = (t[k].clone(), IDENTS[rng.below(IDENTS.len())]);
                    t.iter_mut().filter(|x| **x == from).for_each(|x| *x = to.to_owned());
                }
            }
            _ => {
                // Duplicate a span (a whole `let` or argument list, often).
                let (a, b) = (i.min(j), i.max(j).min(i.min(j) + 12));
                let span: Vec<String> = t[a..=b.min(t.len() - 1)].to_vec();
                t.splice(b.min(t.len() - 1)..b.min(t.len() - 1), span);
            }
        }
    }
    join(&t)
}

/// A random sequence of `len` pool tokens; half the time inside a valid header and body braces, so
/// the soup reaches the body's parser.
pub(super) fn soup(rng: &mut Rng, len: usize) -> String {
    let body: Vec<String> = (0..len).map(|_| pool(rng).to_owned()).collect();
    if rng.below(2) == 0 {
        join(&body)
    } else {
        format!("fn f<B>(x: [B, 3], w: [3, 2]; labels: Vec<usize>) -> [B, 2] {{ {} }}", join(&body))
    }
}

/// Tokens joined by single spaces.
fn join(t: &[String]) -> String {
    t.join(" ")
}
