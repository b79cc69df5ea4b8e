//! Constants known when the macro expands: `const` items, loop variables, and the constant
//! expressions over them. Integer positions (loop bounds, axes, slice bounds, parameter-array
//! indices and lengths, integer `const`s) are evaluated in checked integer arithmetic; float
//! positions (scale factors, eps, float `const`s) are validated, checked finite in `f64`, and
//! handed to emission with every name replaced by its value (an integer) or its expression (a
//! float `const`), so the constant is still computed as written (see `emit::constants`).

use std::collections::HashMap;

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

/// A named constant.
#[derive(Clone)]
pub(crate) enum Const {
    Int(i128),
    /// A float constant: its expression with every name replaced.
    Float(Expr),
}

/// Why an expression is not a usable constant.
pub(crate) enum NotConst {
    /// It is not a constant expression at all (it may be a graph value).
    Value,
    /// It is a constant expression with an error: the span and message.
    Error(Span, String),
}

/// The end of a message about a name the macro does not know that may be a `const` declared
/// outside `graph!` (which a procedural macro cannot read): how to declare it inside.
pub(crate) fn outside_hint(name: &str, ty: &str) -> String {
    format!(
        "; a `const` declared outside `graph!` cannot be read by the macro (it sees only its own tokens): declare it inside, e.g. `const {name}: {ty} = …;` before or after the graph's `fn`"
    )
}

/// Whether `name` is written like a constant (`SCALE`, `D_MODEL`, `N2`).
pub(crate) fn const_like(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The methods a float constant may call.
pub(crate) const METHODS: &[&str] = &["sqrt", "abs", "recip"];

fn err<T>(e: &impl ToTokens, message: impl Into<String>) -> Result<T, NotConst> {
    Err(NotConst::Error(e.span(), message.into()))
}

fn text(e: &impl ToTokens) -> String {
    e.to_token_stream().to_string()
}

/// An integer literal expression of `n`.
fn int_expr(n: i128, span: Span) -> Expr {
    let lit = Expr::Lit(syn::ExprLit {
        attrs: Vec::new(),
        lit: syn::Lit::Int(syn::LitInt::new(&n.unsigned_abs().to_string(), span)),
    });
    if n < 0 {
        Expr::Unary(syn::ExprUnary { attrs: Vec::new(), op: UnOp::Neg(syn::Token![-](span)), expr: Box::new(lit) })
    } else {
        lit
    }
}

fn paren(e: Expr) -> Expr {
    Expr::Paren(syn::ExprParen { attrs: Vec::new(), paren_token: syn::token::Paren::default(), expr: Box::new(e) })
}

/// The integer value of `e`.
pub(crate) fn int(consts: &HashMap<String, Const>, e: &Expr) -> Result<i128, NotConst> {
    match e {
        Expr::Paren(p) => int(consts, &p.expr),
        Expr::Group(g) => int(consts, &g.expr),
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i
            .base10_parse::<i128>()
            .or_else(|_| err(i, format!("the integer constant `{}` is too large", i.base10_digits()))),
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => {
            err(f, format!("expected an integer constant here, not the float `{f}`"))
        }
        Expr::Path(p) => match p.path.get_ident().and_then(|i| consts.get(&i.to_string())) {
            Some(Const::Int(n)) => Ok(*n),
            Some(Const::Float(_)) => err(p, format!("expected an integer constant here; `{}` is a float", text(p))),
            None => Err(NotConst::Value),
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
            int(consts, &u.expr)?.checked_neg().map_or_else(|| err(e, format!("`{}` overflows", text(e))), Ok)
        }
        Expr::Cast(c) => {
            let n = int(consts, &c.expr)?;
            let ty = text(&c.ty);
            let fits = match ty.as_str() {
                "usize" | "u64" => u64::try_from(n).is_ok(),
                "u32" => u32::try_from(n).is_ok(),
                "i64" | "isize" => i64::try_from(n).is_ok(),
                "i32" => i32::try_from(n).is_ok(),
                "u128" | "i128" => true,
                _ => return err(&c.ty, format!("an integer constant is cast to an integer type, not `{ty}`")),
            };
            if fits {
                Ok(n)
            } else {
                err(e, format!("`{}` is {n}, which does not fit in `{ty}`", text(&c.expr)))
            }
        }
        Expr::Binary(b) => {
            let (l, r) = (int(consts, &b.left), int(consts, &b.right));
            let (l, r) = match (l, r) {
                (Err(NotConst::Value), _) | (_, Err(NotConst::Value)) => return Err(NotConst::Value),
                (Err(NotConst::Error(s, m)), _) | (_, Err(NotConst::Error(s, m))) => return Err(NotConst::Error(s, m)),
                (Ok(l), Ok(r)) => (l, r),
            };
            let v = match b.op {
                BinOp::Add(_) => l.checked_add(r),
                BinOp::Sub(_) => l.checked_sub(r),
                BinOp::Mul(_) => l.checked_mul(r),
                BinOp::Div(_) | BinOp::Rem(_) if r == 0 => {
                    return err(e, format!("`{}` divides by zero", text(e)));
                }
                BinOp::Div(_) => l.checked_div(r),
                BinOp::Rem(_) => l.checked_rem(r),
                _ => return err(&b.op, "integer constants support `+`, `-`, `*`, `/` and `%`"),
            };
            v.map_or_else(|| err(e, format!("`{}` overflows", text(e))), Ok)
        }
        _ => Err(NotConst::Value),
    }
}

/// A float constant: its `f64` value (checked finite) and its expression with every name
/// replaced.
pub(crate) fn float(consts: &HashMap<String, Const>, e: &Expr) -> Result<(f64, Expr), NotConst> {
    match e {
        Expr::Paren(p) => float(consts, &p.expr).map(|(v, x)| (v, paren(x))),
        Expr::Group(g) => float(consts, &g.expr),
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<u128>() {
            Ok(n) => Ok((n as f64, e.clone())),
            Err(_) => err(i, format!("the constant `{}` is too large", i.base10_digits())),
        },
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => match f.base10_parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((v, e.clone())),
            _ => err(f, format!("the constant `{}` overflows f64", f.base10_digits())),
        },
        Expr::Path(p) => match p.path.get_ident().and_then(|i| consts.get(&i.to_string())) {
            Some(Const::Int(n)) => Ok((*n as f64, int_expr(*n, p.span()))),
            Some(Const::Float(x)) => float(consts, x).map(|(v, x)| (v, paren(x))),
            None => Err(NotConst::Value),
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
            let (v, x) = float(consts, &u.expr)?;
            Ok((-v, Expr::Unary(syn::ExprUnary { attrs: Vec::new(), op: u.op, expr: Box::new(x) })))
        }
        Expr::Cast(c) => {
            let ty = text(&c.ty);
            if ty == "f64" || ty == "f32" {
                let n = int(consts, &c.expr)?;
                // The cast's value as a typed literal (`4.0f64`), as `n as f64` (or `n as f32`) is.
                #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
                let v = if ty == "f32" { f64::from(n as f32) } else { n as f64 };
                let lit = syn::LitFloat::new(&format!("{v:?}f64"), c.span());
                Ok((v, Expr::Lit(syn::ExprLit { attrs: Vec::new(), lit: syn::Lit::Float(lit) })))
            } else {
                err(&c.ty, format!("a constant is cast to `f64` here, not `{ty}`"))
            }
        }
        Expr::MethodCall(m) if m.args.is_empty() && METHODS.contains(&m.method.to_string().as_str()) => {
            let (v, x) = float(consts, &m.receiver)?;
            let v = match m.method.to_string().as_str() {
                "sqrt" => v.sqrt(),
                "abs" => v.abs(),
                _ => v.recip(),
            };
            let x = Expr::MethodCall(syn::ExprMethodCall { receiver: Box::new(paren(x)), ..m.clone() });
            if v.is_finite() {
                Ok((v, x))
            } else {
                err(e, format!("`{}` is not a finite number", text(e)))
            }
        }
        Expr::Binary(b) => {
            let (l, r) = (float(consts, &b.left), float(consts, &b.right));
            let ((lv, lx), (rv, rx)) = match (l, r) {
                // A graph value on either side makes it no constant, whatever the other side is.
                (Err(NotConst::Value), _) | (_, Err(NotConst::Value)) => return Err(NotConst::Value),
                (Err(NotConst::Error(s, m)), _) | (_, Err(NotConst::Error(s, m))) => return Err(NotConst::Error(s, m)),
                (Ok(l), Ok(r)) => (l, r),
            };
            let v = match b.op {
                BinOp::Add(_) => lv + rv,
                BinOp::Sub(_) => lv - rv,
                BinOp::Mul(_) => lv * rv,
                BinOp::Div(_) => lv / rv,
                _ => return err(&b.op, "float constants support `+`, `-`, `*` and `/`"),
            };
            if !v.is_finite() {
                return err(e, format!("`{}` is not a finite number in f64", text(e)));
            }
            Ok((v, Expr::Binary(syn::ExprBinary { left: Box::new(lx), right: Box::new(rx), ..b.clone() })))
        }
        _ => Err(NotConst::Value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expr {
        syn::parse_str(s).unwrap()
    }

    #[test]
    fn integers_and_floats_evaluate_with_names_replaced() {
        let mut c = HashMap::new();
        c.insert("D".to_owned(), Const::Int(16));
        c.insert("S".to_owned(), Const::Float(e("0.5")));
        assert!(matches!(int(&c, &e("D * 4 - 1")), Ok(63)));
        assert!(matches!(int(&c, &e("x * 4")), Err(NotConst::Value)));
        assert!(matches!(int(&c, &e("D / 0")), Err(NotConst::Error(..))));
        assert!(matches!(int(&c, &e("170141183460469231731687303715884105727 + 1")), Err(NotConst::Error(..))));
        let (v, x) = float(&c, &e("1.0 / (D as f64).sqrt() * S")).ok().unwrap();
        assert_eq!(v, 0.125);
        assert_eq!(x.to_token_stream().to_string(), "1.0 / ((16.0f64)) . sqrt () * (0.5)");
        assert!(matches!(float(&c, &e("1e400")), Err(NotConst::Error(..))));
    }
}
