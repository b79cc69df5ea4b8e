//! A generated program's plan: the tables `graph!` writes for each model, which one routine of
//! this crate ([`ProgramState::run_plan`](super::ProgramState::run_plan)) runs.
//!
//! Everything a run needs that does not depend on the values was decided when the macro expanded:
//! the forward's levels and which value buffers are given back after each; per pass, the nodes
//! visited in order, the uniforms pending on every position each visit writes, and how each
//! node's contributions are written. The tables are plain data (`static`s in the expansion, one
//! line per level or step, readable with `cargo expand`), so a model's generated code does not
//! grow with its node count: a 6 000-node model is 6 000 table rows, not 6 000 blocks of calls.
//! [`describe`](Plan::describe) prints the same tables in words.

use core::ops::Range;

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
    /// Visit `t` is `steps[t]`.
    pub steps: &'static [Step],
    /// Per input, the visits pending on its gradient at the end.
    pub inputs: &'static [Range<usize>],
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
    pub nodes: &'static [PlannedNode],
    /// The inputs' names (`w`, `w[1]` for an element of a parameter array).
    pub inputs: &'static [&'static str],
    /// The positions of the declared outputs.
    pub outputs: &'static [usize],
    /// The forward, level by level.
    pub forward: &'static [Level],
    /// The all-inputs pass, then each declared output's single-output pass.
    pub passes: &'static [PassPlan],
    /// The buffers.
    pub memory: MemoryPlan,
}
