//! Run-time dims (a `graph!` model's `batch: dyn`): axes whose size is taken from the inputs at
//! `compile`, so that one graph serves every size.
//!
//! At the type level a run-time dim has a **stand-in**: the reserved number
//! [`run_time_stand_in(k)`](run_time_stand_in) for the graph's `k`-th run-time dim (a typenum
//! number like any literal, so the typed layer and the shape rule traits check every other axis as
//! before). The graph is built with the stand-ins in its dims; [`RawGraph::run_time_dims`]
//! names them. `compile` then **binds** each run-time dim to its size — read from the inputs (and
//! from the data of the nodes that read sized data: `data_tensor`, `gather_rows`) — and recomputes
//! every node's dims with its shape rule for those sizes ([`Binding::resolve`] puts the sizes in
//! the place of the stand-ins), before any value is computed. Every pass then runs on the real
//! dims: a model with run-time dims, compiled at size `b`, is the model with the literal `b`
//! (SEMANTICS §2.1).
//!
//! The stand-ins are `1_000_000_007 + k` (`k <` [`MAX_RUN_TIME_DIMS`]); a graph with run-time
//! dims must not use these numbers as literal dims (`graph!` refuses them).
//!
//! [`RawGraph::run_time_dims`]: crate::RawGraph::run_time_dims

use super::Dims;

/// The stand-in of the first run-time dim; the `k`-th is `RUN_TIME_BASE + k`.
pub const RUN_TIME_BASE: usize = exactgrad_spec::RUN_TIME_BASE;

/// The most run-time dims one graph may declare.
pub const MAX_RUN_TIME_DIMS: usize = exactgrad_spec::MAX_RUN_TIME_DIMS;

/// The stand-in value of run-time dim `k` (`k <` [`MAX_RUN_TIME_DIMS`]).
///
/// ```
/// use exactgrad_runtime::shape::{run_time_index, run_time_stand_in};
/// assert_eq!(run_time_index(run_time_stand_in(1)), Some(1));
/// assert_eq!(run_time_index(64), None);
/// ```
#[must_use]
pub const fn run_time_stand_in(k: usize) -> usize {
    RUN_TIME_BASE + k
}

/// Which run-time dim the value `d` stands in for, if it is a stand-in.
#[must_use]
pub const fn run_time_index(d: usize) -> Option<usize> {
    if d >= RUN_TIME_BASE && d < RUN_TIME_BASE + MAX_RUN_TIME_DIMS {
        Some(d - RUN_TIME_BASE)
    } else {
        None
    }
}

/// The leading dims of a lookup by `ids` ids (`gather_rows`/`embedding`, whose output has one
/// row per id) with its stand-ins resolved: `declared` itself when it has none; with one
/// stand-in, that axis gets `ids / (product of the others)` when that divides exactly; `None`
/// otherwise (more than one stand-in, or an id count that does not fit).
///
/// ```
/// use exactgrad_runtime::shape::{resolve_lead, run_time_stand_in};
/// use exactgrad_runtime::Dims;
/// let b = run_time_stand_in(0);
/// assert_eq!(resolve_lead(Dims::matrix(b, 4), 12), Some(Dims::matrix(3, 4)));
/// assert_eq!(resolve_lead(Dims::matrix(b, 4), 13), None);
/// assert_eq!(resolve_lead(Dims::matrix(2, 4), 13), Some(Dims::matrix(2, 4))); // no stand-in: as declared
/// ```
#[must_use]
pub fn resolve_lead(declared: Dims, ids: usize) -> Option<Dims> {
    let d = declared.as_slice();
    let mut stand_ins = d.iter().enumerate().filter(|(_, &n)| run_time_index(n).is_some());
    let Some((axis, _)) = stand_ins.next() else { return Some(declared) };
    if stand_ins.next().is_some() {
        return None;
    }
    let others = d.iter().enumerate().filter(|&(k, _)| k != axis).try_fold(1usize, |p, (_, &n)| p.checked_mul(n))?;
    if others == 0 || !ids.is_multiple_of(others) {
        return None;
    }
    let mut lead = [0; super::MAX_RANK];
    lead[..d.len()].copy_from_slice(d);
    lead[axis] = ids / others;
    Dims::new(&lead[..d.len()])
}

/// `true` when `actual` fits the `declared` dims: the same rank, and every axis equal except those
/// declared by a stand-in, which take any size.
///
/// ```
/// use exactgrad_runtime::{shape::{fits_declared, run_time_stand_in}, Dims};
/// let declared = Dims::matrix(run_time_stand_in(0), 3);
/// assert!(fits_declared(declared, Dims::matrix(39, 3)));
/// assert!(!fits_declared(declared, Dims::matrix(39, 4)));
/// assert!(fits_declared(Dims::vector(2), Dims::vector(2)));
/// ```
#[must_use]
pub fn fits_declared(declared: Dims, actual: Dims) -> bool {
    declared.rank() == actual.rank()
        && declared.as_slice().iter().zip(actual.as_slice()).all(|(&d, &a)| d == a || run_time_index(d).is_some())
}

/// The dims `declared` with every stand-in axis printed as its name (`[batch, 3]`); other axes in
/// decimal. A stand-in without a name prints as `dyn#k`.
#[must_use]
pub fn named_dims(declared: Dims, names: &[String]) -> String {
    let axes: Vec<String> = declared
        .as_slice()
        .iter()
        .map(|&d| match run_time_index(d) {
            Some(k) => names.get(k).cloned().unwrap_or_else(|| format!("dyn#{k}")),
            None => d.to_string(),
        })
        .collect();
    format!("[{}]", axes.join(", "))
}

/// The sizes of a graph's run-time dims for one `compile`: the `k`-th is the size of the stand-in
/// [`run_time_stand_in(k)`](run_time_stand_in).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    sizes: Vec<Option<usize>>,
}

impl Binding {
    /// A binding of `n` run-time dims, none bound yet.
    #[must_use]
    pub fn new(n: usize) -> Self {
        Binding { sizes: vec![None; n] }
    }

    /// The size of run-time dim `k`, once bound.
    #[must_use]
    pub fn size(&self, k: usize) -> Option<usize> {
        self.sizes.get(k).copied().flatten()
    }

    /// Binds run-time dim `k` to `size`; returns the size it had when it was bound already.
    pub(crate) fn bind(&mut self, k: usize, size: usize) -> Option<usize> {
        match self.sizes.get_mut(k) {
            Some(Some(old)) => Some(*old),
            Some(slot) => {
                *slot = Some(size);
                None
            }
            None => None,
        }
    }

    /// `dims` with every bound stand-in replaced by its size (other axes, and stand-ins not bound,
    /// unchanged).
    ///
    /// ```
    /// use exactgrad_runtime::{shape::{run_time_stand_in, Binding}, Dims};
    /// let b = Binding::from_sizes(&[39]);
    /// assert_eq!(b.resolve(Dims::matrix(run_time_stand_in(0), 3)), Dims::matrix(39, 3));
    /// ```
    #[must_use]
    pub fn resolve(&self, dims: Dims) -> Dims {
        let mut out = [0usize; super::MAX_RANK];
        for (o, &d) in out.iter_mut().zip(dims.as_slice()) {
            *o = run_time_index(d).and_then(|k| self.size(k)).unwrap_or(d);
        }
        Dims::new(&out[..dims.rank()]).unwrap_or(dims)
    }

    /// A binding with the given sizes, in declaration order.
    #[must_use]
    pub fn from_sizes(sizes: &[usize]) -> Self {
        Binding { sizes: sizes.iter().map(|&s| Some(s)).collect() }
    }
}

/// Run-time dims of a declared shape, resolved against the actual dims of the same shape: the
/// binding that `actual` gives the stand-ins in `declared` (axis by axis; equal ranks assumed, a
/// stand-in met twice keeps its first size).
#[must_use]
pub(crate) fn binding_from(declared: Dims, actual: Dims) -> Binding {
    let mut b = Binding::new(MAX_RUN_TIME_DIMS);
    for (&d, &a) in declared.as_slice().iter().zip(actual.as_slice()) {
        if let Some(k) = run_time_index(d) {
            b.bind(k, a);
        }
    }
    b
}
