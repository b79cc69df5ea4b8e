//! Calls that join, split and mask (SEMANTICS §8.3): `concat([a, b, …], axis)` of one or more
//! parts (one node), `let (a, b, …) = split(x, axis, sizes)` (one `slice` per part) and
//! `dropout(x, p, seed)` (a constant probability, a seed from the data).

use syn::spanned::Spanned;
use syn::{Expr, ExprCall};

use super::consts::{self, NotConst};
use super::expr::by_name;
use super::Lowering;
use crate::errors::Site;
use crate::ir::ExtraArg;
use exactgrad_spec::OpSpec;

impl Lowering<'_> {
    /// `concat([a, b, …], axis)` (one or more parts, one node) or `concat(a, b, axis)`.
    pub(super) fn concat_call(&mut self, op: &'static OpSpec, args: &[&Expr], site: &Site) -> Option<usize> {
        let (parts, axis): (Vec<&Expr>, &Expr) = match args {
            [Expr::Array(a), axis] => (a.elems.iter().collect(), axis),
            [a, b, axis] => (vec![a, b], axis),
            _ => {
                self.errors.at_site(
                    site,
                    format!(
                        "concat takes its parts as an array literal and an axis, as in `concat([a, b, c], 1)`, or two values and an axis, got {} argument{}",
                        args.len(),
                        if args.len() == 1 { "" } else { "s" }
                    ),
                );
                return None;
            }
        };
        let axis = self.int_constant(axis, "concat's axis");
        let values: Vec<Option<usize>> = parts.iter().map(|a| self.value(a)).collect();
        let values: Vec<usize> = values.into_iter().collect::<Option<_>>()?;
        self.builtin_with(op, ExtraArg::Axis(axis?), &values, site)
    }

    /// `split(x, axis, [n0, n1, …])` or `split(x, axis, parts)` (equal parts) bound to one name per
    /// part (`labels`: each part's node label): one `slice` per part, the `k`-th from the sum of
    /// the sizes before it. The sizes must add up to the axis (spec rule `split`).
    pub(super) fn split(&mut self, call: &ExprCall, labels: &[Option<String>]) -> Option<Vec<usize>> {
        let site = Site::new(call.func.span(), call);
        let args: Vec<&Expr> = call.args.iter().collect();
        let [x, axis, sizes] = args[..] else {
            self.errors.at_site(
                &site,
                format!(
                    "split takes a value, an axis and the parts' sizes, as in `split(x, 1, [2, 3, 4])` (or a count of equal parts, `split(x, 1, 3)`), got {} argument{}",
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        };
        let x = self.value(x);
        let axis = self.int_constant(axis, "split's axis");
        let listed = matches!(sizes, Expr::Array(_));
        let sizes: Option<Vec<usize>> = match sizes {
            Expr::Array(a) => a.elems.iter().map(|e| self.int_constant(e, "a split size")).collect(),
            count => self.int_constant(count, "split's part count").map(|n| vec![n]),
        };
        let (x, axis, mut sizes) = (x?, axis?, sizes?);
        let shape = self.graph.shape_of(x).clone();
        if !listed {
            // Equal parts: checked (the count divides the axis, so it is at most the axis's
            // size) before any list of that many sizes is made.
            match exactgrad_spec::rules::equal_parts(&shape.0, axis, sizes[0]) {
                Ok(s) => sizes = s,
                Err(m) => {
                    self.errors.at_site(&site, m);
                    return None;
                }
            }
        }
        if let Err(m) = exactgrad_spec::rules::split(&shape.0, axis, &sizes) {
            self.errors.at_site(&site, m);
            return None;
        }
        if sizes.len() != labels.len() {
            self.errors.at_site(
                &site,
                format!("split makes {} parts here, but the binding names {}", sizes.len(), labels.len()),
            );
            return None;
        }
        let mut start = 0;
        let mut parts = Vec::with_capacity(sizes.len());
        for (&len, label) in sizes.iter().zip(labels) {
            self.label.clone_from(label);
            parts.push(self.builtin_with(by_name("slice"), ExtraArg::Slice(axis, start, len), &[x], &site));
            start += len;
        }
        self.label = None;
        parts.into_iter().collect()
    }

    /// `dropout(x, p, seed)`: `p` a constant in `[0, 1)`, `seed` a data parameter (a `u64`).
    pub(super) fn dropout_call(&mut self, op: &'static OpSpec, args: &[&Expr], site: &Site) -> Option<usize> {
        let [x, p, seed] = args else {
            self.errors.at_site(
                site,
                format!(
                    "dropout takes a value, a constant probability in [0, 1) and a data parameter holding the seed (a `u64`), as in `dropout(x, 0.5, seed)`, got {} argument{}",
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        };
        let x = self.value(x);
        let p_site = Site::whole(p);
        let prob = match consts::float(&self.consts, p) {
            Ok((v, _)) => match exactgrad_spec::rules::dropout_probability(v) {
                Ok(()) => Some(v),
                Err(m) => {
                    self.errors.at_site(&p_site, m);
                    None
                }
            },
            Err(NotConst::Error(span, m)) => {
                self.errors.at(span, m);
                None
            }
            Err(NotConst::Value) => {
                self.errors.at_site(&p_site, "dropout's probability is a constant in [0, 1), e.g. `0.5`");
                None
            }
        };
        let name = match seed {
            Expr::Path(q) => q.path.get_ident(),
            _ => None,
        };
        let Some(field) = name.and_then(|n| self.data.iter().find(|d| **d == n)).map(|d| (*d).clone()) else {
            self.errors.at_site(
                &Site::whole(seed),
                "dropout's seed is a data parameter holding a `u64` (declared after `;`, e.g. `; seed: u64`), named here",
            );
            return None;
        };
        self.builtin_with(op, ExtraArg::Dropout(prob?, field), &[x?], site)
    }
}
