//! Calls: built-in ops by name with their extra arguments, and the calls that need a declared
//! output shape (`opaque`, user ops, `reshape`, `gather_rows`).

use syn::spanned::Spanned;
use syn::{Expr, ExprCall, ExprClosure, Ident};

use super::expr::{by_name, Operand};
use super::Lowering;
use crate::errors::Site;
use crate::infer::{self, Compared};
use crate::ir::{Check, ExtraArg, Fill, NodeKind, Shape, Window};
use crate::parse::ShapeDecl;
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
                        &Site::new(args[1].span(), args[1]),
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
                        self.errors
                            .at_site(&Site::new(e.span(), *e), format!("{}'s eps is a constant, e.g. `1e-5`", op.name));
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
                        &Site::new(other.span(), other),
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
                        &Site::new(arg.span(), arg),
                        format!("`{n}` is a data tensor, but {}'s labels are a data parameter holding one `usize` per row (e.g. `; labels: Vec<usize>`)", op.name),
                    );
                    return None;
                }
                if let Some(d) = name.and_then(|n| self.data.iter().find(|d| **d == n)) {
                    ExtraArg::Labels((*d).clone())
                } else {
                    self.errors.at_site(
                        &Site::new(arg.span(), arg),
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
                    &Site::new(e.span(), e),
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
                &Site::new(arg.span(), arg),
                format!("`{n}` is a data tensor, but {}'s {what} is a data parameter (e.g. `{example}`)", op.name),
            );
            return None;
        }
        if let Some(d) = name.and_then(|n| self.data.iter().find(|d| **d == n)) {
            Some((*d).clone())
        } else {
            self.errors.at_site(
                &Site::new(arg.span(), arg),
                format!("{}'s {what} is a data parameter (declared after `;`, e.g. `{example}`), named here", op.name),
            );
            None
        }
    }

    /// A convolution or a pooling: its values, then its named constants (`stride = 2`,
    /// `padding = (1, 0)`, …), each an integer literal (every spatial axis) or, for an op over two
    /// spatial axes, a pair of them (height, width).
    fn window_call(&mut self, op: &'static OpSpec, args: &[&Expr], site: &Site) -> Option<usize> {
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
                    &Site::new(args[1].span(), args[1]),
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
                &Site::new(args[1].span(), args[1]),
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
