//! Expressions: names, constants, operators, calls, and the built-in nodes they make.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, UnOp};

use super::consts::{self, NotConst};
use super::{is_special, Lowering};
use crate::errors::Site;
use crate::infer;
use crate::ir::{ExtraArg, NodeKind};
use exactgrad_spec::{ops::by_name as spec_by_name, OpSpec};

/// An operand: a graph value or a constant expression.
pub(super) enum Operand {
    Value(usize),
    Const(Expr),
}

/// The built-in op called `name` (an op of `exactgrad_spec::OPS`, lowered ones included).
pub(super) fn by_name(name: &str) -> &'static OpSpec {
    match spec_by_name(name) {
        Some(op) => op,
        None => unreachable!("`{name}` is an op of exactgrad_spec::OPS"),
    }
}

/// `-c`, for `x - c` as `x + (-c)`.
fn negated(c: Expr) -> Expr {
    let paren = Expr::Paren(syn::ExprParen { attrs: Vec::new(), paren_token: Default::default(), expr: Box::new(c) });
    Expr::Unary(syn::ExprUnary { attrs: Vec::new(), op: UnOp::Neg(Default::default()), expr: Box::new(paren) })
}

/// Why `c - x` or `c / x` (a constant on the left) is refused: the rewrites that look equal
/// (`(-x) + c`, `c * (1 / x)`) round or treat NaNs otherwise, so the macro does not choose one.
fn constant_operand(name: &str) -> String {
    let (op, what) = if name == "sub" {
        ("-", "write `-x + c` (a negation, then a sum: a NaN `x` comes out with its sign flipped, unlike `c - x`)")
    } else {
        ("/", "divide two graph values with `x / y`")
    };
    format!(
        "`c {op} x` with a constant on the left is not an op (constants go with `x * c`, `x + c`, `c + x`, `x - c`, `x / c`); {what}"
    )
}

impl Lowering<'_> {
    /// An expression that must be a graph value.
    pub(super) fn value(&mut self, expr: &Expr) -> Option<usize> {
        match self.operand(expr)? {
            Operand::Value(v) => Some(v),
            Operand::Const(c) => {
                self.errors.at(c.span(), "a constant is not a graph value; constants scale values, as in `x * 0.5`");
                None
            }
        }
    }

    pub(super) fn operand(&mut self, expr: &Expr) -> Option<Operand> {
        match expr {
            Expr::Paren(p) => self.operand(&p.expr),
            Expr::Group(g) => self.operand(&g.expr),
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(_) | syn::Lit::Int(_), .. }) => {
                Some(Operand::Const(expr.clone()))
            }
            Expr::Cast(_) => Some(Operand::Const(expr.clone())),
            Expr::MethodCall(m)
                if m.args.is_empty()
                    && consts::METHODS.contains(&m.method.to_string().as_str())
                    && !matches!(consts::float(&self.consts, &m.receiver), Err(NotConst::Value)) =>
            {
                Some(Operand::Const(expr.clone()))
            }
            Expr::Index(ix) => self.element(ix).map(Operand::Value),
            Expr::Path(p) => {
                let Some(ident) = p.path.get_ident() else {
                    self.errors.at(p.span(), "expected the name of an input or of a `let` binding");
                    return None;
                };
                if self.consts.contains_key(&ident.to_string()) {
                    return Some(Operand::Const(expr.clone()));
                }
                if let Some(&(_, n)) = self.arrays.get(&ident.to_string()) {
                    self.errors.at(
                        ident.span(),
                        format!("`{ident}` is a parameter array of {n} inputs; use one element, `{ident}[0]` or `{ident}[i]` with a loop variable `i`"),
                    );
                    return None;
                }
                match self.names.get(&ident.to_string()) {
                    Some(&Some(v)) => Some(Operand::Value(v)),
                    Some(None) => {
                        self.poisoned += 1;
                        None
                    }
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
                        let name = ident.to_string();
                        let hint = if consts::const_like(&name) {
                            consts::outside_hint(&name, "f64")
                        } else if self.in_helper() {
                            "; a helper sees only its parameters, the macro's `const`s and the graph's data: pass it as an argument".to_owned()
                        } else {
                            String::new()
                        };
                        self.errors.at(
                            ident.span(),
                            format!(
                                "cannot find `{ident}` in this graph: it is neither an input nor a `let` binding above{hint}"
                            ),
                        );
                        None
                    }
                }
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match self.operand(&u.expr)? {
                Operand::Const(_) => Some(Operand::Const(expr.clone())),
                Operand::Value(v) => self.builtin("neg", &[v], &Site::of(u.op.span(), expr)).map(Operand::Value),
            },
            Expr::Binary(_) if !matches!(consts::float(&self.consts, expr), Err(NotConst::Value)) => {
                Some(Operand::Const(expr.clone()))
            }
            Expr::Binary(b) => {
                let name = match b.op {
                    BinOp::Add(_) => "add",
                    BinOp::Sub(_) => "sub",
                    BinOp::Mul(_) => "mul",
                    BinOp::Div(_) => "div",
                    _ => {
                        self.errors.at(
                            b.op.span(),
                            "unsupported operator: graph values support `+`, `-`, `*`, `/` and unary `-`",
                        );
                        return None;
                    }
                };
                let (l, r) = (self.operand(&b.left), self.operand(&b.right));
                match (l?, r?) {
                    (Operand::Value(l), Operand::Value(r)) => {
                        let op = if name == "add" && self.is_row_broadcast(l, r) { "add_row" } else { name };
                        self.builtin(op, &[l, r], &Site::of(b.op.span(), expr)).map(Operand::Value)
                    }
                    (Operand::Value(v), Operand::Const(c)) | (Operand::Const(c), Operand::Value(v))
                        if name == "mul" =>
                    {
                        let c = self.constant(&c)?;
                        self.builtin_with(by_name("scale"), ExtraArg::Factor(c), &[v], &Site::of(b.op.span(), expr))
                            .map(Operand::Value)
                    }
                    // `x + c`, `c + x`: one sum per element (IEEE addition commutes); `x - c` is
                    // `x + (-c)`, which IEEE subtraction is; `x / c` one division per element.
                    (Operand::Value(v), Operand::Const(c)) if name != "mul" => {
                        let c = self.constant(&c)?;
                        let (op, c) = match name {
                            "add" => ("offset", c),
                            "sub" => ("offset", negated(c)),
                            _ => ("div_const", c),
                        };
                        self.builtin_with(by_name(op), ExtraArg::Factor(c), &[v], &Site::of(b.op.span(), expr))
                            .map(Operand::Value)
                    }
                    (Operand::Const(c), Operand::Value(v)) if name == "add" => {
                        let c = self.constant(&c)?;
                        self.builtin_with(by_name("offset"), ExtraArg::Factor(c), &[v], &Site::of(b.op.span(), expr))
                            .map(Operand::Value)
                    }
                    (Operand::Const(_), Operand::Const(_)) => Some(Operand::Const(expr.clone())),
                    _ => {
                        self.errors.at_site(&Site::of(b.op.span(), expr), constant_operand(name));
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
                if let Some(h) = self.helper(&ident.to_string()) {
                    let args: Vec<&Expr> = call.args.iter().collect();
                    return self.inline(h, &args, &Site::of(ident.span(), expr), expr).map(Operand::Value);
                }
                if is_special(call) {
                    self.errors.at(
                        ident.span(),
                        format!("`{ident}` needs its output shape: bind it with `let y: [d0, …] = {ident}(…);`"),
                    );
                    return None;
                }
                self.call(ident, call.args.iter().collect(), &Site::of(ident.span(), expr)).map(Operand::Value)
            }
            Expr::MethodCall(m) => {
                let mut args = vec![&*m.receiver];
                args.extend(m.args.iter());
                if let Some(h) = self.helper(&m.method.to_string()) {
                    return self.inline(h, &args, &Site::of(m.method.span(), expr), expr).map(Operand::Value);
                }
                self.call(&m.method, args, &Site::of(m.method.span(), expr)).map(Operand::Value)
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

    /// A float constant, with its names replaced (an error if it is none).
    pub(super) fn constant(&mut self, c: &Expr) -> Option<Expr> {
        match consts::float(&self.consts, c) {
            Ok((_, x)) => Some(x),
            Err(NotConst::Error(span, m)) => {
                self.errors.at(span, m);
                None
            }
            Err(NotConst::Value) => {
                self.errors.at(
                    c.span(),
                    "expected a constant: literals, `const`s and loop variables with `+ - * /`, `as f64`, `.sqrt()`",
                );
                None
            }
        }
    }

    /// An integer constant (for `what`, e.g. "slice's start"): a literal, a `const`, a loop
    /// variable, or arithmetic on them.
    pub(super) fn int_constant(&mut self, e: &Expr, what: &str) -> Option<usize> {
        match consts::int(&self.consts, e) {
            Ok(n) => match usize::try_from(n) {
                Ok(n) => Some(n),
                Err(_) => {
                    self.errors.at_site(&Site::whole(e), format!("{what} is {n}, which is not a size"));
                    None
                }
            },
            Err(NotConst::Error(span, m)) => {
                self.errors.at(span, m);
                None
            }
            Err(NotConst::Value) => {
                self.errors.at_site(
                    &Site::whole(e),
                    format!(
                        "{what} is an integer constant: a literal, a `const`, a loop variable, or arithmetic on them"
                    ),
                );
                None
            }
        }
    }

    /// `w[i]`: an element of a parameter array.
    fn element(&mut self, ix: &syn::ExprIndex) -> Option<usize> {
        let name = match &*ix.expr {
            Expr::Path(p) => p.path.get_ident(),
            _ => None,
        };
        let Some((name, &(first, n))) = name.and_then(|i| self.arrays.get(&i.to_string()).map(|a| (i, a))) else {
            self.errors.at(ix.expr.span(), "only a parameter array (an input declared `w: [[d0, …]; n]`) is indexed");
            return None;
        };
        let k = self.int_constant(&ix.index, &format!("the index into `{name}`"))?;
        if k >= n {
            self.errors.at_site(
                &Site::new(ix.index.span(), ix),
                format!("index {k} is out of range for the parameter array `{name}` of {n} inputs (`{name}[0]` to `{name}[{}]`)", n.saturating_sub(1)),
            );
            return None;
        }
        Some(first + k)
    }

    fn is_row_broadcast(&self, l: usize, r: usize) -> bool {
        let (ls, rs) = (self.graph.shape_of(l), self.graph.shape_of(r));
        ls.0.len() == 2 && rs.0.len() == 1
    }

    /// The index in `graph.data_tensors` of the data tensor called `ident`.
    pub(super) fn data_tensor_index(&self, ident: &Ident) -> Option<usize> {
        self.graph.data_tensors.iter().position(|(n, _)| n == ident)
    }

    /// The data tensor `expr` names: a bare name (possibly parenthesised) that no input or
    /// binding shadows.
    pub(super) fn data_tensor_ref(&self, expr: &Expr) -> Option<usize> {
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
        let kind = NodeKind::Builtin(by_name("data_tensor"), ExtraArg::Data(name.clone()));
        let v = self.push(kind, Vec::new(), shape, &Site::span_only(span));
        self.leaves.insert(name.to_string(), v);
        v
    }

    /// `x.matmul(w)` with `x` data tensor `k`: `w` is the only parent.
    pub(super) fn matmul_data(&mut self, k: usize, w: usize, site: &Site) -> Option<usize> {
        let name = self.graph.data_tensors[k].0.clone();
        self.builtin_with(by_name("matmul_data"), ExtraArg::Data(name), &[w], site)
    }

    pub(super) fn builtin(&mut self, name: &str, args: &[usize], site: &Site) -> Option<usize> {
        self.builtin_with(by_name(name), ExtraArg::None, args, site)
    }

    /// A built-in node: its shape by the op's rule (an error at `site` if the rule is broken).
    pub(super) fn builtin_with(
        &mut self,
        op: &'static OpSpec,
        extra: ExtraArg,
        args: &[usize],
        site: &Site,
    ) -> Option<usize> {
        let shapes: Vec<_> = args.iter().map(|&a| self.graph.shape_of(a).clone()).collect();
        let operands: Vec<_> = shapes.iter().collect();
        let data = match &extra {
            ExtraArg::Data(name) => self.graph.data_shape(name).cloned(),
            _ => None,
        };
        match infer::output(op, &extra, &operands, None, data.as_ref()) {
            Ok(out) => Some(self.push(NodeKind::Builtin(op, extra), args.to_vec(), out, site)),
            Err(message) => {
                self.errors.at_site(site, message);
                None
            }
        }
    }
}
