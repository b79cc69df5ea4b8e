//! The calls that need a declared output shape: `opaque`, user ops, `reshape`, `gather_rows`.

use syn::spanned::Spanned;
use syn::{Expr, ExprCall, ExprClosure, Ident};

use super::expr::by_name;
use super::Lowering;
use crate::errors::Site;
use crate::infer::{self, Compared};
use crate::ir::{Check, ExtraArg, NodeKind, Shape};
use crate::parse::ShapeDecl;
use exactgrad_spec::OpSpec;

impl Lowering<'_> {
    /// `let y: [d…] = reshape(x);`: the declared shape, with the same element count when both are
    /// literal (the runtime checks it at push otherwise).
    pub(super) fn reshape(&mut self, call: &ExprCall, shape: Shape) -> Option<usize> {
        let site = Site::new(call.func.span(), call);
        if call.args.len() != 1 {
            self.errors.at_site(
                &site,
                format!("reshape takes 1 value (the target shape is the binding's), got {} arguments", call.args.len()),
            );
            return None;
        }
        let x = self.value(&call.args[0])?;
        self.declared_op(by_name("reshape"), ExtraArg::None, &[x], &shape, &site)
    }

    /// `let e: [n, dim] = gather_rows(table, ids);` or `let e: [b, t, dim] = embedding(table,
    /// ids);` with `ids` a data parameter (one id per output row, row-major; the leading dims
    /// from the binding, `dim` the table's columns).
    pub(super) fn gather_rows(&mut self, call: &ExprCall, shape: Shape, written: &str) -> Option<usize> {
        let site = Site::new(call.func.span(), call);
        let args: Vec<&Expr> = call.args.iter().collect();
        if args.len() != 2 {
            self.errors.at_site(
                &site,
                format!("{written} takes a table and a data parameter of ids, got {} arguments", args.len()),
            );
            return None;
        }
        let table = self.value(args[0])?;
        if let Expr::Path(p) = args[1] {
            if let Some(n) = p.path.get_ident().filter(|n| self.data_tensor_index(n).is_some()) {
                self.errors.at_site(
                    &Site::whole(args[1]),
                    format!("`{n}` is a data tensor, but {written}'s ids are a data parameter holding one `usize` per row (e.g. `; ids: Vec<usize>`)"),
                );
                return None;
            }
        }
        let field = match args[1] {
            Expr::Path(p) => p.path.get_ident().and_then(|n| self.data.iter().find(|d| **d == n)).map(|d| (*d).clone()),
            _ => None,
        };
        let Some(field) = field else {
            self.errors.at_site(
                &Site::whole(args[1]),
                format!(
                    "{written}'s ids are a data parameter (declared after `;`, e.g. `; ids: Vec<usize>`), named here"
                ),
            );
            return None;
        };
        self.declared_op(by_name("gather_rows"), ExtraArg::Labels(field), &[table], &shape, &site)
    }

    /// A built-in op whose output shape the binding declares (`reshape`, `gather_rows`).
    fn declared_op(
        &mut self,
        op: &'static OpSpec,
        extra: ExtraArg,
        args: &[usize],
        declared: &Shape,
        site: &Site,
    ) -> Option<usize> {
        let shapes: Vec<Shape> = args.iter().map(|&a| self.graph.shape_of(a).clone()).collect();
        let operands: Vec<&Shape> = shapes.iter().collect();
        match infer::output(op, &extra, &operands, Some(declared), None) {
            Ok(out) => {
                if infer::compare(declared, &out) == Compared::Compiler {
                    self.graph.checks.push(Check {
                        declared: declared.clone(),
                        actual: out.clone(),
                        site: site.clone(),
                    });
                }
                Some(self.push(NodeKind::Builtin(op, extra), args.to_vec(), declared.clone(), site))
            }
            Err(message) => {
                self.errors.at_site(site, message);
                None
            }
        }
    }
    /// `opaque(reads…, forward = |…| …, vjp = |…| …)` or `UserOp(reads…)`, with a declared shape.
    pub(super) fn special(&mut self, call: &ExprCall, ann: &ShapeDecl, binding: &Ident) -> Option<usize> {
        let shape = self.shape(ann);
        let Expr::Path(p) = &*call.func else { return None };
        let is_opaque = p.path.is_ident("opaque");
        if p.path.is_ident("reshape") {
            return self.reshape(call, shape);
        }
        for written in ["gather_rows", "embedding"] {
            if p.path.is_ident(written) {
                return self.gather_rows(call, shape, written);
            }
        }
        let mut reads = Vec::new();
        let (mut forward, mut vjp): (Option<ExprClosure>, Option<ExprClosure>) = (None, None);
        let mut whole_prefix = false;
        let mut ok = true;
        for arg in &call.args {
            match arg {
                Expr::Assign(a) if is_opaque => {
                    let key = match &*a.left {
                        Expr::Path(k) => k.path.get_ident().map(ToString::to_string).unwrap_or_default(),
                        _ => String::new(),
                    };
                    let Expr::Closure(c) = &*a.right else {
                        self.errors.at(a.right.span(), format!("`{key}` must be a closure, e.g. `{key} = |x| …`"));
                        ok = false;
                        continue;
                    };
                    match key.as_str() {
                        "forward" => forward = Some(c.clone()),
                        "vjp" | "vjp_all" if vjp.is_some() => {
                            self.errors.at(a.left.span(), "an opaque node takes one of `vjp` and `vjp_all`, not both");
                            ok = false;
                        }
                        "vjp" => vjp = Some(c.clone()),
                        "vjp_all" => {
                            vjp = Some(c.clone());
                            whole_prefix = true;
                        }
                        _ => {
                            self.errors.at(
                                a.left.span(),
                                "an opaque node takes `forward = |reads…| …` and `vjp = |reads…, g| [grads…]` (or `vjp_all = |prefix, g| pack`)",
                            );
                            ok = false;
                        }
                    }
                }
                other => match self.value(other) {
                    Some(v) => reads.push(v),
                    None => ok = false,
                },
            }
        }
        let site = Site::new(call.func.span(), call);
        if is_opaque {
            let (Some(forward), Some(vjp)) = (forward, vjp) else {
                self.errors.at_site(
                    &site,
                    "an opaque node needs both closures: `opaque(x, forward = |x| …, vjp = |x, g| [dx])` (one gradient per read value) or `vjp_all = |prefix, g| …` (one tensor per earlier position)",
                );
                return None;
            };
            let vjp_rule = if whole_prefix {
                (2, "the vjp_all closure takes the prefix (`&[RawTensor]`) and the cotangent")
            } else {
                (reads.len() + 1, "the vjp closure takes one argument per read value, then the cotangent")
            };
            let rules =
                [(&forward, (reads.len(), "the forward closure takes one argument per read value")), (&vjp, vjp_rule)];
            for (c, (want, what)) in rules {
                if c.inputs.len() != want {
                    self.errors.at(c.span(), format!("{what}: {want} argument(s), got {}", c.inputs.len()));
                    ok = false;
                }
            }
            if !ok {
                return None;
            }
            let name = binding.to_string();
            Some(self.push(NodeKind::Opaque { name, forward, vjp, whole_prefix }, reads, shape, &site))
        } else {
            ok.then(|| self.push(NodeKind::Custom(p.path.clone()), reads, shape, &site))
        }
    }
}
