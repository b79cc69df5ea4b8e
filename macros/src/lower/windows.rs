//! The sliding-window calls (convolutions, pooling): their per-axis constants.

use syn::spanned::Spanned;
use syn::Expr;

use super::Lowering;
use crate::errors::Site;
use crate::ir::{ExtraArg, Window};
use exactgrad_spec::{Args, OpSpec};

impl Lowering<'_> {
    /// A convolution or a pooling: its values, then its named constants (`stride = 2`,
    /// `padding = (1, 0)`, …), each an integer literal (every spatial axis) or, for an op over two
    /// spatial axes, a pair of them (height, width).
    pub(super) fn window_call(&mut self, op: &'static OpSpec, args: &[&Expr], site: &Site) -> Option<usize> {
        let conv = op.args == Args::Conv;
        let spatial = if op.name.ends_with("1d") { 1 } else { 2 };
        let names: &[&str] = if conv { &["stride", "padding", "dilation"] } else { &["kernel", "stride", "padding"] };
        let example = if conv {
            format!("`{}(x, w, stride = 1, padding = 0, dilation = 1)`", op.name)
        } else {
            format!("`{}(x, kernel = 2, stride = 2, padding = 0)`", op.name)
        };
        let (named, values): (Vec<&Expr>, Vec<&Expr>) = args.iter().partition(|a| matches!(a, Expr::Assign(_)));
        let arity = op.arity.min();
        if values.len() != arity {
            self.errors.at_site(
                site,
                format!(
                    "{} takes {} value{} and its constants by name, as in {example}, got {} value{}",
                    op.name,
                    arity,
                    if arity == 1 { "" } else { "s" },
                    values.len(),
                    if values.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        let mut given: [Option<Vec<usize>>; 3] = [None, None, None];
        let mut ok = true;
        for arg in named {
            let Expr::Assign(a) = arg else { continue };
            let key = match &*a.left {
                Expr::Path(k) => k.path.get_ident().map(ToString::to_string).unwrap_or_default(),
                _ => String::new(),
            };
            let Some(slot) = names.iter().position(|n| *n == key) else {
                self.errors.at(
                    a.left.span(),
                    format!("{} takes the constants {}, as in {example}", op.name, names.join(", ")),
                );
                ok = false;
                continue;
            };
            if given[slot].is_some() {
                self.errors.at(a.left.span(), format!("{}'s {key} is given twice", op.name));
                ok = false;
                continue;
            }
            match Self::per_axis(&a.right, spatial) {
                Ok(v) => given[slot] = Some(v),
                Err(Some(e)) => {
                    self.errors.push(e);
                    ok = false;
                }
                Err(None) => {
                    let shape = if spatial == 1 {
                        "an integer literal"
                    } else {
                        "an integer literal or a pair `(h, w)` of them"
                    };
                    self.errors
                        .at_site(&Site::new(a.right.span(), &a.right), format!("{}'s {key} is {shape}", op.name));
                    ok = false;
                }
            }
        }
        let values: Vec<Option<usize>> = values.iter().map(|a| self.value(a)).collect();
        let values: Vec<usize> = values.into_iter().collect::<Option<_>>()?;
        if !ok {
            return None;
        }
        let [a, b, c] = given;
        let window = if conv {
            Window {
                kernel: Vec::new(),
                stride: a.unwrap_or_else(|| vec![1; spatial]),
                padding: b.unwrap_or_else(|| vec![0; spatial]),
                dilation: c.unwrap_or_else(|| vec![1; spatial]),
            }
        } else {
            let Some(kernel) = a else {
                self.errors.at_site(site, format!("{} needs its kernel size, as in {example}", op.name));
                return None;
            };
            Window {
                stride: b.unwrap_or_else(|| kernel.clone()),
                padding: c.unwrap_or_else(|| vec![0; spatial]),
                dilation: vec![1; spatial],
                kernel,
            }
        };
        self.builtin_with(op, ExtraArg::Window(window), &values, site)
    }

    /// A constant of a window op: an integer literal (the same on every spatial axis) or, over two
    /// spatial axes, a pair of them; `Err(None)` for another form, `Err(Some(e))` for a literal
    /// that is no `usize`.
    fn per_axis(e: &Expr, spatial: usize) -> Result<Vec<usize>, Option<syn::Error>> {
        let int = |e: &Expr| match e {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<usize>().map_err(Some),
            _ => Err(None),
        };
        match e {
            Expr::Paren(p) => Self::per_axis(&p.expr, spatial),
            Expr::Tuple(t) if spatial > 1 && t.elems.len() == spatial => t.elems.iter().map(int).collect(),
            other => Ok(vec![int(other)?; spatial]),
        }
    }
}
