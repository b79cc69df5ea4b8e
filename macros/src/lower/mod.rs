//! Lowering: names, scopes and desugaring (`x * 0.5` → `scale`, `matrix + row` → `add_row`,
//! `x.matmul(w)` with a data tensor `x` → `matmul_data`, data tensors used as values → one
//! `data_tensor` leaf) into the graph IR. Every node's shape comes from [`crate::infer`] as it is
//! made; every error is collected, and a binding whose value failed reports nothing more.

mod calls;
pub(crate) mod consts;
mod declared;
mod expr;
mod helpers;
mod parts;
mod stmts;
mod windows;

use std::collections::HashMap;

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, ExprCall, Ident};

use crate::errors::{Errors, Site};
use crate::infer::{self, Compared};
use crate::ir::{Check, Dim, Graph, Node, NodeKind, Shape};
use crate::parse::{DimDecl, GraphDef, HelperDef, ShapeDecl};
use consts::{Const, NotConst};

pub(crate) struct Lowering<'d> {
    dims: &'d [Ident],
    /// The run-time dims (`batch: dyn`), in declaration order.
    run_time: &'d [Ident],
    /// Data parameters that are not tensors (labels, ids, other values).
    data: Vec<&'d Ident>,
    /// The leaf node of each data tensor used outside the left of a `matmul`, made at first use.
    leaves: HashMap<String, usize>,
    graph: Graph,
    /// Names in scope; `None` for a binding whose value failed (its uses report nothing more).
    names: HashMap<String, Option<usize>>,
    /// The `let mut` bindings in scope, with the shape every new value must have.
    mutable: HashMap<String, Shape>,
    /// Constants in scope: `const` items and loop variables.
    consts: HashMap<String, Const>,
    /// Parameter arrays: the value of the first element and the length.
    arrays: HashMap<String, (usize, usize)>,
    /// The loop iterations and helper calls being lowered, innermost last.
    iterations: Vec<stmts::Iteration>,
    /// The helpers by name.
    helpers: HashMap<String, &'d HelperDef>,
    /// The calls of each helper so far (`block#2` is the second).
    calls: HashMap<String, usize>,
    /// Every call lowered, in the order it ended: the helper and the nodes its body made.
    call_spans: Vec<(String, usize, usize)>,
    /// The constants outside every `fn` (what a helper sees besides its parameters).
    globals: HashMap<String, Const>,
    /// The dims a helper's parameter annotations bound at the call (`x: [n, d]`).
    dim_vars: HashMap<String, Dim>,
    /// Statements run so far while unrolling (loops and helper calls), and whether the cap
    /// stopped the lowering.
    steps: usize,
    stopped: bool,
    /// Uses of bindings whose value failed (reported once, where it failed): a loop iteration
    /// with one stops its loop, as one with an error does.
    poisoned: usize,
    /// The name nodes made now are described by (`h@i=3`), inside a loop.
    label: Option<String>,
    errors: Errors,
}

/// The length of each parameter array declared in `def` (`None` for a plain input), by the
/// `const` items outside the `fn`; a length that is no valid constant is 0 (and reported by
/// [`lower`]).
pub(crate) fn array_lengths(def: &GraphDef) -> Vec<Option<usize>> {
    let mut consts = HashMap::new();
    let mut errors = Errors::default();
    for c in &def.consts {
        stmts::const_item(&mut consts, &mut errors, c);
    }
    def.inputs.iter().map(|i| i.count.as_ref().map(|c| array_length(&consts, &mut errors, c).unwrap_or(0))).collect()
}

/// The size of each integer `const` outside every `fn` that is one (what a `const` dim of a
/// declared shape means, `x: [N, 4]`); the generated items' declared shapes use it.
pub(crate) fn const_sizes(def: &GraphDef) -> HashMap<String, u64> {
    let mut consts = HashMap::new();
    let mut errors = Errors::default();
    for c in &def.consts {
        stmts::const_item(&mut consts, &mut errors, c);
    }
    consts
        .into_iter()
        .filter(|(k, _)| !def.dims.iter().any(|d| d == k))
        .filter_map(|(k, c)| match c {
            Const::Int(n) => u64::try_from(n).ok().map(|n| (k, n)),
            Const::Float(_) => None,
        })
        .collect()
}

/// The size a constant dim expression (`[T * B, H]`) stands for, by the integer `const`s of
/// `sizes` (`const_sizes`); `None` if it is none (its error is reported by [`lower`]).
pub(crate) fn const_dim(sizes: &HashMap<String, u64>, e: &Expr) -> Option<u64> {
    let consts = sizes.iter().map(|(k, &n)| (k.clone(), Const::Int(i128::from(n)))).collect();
    dim_expr(&consts, e).ok()
}

/// A constant dim expression's size, or where and why it is none.
fn dim_expr(consts: &HashMap<String, Const>, e: &Expr) -> Result<u64, (proc_macro2::Span, String)> {
    match consts::int(consts, e) {
        Ok(n) => u64::try_from(n)
            .map_err(|_| (e.span(), format!("the dim `{}` is {n}, which is not a size", e.to_token_stream()))),
        Err(NotConst::Error(span, m)) => Err((span, m)),
        Err(NotConst::Value) => Err((
            e.span(),
            format!(
                "the dim `{}` is not an integer constant expression: a computed dim uses integer literals and integer `const`s of this macro (`[T * B, H]`), not generic or run-time dims",
                e.to_token_stream()
            ),
        )),
    }
}

fn array_length(consts: &HashMap<String, Const>, errors: &mut Errors, count: &Expr) -> Option<usize> {
    match consts::int(consts, count) {
        Ok(n) => match usize::try_from(n) {
            Ok(n) if n <= stmts::MAX_NODES => Some(n),
            Ok(n) => {
                errors
                    .at(count.span(), format!("a parameter array holds at most {} inputs, not {n}", stmts::MAX_NODES));
                None
            }
            Err(_) => {
                errors.at(count.span(), format!("a parameter array's length is a size, not {n}"));
                None
            }
        },
        Err(NotConst::Error(span, m)) => {
            errors.at(span, m);
            None
        }
        Err(NotConst::Value) => {
            errors.at(
                count.span(),
                "a parameter array's length is an integer literal or a `const` declared outside the `fn` in this macro, e.g. `w: [[64, 64]; 4]`",
            );
            None
        }
    }
}

/// Lowers the definition into the IR, or returns every error found.
pub(crate) fn lower(def: &GraphDef) -> Result<Graph, syn::Error> {
    let mut l = Lowering {
        dims: &def.dims,
        run_time: &def.run_time,
        data: def.data.iter().filter(|d| d.tensor_shape().is_none()).map(|d| &d.name).collect(),
        leaves: HashMap::new(),
        graph: Graph {
            inputs: Vec::new(),
            data_tensors: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            checks: Vec::new(),
            input_decls: Vec::new(),
            loops: Vec::new(),
        },
        names: HashMap::new(),
        mutable: HashMap::new(),
        consts: HashMap::new(),
        arrays: HashMap::new(),
        iterations: Vec::new(),
        helpers: HashMap::new(),
        calls: HashMap::new(),
        call_spans: Vec::new(),
        globals: HashMap::new(),
        dim_vars: HashMap::new(),
        steps: 0,
        stopped: false,
        poisoned: 0,
        label: None,
        errors: Errors::default(),
    };
    for c in &def.consts {
        stmts::const_item(&mut l.consts, &mut l.errors, c);
    }
    l.globals = l.consts.clone();
    l.helper_declarations(&def.helpers);
    l.declarations(def);
    l.statements(&def.stmts);
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
            let message = |actual: &Shape| {
                format!("the graph returns shape {actual} here, but its signature declares {declared}")
            };
            l.declared(v, &declared, &Site::whole(expr), message);
            l.graph.outputs.push(v);
        }
    }
    let mut graph = l.graph;
    graph.loops.extend(repeated_calls(&l.call_spans));
    // Outer runs first (ascending start, the longer first), as `plan::rolled` takes them.
    graph.loops.sort_by_key(|lp| (lp.starts.first().copied().unwrap_or(0), usize::MAX - lp.end));
    l.errors.into_result().map(|()| graph)
}

/// Runs of two or more calls of one helper, each starting where the last one's nodes ended
/// (`h = block(h, w0); h = block(h, w1);`), as loops whose iterations are the calls: written as a
/// loop like one when their structure is one (`plan::rolled`).
fn repeated_calls(spans: &[(String, usize, usize)]) -> Vec<crate::ir::Loop> {
    let mut by_helper: std::collections::BTreeMap<&str, Vec<(usize, usize)>> = std::collections::BTreeMap::new();
    for (name, start, end) in spans {
        by_helper.entry(name).or_default().push((*start, *end));
    }
    let mut out = Vec::new();
    for calls in by_helper.values_mut() {
        calls.sort_unstable();
        let mut i = 0;
        while i < calls.len() {
            let (start, mut end) = calls[i];
            let mut starts = vec![start];
            let mut j = i + 1;
            while let Some(&(s, e)) = calls.get(j) {
                if s != end || e == s {
                    break;
                }
                starts.push(s);
                end = e;
                j += 1;
            }
            if starts.len() >= 2 && end > start {
                out.push(crate::ir::Loop { starts, end });
            }
            i = j;
        }
    }
    out
}

/// A call that needs a declared output shape: `opaque`, `reshape`, `gather_rows` (`embedding`), or
/// a user op (a CamelCase name).
fn is_special(call: &ExprCall) -> bool {
    match &*call.func {
        Expr::Path(p) => {
            let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            matches!(last.as_str(), "opaque" | "reshape" | "gather_rows" | "embedding")
                || last.starts_with(|c: char| c.is_ascii_uppercase())
        }
        _ => false,
    }
}

impl Lowering<'_> {
    /// Dims, inputs and data parameters: names declared once, dims used, no clash with the
    /// generated handles.
    fn declarations(&mut self, def: &GraphDef) {
        let all_dims: Vec<&Ident> = def.dims.iter().chain(&def.run_time).collect();
        for (i, d) in all_dims.iter().enumerate() {
            if all_dims[..i].contains(d) {
                self.errors.at(d.span(), format!("the dim `{d}` is declared twice"));
            }
        }
        if def.run_time.len() > exactgrad_spec::MAX_RUN_TIME_DIMS {
            let d = &def.run_time[exactgrad_spec::MAX_RUN_TIME_DIMS];
            let max = exactgrad_spec::MAX_RUN_TIME_DIMS;
            self.errors.at(d.span(), format!("a graph declares at most {max} run-time dims"));
        }
        for input in &def.inputs {
            let shape = self.shape(&input.shape);
            let key = input.name.to_string();
            let reserved = key == "output"
                || (key.starts_with("output") && key[6..].parse::<usize>().is_ok() && def.outputs.len() > 1);
            if reserved {
                self.errors.at(
                    input.name.span(),
                    format!("`{key}` names an output handle of the generated `…Handles` struct; rename the input"),
                );
            }
            if self.names.contains_key(&key) {
                self.errors.at(
                    input.name.span(),
                    format!("the input `{key}` is declared twice; give each input its own name"),
                );
                continue;
            }
            let first = self.graph.inputs.len();
            let count = match &input.count {
                Some(c) => {
                    let n = array_length(&self.consts, &mut self.errors, c).unwrap_or(0);
                    self.arrays.insert(key.clone(), (first, n));
                    Some(n)
                }
                None => None,
            };
            self.names.insert(key, count.is_none().then_some(first));
            for _ in 0..count.unwrap_or(1) {
                self.graph.inputs.push((input.name.clone(), shape.clone()));
            }
            self.graph.input_decls.push((input.name.clone(), count, shape));
        }
        for d in &def.data {
            if let Some(decl) = d.tensor_shape() {
                let shape = self.shape(decl);
                self.graph.data_tensors.push((d.name.clone(), shape));
            }
        }
        // A run-time dim may also be bound by the ids of a `gather_rows` (else `compile` reports
        // it unbound); a generic dim must be used by an input or a data tensor.
        for d in &def.dims {
            let used = self
                .graph
                .inputs
                .iter()
                .chain(&self.graph.data_tensors)
                .any(|(_, s)| s.0.iter().any(|x| matches!(x, Dim::Sym(i) | Dim::Dyn(i, _) if i == d)));
            if !used {
                self.errors.at(
                    d.span(),
                    format!(
                        "the dim `{d}` is not used by any input or data tensor shape; remove it or use it in an input"
                    ),
                );
            }
        }
        for (i, d) in def.data.iter().enumerate() {
            if self.names.contains_key(&d.name.to_string()) {
                self.errors.at(d.name.span(), format!("`{}` is both an input and a data parameter", d.name));
            } else if def.data[..i].iter().any(|e| e.name == d.name) {
                self.errors.at(
                    d.name.span(),
                    format!("the data parameter `{}` is declared twice; give each data parameter its own name", d.name),
                );
            }
        }
    }

    fn shape(&mut self, decl: &ShapeDecl) -> Shape {
        Shape(
            decl.dims
                .iter()
                .map(|d| match d {
                    DimDecl::Expr(e) => match dim_expr(&self.consts, e) {
                        Ok(n) => self.literal_dim(n, e.span()),
                        Err((span, message)) => {
                            self.errors.at(span, message);
                            Dim::Lit(0)
                        }
                    },
                    DimDecl::Lit(n, span) => self.literal_dim(*n, *span),
                    DimDecl::Sym(i) if self.run_time.contains(i) => {
                        Dim::Dyn(i.clone(), self.run_time.iter().position(|r| r == i).unwrap_or(0))
                    }
                    DimDecl::Sym(i) => {
                        if let Some(d) = self.dim_vars.get(&i.to_string()) {
                            return d.clone();
                        }
                        if let (false, Some(Const::Int(n))) = (self.dims.contains(i), self.consts.get(&i.to_string())) {
                            return match u64::try_from(*n) {
                                Ok(n) => Dim::Lit(n),
                                Err(_) => {
                                    self.errors.at(i.span(), format!("the dim `{i}` is {n}, which is not a size"));
                                    Dim::Lit(0)
                                }
                            };
                        }
                        if !self.dims.contains(i) {
                            self.errors.at(
                                i.span(),
                                format!(
                                    "unknown dim `{i}`: declare it as a generic dim of the graph, `fn name<{i}>(…)`, as a run-time dim whose size comes from the inputs, `fn name<{i}: dyn>(…)`, or as an integer `const` in this macro{}",
                                    consts::outside_hint(&i.to_string(), "usize")
                                ),
                            );
                        }
                        Dim::Sym(i.clone())
                    }
                })
                .collect(),
        )
    }

    /// A literal (or computed) dim `n` written at `span`: not one of the run-time stand-ins.
    fn literal_dim(&mut self, n: u64, span: proc_macro2::Span) -> Dim {
        let reserved = exactgrad_spec::RUN_TIME_BASE as u64
            ..(exactgrad_spec::RUN_TIME_BASE + exactgrad_spec::MAX_RUN_TIME_DIMS) as u64;
        if !self.run_time.is_empty() && reserved.contains(&n) {
            self.errors.at(
                span,
                format!("the size {n} stands in for run-time dims; a graph with run-time dims cannot use it as a literal dim"),
            );
        }
        Dim::Lit(n)
    }

    /// Checks value `v` against a declared shape: a known difference is an error now; generic
    /// dims become a compiler check at `site`.
    fn declared(&mut self, v: usize, declared: &Shape, site: &Site, message: impl Fn(&Shape) -> String) {
        let actual = self.graph.shape_of(v).clone();
        match infer::compare(declared, &actual) {
            Compared::Same => {}
            Compared::Differ => self.errors.at_site(site, message(&actual)),
            Compared::Compiler => {
                self.graph.checks.push(Check { declared: declared.clone(), actual, site: site.clone() });
            }
        }
    }

    fn push(&mut self, kind: NodeKind, parents: Vec<usize>, shape: Shape, site: &Site) -> usize {
        let label = self.label.clone();
        self.graph.nodes.push(Node { kind, parents, shape, site: site.clone(), label });
        self.graph.inputs.len() + self.graph.nodes.len() - 1
    }
}

#[cfg(test)]
mod tests;
