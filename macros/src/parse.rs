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
    Assign(AssignStmt),
    Const(ConstStmt),
    For(ForStmt),
}

/// How deeply `for` loops may nest.
const MAX_NESTING: usize = 16;

/// `const …; fn name<dims>(inputs; data) -> outputs { stmts; result }`.
pub(crate) struct GraphDef {
    /// The `const` items before the `fn`.
    pub(crate) consts: Vec<ConstStmt>,
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

impl Parse for ShapeDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if !input.peek(syn::token::Bracket) {
            return Err(input.error("a shape is written `[d0, d1, …]` with integer or generic dims, e.g. `[B, 784]`"));
        }
        let content;
        let bracket = bracketed!(content in input);
        let items = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
        let mut dims = Vec::new();
        for item in items {
            dims.push(match &item {
                Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                    DimDecl::Lit(i.base10_parse::<u64>()?, i.span())
                }
                Expr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none() => {
                    DimDecl::Sym(p.path.get_ident().cloned().unwrap_or_else(|| Ident::new("_", p.span())))
                }
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a dim is an integer literal or a declared generic dim (e.g. `B`), not an expression",
                    ))
                }
            });
        }
        if dims.len() > 4 {
            return Err(syn::Error::new(bracket.span.join(), "a shape has at most 4 dims"));
        }
        Ok(ShapeDecl { dims, span: bracket.span.join() })
    }
}

/// Whether the bracketed tokens next are an array type `[T; N]` (a data parameter of that Rust
/// type) rather than a shape.
fn is_array_type(input: ParseStream<'_>) -> bool {
    input.fork().parse::<proc_macro2::Group>().is_ok_and(|g| {
        g.stream().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ';'))
    })
}

impl Parse for ConstStmt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        input.parse::<Token![const]>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty: Type = input.parse()?;
        input.parse::<Token![=]>()?;
        let expr: Expr = input.parse()?;
        input.parse::<Token![;]>()?;
        Ok(ConstStmt { name, ty, expr })
    }
}

/// Statements up to the end of `body` (a loop body) or up to its result expression (the graph's
/// body, `top`). Loops nest at most [`MAX_NESTING`] deep.
fn statements(body: ParseStream<'_>, depth: usize) -> syn::Result<Vec<Stmt>> {
    let mut stmts = Vec::new();
    loop {
        if body.peek(Token![let]) {
            body.parse::<Token![let]>()?;
            let mutable = body.parse::<Option<Token![mut]>>()?.is_some();
            let name: Ident = body.parse()?;
            let annotation = if body.peek(Token![:]) {
                body.parse::<Token![:]>()?;
                Some(body.parse::<ShapeDecl>()?)
            } else {
                None
            };
            body.parse::<Token![=]>()?;
            let expr: Expr = body.parse()?;
            body.parse::<Token![;]>()?;
            stmts.push(Stmt::Let(LetStmt { name, mutable, annotation, expr }));
        } else if body.peek(Token![const]) {
            stmts.push(Stmt::Const(body.parse()?));
        } else if body.peek(Token![for]) {
            let for_token = body.parse::<Token![for]>()?;
            let var: Ident = body.parse()?;
            body.parse::<Token![in]>()?;
            let range = Expr::parse_without_eager_brace(body)?;
            let header = format!("for {var} in {}", quote::quote!(#range)).replace(" .. ", "..");
            let (start, end) = match range {
                Expr::Range(syn::ExprRange {
                    start: Some(s),
                    limits: syn::RangeLimits::HalfOpen(_),
                    end: Some(e),
                    ..
                }) => (*s, *e),
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a graph loop runs over a range `start..end` of constants, e.g. `for i in 0..4`",
                    ))
                }
            };
            if depth >= MAX_NESTING {
                return Err(syn::Error::new(
                    for_token.span,
                    format!("loops nest at most {MAX_NESTING} deep in a graph"),
                ));
            }
            let content;
            syn::braced!(content in body);
            let inner = statements(&content, depth + 1)?;
            if !content.is_empty() {
                return Err(content.error("a loop body is `let` bindings, reassignments (`h = …;`), `const` items and loops, each ending with `;` (a loop has no result)"));
            }
            stmts.push(Stmt::For(ForStmt { var, start, end, header, body: inner }));
        } else if body.peek(Ident) && body.peek2(Token![=]) && !body.peek2(Token![==]) {
            let name: Ident = body.parse()?;
            body.parse::<Token![=]>()?;
            let expr: Expr = body.parse()?;
            body.parse::<Token![;]>()?;
            stmts.push(Stmt::Assign(AssignStmt { name, expr }));
        } else {
            return Ok(stmts);
        }
    }
}

impl Parse for GraphDef {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut consts = Vec::new();
        while input.peek(Token![const]) {
            consts.push(input.parse::<ConstStmt>()?);
        }
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![fn]>()?;
        let name: Ident = input.parse()?;
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
        let body;
        let brace = syn::braced!(body in input);
        let stmts = statements(&body, 0)?;
        if body.is_empty() {
            return Err(syn::Error::new(brace.span.close(), "the body must end with the graph's result expression"));
        }
        let result: Expr = body.parse()?;
        if !body.is_empty() {
            return Err(body
                .error("the body is statements (`let`, `h = …;`, `const`, `for`) followed by one result expression"));
        }
        Ok(GraphDef { consts, attrs, vis, name, dims, run_time, scalar, inputs, data, outputs, stmts, result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_parses_into_its_parts() {
        let def: GraphDef = syn::parse_str(
            "/// docs
             pub fn f<T: num_traits::Float, B>(x: [B, 3], w: [3, 4]; labels: Vec<usize>, m: [B, 4]) -> ([], [B, 4]) {
                 let h: [B, 4] = x.matmul(w);
                 (sum(h), h)
             }",
        )
        .expect("parses");
        assert_eq!(def.name, "f");
        assert_eq!(def.dims, ["B"]);
        assert!(def.scalar.as_ref().is_some_and(|(t, _)| t == "T"));
        assert_eq!(def.inputs.len(), 2);
        assert_eq!(def.data.iter().map(|d| d.tensor_shape().is_some()).collect::<Vec<_>>(), [false, true]);
        assert_eq!(def.outputs.len(), 2);
        assert_eq!(def.stmts.len(), 1);
        assert!(matches!(&def.stmts[0], Stmt::Let(l) if l.annotation.is_some() && !l.mutable));
    }

    #[test]
    fn malformed_definitions_say_what_is_expected() {
        let e = |s: &str| syn::parse_str::<GraphDef>(s).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e("fn f(x: 3) -> [] { x }").starts_with("a shape is written `[d0, d1, …]`"));
        assert_eq!(
            e("fn f(x: [2 + 1]) -> [] { x }"),
            "a dim is an integer literal or a declared generic dim (e.g. `B`), not an expression"
        );
        assert_eq!(e("fn f(x: [1, 1, 1, 1, 1]) -> [] { x }"), "a shape has at most 4 dims");
        assert_eq!(e("fn f(x: [2]) -> [] { let y = x; }"), "the body must end with the graph's result expression");
    }
}
