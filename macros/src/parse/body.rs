//! Statements and bodies: shapes, `const` items, `let`, reassignments and `for` loops, and a
//! body `{ stmts; result }` of the graph or of a helper.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{bracketed, parenthesized, Expr, Ident, Token, Type};

use super::{AssignStmt, ConstStmt, DimDecl, ForStmt, LetStmt, LetTupleStmt, ShapeDecl, Stmt};

/// How deeply `for` loops may nest.
const MAX_NESTING: usize = 16;

impl Parse for ShapeDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if !input.peek(syn::token::Bracket) {
            return Err(input.error(
                "a shape is written `[d0, d1, …]` with integer, generic or constant dims, e.g. `[B, 784]` or `[T * B, H]`",
            ));
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
                Expr::Binary(_) | Expr::Paren(_) | Expr::Unary(_) | Expr::Cast(_) | Expr::Group(_) => {
                    DimDecl::Expr(Box::new(item.clone()))
                }
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a dim is an integer literal, a declared generic dim (e.g. `B`) or an integer constant expression (e.g. `T * B`)",
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
            if body.peek(syn::token::Paren) {
                let content;
                parenthesized!(content in body);
                let names: Vec<Ident> =
                    Punctuated::<Ident, Token![,]>::parse_terminated(&content)?.into_iter().collect();
                body.parse::<Token![=]>()?;
                let expr: Expr = body.parse()?;
                body.parse::<Token![;]>()?;
                stmts.push(Stmt::LetTuple(LetTupleStmt { names, mutable, expr }));
                continue;
            }
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

/// A body `{ stmts; result }` (of the graph or a helper).
pub(super) fn body(input: ParseStream<'_>, whose: &str) -> syn::Result<(Vec<Stmt>, Expr)> {
    let body;
    let brace = syn::braced!(body in input);
    let stmts = statements(&body, 0)?;
    if body.is_empty() {
        return Err(syn::Error::new(brace.span.close(), format!("the body must end with {whose} result expression")));
    }
    let result: Expr = body.parse()?;
    if !body.is_empty() {
        return Err(
            body.error("the body is statements (`let`, `h = …;`, `const`, `for`) followed by one result expression")
        );
    }
    Ok((stmts, result))
}
