//! Calls: built-in ops by name with their extra arguments (the sliding-window ops: `windows.rs`;
//! the calls that need a declared output shape — `opaque`, user ops, `reshape`, `gather_rows`:
//! `declared.rs`).

use syn::{Expr, Ident};

use super::expr::{by_name, Operand};
use super::Lowering;
use crate::errors::Site;
use crate::ir::{ExtraArg, Fill};
use exactgrad_spec::ops::{call_names, lookup};
use exactgrad_spec::{Args, OpSpec};

/// The default constant of an optional argument, written as a literal in the op table.
fn default_literal(text: &str) -> Expr {
    syn::parse_str(text).unwrap_or_else(|_| Expr::Verbatim(text.parse().unwrap_or_default()))
}

impl Lowering<'_> {
    pub(super) fn call(&mut self, ident: &Ident, args: Vec<&Expr>, site: &Site) -> Option<usize> {
        let name = ident.to_string();
        if name == "scale" {
            if args.len() != 2 {
                self.errors
                    .at_site(site, format!("scale takes 2 arguments (a value and a constant), got {}", args.len()));
                return None;
            }
            let v = self.value(args[0])?;
            match self.operand(args[1])? {
                Operand::Const(_) => {}
                Operand::Value(_) => {
                    self.errors.at_site(
                        &Site::whole(args[1]),
                        "scale multiplies by a constant (`scale(x, 0.5)`); to multiply two graph values write `x * y`",
                    );
                    return None;
                }
            }
            let c = self.constant(args[1])?;
            return self.builtin_with(by_name("scale"), ExtraArg::Factor(c), &[v], site);
        }
        if name == "split" {
            self.errors.at_site(
                site,
                "split gives several values: bind them with `let (a, b, …) = split(x, axis, [sizes…]);`",
            );
            return None;
        }
        let Some(op) = lookup(&name) else {
            self.errors.at(ident.span(), format!(
                    "unknown op `{name}`; the built-in ops are {}, and a user op is a CamelCase type called with a declared shape (`let y: [d0, …] = MyOp(x);`)",
                    call_names().join(", ")
                ));
            return None;
        };
        if matches!(op.args, Args::Conv | Args::Pool) {
            return self.window_call(op, &args, site);
        }
        if op.name == "concat" {
            return self.concat_call(op, &args, site);
        }
        if op.args == Args::Dropout {
            return self.dropout_call(op, &args, site);
        }
        let optional = matches!(op.args, Args::Eps(_));
        let arity = op.arity.min();
        let with_extra = arity
            + match op.args {
                Args::None => 0,
                Args::Slice => 3,
                Args::Mask => 2,
                _ => 1,
            };
        if args.len() != with_extra && !(optional && args.len() == arity) {
            let what = match op.args {
                Args::None => String::new(),
                Args::Axis => " and an axis".to_owned(),
                Args::Eps(d) => format!(" and optionally eps (default {d})"),
                Args::Labels => " and the name of a data parameter holding the labels".to_owned(),
                Args::Slice => " and three integer literals (axis, start, length)".to_owned(),
                Args::Perm => " and the permutation as an array literal, e.g. `[1, 0]`".to_owned(),
                Args::Factor => " and a constant".to_owned(),
                Args::Mask => ", the name of a data parameter holding the mask and the fill value, as in `masked_fill(x, mask, f64::NEG_INFINITY)`".to_owned(),
                Args::Fill => " and the fill value, as in `causal_mask(scores, f64::NEG_INFINITY)`".to_owned(),
                Args::Conv | Args::Pool | Args::Dropout => unreachable!("lowered above"),
            };
            self.errors.at_site(
                site,
                format!(
                    "{} takes {} value{}{what}, got {} argument{}",
                    op.name,
                    arity,
                    if arity == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        let extra = match op.args {
            Args::None => ExtraArg::None,
            Args::Axis => ExtraArg::Axis(self.int_constant(args[arity], &format!("{}'s axis", op.name))?),
            Args::Eps(default) => match args.get(arity) {
                Some(e) => match self.operand(e)? {
                    Operand::Const(c) => ExtraArg::Eps(self.constant(&c)?),
                    Operand::Value(_) => {
                        self.errors.at_site(&Site::whole(e), format!("{}'s eps is a constant, e.g. `1e-5`", op.name));
                        return None;
                    }
                },
                None => ExtraArg::Eps(default_literal(default)),
            },
            Args::Slice => {
                let what = ["axis", "start", "length"].map(|w| format!("{}'s {w}", op.name));
                let n: Vec<Option<usize>> =
                    args[arity..].iter().zip(&what).map(|(a, w)| self.int_constant(a, w)).collect();
                match n[..] {
                    [Some(axis), Some(start), Some(len)] => ExtraArg::Slice(axis, start, len),
                    _ => return None,
                }
            }
            Args::Perm => match args[arity] {
                Expr::Array(a) => {
                    let what = format!("{}'s permutation entry", op.name);
                    let n: Vec<Option<usize>> = a.elems.iter().map(|e| self.int_constant(e, &what)).collect();
                    ExtraArg::Perm(n.into_iter().collect::<Option<_>>()?)
                }
                other => {
                    self.errors.at_site(
                        &Site::whole(other),
                        "permute takes the permutation as an array literal, e.g. `permute(x, [1, 0])`",
                    );
                    return None;
                }
            },
            Args::Factor => unreachable!("scale is lowered above"),
            Args::Conv | Args::Pool | Args::Dropout => unreachable!("lowered above"),
            Args::Fill => ExtraArg::Fill(self.fill_value(op, args[arity])?),
            Args::Mask => {
                let mask = self.data_parameter(op, args[arity], "mask", "; mask: Vec<bool>")?;
                ExtraArg::Mask(mask, self.fill_value(op, args[arity + 1])?)
            }
            Args::Labels => {
                let arg = args[arity];
                let name = match arg {
                    Expr::Path(p) => p.path.get_ident(),
                    _ => None,
                };
                if let Some(n) = name.filter(|n| self.data_tensor_index(n).is_some()) {
                    self.errors.at_site(
                        &Site::whole(arg),
                        format!("`{n}` is a data tensor, but {}'s labels are a data parameter holding one `usize` per row (e.g. `; labels: Vec<usize>`)", op.name),
                    );
                    return None;
                }
                if let Some(d) = name.and_then(|n| self.data.iter().find(|d| **d == n)) {
                    ExtraArg::Labels((*d).clone())
                } else {
                    self.errors.at_site(
                        &Site::whole(arg),
                        format!("{}'s labels are a data parameter (declared after `;`, e.g. `; labels: Vec<usize>`), named here", op.name),
                    );
                    return None;
                }
            }
        };
        if op.name == "matmul" {
            // A data matrix on the left: `matmul_data` (no gradient for the data). A batch of data
            // (`[b, m, k]`) is a data-tensor leaf under the general `matmul`.
            let matrix = |l: &Self, k: usize| l.graph.data_tensors[k].1 .0.len() == 2;
            if let Some(k) = self.data_tensor_ref(args[0]).filter(|&k| matrix(self, k)) {
                let w = self.value(args[1])?;
                return self.matmul_data(k, w, site);
            }
        }
        let values: Vec<Option<usize>> = args[..arity].iter().map(|a| self.value(a)).collect();
        let values: Vec<usize> = values.into_iter().collect::<Option<_>>()?;
        self.builtin_with(op, extra, &values, site)
    }

    /// The fill value of `masked_fill` or `causal_mask`: an infinity written as the `f64`/`f32`
    /// constant (`f64::NEG_INFINITY`, `-f64::INFINITY`, `f64::INFINITY`), or a constant as for
    /// `scale`.
    fn fill_value(&mut self, op: &OpSpec, e: &Expr) -> Option<Fill> {
        fn infinity(e: &Expr) -> Option<bool> {
            match e {
                Expr::Paren(p) => infinity(&p.expr),
                Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => infinity(expr).map(|neg| !neg),
                Expr::Path(p) => {
                    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                    let ty_ok = |t: &str| matches!(t, "f64" | "f32");
                    match segs.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                        [t, "INFINITY"] if ty_ok(t) => Some(false),
                        [t, "NEG_INFINITY"] if ty_ok(t) => Some(true),
                        ["core" | "std", t, "INFINITY"] if ty_ok(t) => Some(false),
                        ["core" | "std", t, "NEG_INFINITY"] if ty_ok(t) => Some(true),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        if let Some(negative) = infinity(e) {
            return Some(Fill::Infinity(negative));
        }
        match self.operand(e)? {
            Operand::Const(c) => Some(Fill::Const(self.constant(&c)?)),
            Operand::Value(_) => {
                self.errors.at_site(
                    &Site::whole(e),
                    format!("{}'s fill value is a constant (`-1e9`, `f64::NEG_INFINITY`), not a graph value", op.name),
                );
                None
            }
        }
    }

    /// The name of a data parameter (not a data tensor) given as `what` of `op`.
    fn data_parameter(&mut self, op: &OpSpec, arg: &Expr, what: &str, example: &str) -> Option<Ident> {
        let name = match arg {
            Expr::Path(p) => p.path.get_ident(),
            _ => None,
        };
        if let Some(n) = name.filter(|n| self.data_tensor_index(n).is_some()) {
            self.errors.at_site(
                &Site::whole(arg),
                format!("`{n}` is a data tensor, but {}'s {what} is a data parameter (e.g. `{example}`)", op.name),
            );
            return None;
        }
        if let Some(d) = name.and_then(|n| self.data.iter().find(|d| **d == n)) {
            Some((*d).clone())
        } else {
            self.errors.at_site(
                &Site::whole(arg),
                format!("{}'s {what} is a data parameter (declared after `;`, e.g. `{example}`), named here", op.name),
            );
            None
        }
    }
}
