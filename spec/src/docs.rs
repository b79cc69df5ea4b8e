//! The op table of the crate docs, generated from [`OPS`]: the facade's docs
//! include `docs/ops.md`, and a test keeps that file equal to [`op_table`].

use crate::ops::{Args, Arity, Form, OpSpec, OPS};
use crate::vjp::{Pattern, Reads};

/// Operand names for the table's VJP column, by arity (a convolution's are its input and weight).
fn operand_names(op: &OpSpec) -> &'static [&'static str] {
    match op.arity {
        Arity::AtLeast(_) => &["a", "b", "c"],
        Arity::Fixed(1) => &["x"],
        Arity::Fixed(2) if op.args == Args::Conv => &["x", "w"],
        Arity::Fixed(2) => &["a", "b"],
        Arity::Fixed(_) => &["x", "gain", "bias"],
    }
}

fn reads(r: &Reads, names: &[&str]) -> String {
    let mut v: Vec<String> = r.operands.iter().map(|&k| format!("`{}`", names[k])).collect();
    if r.output {
        v.push("output".to_owned());
    }
    if r.data {
        v.push("data".to_owned());
    }
    if v.is_empty() {
        "—".to_owned()
    } else {
        v.join(", ")
    }
}

fn written(name: &str, form: Form, aliases: &[&str]) -> String {
    let mut s = match form {
        Form::Lowered => format!("({name})"),
        Form::Call | Form::Declared => format!("`{name}`"),
    };
    for a in aliases {
        s.push_str(&format!(", `{a}`"));
    }
    s
}

/// The Markdown table of every built-in op: how it is written, its shape rule, its compact VJP
/// (whose singles are its static support) and the saved values the VJP reads.
#[must_use]
pub fn op_table() -> String {
    let mut out = String::from("| op | shape rule | compact VJP (support) | VJP reads |\n|---|---|---|---|\n");
    for op in OPS {
        let names = operand_names(op);
        let vjp = match op.vjp {
            Pattern::Zero => "`zero()`".to_owned(),
            Pattern::Each => {
                format!("`{}` for three parts (one `single` per part, added left to right)", op.vjp.describe(names))
            }
            p => format!("`{}`", p.describe(names)),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            written(op.name, op.form, op.aliases),
            op.shapes,
            vjp,
            reads(&op.reads, names)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_row_per_op() {
        let t = super::op_table();
        assert_eq!(t.lines().count(), crate::ops::OPS.len() + 2);
        assert!(t.contains("| `matmul` | `[m, k] , [k, n] → [m, n]`; batched"));
        assert!(t.contains("| `gather_rows`, `embedding` | `[vocab, d] → [n…, d]`"));
    }
}
