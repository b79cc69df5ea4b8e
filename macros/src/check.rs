//! Name resolution, arity, literal shape inference. Collects every independent error.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ExprCall, ExprClosure, Ident, UnOp};

use crate::ir::{Check, Dim, ExtraArg, Graph, Node, NodeKind, Shape};
use crate::ops::{self, Extra, OpInfo, Rule};
use crate::parse::{DimDecl, GraphDef, ShapeDecl};

/// Errors collected across the whole definition.
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn at(&mut self, span: Span, message: impl core::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    /// An error underlining the whole site.
    fn at_site(&mut self, site: &Site, message: impl core::fmt::Display) {
        match &site.tokens {
            Some(t) => self.push(syn::Error::new_spanned(t, message)),
            None => self.at(site.span, message),
        }
    }
}

/// Where a node comes from: the most specific token (the op name or operator) for generated code
/// and compiler checks, and the whole user expression for the macro's own errors.
pub(crate) struct Site {
    span: Span,
    tokens: Option<proc_macro2::TokenStream>,
}

impl Site {
    fn new(span: Span, expr: &impl quote::ToTokens) -> Self {
        Site { span, tokens: Some(expr.to_token_stream()) }
    }

    fn span_only(span: Span) -> Self {
        Site { span, tokens: None }
    }
}

impl Errors {
    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// An operand: a graph value or a constant expression.
enum Operand {
    Value(usize),
    Const(Expr),
}

struct Lowering<'d> {
    dims: &'d [Ident],
    /// Data parameters that are not tensors (labels, ids, other values).
    data: Vec<&'d Ident>,
    /// The leaf node of each data tensor used outside the left of a `matmul`, made at first use.
    leaves: HashMap<String, usize>,
    graph: Graph,
    /// Names in scope; `None` for a binding whose value failed (its uses report nothing more).
    names: HashMap<String, Option<usize>>,
    errors: Errors,
}

/// Lowers the definition into the IR, or returns every error found.
pub(crate) fn lower(def: &GraphDef) -> Result<Graph, syn::Error> {
    let mut l = Lowering {
        dims: &def.dims,
        data: def.data.iter().filter(|d| d.tensor_shape().is_none()).map(|d| &d.name).collect(),
        leaves: HashMap::new(),
        graph: Graph {
            inputs: Vec::new(),
            data_tensors: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            checks: Vec::new(),
        },
        names: HashMap::new(),
        errors: Errors(None),
    };
    for (i, d) in def.dims.iter().enumerate() {
        if def.dims[..i].contains(d) {
            l.errors.at(d.span(), format!("the dim `{d}` is declared twice"));
        }
    }
    for input in &def.inputs {
        let shape = l.shape(&input.shape);
        let key = input.name.to_string();
        let reserved = key == "output"
            || (key.starts_with("output") && key[6..].parse::<usize>().is_ok() && def.outputs.len() > 1);
        if reserved {
            l.errors.at(
                input.name.span(),
                format!("`{key}` names an output handle of the generated `…Handles` struct; rename the input"),
            );
        }
        if l.names.contains_key(&key) {
            l.errors
                .at(input.name.span(), format!("the input `{key}` is declared twice; give each input its own name"));
            continue;
        }
        l.names.insert(key, Some(l.graph.inputs.len()));
        l.graph.inputs.push((input.name.clone(), shape));
    }
    for d in &def.data {
        if let Some(decl) = d.tensor_shape() {
            let shape = l.shape(decl);
            l.graph.data_tensors.push((d.name.clone(), shape));
        }
    }
    for d in &def.dims {
        let used = l
            .graph
            .inputs
            .iter()
            .chain(&l.graph.data_tensors)
            .any(|(_, s)| s.0.iter().any(|x| matches!(x, Dim::Sym(i) if i == d)));
        if !used {
            l.errors.at(
                d.span(),
                format!("the dim `{d}` is not used by any input or data tensor shape; remove it or use it in an input"),
            );
        }
    }
    for (i, d) in def.data.iter().enumerate() {
        if l.names.contains_key(&d.name.to_string()) {
            l.errors.at(d.name.span(), format!("`{}` is both an input and a data parameter", d.name));
        } else if def.data[..i].iter().any(|e| e.name == d.name) {
            l.errors.at(
                d.name.span(),
                format!("the data parameter `{}` is declared twice; give each data parameter its own name", d.name),
            );
        }
    }
    for stmt in &def.lets {
        let value = match (&stmt.expr, &stmt.annotation) {
            (Expr::Call(call), Some(ann)) if is_special(call) => l.special(call, ann, &stmt.name),
            (Expr::Call(call), None) if is_special(call) => {
                l.errors.at(
                    stmt.name.span(),
                    format!("`{}` needs its output shape: write `let {}: [d0, …] = …`", stmt.name, stmt.name),
                );
                None
            }
            (expr, ann) => {
                let v = l.value(expr);
                if let (Some(v), Some(ann)) = (v, ann) {
                    let declared = l.shape(ann);
                    let actual = l.graph.shape_of(v).clone();
                    l.unify_shapes(
                        &declared,
                        &actual,
                        Rule::Declared,
                        &Site::span_only(ann.span),
                        &format!("`{}` is declared {declared} but its value has shape {actual}", stmt.name),
                    );
                }
                v
            }
        };
        l.names.insert(stmt.name.to_string(), value);
    }
    let results: Vec<&Expr> = match &def.result {
        Expr::Tuple(t) => t.elems.iter().collect(),
        e => vec![e],
    };
    if results.len() != def.outputs.len() {
        l.errors.at(
            def.result.span(),
            format!("the signature declares {} output(s) but the body returns {}", def.outputs.len(), results.len()),
        );
    }
    for (expr, decl) in results.iter().zip(&def.outputs) {
        if let Some(v) = l.value(expr) {
            let declared = l.shape(decl);
            let actual = l.graph.shape_of(v).clone();
            let message = format!("the graph returns shape {actual} here, but its signature declares {declared}");
            l.unify_shapes(&declared, &actual, Rule::Declared, &Site::new(expr.span(), expr), &message);
            l.graph.outputs.push(v);
        }
    }
    l.errors.into_result().map(|()| l.graph)
}

fn is_special(call: &ExprCall) -> bool {
    match &*call.func {
        Expr::Path(p) => {
            let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            matches!(last.as_str(), "opaque" | "reshape" | "gather_rows")
                || last.starts_with(|c: char| c.is_ascii_uppercase())
        }
        _ => false,
    }
}

impl Lowering<'_> {
    fn shape(&mut self, decl: &ShapeDecl) -> Shape {
        Shape(
            decl.dims
                .iter()
                .map(|d| match d {
                    DimDecl::Lit(n, _) => Dim::Lit(*n),
                    DimDecl::Sym(i) => {
                        if !self.dims.contains(i) {
                            self.errors.at(
                                i.span(),
                                format!(
                                    "unknown dim `{i}`: declare it as a generic dim of the graph, `fn name<{i}>(…)`"
                                ),
                            );
                        }
                        Dim::Sym(i.clone())
                    }
                })
                .collect(),
        )
    }

    /// Checks two shapes are equal: literal mismatches are errors now; symbolic pairs become
    /// compiler checks.
    fn unify_shapes(&mut self, left: &Shape, right: &Shape, rule: Rule, site: &Site, message: &str) -> bool {
        if left.0.len() != right.0.len() {
            self.errors.at_site(site, message);
            return false;
        }
        let mut ok = true;
        for (l, r) in left.0.iter().zip(&right.0) {
            ok &= self.unify(l, r, rule, site, message);
        }
        ok
    }

    fn unify(&mut self, l: &Dim, r: &Dim, rule: Rule, site: &Site, message: &str) -> bool {
        match l.known_eq(r) {
            Some(true) => true,
            Some(false) => {
                self.errors.at_site(site, message);
                false
            }
            None => {
                self.graph.checks.push(Check { rule, left: l.clone(), right: r.clone(), span: site.span });
                true
            }
        }
    }

    fn push(&mut self, kind: NodeKind, parents: Vec<usize>, shape: Shape, site: &Site) -> usize {
        self.graph.nodes.push(Node { kind, parents, shape, span: site.span });
        self.graph.inputs.len() + self.graph.nodes.len() - 1
    }

    /// An expression that must be a graph value.
    fn value(&mut self, expr: &Expr) -> Option<usize> {
        match self.operand(expr)? {
            Operand::Value(v) => Some(v),
            Operand::Const(c) => {
                self.errors.at(c.span(), "a constant is not a graph value; constants scale values, as in `x * 0.5`");
                None
            }
        }
    }

    fn operand(&mut self, expr: &Expr) -> Option<Operand> {
        match expr {
            Expr::Paren(p) => self.operand(&p.expr),
            Expr::Group(g) => self.operand(&g.expr),
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(_) | syn::Lit::Int(_), .. }) => {
                Some(Operand::Const(expr.clone()))
            }
            Expr::Path(p) => {
                let Some(ident) = p.path.get_ident() else {
                    self.errors.at(p.span(), "expected the name of an input or of a `let` binding");
                    return None;
                };
                match self.names.get(&ident.to_string()) {
                    Some(&Some(v)) => Some(Operand::Value(v)),
                    Some(None) => None,
                    None if self.data_tensor_index(ident).is_some() => {
                        self.data_tensor_index(ident).map(|k| Operand::Value(self.data_leaf(k, ident.span())))
                    }
                    None if self.data.contains(&ident) => {
                        self.errors.at(
                            ident.span(),
                            format!(
                                "`{ident}` is a data parameter of a non-tensor type: it can only name labels or ids (`cross_entropy(z, {ident})`, `gather_rows(table, {ident})`); a data tensor is declared with its shape after `;`, e.g. `x: [B, 784]`"
                            ),
                        );
                        None
                    }
                    None => {
                        self.errors.at(
                            ident.span(),
                            format!(
                                "cannot find `{ident}` in this graph: it is neither an input nor a `let` binding above"
                            ),
                        );
                        None
                    }
                }
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match self.operand(&u.expr)? {
                Operand::Const(_) => Some(Operand::Const(expr.clone())),
                Operand::Value(v) => {
                    self.builtin(lookup("neg"), &[v], &Site::new(u.op.span(), expr)).map(Operand::Value)
                }
            },
            Expr::Binary(b) => {
                let name = match b.op {
                    BinOp::Add(_) => "add",
                    BinOp::Sub(_) => "sub",
                    BinOp::Mul(_) => "mul",
                    _ => {
                        self.errors
                            .at(b.op.span(), "unsupported operator: graph values support `+`, `-`, `*` and unary `-`");
                        return None;
                    }
                };
                let (l, r) = (self.operand(&b.left), self.operand(&b.right));
                match (l?, r?) {
                    (Operand::Value(l), Operand::Value(r)) => {
                        let op = if name == "add" && self.is_row_broadcast(l, r) { "add_row" } else { name };
                        self.builtin(lookup(op), &[l, r], &Site::new(b.op.span(), expr)).map(Operand::Value)
                    }
                    (Operand::Value(v), Operand::Const(c)) | (Operand::Const(c), Operand::Value(v))
                        if name == "mul" =>
                    {
                        let shape = self.graph.shape_of(v).clone();
                        Some(Operand::Value(self.push(
                            NodeKind::Scale(c),
                            vec![v],
                            shape,
                            &Site::new(b.op.span(), expr),
                        )))
                    }
                    (Operand::Const(_), Operand::Const(_)) => Some(Operand::Const(expr.clone())),
                    _ => {
                        self.errors.at_site(&Site::new(b.op.span(), expr), format!("`{name}` of a graph value and a constant is not an op; only `*` takes a constant (`x * 0.5`)"));
                        None
                    }
                }
            }
            Expr::Call(call) => {
                let Expr::Path(p) = &*call.func else {
                    self.errors.at(call.func.span(), "expected an op name, e.g. `relu(h)`");
                    return None;
                };
                let Some(ident) = p.path.get_ident() else {
                    self.errors.at(p.span(), "a user op needs its output shape: write `let y: [d0, …] = MyOp(…);`");
                    return None;
                };
                if is_special(call) {
                    self.errors.at(
                        ident.span(),
                        format!("`{ident}` needs its output shape: bind it with `let y: [d0, …] = {ident}(…);`"),
                    );
                    return None;
                }
                self.call(ident, call.args.iter().collect(), &Site::new(ident.span(), expr)).map(Operand::Value)
            }
            Expr::MethodCall(m) => {
                let mut args = vec![&*m.receiver];
                args.extend(m.args.iter());
                self.call(&m.method, args, &Site::new(m.method.span(), expr)).map(Operand::Value)
            }
            Expr::Closure(c) => {
                self.errors.at(c.span(), "a closure is only allowed inside `opaque(…, forward = |…| …, vjp = |…| …)`");
                None
            }
            other => {
                self.errors.at(
                    other.span(),
                    "unsupported expression: the graph body has names, op calls (`relu(h)`, `x.matmul(w)`), `+ - *`, unary `-` and constants",
                );
                None
            }
        }
    }

    fn is_row_broadcast(&self, l: usize, r: usize) -> bool {
        let (ls, rs) = (self.graph.shape_of(l), self.graph.shape_of(r));
        ls.0.len() == 2 && rs.0.len() == 1
    }

    fn call(&mut self, ident: &Ident, args: Vec<&Expr>, site: &Site) -> Option<usize> {
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
            let shape = self.graph.shape_of(v).clone();
            return Some(self.push(NodeKind::Scale(args[1].clone()), vec![v], shape, site));
        }
        let Some(op) = ops::lookup(&name) else {
            self.errors.at(ident.span(), format!(
                    "unknown op `{name}`; the built-in ops are {}, and a user op is a CamelCase type called with a declared shape (`let y: [d0, …] = MyOp(x);`)",
                    ops::names()
                ));
            return None;
        };
        let optional = matches!(op.extra, Extra::Eps(_));
        let with_extra = op.arity
            + match op.extra {
                Extra::None => 0,
                Extra::Slice => 3,
                _ => 1,
            };
        if args.len() != with_extra && !(optional && args.len() == op.arity) {
            let what = match op.extra {
                Extra::None => String::new(),
                Extra::Axis => " and an axis".to_owned(),
                Extra::Eps(d) => format!(" and optionally eps (default {d})"),
                Extra::Labels => " and the name of a data parameter holding the labels".to_owned(),
                Extra::Slice => " and three integer literals (axis, start, length)".to_owned(),
                Extra::Perm => " and the permutation as an array literal, e.g. `[1, 0]`".to_owned(),
            };
            self.errors.at_site(
                site,
                format!(
                    "{} takes {} value{}{what}, got {} argument{}",
                    op.name,
                    op.arity,
                    if op.arity == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        let extra = match op.extra {
            Extra::None => ExtraArg::None,
            Extra::Axis => match args[op.arity] {
                Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<usize>() {
                    Ok(axis) => ExtraArg::Axis(axis),
                    Err(e) => {
                        self.errors.push(e);
                        return None;
                    }
                },
                other => {
                    self.errors.at_site(
                        &Site::new(other.span(), other),
                        format!("{}'s axis is an integer literal, e.g. `{}(x, 1)`", op.name, op.name),
                    );
                    return None;
                }
            },
            Extra::Eps(default) => match args.get(op.arity) {
                Some(e) => match self.operand(e)? {
                    Operand::Const(c) => ExtraArg::Eps(c),
                    Operand::Value(_) => {
                        self.errors
                            .at_site(&Site::new(e.span(), *e), format!("{}'s eps is a constant, e.g. `1e-5`", op.name));
                        return None;
                    }
                },
                None => ExtraArg::Eps(syn::parse_str(default).unwrap_or_else(|_| unreachable!("a literal"))),
            },
            Extra::Slice => {
                let n: Vec<Option<usize>> = args[op.arity..].iter().map(|a| self.int_literal(a, op.name)).collect();
                match n[..] {
                    [Some(axis), Some(start), Some(len)] => ExtraArg::Slice(axis, start, len),
                    _ => return None,
                }
            }
            Extra::Perm => match args[op.arity] {
                Expr::Array(a) => {
                    let n: Vec<Option<usize>> = a.elems.iter().map(|e| self.int_literal(e, op.name)).collect();
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
            Extra::Labels => {
                let arg = args[op.arity];
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
                match name.and_then(|n| self.data.iter().find(|d| **d == n)) {
                    Some(d) => ExtraArg::Labels((*d).clone()),
                    None => {
                        self.errors.at_site(
                            &Site::new(arg.span(), arg),
                            format!("{}'s labels are a data parameter (declared after `;`, e.g. `; labels: Vec<usize>`), named here", op.name),
                        );
                        return None;
                    }
                }
            }
        };
        if op.rule == Rule::MatMul {
            if let Some(k) = self.data_tensor_ref(args[0]) {
                let w = self.value(args[1])?;
                return self.matmul_data(k, w, site);
            }
        }
        let values: Vec<Option<usize>> = args[..op.arity].iter().map(|a| self.value(a)).collect();
        let values: Vec<usize> = values.into_iter().collect::<Option<_>>()?;
        self.builtin_with(op, extra, &values, site)
    }

    /// `let y: [d…] = reshape(x);`: the declared shape, with the same element count when both are
    /// literal (the runtime checks it at push otherwise).
    fn reshape(&mut self, call: &ExprCall, shape: Shape) -> Option<usize> {
        let site = Site::new(call.func.span(), call);
        if call.args.len() != 1 {
            self.errors.at_site(
                &site,
                format!("reshape takes 1 value (the target shape is the binding's), got {} arguments", call.args.len()),
            );
            return None;
        }
        let x = self.value(&call.args[0])?;
        let from = self.graph.shape_of(x).clone();
        let numel = |s: &Shape| {
            s.0.iter().try_fold(1u64, |acc, d| match d {
                Dim::Lit(n) => Some(acc * n),
                Dim::Sym(_) => None,
            })
        };
        if let (Some(a), Some(b)) = (numel(&from), numel(&shape)) {
            if a != b {
                self.errors.at_site(
                    &site,
                    format!("reshape cannot turn shape {from} ({a} elements) into shape {shape} ({b} elements)"),
                );
                return None;
            }
        }
        Some(self.push(NodeKind::Reshape, vec![x], shape, &site))
    }

    /// `let e: [n, dim] = gather_rows(table, ids);` with `ids` a data parameter (one id per row;
    /// `n` from the binding, `dim` the table's columns).
    fn gather_rows(&mut self, call: &ExprCall, shape: Shape) -> Option<usize> {
        let site = Site::new(call.func.span(), call);
        let args: Vec<&Expr> = call.args.iter().collect();
        if args.len() != 2 {
            self.errors.at_site(
                &site,
                format!("gather_rows takes a table and a data parameter of ids, got {} arguments", args.len()),
            );
            return None;
        }
        let table = self.value(args[0])?;
        if let Expr::Path(p) = args[1] {
            if let Some(n) = p.path.get_ident().filter(|n| self.data_tensor_index(n).is_some()) {
                self.errors.at_site(
                    &Site::new(args[1].span(), args[1]),
                    format!("`{n}` is a data tensor, but gather_rows's ids are a data parameter holding one `usize` per row (e.g. `; ids: Vec<usize>`)"),
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
                "gather_rows's ids are a data parameter (declared after `;`, e.g. `; ids: Vec<usize>`), named here",
            );
            return None;
        };
        let t = self.graph.shape_of(table).clone();
        match (&t.0[..], &shape.0[..]) {
            ([_, dim], [_, out]) => {
                let message =
                    format!("gather_rows gives rows of the table's width {dim}, but the binding declares {shape}");
                if !self.unify(out, dim, Rule::Declared, &site, &message) {
                    return None;
                }
            }
            _ => {
                self.errors.at_site(
                    &site,
                    format!("gather_rows needs a table [vocab, dim] and a binding [rows, dim], got {t} and {shape}"),
                );
                return None;
            }
        }
        Some(self.push(NodeKind::Gather(field), vec![table], shape, &site))
    }

    /// The index in `graph.data_tensors` of the data tensor called `ident`.
    fn data_tensor_index(&self, ident: &Ident) -> Option<usize> {
        self.graph.data_tensors.iter().position(|(n, _)| n == ident)
    }

    /// The data tensor `expr` names: a bare name (possibly parenthesised) that no input or
    /// binding shadows.
    fn data_tensor_ref(&self, expr: &Expr) -> Option<usize> {
        match expr {
            Expr::Paren(p) => self.data_tensor_ref(&p.expr),
            Expr::Group(g) => self.data_tensor_ref(&g.expr),
            Expr::Path(p) => {
                let ident = p.path.get_ident()?;
                if self.names.contains_key(&ident.to_string()) {
                    None
                } else {
                    self.data_tensor_index(ident)
                }
            }
            _ => None,
        }
    }

    /// The leaf node holding data tensor `k`: made at its first use, shared by later ones.
    fn data_leaf(&mut self, k: usize, span: Span) -> usize {
        let (name, shape) = self.graph.data_tensors[k].clone();
        if let Some(&v) = self.leaves.get(&name.to_string()) {
            return v;
        }
        let v = self.push(NodeKind::DataTensor(name.clone()), Vec::new(), shape, &Site::span_only(span));
        self.leaves.insert(name.to_string(), v);
        v
    }

    /// `x.matmul(w)` with `x` data tensor `k`: `w` is the only parent.
    fn matmul_data(&mut self, k: usize, w: usize, site: &Site) -> Option<usize> {
        let (name, x) = self.graph.data_tensors[k].clone();
        let ws = self.graph.shape_of(w).clone();
        let out = self.matmul_shape(&x, &ws, site)?;
        Some(self.push(NodeKind::MatMulData(name), vec![w], out, site))
    }

    /// The shape rule of `matmul`: `[m, k] · [k, n] → [m, n]`.
    fn matmul_shape(&mut self, a: &Shape, b: &Shape, site: &Site) -> Option<Shape> {
        match (&a.0[..], &b.0[..]) {
            ([m, k], [k2, n]) => {
                let message =
                    format!("matmul needs the left operand's columns ({k}) to equal the right operand's rows ({k2})");
                self.unify(k, k2, Rule::MatMul, site, &message).then(|| Shape(vec![m.clone(), n.clone()]))
            }
            _ => {
                self.errors.at_site(site, format!("matmul needs two matrices (rank 2), got shapes {a} and {b}"));
                None
            }
        }
    }

    fn int_literal(&mut self, e: &Expr, op: &str) -> Option<usize> {
        match e {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<usize>() {
                Ok(n) => Some(n),
                Err(err) => {
                    self.errors.push(err);
                    None
                }
            },
            other => {
                self.errors.at_site(&Site::new(other.span(), other), format!("{op} takes integer literals here"));
                None
            }
        }
    }

    fn builtin(&mut self, op: Option<&'static OpInfo>, args: &[usize], site: &Site) -> Option<usize> {
        self.builtin_with(op?, ExtraArg::None, args, site)
    }

    fn builtin_with(&mut self, op: &'static OpInfo, extra: ExtraArg, args: &[usize], site: &Site) -> Option<usize> {
        let shapes: Vec<Shape> = args.iter().map(|&a| self.graph.shape_of(a).clone()).collect();
        let name = op.name;
        let out = match op.rule {
            Rule::SameShape => {
                let message =
                    format!("{name} needs both operands to have the same shape, got {} and {}", shapes[0], shapes[1]);
                self.unify_shapes(&shapes[0], &shapes[1], Rule::SameShape, site, &message).then(|| shapes[0].clone())
            }
            Rule::Unary => Some(shapes[0].clone()),
            Rule::Reduce => Some(Shape(Vec::new())),
            Rule::Transpose => match &shapes[0].0[..] {
                [m, n] => Some(Shape(vec![n.clone(), m.clone()])),
                _ => {
                    self.errors.at_site(site, format!("transpose needs a matrix (rank 2), got shape {}", shapes[0]));
                    None
                }
            },
            Rule::MatMul => self.matmul_shape(&shapes[0], &shapes[1], site),
            Rule::AddRow => match (&shapes[0].0[..], &shapes[1].0[..]) {
                ([_, c], [n]) => {
                    let message = format!(
                        "adding a row vector of length {n} to a matrix needs the matrix's columns ({c}) to equal it; shapes {} and {}",
                        shapes[0], shapes[1]
                    );
                    self.unify(c, n, Rule::AddRow, site, &message).then(|| shapes[0].clone())
                }
                _ => {
                    self.errors.at_site(
                        site,
                        format!("add_row needs a matrix and a row vector, got shapes {} and {}", shapes[0], shapes[1]),
                    );
                    None
                }
            },
            Rule::SameShapeToScalar => {
                let message =
                    format!("{name} needs both operands to have the same shape, got {} and {}", shapes[0], shapes[1]);
                self.unify_shapes(&shapes[0], &shapes[1], Rule::SameShape, site, &message).then(|| Shape(Vec::new()))
            }
            Rule::AxisReduce => {
                let ExtraArg::Axis(axis) = extra else { unreachable!("the table gives AxisReduce an axis") };
                if axis >= shapes[0].0.len() {
                    self.errors.at_site(
                        site,
                        format!(
                            "{name} reduces axis {axis}, but shape {} has only {} axes",
                            shapes[0],
                            shapes[0].0.len()
                        ),
                    );
                    None
                } else {
                    let mut dims = shapes[0].0.clone();
                    dims.remove(axis);
                    Some(Shape(dims))
                }
            }
            Rule::RowParams => match (&shapes[0].0[..], &shapes[1].0[..], &shapes[2].0[..]) {
                ([_, n], [g], [b]) => {
                    let mg = format!("{name} needs the gain's length ({g}) to equal the rows' length ({n})");
                    let mb = format!("{name} needs the bias's length ({b}) to equal the rows' length ({n})");
                    let ok =
                        self.unify(n, g, Rule::RowParams, site, &mg) & self.unify(n, b, Rule::RowParams, site, &mb);
                    ok.then(|| shapes[0].clone())
                }
                _ => {
                    self.errors.at_site(
                        site,
                        format!(
                            "{name} needs a matrix and two vectors (gain, bias), got shapes {}, {} and {}",
                            shapes[0], shapes[1], shapes[2]
                        ),
                    );
                    None
                }
            },
            Rule::LogitsToScalar => {
                if shapes[0].0.len() == 2 {
                    Some(Shape(Vec::new()))
                } else {
                    self.errors.at_site(
                        site,
                        format!("{name} needs logits as a matrix [rows, classes], got shape {}", shapes[0]),
                    );
                    None
                }
            }
            Rule::Concat => {
                let ExtraArg::Axis(axis) = extra else { unreachable!("the table gives concat an axis") };
                let (l, r) = (&shapes[0], &shapes[1]);
                if l.0.len() != r.0.len() || axis >= l.0.len() {
                    self.errors.at_site(
                        site,
                        format!(
                            "concat along axis {axis} needs two shapes of one rank with that axis, got {l} and {r}"
                        ),
                    );
                    return None;
                }
                let mut ok = true;
                for (k, (a, b)) in l.0.iter().zip(&r.0).enumerate() {
                    if k != axis {
                        let message = format!("concat along axis {axis} needs the other dims equal, got {l} and {r}");
                        ok &= self.unify(a, b, Rule::SameShape, site, &message);
                    }
                }
                match (&l.0[axis], &r.0[axis]) {
                    (Dim::Lit(a), Dim::Lit(b)) if ok => {
                        let mut dims = l.0.clone();
                        dims[axis] = Dim::Lit(a + b);
                        Some(Shape(dims))
                    }
                    (Dim::Lit(_), Dim::Lit(_)) => None,
                    (a, b) => {
                        self.errors.at_site(
                            site,
                            format!("concat along axis {axis} needs literal sizes on that axis to add them, got {a} and {b}"),
                        );
                        None
                    }
                }
            }
            Rule::Slice => {
                let ExtraArg::Slice(axis, start, len) = extra else { unreachable!("the table gives slice its range") };
                let x = &shapes[0];
                if axis >= x.0.len() {
                    self.errors
                        .at_site(site, format!("slice takes axis {axis}, but shape {x} has only {} axes", x.0.len()));
                    return None;
                }
                if let Dim::Lit(n) = x.0[axis] {
                    if start.checked_add(len).is_none_or(|end| end > n as usize) {
                        self.errors.at_site(
                            site,
                            format!("slice {start}..{start}+{len} does not fit axis {axis} of shape {x} (size {n})"),
                        );
                        return None;
                    }
                }
                let mut dims = x.0.clone();
                dims[axis] = Dim::Lit(len as u64);
                Some(Shape(dims))
            }
            Rule::Permute => {
                let ExtraArg::Perm(perm) = &extra else { unreachable!("the table gives permute a permutation") };
                let x = &shapes[0];
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..x.0.len()).collect::<Vec<_>>() {
                    self.errors.at_site(
                        site,
                        format!("permute needs a permutation of the axes 0..{} of shape {x}, got {perm:?}", x.0.len()),
                    );
                    return None;
                }
                Some(Shape(perm.iter().map(|&k| x.0[k].clone()).collect()))
            }
            Rule::Declared => unreachable!("not an op rule"),
        }?;
        Some(self.push(NodeKind::Builtin(op, extra), args.to_vec(), out, site))
    }

    /// `opaque(reads…, forward = |…| …, vjp = |…| …)` or `UserOp(reads…)`, with a declared shape.
    fn special(&mut self, call: &ExprCall, ann: &ShapeDecl, binding: &Ident) -> Option<usize> {
        let shape = self.shape(ann);
        let Expr::Path(p) = &*call.func else { return None };
        let is_opaque = p.path.is_ident("opaque");
        if p.path.is_ident("reshape") {
            return self.reshape(call, shape);
        }
        if p.path.is_ident("gather_rows") {
            return self.gather_rows(call, shape);
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

fn lookup(name: &str) -> Option<&'static OpInfo> {
    ops::lookup(name)
}
