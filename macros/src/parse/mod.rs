//! Syntax → AST of the DSL (`syn` parsing; expressions are ordinary `syn::Expr`s).

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{bracketed, parenthesized, Attribute, Expr, Ident, Token, Type, Visibility};

/// One dim of a declared shape.
#[derive(Clone)]
pub(crate) enum DimDecl {
    Lit(u64, Span),
    Sym(Ident),
    /// An integer constant expression of literals and `const`s, `T * B` (evaluated by lowering).
    Expr(Box<Expr>),
}

/// A declared shape `[d0, d1, …]`.
#[derive(Clone)]
pub(crate) struct ShapeDecl {
    pub(crate) dims: Vec<DimDecl>,
    pub(crate) span: Span,
}

pub(crate) struct InputDecl {
    pub(crate) name: Ident,
    pub(crate) shape: ShapeDecl,
    /// For a parameter array `w: [[64, 64]; 4]`, its length (a constant expression).
    pub(crate) count: Option<Expr>,
}

/// The type of a data parameter: a data tensor of the graph's scalar type (`x: [B, 784]`), or any
/// Rust type (`labels: Vec<usize>`).
pub(crate) enum DataType {
    Tensor(ShapeDecl),
    Other(Type),
}

pub(crate) struct DataDecl {
    pub(crate) name: Ident,
    pub(crate) ty: DataType,
}

impl DataDecl {
    /// The declared shape, for a data tensor.
    pub(crate) fn tensor_shape(&self) -> Option<&ShapeDecl> {
        match &self.ty {
            DataType::Tensor(s) => Some(s),
            DataType::Other(_) => None,
        }
    }
}

pub(crate) struct LetStmt {
    pub(crate) name: Ident,
    /// `let mut`: the binding may be reassigned (`h = …;`) with a value of the same shape.
    pub(crate) mutable: bool,
    pub(crate) annotation: Option<ShapeDecl>,
    pub(crate) expr: Expr,
}

/// `let (a, b, …) = split(x, axis, sizes);`: one binding per part.
pub(crate) struct LetTupleStmt {
    pub(crate) names: Vec<Ident>,
    pub(crate) mutable: bool,
    pub(crate) expr: Expr,
}

/// `name = expr;`: a new value for a `let mut` binding.
pub(crate) struct AssignStmt {
    pub(crate) name: Ident,
    pub(crate) expr: Expr,
}

/// `const NAME: Type = expr;`: a constant, evaluated when the macro expands.
pub(crate) struct ConstStmt {
    pub(crate) name: Ident,
    pub(crate) ty: Type,
    pub(crate) expr: Expr,
}

/// `for var in start..end { stmts }`: unrolled when the macro expands.
pub(crate) struct ForStmt {
    pub(crate) var: Ident,
    pub(crate) start: Expr,
    pub(crate) end: Expr,
    /// The header as written (`for i in 0..4`), for messages.
    pub(crate) header: String,
    pub(crate) body: Vec<Stmt>,
}

/// A statement of the body.
pub(crate) enum Stmt {
    Let(LetStmt),
    LetTuple(LetTupleStmt),
    Assign(AssignStmt),
    Const(ConstStmt),
    For(ForStmt),
}

mod body;

use body::body;

/// A parameter of a helper: a name, optionally annotated with a shape whose dims are literals,
/// constants, the graph's generic dims, or names bound at the call (`x: [n, d]`).
pub(crate) struct HelperParam {
    pub(crate) name: Ident,
    pub(crate) shape: Option<ShapeDecl>,
}

/// `fn name(params) { stmts; result }` without `->`: a helper sub-graph, inlined at each call.
pub(crate) struct HelperDef {
    pub(crate) name: Ident,
    pub(crate) params: Vec<HelperParam>,
    pub(crate) stmts: Vec<Stmt>,
    pub(crate) result: Expr,
}

/// `const …; fn helper(…) { … } fn name<dims>(inputs; data) -> outputs { stmts; result }`: the
/// graph's `fn` is the one with `->`; `const` items and helpers go before or after it.
pub(crate) struct GraphDef {
    /// The `const` items outside every `fn`, in order.
    pub(crate) consts: Vec<ConstStmt>,
    /// The helper `fn`s, in order.
    pub(crate) helpers: Vec<HelperDef>,
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) name: Ident,
    pub(crate) dims: Vec<Ident>,
    /// The run-time dims, `fn f<batch: dyn>(…)`: sizes taken from the inputs at `compile`.
    pub(crate) run_time: Vec<Ident>,
    /// The scalar type parameter, when the user names it with bounds: `fn f<T: Float, B>(…)`.
    pub(crate) scalar: Option<(Ident, Punctuated<syn::TypeParamBound, Token![+]>)>,
    pub(crate) inputs: Vec<InputDecl>,
    pub(crate) data: Vec<DataDecl>,
    pub(crate) outputs: Vec<ShapeDecl>,
    pub(crate) stmts: Vec<Stmt>,
    pub(crate) result: Expr,
}

/// Whether the bracketed tokens next are an array type `[T; N]` (a data parameter of that Rust
/// type) rather than a shape.
fn is_array_type(input: ParseStream<'_>) -> bool {
    input.fork().parse::<proc_macro2::Group>().is_ok_and(|g| {
        g.stream().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ';'))
    })
}

/// A helper's parameters, `x, w: [n, d], c`.
fn helper_params(params: ParseStream<'_>) -> syn::Result<Vec<HelperParam>> {
    let mut out = Vec::new();
    while !params.is_empty() {
        let name: Ident = params.parse()?;
        let shape = if params.peek(Token![:]) {
            params.parse::<Token![:]>()?;
            Some(params.parse::<ShapeDecl>()?)
        } else {
            None
        };
        out.push(HelperParam { name, shape });
        if !params.is_empty() {
            params.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// The graph's `fn` after its name: generics, parameters, outputs and body.
struct GraphFn {
    dims: Vec<Ident>,
    run_time: Vec<Ident>,
    scalar: Option<(Ident, Punctuated<syn::TypeParamBound, Token![+]>)>,
    inputs: Vec<InputDecl>,
    data: Vec<DataDecl>,
    outputs: Vec<ShapeDecl>,
    stmts: Vec<Stmt>,
    result: Expr,
}

impl Parse for GraphDef {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut consts = Vec::new();
        let mut helpers = Vec::new();
        let mut graph: Option<(Vec<Attribute>, Visibility, Ident, GraphFn)> = None;
        while !input.is_empty() {
            let attrs = input.call(Attribute::parse_outer)?;
            if input.peek(Token![const]) {
                if let Some(a) = attrs.iter().find(|a| !a.path().is_ident("doc")) {
                    return Err(syn::Error::new(
                        a.span(),
                        "a `const` of `graph!` takes no attributes (only doc comments, which document nothing generated)",
                    ));
                }
                consts.push(input.parse::<ConstStmt>()?);
                continue;
            }
            let vis: Visibility = input.parse()?;
            input.parse::<Token![fn]>()?;
            let name: Ident = input.parse()?;
            // A helper: no generics, no `->`.
            let helper = input.peek(syn::token::Paren) && {
                let fork = input.fork();
                let _params;
                parenthesized!(_params in fork);
                !fork.peek(Token![->])
            };
            if helper {
                if let Some(a) = attrs.iter().find(|a| !a.path().is_ident("doc")) {
                    return Err(syn::Error::new(
                        a.span(),
                        "a helper `fn` takes no attributes (only doc comments, which document nothing generated)",
                    ));
                }
                if !matches!(vis, Visibility::Inherited) {
                    return Err(syn::Error::new(
                        vis.span(),
                        "a helper `fn` is private to the macro: remove its visibility",
                    ));
                }
                let params;
                parenthesized!(params in input);
                let params = helper_params(&params)?;
                let (stmts, result) = body(input, "the helper's")?;
                helpers.push(HelperDef { name, params, stmts, result });
                continue;
            }
            if let Some((_, _, first, _)) = &graph {
                return Err(syn::Error::new(
                    name.span(),
                    format!("one `graph!` defines one graph, and `{first}` is it (a `fn` with `->`); a helper `fn` has no `->` (its result's shape is inferred)"),
                ));
            }
            let f = graph_fn(input)?;
            graph = Some((attrs, vis, name, f));
        }
        let Some((attrs, vis, name, f)) = graph else {
            let what = if helpers.is_empty() { "" } else { " (a `fn` without `->` is a helper)" };
            return Err(input.error(format!(
                "expected the graph's `fn`, which declares its output shapes with `->`{what}, e.g. `fn model<B>(x: [B, 4], w: [4, 2]) -> [] {{ … }}`"
            )));
        };
        let GraphFn { dims, run_time, scalar, inputs, data, outputs, stmts, result } = f;
        Ok(GraphDef { consts, helpers, attrs, vis, name, dims, run_time, scalar, inputs, data, outputs, stmts, result })
    }
}

/// The graph's `fn` after its name.
fn graph_fn(input: ParseStream<'_>) -> syn::Result<GraphFn> {
    {
        let mut dims = Vec::new();
        let mut run_time = Vec::new();
        let mut scalar = None;
        if input.peek(Token![<]) {
            input.parse::<Token![<]>()?;
            while !input.peek(Token![>]) {
                let ident = input.parse::<Ident>()?;
                if input.peek(Token![:]) && input.peek2(Token![dyn]) {
                    input.parse::<Token![:]>()?;
                    input.parse::<Token![dyn]>()?;
                    run_time.push(ident);
                } else if input.peek(Token![:]) {
                    input.parse::<Token![:]>()?;
                    let mut bounds = Punctuated::new();
                    loop {
                        bounds.push_value(input.parse::<syn::TypeParamBound>()?);
                        if !input.peek(Token![+]) {
                            break;
                        }
                        bounds.push_punct(input.parse::<Token![+]>()?);
                    }
                    if scalar.is_some() {
                        return Err(syn::Error::new(
                            ident.span(),
                            "only the scalar type parameter takes bounds (`fn f<T: Float, B>`); dims are written without bounds",
                        ));
                    }
                    scalar = Some((ident, bounds));
                } else {
                    dims.push(ident);
                }
                if !input.peek(Token![>]) {
                    input.parse::<Token![,]>()?;
                }
            }
            input.parse::<Token![>]>()?;
        }
        let params;
        parenthesized!(params in input);
        let mut inputs = Vec::new();
        while !params.is_empty() && !params.peek(Token![;]) {
            let name: Ident = params.parse()?;
            params.parse::<Token![:]>()?;
            let (shape, count) = if params.peek(syn::token::Bracket) && is_array_type(&params) {
                let content;
                bracketed!(content in params);
                let shape: ShapeDecl = content.parse()?;
                content.parse::<Token![;]>()?;
                let count: Expr = content.parse()?;
                (shape, Some(count))
            } else {
                (params.parse::<ShapeDecl>()?, None)
            };
            inputs.push(InputDecl { name, shape, count });
            if params.peek(Token![,]) {
                params.parse::<Token![,]>()?;
            } else if !params.is_empty() && !params.peek(Token![;]) {
                return Err(params.error("expected `,` or `;` after an input"));
            }
        }
        let mut data = Vec::new();
        if params.peek(Token![;]) {
            params.parse::<Token![;]>()?;
            while !params.is_empty() {
                let name: Ident = params.parse()?;
                params.parse::<Token![:]>()?;
                let ty = if params.peek(syn::token::Bracket) && !is_array_type(&params) {
                    DataType::Tensor(params.parse::<ShapeDecl>()?)
                } else {
                    DataType::Other(params.parse::<Type>()?)
                };
                data.push(DataDecl { name, ty });
                if !params.is_empty() {
                    params.parse::<Token![,]>()?;
                }
            }
        }
        input.parse::<Token![->]>()?;
        let outputs = if input.peek(syn::token::Paren) {
            let content;
            parenthesized!(content in input);
            Punctuated::<ShapeDecl, Token![,]>::parse_terminated(&content)?.into_iter().collect()
        } else {
            vec![input.parse::<ShapeDecl>()?]
        };
        let (stmts, result) = body(input, "the graph's")?;
        Ok(GraphFn { dims, run_time, scalar, inputs, data, outputs, stmts, result })
    }
}

#[cfg(test)]
mod tests;
