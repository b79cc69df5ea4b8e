//! A generated program's plan: the tables `graph!` writes for each model, which the model's
//! generated `run` walks — a call per stretch of written rows, a Rust `for` loop over a repeat's
//! iterations ([`Rows`]) — through this crate's
//! [`ProgramState::forward_rows`](super::ProgramState::forward_rows) and
//! [`sweep_rows`](super::ProgramState::sweep_rows).
//!
//! Everything a run needs that does not depend on the values was decided when the macro expanded:
//! the forward's levels and which value buffers are given back after each; per pass, the nodes
//! visited in order, the uniforms pending on every position each visit writes, and how each
//! node's contributions are written. The tables are plain data (`static`s in the expansion, one
//! line per level or step, readable with `cargo expand`), so a model's generated code does not
//! grow with its node count: a 6 000-node model is 6 000 table rows, not 6 000 blocks of calls.
//! [`describe`](Plan::describe) prints the same tables in words.

use core::ops::Range;
use exactgrad_spec::OpSpec;

use super::state::MemoryPlan;

/// What a node of the plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannedKind {
    /// A built-in op (`exactgrad_spec::OPS`).
    Builtin,
    /// An opaque node (user closures): dense VJP over its whole prefix.
    Opaque,
    /// A user compact op, whose support is known only when the graph is built.
    Custom,
}

/// A node as the plan names it (for [`Plan::describe`] and the run's dispatch).
#[derive(Clone, Copy, Debug)]
pub struct PlannedNode {
    /// What it runs.
    pub kind: PlannedKind,
    /// The op's name (an opaque node: its binding's).
    pub op: &'static str,
    /// The positions it reads.
    pub parents: &'static [usize],
    /// Its shape as written in the model (`[B, 4]`).
    pub shape: &'static str,
    /// The binding, helper call and loop iteration that made it (`h@i=3`), or empty.
    pub label: &'static str,
}

impl PlannedNode {
    /// A built-in op's node (the constructors keep each table row on one line).
    #[must_use]
    pub const fn builtin(
        op: &'static str,
        parents: &'static [usize],
        shape: &'static str,
        label: &'static str,
    ) -> Self {
        PlannedNode { kind: PlannedKind::Builtin, op, parents, shape, label }
    }

    /// An opaque node.
    #[must_use]
    pub const fn opaque(op: &'static str, parents: &'static [usize], shape: &'static str, label: &'static str) -> Self {
        PlannedNode { kind: PlannedKind::Opaque, op, parents, shape, label }
    }

    /// A user compact op's node.
    #[must_use]
    pub const fn custom(op: &'static str, parents: &'static [usize], shape: &'static str, label: &'static str) -> Self {
        PlannedNode { kind: PlannedKind::Custom, op, parents, shape, label }
    }
}

/// One level of the forward: nodes that read only values of lower levels (computed at the same
/// time when there are threads to share and work enough), then the value buffers given back.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    /// Its nodes, ascending (an opaque node or a user op is alone in its level).
    pub nodes: &'static [usize],
    /// The positions whose value buffers go back to the pool after the level.
    pub frees: &'static [usize],
    /// Whether its one node runs through the graph's own node (an opaque node or a user op).
    pub graph: bool,
}

impl Level {
    /// A level of built-in nodes.
    #[must_use]
    pub const fn new(nodes: &'static [usize], frees: &'static [usize]) -> Self {
        Level { nodes, frees, graph: false }
    }

    /// A level of one opaque node or user op, run through the graph's node.
    #[must_use]
    pub const fn graph(nodes: &'static [usize], frees: &'static [usize]) -> Self {
        Level { nodes, frees, graph: true }
    }
}

/// How a visited node writes its contributions.
#[derive(Clone, Debug)]
pub enum Writes {
    /// Built, then added at each distinct support position `(q, pending visits)`, in support
    /// order ([`ProgramState::vjp`](super::ProgramState::vjp) and
    /// [`accumulate`](super::ProgramState::accumulate)).
    Built(&'static [(usize, Range<usize>)]),
    /// Each a matrix product computed straight onto its position while it holds a uniform
    /// ([`vjp_product`](super::ProgramState::vjp_product)): `matmul` of distinct operands,
    /// `matmul_data`.
    Product(&'static [(usize, Range<usize>)]),
    /// The cotangent's window added to its one operand in one pass
    /// ([`vjp_window`](super::ProgramState::vjp_window)): `slice`.
    Window(usize, Range<usize>),
    /// Every position below the node, with its pending visits (an opaque node or a user op:
    /// [`vjp_node`](super::ProgramState::vjp_node)).
    WholePrefix(&'static [Range<usize>]),
}

/// One visit of a pass: the node, the visits whose uniforms are pending on its own position when
/// its cotangent is taken, and its writes. Its visit number is its index in [`Sweep::steps`].
#[derive(Clone, Debug)]
pub struct Step {
    /// The node (0 = the first node).
    pub node: usize,
    /// The visits pending on the node's position.
    pub cotangent: Range<usize>,
    /// What it writes.
    pub writes: Writes,
}

impl Step {
    /// Node `node`'s visit writing [`Writes::Built`] (the constructors keep each table row on one
    /// line).
    #[must_use]
    pub const fn built(node: usize, cotangent: Range<usize>, writes: &'static [(usize, Range<usize>)]) -> Self {
        Step { node, cotangent, writes: Writes::Built(writes) }
    }

    /// A visit writing [`Writes::Product`].
    #[must_use]
    pub const fn product(node: usize, cotangent: Range<usize>, writes: &'static [(usize, Range<usize>)]) -> Self {
        Step { node, cotangent, writes: Writes::Product(writes) }
    }

    /// A visit writing [`Writes::Window`] at `q`, with the visits pending there.
    #[must_use]
    pub const fn window(node: usize, cotangent: Range<usize>, q: usize, pending: Range<usize>) -> Self {
        Step { node, cotangent, writes: Writes::Window(q, pending) }
    }

    /// A visit writing [`Writes::WholePrefix`].
    #[must_use]
    pub const fn whole_prefix(node: usize, cotangent: Range<usize>, pending: &'static [Range<usize>]) -> Self {
        Step { node, cotangent, writes: Writes::WholePrefix(pending) }
    }
}

/// One pass's reverse sweep: its visits, then per input the visits pending at the end.
#[derive(Clone, Copy, Debug)]
pub struct Sweep {
    /// The visits in order: visit `t` is the table's row `t` (its repeats expanded).
    pub steps: Table<Step>,
    /// Per input, the visits pending on its gradient at the end.
    pub inputs: Table<Range<usize>>,
}

/// A table of rows, some of them repeated: a rolled loop's rows are written once, for its first
/// iteration written as a loop, with the change of each of their numbers from one iteration to
/// the next ([`Repeat`]), so a table does not grow with a loop's trip count.
#[derive(Debug)]
pub struct Table<T: 'static> {
    /// The rows, a repeated run's rows once.
    pub rows: &'static [T],
    /// The repeated runs, in row order.
    pub repeats: &'static [Repeat],
}

impl<T> Clone for Table<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Table<T> {}

/// Rows `at..at + rows` of a [`Table`] are `count` iterations: in iteration `k` every number of
/// those rows (in each row's [`Row::numbers`] order, row after row) is moved by `k` times its
/// entry in `deltas`.
#[derive(Clone, Copy, Debug)]
pub struct Repeat {
    /// The first row.
    pub at: usize,
    /// Rows per iteration.
    pub rows: usize,
    /// Iterations.
    pub count: usize,
    /// Per number of the rows, its change per iteration.
    pub deltas: &'static [isize],
}

/// A row of a [`Table`]: how many numbers it has, which a [`Repeat`] moves.
pub trait Row {
    /// Its numbers' count.
    fn numbers(&self) -> usize;
}

/// Where a row of a [`Table`] stands: iteration `k` of its [`Repeat`] (its numbers moved by `k`
/// times their deltas), or not repeated.
#[derive(Clone, Copy, Debug)]
pub struct Shift<'a> {
    deltas: &'a [isize],
    k: usize,
}

impl Shift<'_> {
    /// A row that is not repeated.
    pub const NONE: Shift<'static> = Shift { deltas: &[], k: 0 };

    /// Number `i` of the row, written `n` in the table.
    #[must_use]
    pub fn at(&self, i: usize, n: usize) -> usize {
        match self.deltas.get(i) {
            Some(&d) => n.wrapping_add_signed(d.wrapping_mul(self.k as isize)),
            None => n,
        }
    }

    /// Whether the shift moves any number (else the row reads as written).
    #[must_use]
    pub fn moves(&self) -> bool {
        self.k != 0 && self.deltas.iter().any(|&d| d != 0)
    }

    /// Numbers `i` and `i + 1` of the row, written `r` in the table.
    #[must_use]
    pub fn range(&self, i: usize, r: &Range<usize>) -> Range<usize> {
        self.at(i, r.start)..self.at(i + 1, r.end)
    }
}

impl<T: Row> Table<T> {
    /// A table without repeats.
    #[must_use]
    pub const fn flat(rows: &'static [T]) -> Self {
        Table { rows, repeats: &[] }
    }

    /// Every row in order, repeats expanded, with its shift.
    #[must_use]
    pub fn iter(&self) -> TableIter<'_, T> {
        TableIter { table: self, next: 0, repeat: 0, k: 0, j: 0, offset: 0 }
    }
}

/// The rows of a [`Table`] ([`Table::iter`]).
#[derive(Clone, Debug)]
pub struct TableIter<'a, T: 'static> {
    table: &'a Table<T>,
    /// The next row, outside a repeat.
    next: usize,
    /// The next repeat (or the current one, while `j` or `k` is past its start).
    repeat: usize,
    /// Within the current repeat: the iteration, the row and its first delta.
    k: usize,
    j: usize,
    offset: usize,
}

impl<'a, T: Row> Iterator for TableIter<'a, T> {
    type Item = (&'a T, Shift<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let table = self.table;
        match table.repeats.get(self.repeat) {
            Some(r) if self.next == r.at && r.rows > 0 && r.count > 0 => {
                let row = table.rows.get(r.at + self.j)?;
                let n = row.numbers();
                let deltas = r.deltas.get(self.offset..self.offset + n).unwrap_or(&[]);
                let item = (row, Shift { deltas, k: self.k });
                self.j += 1;
                self.offset += n;
                if self.j == r.rows {
                    self.j = 0;
                    self.offset = 0;
                    self.k += 1;
                    if self.k == r.count {
                        self.k = 0;
                        self.repeat += 1;
                        self.next = r.at + r.rows;
                    }
                }
                Some(item)
            }
            _ => {
                let row = table.rows.get(self.next)?;
                self.next += 1;
                Some((row, Shift::NONE))
            }
        }
    }
}

/// Which rows of a [`Table`] a generated program's step runs: rows `a..b` as written (outside any
/// repeat), or iteration `k` of repeat `r` (its rows with their numbers moved to that iteration).
/// A model's generated `run` function runs its tables as a sequence of these, a rolled loop as a
/// Rust `for` loop over its iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// Rows `a..b` as written.
    Written(usize, usize),
    /// Iteration `k` of repeat `r`.
    Iteration(usize, usize),
}

impl<T: Row> Table<T> {
    /// The rows `rows` names, each with its shift (none for an out-of-range name).
    pub fn at(&self, rows: Rows) -> impl Iterator<Item = (&T, Shift<'_>)> + '_ {
        let (range, repeat) = match rows {
            Rows::Written(a, b) => (a.min(b)..b, None),
            Rows::Iteration(r, k) => match self.repeats.get(r) {
                Some(rep) if k < rep.count => (rep.at..rep.at.saturating_add(rep.rows), Some((rep, k))),
                _ => (0..0, None),
            },
        };
        let mut offset = 0;
        self.rows.get(range).unwrap_or(&[]).iter().map(move |row| match repeat {
            None => (row, Shift::NONE),
            Some((rep, k)) => {
                let n = row.numbers();
                let deltas = rep.deltas.get(offset..offset + n).unwrap_or(&[]);
                offset += n;
                (row, Shift { deltas, k })
            }
        })
    }
}

impl Row for Step {
    fn numbers(&self) -> usize {
        3 + match self.writes {
            Writes::Built(w) | Writes::Product(w) => 3 * w.len(),
            Writes::Window(..) => 3,
            Writes::WholePrefix(w) => 2 * w.len(),
        }
    }
}

impl Row for usize {
    fn numbers(&self) -> usize {
        1
    }
}

impl Row for Range<usize> {
    fn numbers(&self) -> usize {
        2
    }
}

impl Row for bool {
    fn numbers(&self) -> usize {
        0
    }
}

impl<T: Row> Table<T> {
    /// How many rows it has, repeats expanded.
    #[must_use]
    pub fn len(&self) -> usize {
        let extra = self.repeats.iter().map(|r| r.rows.saturating_mul(r.count.saturating_sub(1)));
        extra.fold(self.rows.len(), usize::saturating_add)
    }

    /// Whether it has no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl Table<usize> {
    /// Its numbers, repeats expanded.
    #[must_use]
    pub fn to_vec(&self) -> Vec<usize> {
        self.iter().map(|(&n, shift)| shift.at(0, n)).collect()
    }
}

impl Table<Range<usize>> {
    /// Its ranges, repeats expanded.
    #[must_use]
    pub fn to_vec(&self) -> Vec<Range<usize>> {
        self.iter().map(|(r, shift)| shift.range(0, r)).collect()
    }
}

impl Table<bool> {
    /// Its flags, repeats expanded.
    #[must_use]
    pub fn to_vec(&self) -> Vec<bool> {
        self.iter().map(|(&b, _)| b).collect()
    }
}

/// A declared input of a model: its name and, for a parameter array `w: [[…]; n]`, its length
/// (its elements are the inputs `w[0]` … `w[n - 1]`).
#[derive(Clone, Copy, Debug)]
pub struct InputDecl {
    /// The name as declared.
    pub name: &'static str,
    /// The array's length; `None` for a single input.
    pub array: Option<usize>,
}

impl InputDecl {
    /// A single input.
    #[must_use]
    pub const fn one(name: &'static str) -> Self {
        InputDecl { name, array: None }
    }

    /// A parameter array of `n` inputs.
    #[must_use]
    pub const fn array(name: &'static str, n: usize) -> Self {
        InputDecl { name, array: Some(n) }
    }

    /// The names of `decls`' inputs in order: `w`, or `w[0]` … `w[n - 1]` for an array.
    #[must_use]
    pub fn names(decls: &[InputDecl]) -> Vec<String> {
        decls
            .iter()
            .flat_map(|d| match d.array {
                None => vec![d.name.to_owned()],
                Some(n) => (0..n).map(|k| format!("{}[{k}]", d.name)).collect(),
            })
            .collect()
    }

    /// How many inputs `decls` declare.
    #[must_use]
    pub fn count(decls: &[InputDecl]) -> usize {
        decls.iter().map(|d| d.array.unwrap_or(1)).fold(0, usize::saturating_add)
    }

    /// [`names`](Self::names) as `'static` strings, for a model's `input_names()`: made once per
    /// model (the caller keeps them in a `static`) and leaked then.
    #[must_use]
    pub fn static_names(decls: &[InputDecl]) -> Vec<&'static str> {
        Self::names(decls).into_iter().map(|name| &*Box::leak(name.into_boxed_str())).collect()
    }
}

impl Row for Level {
    fn numbers(&self) -> usize {
        self.nodes.len() + self.frees.len()
    }
}

impl PlannedNode {
    /// Its parents, with `shift` applied.
    pub fn parents_at<'a>(&'a self, shift: Shift<'a>) -> impl Iterator<Item = usize> + 'a {
        self.parents.iter().enumerate().map(move |(i, &q)| shift.at(i, q))
    }

    /// Its label, with `shift` applied to its numbers.
    #[must_use]
    pub fn label_at(&self, shift: Shift<'_>) -> String {
        let mut out = String::new();
        let mut end = 0;
        for (j, (r, n)) in exactgrad_spec::labels::numbers(self.label).enumerate() {
            out.push_str(&self.label[end..r.start]);
            // A number the shift leaves alone keeps its text (digits past `usize` included).
            match shift.at(self.parents.len() + j, n) {
                m if m == n => out.push_str(&self.label[r.clone()]),
                m => out.push_str(&m.to_string()),
            }
            end = r.end;
        }
        out.push_str(&self.label[end..]);
        out
    }
}

impl Row for PlannedNode {
    fn numbers(&self) -> usize {
        self.parents.len() + exactgrad_spec::labels::numbers(self.label).count()
    }
}

impl Step {
    /// The node, with `shift` applied.
    #[must_use]
    pub fn node_at(&self, shift: Shift<'_>) -> usize {
        shift.at(0, self.node)
    }

    /// The visits pending on the node's position, with `shift` applied.
    #[must_use]
    pub fn cotangent_at(&self, shift: Shift<'_>) -> Range<usize> {
        shift.range(1, &self.cotangent)
    }

    /// Write `i` of a `Built`, `Product` or `Window` step (`(q, pending visits)`), with `shift`.
    #[must_use]
    pub fn write_at(&self, shift: Shift<'_>, i: usize) -> Option<(usize, Range<usize>)> {
        let (q, r) = match &self.writes {
            Writes::Built(w) | Writes::Product(w) => w.get(i).map(|(q, r)| (*q, r))?,
            Writes::Window(q, r) if i == 0 => (*q, r),
            Writes::Window(..) | Writes::WholePrefix(_) => return None,
        };
        Some((shift.at(3 + 3 * i, q), shift.range(4 + 3 * i, r)))
    }
}

/// A pass of the plan.
#[derive(Clone, Copy, Debug)]
pub enum PassPlan {
    /// Planned when the macro expanded.
    Planned(&'static Sweep),
    /// The runtime's own single-output loop (a model with user compact ops, whose supports are
    /// declared only when the graph is built).
    Runtime,
}

/// A model's plan (written by `graph!`; see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The nodes, in order.
    pub nodes: Table<PlannedNode>,
    /// The declared inputs, in order (a parameter array: one entry for all its elements).
    pub inputs: &'static [InputDecl],
    /// The positions of the declared outputs.
    pub outputs: &'static [usize],
    /// The forward, level by level.
    pub forward: Table<Level>,
    /// The all-inputs pass, then each declared output's single-output pass.
    pub passes: &'static [PassPlan],
    /// The buffers.
    pub memory: MemoryPlan,
}

impl Plan {
    /// The planned sweep of the pass with this index (0: the all-inputs pass, `1 + j`: output
    /// `j`'s single-output pass); `None` for a pass the runtime's own loop runs or an index past
    /// the passes.
    #[must_use]
    pub fn sweep(&self, index: usize) -> Option<&'static Sweep> {
        match self.passes.get(index) {
            Some(PassPlan::Planned(sweep)) => Some(sweep),
            _ => None,
        }
    }

    /// Per node, in order, the positions its compact VJP contributes to: its static support (its
    /// op's `exactgrad_spec` pattern over its parents), duplicates kept; an opaque node or a user
    /// op: every position below it.
    #[must_use]
    pub fn support(&self) -> Vec<Vec<usize>> {
        self.per_node(false, |spec, parents, _| {
            spec.vjp.support(parents.len()).iter().filter_map(|&i| parents.get(i).copied()).collect()
        })
    }

    /// Per node, the positions whose saved values its VJP reads (its own position: its output;
    /// an opaque node or a user op: its whole prefix and its output). Labels, ids and data tensors
    /// come from the data.
    #[must_use]
    pub fn reads(&self) -> Vec<Vec<usize>> {
        self.per_node(true, |spec, parents, own| {
            let mut q: Vec<usize> = spec.reads.operands.iter().filter_map(|&i| parents.get(i).copied()).collect();
            if spec.reads.output {
                q.push(own);
            }
            q
        })
    }

    /// `f(spec, parents, own position)` for every built-in node; for the others every position
    /// below the node, and its own when `own_too`.
    fn per_node(&self, own_too: bool, f: impl Fn(&OpSpec, &[usize], usize) -> Vec<usize>) -> Vec<Vec<usize>> {
        let n_in = InputDecl::count(self.inputs);
        let of_node = |(k, (node, shift)): (usize, (&PlannedNode, Shift<'_>))| {
            let spec = match node.kind {
                PlannedKind::Builtin => exactgrad_spec::ops::by_name(node.op),
                PlannedKind::Opaque | PlannedKind::Custom => None,
            };
            match spec {
                Some(spec) => f(spec, &node.parents_at(shift).collect::<Vec<_>>(), n_in + k),
                None => (0..n_in + k + usize::from(own_too)).collect(),
            }
        };
        self.nodes.iter().enumerate().map(of_node).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_table_reads_out_its_repeats_and_counts_them() {
        // 0, 1, 2, 3 (one row, +1 per iteration), then 9, then 5 6, 7 8 (two rows, +2 each).
        static NUMBERS: Table<usize> = Table {
            rows: &[0, 9, 5, 6],
            repeats: &[
                Repeat { at: 0, rows: 1, count: 4, deltas: &[1] },
                Repeat { at: 2, rows: 2, count: 2, deltas: &[2, 2] },
            ],
        };
        assert_eq!(NUMBERS.to_vec(), [0, 1, 2, 3, 9, 5, 6, 7, 8]);
        assert_eq!(NUMBERS.len(), 9);
        static RANGES: Table<Range<usize>> =
            Table { rows: &[3..5, 0..1], repeats: &[Repeat { at: 0, rows: 1, count: 3, deltas: &[0, 1] }] };
        assert_eq!(RANGES.to_vec(), [3..5, 3..6, 3..7, 0..1]);
        static KEPT: Table<bool> =
            Table { rows: &[false, true], repeats: &[Repeat { at: 0, rows: 2, count: 3, deltas: &[] }] };
        assert_eq!(KEPT.to_vec(), [false, true, false, true, false, true]);
        assert!(Table::<usize>::flat(&[]).is_empty() && !NUMBERS.is_empty());
    }

    #[test]
    fn stretches_of_rows_read_what_the_whole_table_reads() {
        // Written rows 0..1, repeat 0 (rows 1..3, two per iteration) 3 times, written rows 3..4.
        static ROWS: Table<Range<usize>> = Table {
            rows: &[0..1, 4..6, 2..2, 9..9],
            repeats: &[Repeat { at: 1, rows: 2, count: 3, deltas: &[1, 2, 0, 1] }],
        };
        let read = |rows: Rows| ROWS.at(rows).map(|(r, shift)| shift.range(0, r)).collect::<Vec<_>>();
        let mut walked = read(Rows::Written(0, 1));
        for k in 0..3 {
            walked.extend(read(Rows::Iteration(0, k)));
        }
        walked.extend(read(Rows::Written(3, 4)));
        assert_eq!(walked, ROWS.to_vec());
        assert_eq!(walked[1..5], [4..6, 2..2, 5..8, 2..3]);
        // Names past the table read nothing.
        assert_eq!(read(Rows::Iteration(0, 3)), []);
        assert_eq!(read(Rows::Iteration(1, 0)), []);
        assert_eq!(read(Rows::Written(3, 9)), []);
        assert_eq!(read(Rows::Written(2, 1)), []);
    }

    #[test]
    fn input_declarations_name_every_element_of_an_array() {
        let decls = [InputDecl::one("x"), InputDecl::array("w", 3), InputDecl::one("b")];
        assert_eq!(InputDecl::count(&decls), 5);
        assert_eq!(InputDecl::names(&decls), ["x", "w[0]", "w[1]", "w[2]", "b"]);
        assert_eq!(InputDecl::static_names(&decls), ["x", "w[0]", "w[1]", "w[2]", "b"]);
        assert!(InputDecl::names(&[InputDecl::array("e", 0)]).is_empty());
    }

    static NODE: PlannedNode = PlannedNode::builtin("tanh", &[7], "[4]", "block#2/h99999999999999999999999@i=3");

    #[test]
    fn a_shift_moves_a_label_s_numbers_and_leaves_the_rest_as_written() {
        // Numbers: the parent, then the label's runs of digits (2, the huge one, 3).
        let deltas = [3, 1, 0, 1];
        assert_eq!(NODE.numbers(), 4);
        assert_eq!(NODE.label_at(Shift::NONE), NODE.label);
        let shift = Shift { deltas: &deltas, k: 2 };
        assert!(shift.moves() && !Shift::NONE.moves());
        assert_eq!(NODE.parents_at(shift).collect::<Vec<_>>(), [13]);
        assert_eq!(NODE.label_at(shift), "block#4/h99999999999999999999999@i=5");
    }

    #[test]
    fn a_table_expands_its_repeats_in_row_order() {
        static ROWS: [Level; 3] = [Level::new(&[0], &[]), Level::new(&[1], &[0]), Level::new(&[9], &[])];
        static REPEATS: [Repeat; 1] = [Repeat { at: 1, rows: 1, count: 3, deltas: &[2, 2] }];
        let table = Table { rows: &ROWS, repeats: &REPEATS };
        let nodes: Vec<(usize, usize)> =
            table.iter().map(|(l, s)| (s.at(0, l.nodes[0]), s.at(1, l.frees.first().copied().unwrap_or(99)))).collect();
        assert_eq!(nodes, [(0, 99), (1, 0), (3, 2), (5, 4), (9, 99)]);
    }
}
