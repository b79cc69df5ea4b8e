//! What an op's compact VJP looks like (SEMANTICS §4) and what it reads: the facts the backward
//! schedule is planned from.

/// The shape of an op's compact VJP (SEMANTICS §4) over its operands (`Single(i)` puts a tensor at
/// operand `i`'s position). It fixes the static support (duplicates kept), the uniform outside it
/// (`Zero` → `0`, `Single` → `0`, `Add(l, r)` → `l.uniform + r.uniform`) and how the reader adds at
/// a position read by several operands (`add(l.read(q), r.read(q))`, left first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `zero()`: no support.
    Zero,
    /// `single(operand i, t)`.
    Single(usize),
    /// `add(l, r)`.
    Add(&'static Pattern, &'static Pattern),
    /// One `single` per operand of a variadic op, added left to right:
    /// `add(…add(add(single(0), single(1)), single(2))…, single(n − 1))`, or `single(0)` alone
    /// for one operand (`concat`).
    Each,
}

impl Pattern {
    /// The support as operand indices, left before right, duplicates kept, for a node of
    /// `operands` operands (only [`Pattern::Each`] depends on it).
    #[must_use]
    pub fn support(&self, operands: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![*self];
        while let Some(p) = stack.pop() {
            match p {
                Pattern::Zero => {}
                Pattern::Single(i) => out.push(i),
                Pattern::Each => out.extend(0..operands),
                Pattern::Add(l, r) => {
                    stack.push(*r);
                    stack.push(*l);
                }
            }
        }
        out
    }

    /// Written as in SEMANTICS §4 with operand names `names` (for [`Pattern::Each`], one per
    /// operand).
    #[must_use]
    pub fn describe(&self, names: &[&str]) -> String {
        match self {
            Pattern::Each => {
                let mut parts = names.iter().map(|n| format!("single({n})"));
                let first = parts.next().unwrap_or_else(|| "zero()".to_owned());
                parts.fold(first, |acc, s| format!("add({acc}, {s})"))
            }
            Pattern::Zero => "zero()".to_owned(),
            Pattern::Single(i) => format!("single({})", names.get(*i).copied().unwrap_or("?")),
            Pattern::Add(l, r) => format!("add({}, {})", l.describe(names), r.describe(names)),
        }
    }
}

/// Which saved values an op's VJP reads (beyond the cotangent and the operands' shapes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Operand indices whose saved values it reads.
    pub operands: &'static [usize],
    /// Whether it reads the node's own saved output.
    pub output: bool,
    /// Whether it reads the graph's data (labels, ids, a data tensor).
    pub data: bool,
}
