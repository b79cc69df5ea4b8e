//! Helpers: `fn block(x, w) { … }` declared in the macro and inlined at each call. A helper sees
//! its parameters, the `const` items outside every `fn` and the graph's data parameters — not the
//! caller's bindings nor the graph's inputs (pass them). A parameter is bound to what the call
//! passes: a graph value (checked against its annotation `x: [n, d]`, whose unknown dims are
//! bound at the call and usable in the body's annotations), a constant, or a whole parameter
//! array. Calls nest at most [`MAX_CALL_DEPTH`] deep, and a helper that calls itself (directly or
//! through others) is an error naming the chain, so the expansion's depth is bounded by the
//! number of helpers, never by the graph. Nodes made in a call are labelled with the call path
//! (`block#2/h`, `layer#1/attn#3/q@i=0`), and errors inside a call name it (`in call block#2
//! `block(h, w[1])`: …`) at the helper's token, with one more error at the call site.

use std::collections::HashMap;
use std::mem::take;

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Ident};

use super::consts::{self, Const, NotConst};
use super::expr::Operand;
use super::stmts::Iteration;
use super::Lowering;
use crate::errors::Site;
use crate::ir::{Dim, Shape};
use crate::parse::{DimDecl, HelperDef, HelperParam};

/// How deeply helper calls may nest.
pub(crate) const MAX_CALL_DEPTH: usize = 32;

/// What a parameter is bound to.
enum Arg {
    Value(usize),
    Const(Const),
    /// A parameter array: its first value and its length.
    Array(usize, usize),
}

/// The caller's scope, put back when the call ends.
struct Scope {
    names: HashMap<String, Option<usize>>,
    mutable: HashMap<String, Shape>,
    consts: HashMap<String, Const>,
    arrays: HashMap<String, (usize, usize)>,
    dim_vars: HashMap<String, Dim>,
    label: Option<String>,
}

/// Tokens as a reader writes them: `block(h, w[1])`, not `block (h , w [1])`.
pub(super) fn pretty(tokens: &impl quote::ToTokens) -> String {
    let mut s = tokens.to_token_stream().to_string();
    for (from, to) in [(" (", "("), ("( ", "("), (" )", ")"), (" ,", ","), (" [", "["), ("[ ", "["), (" ]", "]")] {
        s = s.replace(from, to);
    }
    for (from, to) in [(" . ", "."), (" .", "."), (" .. ", "..")] {
        s = s.replace(from, to);
    }
    s
}

/// A shape annotation as written, `[n, 4]`.
fn written(ann: &crate::parse::ShapeDecl) -> String {
    let dims: Vec<String> = ann
        .dims
        .iter()
        .map(|d| match d {
            DimDecl::Lit(n, _) => n.to_string(),
            DimDecl::Sym(i) => i.to_string(),
            DimDecl::Expr(e) => e.to_token_stream().to_string(),
        })
        .collect();
    format!("[{}]", dims.join(", "))
}

/// The names a helper may not take: the built-in ops and the calls that need a declared shape.
fn reserved(name: &str) -> bool {
    exactgrad_spec::ops::lookup(name).is_some() || matches!(name, "scale" | "opaque" | "reshape" | "gather_rows")
}

impl<'d> Lowering<'d> {
    /// Registers the helpers: unique names that are no op's, unique parameter names.
    pub(super) fn helper_declarations(&mut self, helpers: &'d [HelperDef]) {
        for h in helpers {
            let name = h.name.to_string();
            if reserved(&name) {
                self.errors.at(
                    h.name.span(),
                    format!("the helper `{name}` has the name of a built-in op; give the helper another name"),
                );
                continue;
            }
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                self.errors.at(
                    h.name.span(),
                    format!("a helper's name is snake_case (`{}`): a CamelCase call is a user op", name.to_lowercase()),
                );
                continue;
            }
            if self.helpers.contains_key(&name) {
                self.errors
                    .at(h.name.span(), format!("the helper `{name}` is declared twice; give each helper its own name"));
                continue;
            }
            for (i, p) in h.params.iter().enumerate() {
                if h.params[..i].iter().any(|q| q.name == p.name) {
                    self.errors.at(p.name.span(), format!("`{name}` declares the parameter `{}` twice", p.name));
                }
            }
            self.helpers.insert(name, h);
        }
    }

    /// Whether a helper's body is being lowered.
    pub(super) fn in_helper(&self) -> bool {
        self.iterations.iter().any(|it| it.call)
    }

    /// The helper called `name`, if there is one.
    pub(super) fn helper(&self, name: &str) -> Option<&'d HelperDef> {
        self.helpers.get(name).copied()
    }

    /// A call of `h` with `args` (written `call`, its name at `site`), inlined: its body lowered
    /// in a scope of its own, its result the call's value.
    pub(super) fn inline(&mut self, h: &'d HelperDef, args: &[&Expr], site: &Site, call: &Expr) -> Option<usize> {
        let name = h.name.to_string();
        if args.len() != h.params.len() {
            let params: Vec<String> = h.params.iter().map(|p| p.name.to_string()).collect();
            self.errors.at_site(
                site,
                format!(
                    "the helper `{name}` takes {} argument{} ({}), got {}",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    params.join(", "),
                    args.len()
                ),
            );
            return None;
        }
        let active: Vec<&str> = self
            .iterations
            .iter()
            .filter(|it| it.call)
            .map(|it| it.label.split_once('#').map_or(it.label.as_str(), |(n, _)| n))
            .collect();
        if let Some(first) = active.iter().position(|c| *c == name) {
            let mut chain: Vec<&str> = active[first..].to_vec();
            chain.push(&name);
            self.errors.at_site(
                site,
                format!(
                    "the helper `{name}` calls itself ({}): a helper is inlined at each call, so the recursion would never end; repeat with a `for` loop instead",
                    chain.join(" → ")
                ),
            );
            return None;
        }
        if active.len() >= MAX_CALL_DEPTH {
            self.errors.at_site(site, format!("helper calls nest at most {MAX_CALL_DEPTH} deep"));
            return None;
        }
        let bound: Vec<Option<Arg>> = args.iter().map(|a| self.argument(a)).collect();
        let bound: Vec<Arg> = bound.into_iter().collect::<Option<_>>()?;

        let k = {
            let n = self.calls.entry(name.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let label = format!("{name}#{k}");
        let outer = self.errors.prefix.clone();
        let prefix = format!("{outer}in call {label} `{}`: ", pretty(call));
        let errors_before = self.errors.count();
        let poisoned_before = self.poisoned;
        let first_node = self.graph.nodes.len();
        self.iterations.push(Iteration { label, errors_before, poisoned_before, prefix: prefix.clone(), call: true });
        self.errors.prefix = prefix;
        let scope = Scope {
            names: take(&mut self.names),
            mutable: take(&mut self.mutable),
            consts: core::mem::replace(&mut self.consts, self.globals.clone()),
            arrays: take(&mut self.arrays),
            dim_vars: take(&mut self.dim_vars),
            label: self.label.take(),
        };
        let mut ok = true;
        for ((param, arg), expr) in h.params.iter().zip(bound).zip(args) {
            ok &= self.bind(&name, param, arg, expr);
        }
        let body_errors = self.errors.count();
        let result = if ok {
            self.statements(&h.stmts);
            if self.stopped {
                None
            } else {
                self.label = self.label_for("result");
                self.value(&h.result)
            }
        } else {
            None
        };
        let failed_in_body = self.errors.count() > body_errors;
        self.iterations.pop();
        self.call_spans.push((name.clone(), first_node, self.graph.nodes.len()));
        self.errors.prefix = outer;
        let Scope { names, mutable, consts, arrays, dim_vars, label } = scope;
        (self.names, self.mutable, self.consts, self.arrays, self.dim_vars, self.label) =
            (names, mutable, consts, arrays, dim_vars, label);
        if failed_in_body && !self.stopped {
            self.errors.at_site(
                &Site::whole(call),
                format!(
                    "this call of `{name}` fails: the errors above in `{name}`'s body name it `in call {name}#{k}`"
                ),
            );
        }
        if self.errors.count() > errors_before {
            return None;
        }
        result
    }

    /// What an argument passes, in the caller's scope.
    fn argument(&mut self, arg: &Expr) -> Option<Arg> {
        let bare = match arg {
            Expr::Path(p) => p.path.get_ident(),
            _ => None,
        };
        if let Some(&(first, n)) = bare.and_then(|i| self.arrays.get(&i.to_string())) {
            return Some(Arg::Array(first, n));
        }
        match self.operand(arg)? {
            Operand::Value(v) => Some(Arg::Value(v)),
            Operand::Const(c) => {
                let value = match consts::int(&self.consts, &c) {
                    Ok(n) => Ok(Const::Int(n)),
                    Err(_) => consts::float(&self.consts, &c).map(|(_, x)| Const::Float(x)),
                };
                match value {
                    Ok(c) => Some(Arg::Const(c)),
                    Err(NotConst::Error(span, m)) => {
                        self.errors.at(span, m);
                        None
                    }
                    Err(NotConst::Value) => {
                        self.errors.at(c.span(), "expected a graph value or a constant as a helper's argument");
                        None
                    }
                }
            }
        }
    }

    /// Binds `param` of helper `name` to `arg` (written `expr`), checking its annotation; `false`
    /// after an error.
    fn bind(&mut self, name: &str, param: &HelperParam, arg: Arg, expr: &Expr) -> bool {
        let key = param.name.to_string();
        let site = Site::whole(expr);
        match arg {
            Arg::Value(v) => {
                if let Some(ann) = &param.shape {
                    if !self.check_annotation(name, &param.name, ann, v, &site) {
                        return false;
                    }
                }
                self.names.insert(key, Some(v));
            }
            Arg::Const(c) => {
                if let Some(ann) = &param.shape {
                    self.errors.at_site(
                        &site,
                        format!(
                            "`{name}`'s parameter `{key}` is a tensor of shape {}, but the call passes a constant",
                            written(ann)
                        ),
                    );
                    return false;
                }
                self.consts.insert(key, c);
            }
            Arg::Array(first, n) => {
                if let Some(ann) = &param.shape {
                    if n > 0 && !self.check_annotation(name, &param.name, ann, first, &site) {
                        return false;
                    }
                }
                self.arrays.insert(key, (first, n));
            }
        }
        true
    }

    /// Checks value `v` against the annotation `ann` of parameter `param`: dims not known yet
    /// (no literal, `const` or generic dim of the graph) are bound to the value's.
    fn check_annotation(
        &mut self,
        name: &str,
        param: &Ident,
        ann: &crate::parse::ShapeDecl,
        v: usize,
        site: &Site,
    ) -> bool {
        let actual = self.graph.shape_of(v).clone();
        if ann.dims.len() != actual.0.len() {
            self.errors.at_site(
                site,
                format!(
                    "`{name}`'s parameter `{param}` has rank {} but the call passes shape {actual}",
                    ann.dims.len()
                ),
            );
            return false;
        }
        for (d, a) in ann.dims.iter().zip(&actual.0) {
            if let DimDecl::Sym(i) = d {
                let key = i.to_string();
                let known = self.dims.contains(i)
                    || matches!(self.consts.get(&key), Some(Const::Int(_)))
                    || self.dim_vars.contains_key(&key);
                if !known {
                    self.dim_vars.insert(key, a.clone());
                }
            }
        }
        let declared = self.shape(ann);
        let before = self.errors.count();
        let ann = written(ann);
        let message = |actual: &Shape| {
            if ann == declared.to_string() {
                format!("`{name}`'s parameter `{param}` is declared {ann}, but the call passes shape {actual}")
            } else {
                format!(
                    "`{name}`'s parameter `{param}` is declared {ann} (here {declared}), but the call passes shape {actual}"
                )
            }
        };
        self.declared(v, &declared, site, message);
        self.errors.count() == before
    }
}

#[cfg(test)]
mod tests;
