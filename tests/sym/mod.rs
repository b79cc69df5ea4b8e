//! A symbolic scalar for the integration tests: [`Sym`] records every `+`, `-`, `*`, unary `-`
//! and fused multiply-add (`Storage::pinned_mul_add`, the step of a matrix product's dot product)
//! as an expression tree in a hash-consed arena, so two values are storage-equal exactly when
//! their trees are structurally identical (decided in O(1) by comparing interned ids). No law
//! holds for `Sym`, not even `x + 0 == x`: a pass that reassociated, reordered, dropped or
//! duplicated one addition would build a different tree.
#![allow(dead_code, unreachable_pub)]

use core::cell::RefCell;
use core::fmt;
use std::collections::HashMap;

use exactgrad::{Dims, RawTensor, Storage};

/// One node of the expression arena. Children are interned ids, so the whole tree is a DAG.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Expr {
    Leaf(String),
    Add(Sym, Sym),
    Sub(Sym, Sym),
    Mul(Sym, Sym),
    Div(Sym, Sym),
    Neg(Sym),
    /// `mul_add(a, b, acc)`: `a · b + acc` as one operation.
    MulAdd(Sym, Sym, Sym),
}

/// A symbolic scalar: an interned expression id. Equal ids ⇔ structurally equal trees.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sym(pub u32);

#[derive(Default)]
struct Arena {
    nodes: Vec<Expr>,
    index: HashMap<Expr, u32>,
}

thread_local! {
    static ARENA: RefCell<Arena> = RefCell::new(Arena::default());
}

impl Sym {
    pub fn intern(e: Expr) -> Sym {
        ARENA.with(|a| {
            let mut a = a.borrow_mut();
            if let Some(&id) = a.index.get(&e) {
                return Sym(id);
            }
            let id = u32::try_from(a.nodes.len()).expect("arena below 2^32 nodes");
            a.nodes.push(e.clone());
            a.index.insert(e, id);
            Sym(id)
        })
    }

    pub fn leaf(name: impl Into<String>) -> Sym {
        Sym::intern(Expr::Leaf(name.into()))
    }

    pub fn expr(self) -> Expr {
        ARENA.with(|a| a.borrow().nodes[self.0 as usize].clone())
    }

    /// Forgets every expression (call only when no `Sym` of this thread is alive any more).
    pub fn reset() {
        ARENA.with(|a| *a.borrow_mut() = Arena::default());
    }

    pub fn arena_len() -> usize {
        ARENA.with(|a| a.borrow().nodes.len())
    }

    /// The tree, fully parenthesised; subtrees deeper than `depth` are shown as `#id`.
    pub fn render(self, depth: usize) -> String {
        if depth == 0 {
            return format!("#{}", self.0);
        }
        let d = depth - 1;
        match self.expr() {
            Expr::Leaf(name) => name,
            Expr::Add(l, r) => format!("({} + {})", l.render(d), r.render(d)),
            Expr::Sub(l, r) => format!("({} - {})", l.render(d), r.render(d)),
            Expr::Mul(l, r) => format!("({} * {})", l.render(d), r.render(d)),
            Expr::Div(l, r) => format!("({} / {})", l.render(d), r.render(d)),
            Expr::Neg(x) => format!("-{}", x.render(d)),
            Expr::MulAdd(a, b, acc) => format!("fma({}, {}, {})", a.render(d), b.render(d), acc.render(d)),
        }
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(6))
    }
}

impl core::ops::Add for Sym {
    type Output = Sym;
    fn add(self, rhs: Sym) -> Sym {
        Sym::intern(Expr::Add(self, rhs))
    }
}

impl core::ops::Sub for Sym {
    type Output = Sym;
    fn sub(self, rhs: Sym) -> Sym {
        Sym::intern(Expr::Sub(self, rhs))
    }
}

impl core::ops::Mul for Sym {
    type Output = Sym;
    fn mul(self, rhs: Sym) -> Sym {
        Sym::intern(Expr::Mul(self, rhs))
    }
}

impl core::ops::Div for Sym {
    type Output = Sym;
    fn div(self, rhs: Sym) -> Sym {
        Sym::intern(Expr::Div(self, rhs))
    }
}

/// An order by interned id: arbitrary but fixed within a run, so an op that compares values (max
/// pooling) picks the same elements in every pass and in the reference.
impl PartialOrd for Sym {
    fn partial_cmp(&self, other: &Sym) -> Option<core::cmp::Ordering> {
        self.0.partial_cmp(&other.0)
    }
}

/// A number is the leaf of its decimal digits (an element count of a mean or an average pool).
impl num_traits::FromPrimitive for Sym {
    fn from_i64(n: i64) -> Option<Sym> {
        Some(Sym::leaf(n.to_string()))
    }
    fn from_u64(n: u64) -> Option<Sym> {
        Some(Sym::leaf(n.to_string()))
    }
}

impl core::ops::Neg for Sym {
    type Output = Sym;
    fn neg(self) -> Sym {
        Sym::intern(Expr::Neg(self))
    }
}

impl num_traits::Zero for Sym {
    /// The leaf `0` — a symbol like any other: `x + 0` is a new tree, never `x`.
    fn zero() -> Sym {
        Sym::leaf("0")
    }
    fn is_zero(&self) -> bool {
        *self == Sym::leaf("0")
    }
}

impl Storage for Sym {
    const HAS_STORAGE_EQUALITY: bool = true;
    fn storage_eq(&self, other: &Sym) -> bool {
        self.0 == other.0
    }
    fn pinned_mul_add(a: Sym, b: Sym, acc: Sym) -> Sym {
        Sym::intern(Expr::MulAdd(a, b, acc))
    }
}

pub fn zero() -> Sym {
    <Sym as num_traits::Zero>::zero()
}

pub fn leaves(dims: Dims, prefix: &str) -> RawTensor<Sym> {
    RawTensor::from_fn(dims, |i| Sym::leaf(format!("{prefix}{i}")))
}
