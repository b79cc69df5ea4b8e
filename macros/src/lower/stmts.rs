//! Statements: `let` (and `let mut`), reassignments, `const` items, and `for` loops unrolled
//! when the macro expands — iteratively, with an explicit stack of frames (one per loop body
//! being run), so no recursion grows with the input; the iteration count and the graph's size are
//! capped.

use std::collections::HashMap;

use syn::spanned::Spanned;
use syn::Expr;

use super::consts::{self, Const, NotConst};
use super::{is_special, Lowering};
use crate::errors::{Errors, Site};
use crate::infer::{self, Compared};
use crate::ir::{Check, Shape};
use crate::parse::{AssignStmt, ConstStmt, ForStmt, LetStmt, LetTupleStmt, Stmt};

/// At most this many nodes: a loop that unrolls past it stops with an error.
pub(crate) const MAX_NODES: usize = 100_000;
/// At most this many statements and loop iterations run while unrolling (empty loops included).
const MAX_STEPS: usize = 100_000;

/// What to put back when a loop body's iteration ends: a name's earlier binding, mutability and
/// constant.
struct Undo {
    name: String,
    binding: Option<Option<usize>>,
    mutable: Option<Shape>,
    constant: Option<Const>,
}

/// A loop iteration or a helper call being lowered.
pub(super) struct Iteration {
    /// `i=3` (an iteration) or `block#2` (a call), in node labels.
    pub(super) label: String,
    pub(super) errors_before: usize,
    /// Uses of failed bindings before it (see `Lowering::poisoned`).
    pub(super) poisoned_before: usize,
    /// What every error of the iteration (or call) starts with.
    pub(super) prefix: String,
    /// A helper call, not a loop iteration.
    pub(super) call: bool,
}

/// A loop body being run (or the graph's body, without `lp`).
struct Frame<'s> {
    stmts: &'s [Stmt],
    next: usize,
    lp: Option<(&'s ForStmt, i128, i128)>,
    undo: Vec<Undo>,
    /// The loop's record in `Graph::loops`.
    record: usize,
}

/// `const NAME: Type = expr;`: an integer or float constant.
pub(super) fn const_item(consts: &mut HashMap<String, Const>, errors: &mut Errors, c: &ConstStmt) {
    let t = &c.ty;
    let ty = quote::quote!(#t).to_string();
    let ty = match &c.ty {
        syn::Type::Path(p) => p.path.get_ident().map(ToString::to_string).unwrap_or(ty),
        _ => ty,
    };
    let value = match ty.as_str() {
        "f64" | "f32" => consts::float(consts, &c.expr).map(|(_, x)| Const::Float(x)),
        "usize" | "u64" | "u32" | "i64" | "i32" | "isize" | "u128" | "i128" => {
            consts::int(consts, &c.expr).map(Const::Int)
        }
        _ => Err(NotConst::Error(
            c.ty.span(),
            format!("a graph constant is an integer (`usize`, `i64`, …) or a float (`f64`, `f32`), not `{ty}`"),
        )),
    };
    // A constant in error still names a constant (0), so its uses report nothing more.
    let poison = if ty.starts_with('f') { Const::Float(syn::parse_quote!(0.0)) } else { Const::Int(0) };
    consts.insert(c.name.to_string(), value.as_ref().map_or(poison, Clone::clone));
    match value {
        Ok(_) => {}
        Err(NotConst::Error(span, m)) => errors.at(span, m),
        Err(NotConst::Value) => errors.at(
            c.expr.span(),
            format!(
                "`{}` must be a constant expression: literals, earlier `const`s and loop variables with `+ - * /` (and `%` on integers), `as f64`, `.sqrt()`",
                c.name
            ),
        ),
    }
}

impl Lowering<'_> {
    /// Runs the body's statements, unrolling every loop.
    pub(super) fn statements(&mut self, body: &[Stmt]) {
        let depth = self.iterations.len();
        let mut stack = vec![Frame { stmts: body, next: 0, lp: None, undo: Vec::new(), record: 0 }];
        while let Some(top) = stack.last_mut() {
            if self.stopped {
                break;
            }
            if let Some(stmt) = top.stmts.get(top.next) {
                top.next += 1;
                self.steps += 1;
                if self.steps > MAX_STEPS || self.graph.nodes.len() > MAX_NODES {
                    let span = match stmt {
                        Stmt::For(f) => f.var.span(),
                        Stmt::Let(l) => l.name.span(),
                        Stmt::LetTuple(l) => l.expr.span(),
                        Stmt::Assign(a) => a.name.span(),
                        Stmt::Const(c) => c.name.span(),
                    };
                    self.errors.at(
                        span,
                        format!("the graph unrolls to more than {MAX_NODES} nodes or {MAX_STEPS} statements; use fewer loop iterations or helper calls"),
                    );
                    self.stopped = true;
                    break;
                }
                match stmt {
                    Stmt::Let(l) => self.let_stmt(l, &mut top.undo),
                    Stmt::LetTuple(l) => self.let_tuple(l, &mut top.undo),
                    Stmt::Assign(a) => self.assign(a),
                    Stmt::Const(c) => {
                        let key = c.name.to_string();
                        top.undo.push(self.snapshot(&key));
                        self.names.remove(&key);
                        self.mutable.remove(&key);
                        self.consts.remove(&key);
                        const_item(&mut self.consts, &mut self.errors, c);
                    }
                    Stmt::For(f) => {
                        if let Some((start, end)) = self.bounds(f) {
                            if start < end {
                                let record = self.graph.loops.len();
                                self.graph.loops.push(crate::ir::Loop::default());
                                let mut frame = Frame {
                                    stmts: &f.body,
                                    next: 0,
                                    lp: Some((f, start, end)),
                                    undo: Vec::new(),
                                    record,
                                };
                                self.enter(&mut frame);
                                stack.push(frame);
                            }
                        }
                    }
                }
            } else {
                let Some(mut frame) = stack.pop() else { break };
                // Every iteration counts, so an empty body stops at the cap too.
                self.steps += 1;
                if self.steps > MAX_STEPS {
                    self.errors.at(
                        frame.lp.map_or_else(proc_macro2::Span::call_site, |(f, _, _)| f.var.span()),
                        format!("the graph unrolls to more than {MAX_NODES} nodes or {MAX_STEPS} statements; use fewer loop iterations or helper calls"),
                    );
                    self.stopped = true;
                    break;
                }
                if let Some((f, i, end)) = frame.lp {
                    // A body's bindings end with its iteration (the graph's body's stay).
                    while let Some(u) = frame.undo.pop() {
                        self.restore(u);
                    }
                    let failed = self
                        .iterations
                        .pop()
                        .is_some_and(|it| it.errors_before < self.errors.count() || it.poisoned_before < self.poisoned);
                    self.errors.prefix = self.iterations.last().map(|it| it.prefix.clone()).unwrap_or_default();
                    // After an iteration with errors (or using a binding that failed) the loop
                    // stops: the next ones would repeat them.
                    let record = frame.record;
                    if i + 1 < end && !failed {
                        let mut next =
                            Frame { stmts: &f.body, next: 0, lp: Some((f, i + 1, end)), undo: Vec::new(), record };
                        self.enter(&mut next);
                        stack.push(next);
                    } else if let Some(lp) = self.graph.loops.get_mut(record) {
                        lp.end = self.graph.nodes.len();
                    }
                }
            }
        }
        if self.stopped {
            // The iterations the cap cut short end here.
            self.iterations.truncate(depth);
            self.errors.prefix = self.iterations.last().map(|it| it.prefix.clone()).unwrap_or_default();
        }
        self.label = None;
    }

    /// Starts an iteration: the loop variable's value, the messages' prefix.
    fn enter(&mut self, frame: &mut Frame<'_>) {
        let Some((f, i, _)) = frame.lp else { return };
        if let Some(lp) = self.graph.loops.get_mut(frame.record) {
            lp.starts.push(self.graph.nodes.len());
        }
        let var = f.var.to_string();
        frame.undo.push(self.snapshot(&var));
        // The loop variable shadows a binding of the same name.
        self.names.remove(&var);
        self.mutable.remove(&var);
        self.consts.insert(var.clone(), Const::Int(i));
        let outer = self.iterations.last().map(|it| it.prefix.clone()).unwrap_or_default();
        let prefix = format!("{outer}in iteration {var} = {i} of `{}`: ", f.header);
        self.errors.prefix.clone_from(&prefix);
        self.iterations.push(Iteration {
            label: format!("{var}={i}"),
            errors_before: self.errors.count(),
            poisoned_before: self.poisoned,
            prefix,
            call: false,
        });
    }

    /// Everything `name` means now.
    fn snapshot(&self, name: &str) -> Undo {
        Undo {
            name: name.to_owned(),
            binding: self.names.get(name).copied(),
            mutable: self.mutable.get(name).cloned(),
            constant: self.consts.get(name).cloned(),
        }
    }

    fn restore(&mut self, u: Undo) {
        let Undo { name, binding, mutable, constant } = u;
        match binding {
            Some(b) => self.names.insert(name.clone(), b),
            None => self.names.remove(&name),
        };
        match mutable {
            Some(m) => self.mutable.insert(name.clone(), m),
            None => self.mutable.remove(&name),
        };
        match constant {
            Some(c) => self.consts.insert(name, c),
            None => self.consts.remove(&name),
        };
    }

    /// A loop's bounds: integer constants.
    fn bounds(&mut self, f: &ForStmt) -> Option<(i128, i128)> {
        let mut bound = |e: &Expr| match consts::int(&self.consts, e) {
            Ok(n) => Some(n),
            Err(NotConst::Error(span, m)) => {
                self.errors.at(span, m);
                None
            }
            Err(NotConst::Value) => {
                let generic = matches!(e, Expr::Path(p) if p.path.get_ident().is_some_and(|i| self.dims.contains(i)));
                let what = if generic {
                    format!(
                        "`{}` is a generic dim, whose size is known only when the graph is instantiated",
                        quote::quote!(#e)
                    )
                } else if let Expr::Path(p) = e {
                    let name = quote::quote!(#p).to_string();
                    format!("`{name}` is not a constant{}", consts::outside_hint(&name, "usize"))
                } else {
                    format!("`{}` is not a constant", quote::quote!(#e))
                };
                self.errors.at(
                    e.span(),
                    format!("a loop bound must be known when the macro expands: an integer literal, a `const` declared in this macro, or an expression of them; {what}"),
                );
                None
            }
        };
        let (start, end) = (bound(&f.start), bound(&f.end));
        Some((start?, end?))
    }

    /// The label of nodes bound to `name` now (inside a loop or a helper only): the helper calls
    /// being lowered, outermost first, then the name and the loop iterations,
    /// `block#2/h@i=3` (documented in the facade crate's `graph!` syntax).
    pub(super) fn label_for(&self, name: &str) -> Option<String> {
        if self.iterations.is_empty() {
            return None;
        }
        let mut label = String::new();
        for call in self.iterations.iter().filter(|it| it.call) {
            label.push_str(&call.label);
            label.push('/');
        }
        label.push_str(name);
        let its: Vec<&str> = self.iterations.iter().filter(|it| !it.call).map(|it| it.label.as_str()).collect();
        if !its.is_empty() {
            label.push('@');
            label.push_str(&its.join(","));
        }
        Some(label)
    }

    fn let_stmt(&mut self, stmt: &LetStmt, undo: &mut Vec<Undo>) {
        self.label = self.label_for(&stmt.name.to_string());
        let value = match (&stmt.expr, &stmt.annotation) {
            (Expr::Call(call), Some(ann)) if is_special(call) => self.special(call, ann, &stmt.name),
            (Expr::Call(call), None) if is_special(call) => {
                self.errors.at(
                    stmt.name.span(),
                    format!("`{}` needs its output shape: write `let {}: [d0, …] = …`", stmt.name, stmt.name),
                );
                None
            }
            (expr, ann) => {
                let v = self.value(expr);
                if let (Some(v), Some(ann)) = (v, ann) {
                    let declared = self.shape(ann);
                    let message = |actual: &Shape| {
                        format!("`{}` is declared {declared} but its value has shape {actual}", stmt.name)
                    };
                    self.declared(v, &declared, &Site::span_only(ann.span), message);
                }
                v
            }
        };
        self.label = None;
        let key = stmt.name.to_string();
        undo.push(self.snapshot(&key));
        self.consts.remove(&key);
        self.names.insert(key.clone(), value);
        self.mutable.remove(&key);
        if stmt.mutable {
            let shape = match (&stmt.annotation, value) {
                (Some(ann), _) => Some(self.shape(ann)),
                (None, Some(v)) => Some(self.graph.shape_of(v).clone()),
                (None, None) => None,
            };
            if let Some(shape) = shape {
                self.mutable.insert(key, shape);
            }
        }
    }

    /// `let (a, b, …) = split(x, axis, sizes);`: one `slice` node per part, bound in order.
    fn let_tuple(&mut self, stmt: &LetTupleStmt, undo: &mut Vec<Undo>) {
        let labels: Vec<Option<String>> = stmt.names.iter().map(|n| self.label_for(&n.to_string())).collect();
        let values = match &stmt.expr {
            Expr::Call(call) if matches!(&*call.func, Expr::Path(p) if p.path.is_ident("split")) => {
                self.split(call, &labels)
            }
            other => {
                self.errors.at_site(
                    &Site::whole(other),
                    "a tuple binding `let (a, b, …) = …` takes the parts of `split(x, axis, [sizes…])`",
                );
                None
            }
        };
        for (k, name) in stmt.names.iter().enumerate() {
            let value = values.as_ref().and_then(|v| v.get(k).copied());
            let key = name.to_string();
            undo.push(self.snapshot(&key));
            self.consts.remove(&key);
            self.names.insert(key.clone(), value);
            self.mutable.remove(&key);
            if let (true, Some(v)) = (stmt.mutable, value) {
                let shape = self.graph.shape_of(v).clone();
                self.mutable.insert(key, shape);
            }
        }
    }

    /// `h = expr;`: a new value for the `let mut` binding `h`, of the same shape.
    fn assign(&mut self, stmt: &AssignStmt) {
        let key = stmt.name.to_string();
        let known = self.names.get(&key).copied();
        let Some(binding) = known else {
            let what = if self.consts.contains_key(&key) {
                "a constant or loop variable"
            } else if self.arrays.contains_key(&key) {
                "a parameter array (an input)"
            } else {
                "not declared"
            };
            self.errors.at(
                stmt.name.span(),
                format!("cannot assign to `{key}`: it is {what}; declare it first with `let mut {key} = …;`"),
            );
            return;
        };
        let Some(declared) = self.mutable.get(&key).cloned() else {
            if binding.is_none() {
                self.poisoned += 1;
            }
            if binding.is_some() {
                let what = if self.is_binding(&key) { "not mutable" } else { "an input" };
                self.errors.at(
                    stmt.name.span(),
                    format!(
                        "cannot assign twice to `{key}`: it is {what}; declare it `let mut {key} = …;` to reassign it"
                    ),
                );
            }
            return;
        };
        self.label = self.label_for(&stmt.name.to_string());
        let value = self.value(&stmt.expr);
        self.label = None;
        let Some(v) = value else {
            self.names.insert(key, None);
            return;
        };
        let actual = self.graph.shape_of(v).clone();
        let site = Site::whole(&stmt.expr);
        match infer::compare(&declared, &actual) {
            Compared::Same => {}
            Compared::Differ => {
                self.errors.at_site(
                    &site,
                    format!(
                        "`{key}` is reassigned a value of shape {actual}, but its first value has shape {declared}"
                    ),
                );
                return;
            }
            Compared::Compiler => self.graph.checks.push(Check { declared, actual, site }),
        }
        self.names.insert(key, Some(v));
    }

    /// Whether `key` names a `let` binding (not an input).
    fn is_binding(&self, key: &str) -> bool {
        self.graph.input_decls.iter().all(|(n, _, _)| n != key)
    }
}
