//! `gather_rows(table, ids)`, also written `embedding(table, ids)`: embedding lookup. `table` is a
//! `[vocab, dim]` matrix, `ids` are integers read from the graph's data through a
//! [`LabelAccessor`] (`fn(&D) -> &[usize]`), and the output is `[lead…, dim]` with one id per row:
//! `y[r, j] = table[ids[r], j]` where `r` runs over the output's rows in row-major order (for
//! `lead = [b, t]`, row `r = b·t_len + t`). `lead` has one to three axes: `[n]` (a matrix of rows,
//! [`GatherRows::new`]) or `[b, t]` (token ids of a batch of sequences, [`GatherRows::with_lead`]).
//!
//! The output shape depends on data, so the op stores its leading dims (from the typed output
//! shape, or given to the constructors). `validate` rejects an id count other than their product
//! and an id `≥ vocab`, naming the row and the id (an error from `compile`, never a panic).
//!
//! VJP: `single(table, t)` where `t` starts as `zeros([vocab, dim])` and, for `r = 0, 1, …, n − 1`
//! in ascending order, `t[ids[r], j] = t[ids[r], j] + δ[r, j]` (what is already there on the left).
//! A row looked up `k` times thus gets `((0 + δ[r₁]) + δ[r₂]) + … + δ[r_k]` with `r₁ < r₂ < …`, and
//! a row never looked up stays `+0`.

use super::LabelAccessor;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::GatherRowsShape;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Row lookup by integer ids from the data.
pub struct GatherRows<D> {
    parents: [usize; 1],
    ids: LabelAccessor<D>,
    lead: Dims,
}

impl<D> Clone for GatherRows<D> {
    fn clone(&self) -> Self {
        GatherRows { parents: self.parents, ids: self.ids, lead: self.lead }
    }
}

impl<D> core::fmt::Debug for GatherRows<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GatherRows").field("parents", &self.parents).field("lead", &self.lead).finish_non_exhaustive()
    }
}

impl<D> GatherRows<D> {
    /// `gather_rows(table, ids(data))` for the position `table`, expecting `count` ids: an output
    /// `[count, dim]`.
    pub fn new(table: usize, ids: LabelAccessor<D>, count: usize) -> Self {
        GatherRows { parents: [table], ids, lead: Dims::vector(count) }
    }

    /// `embedding(table, ids(data))` for the position `table` with an output `[lead…, dim]`
    /// (`lead` of rank 1 to 3; another rank is an error from `push`), expecting one id per row.
    pub fn with_lead(table: usize, ids: LabelAccessor<D>, lead: Dims) -> Self {
        GatherRows { parents: [table], ids, lead }
    }
}

/// `validate` of [`GatherRows`] with leading dims `lead`, over a table of `vocab` rows: one id per
/// row of `lead` (a run-time dim among them takes its size from the ids), each `< vocab`. Not
/// generic (nor is [`lead_of`]), so compiled once, here.
fn check_ids(lead: Dims, ids: &[usize], vocab: usize) -> Result<(), String> {
    let rows = crate::shape::resolve_lead(lead, ids.len()).and_then(|lead| lead.checked_numel());
    if rows != Some(ids.len()) {
        return Err(match lead.as_slice().iter().any(|&d| crate::shape::run_time_index(d).is_some()) {
            true => format!(
                "gather_rows expects one id per row of the leading dims {}, got {} ids",
                crate::shape::named_dims(lead, &[]),
                ids.len()
            ),
            // `usize::MAX` when the count overflows (no id list has that many).
            false => {
                format!("gather_rows expects {} ids, got {}", lead.checked_numel().unwrap_or(usize::MAX), ids.len())
            }
        });
    }
    match ids.iter().enumerate().find(|(_, &id)| id >= vocab) {
        Some((r, id)) => Err(format!("gather_rows id {id} at row {r} is out of range for a table of {vocab} rows")),
        None => Ok(()),
    }
}

/// The declared leading dims `lead` and, for `ids` ids, the actual ones (`data_dims`).
fn lead_of(lead: Dims, ids: usize) -> Result<(Dims, Dims), String> {
    match crate::shape::resolve_lead(lead, ids) {
        Some(actual) => Ok((lead, actual)),
        None => {
            let fixed: Vec<usize> =
                lead.as_slice().iter().copied().filter(|&d| crate::shape::run_time_index(d).is_none()).collect();
            let per = fixed.iter().try_fold(1usize, |p, &d| p.checked_mul(d)).unwrap_or(usize::MAX);
            Err(format!(
                "gather_rows takes its run-time dim from its id count, one id per row of its leading dims: {ids} ids are not a whole number of groups of {per} ids (its fixed leading dims {fixed:?})"
            ))
        }
    }
}

impl<A: Scalar, D: 'static> CompactOp<A, D> for GatherRows<D> {
    fn name(&self) -> &'static str {
        "gather_rows"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let d = super::dims_at("gather_rows", prefix, self.parents[0])?;
        super::ruled(super::spec_rules::gather_rows(d.as_slice(), self.lead.as_slice()))
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        check_ids(self.lead, (self.ids)(data), ctx[self.parents[0]].dims().as_slice()[0])
    }
    fn data_dims(&self, data: &D) -> Result<Option<(Dims, Dims)>, String> {
        lead_of(self.lead, (self.ids)(data).len()).map(Some)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let dim = ctx[self.parents[0]].dims().as_slice()[1];
        let mut y = Vec::with_capacity((self.ids)(data).len().saturating_mul(dim));
        self.forward_into(ctx, data, &mut y);
        // The leading dims with a run-time dim's size taken from the ids (`validate` checked them).
        let lead = crate::shape::resolve_lead(self.lead, (self.ids)(data).len()).unwrap_or(self.lead);
        let dims = match *lead.as_slice() {
            [n] => Some(Dims::matrix(n, dim)),
            [b, t] => Dims::new(&[b, t, dim]),
            [b, t, u] => Dims::new(&[b, t, u, dim]),
            _ => None,
        };
        RawTensor::from_parts(dims.unwrap_or(Dims::matrix(y.len() / dim.max(1), dim)), y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], data: &D, out: &mut Vec<A>) {
        let table = &ctx[self.parents[0]];
        let dim = table.dims().as_slice()[1];
        for &id in (self.ids)(data) {
            out.extend_from_slice(&table.data()[id * dim..(id + 1) * dim]);
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let dim = d.as_slice()[1];
        let ids = (self.ids)(saved.data);
        let mut t = c.tensor(d, |_| A::zero());
        let td = t.data_mut();
        for (&id, row) in ids.iter().zip(g.data().chunks_exact(dim.max(1))) {
            for (acc, v) in td[id * dim..(id + 1) * dim].iter_mut().zip(row) {
                *acc = A::pinned_add(acc.clone(), v.clone());
            }
        }
        c.single(self.parents[0], t)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::GatherRows { table: self.parents[0], ids: self.ids, lead: self.lead.as_slice().to_vec() })
    }
}

/// Typed `gather_rows(table, ids)` (alias `embedding`): a `(V, E)` table → rows `(N, E)`,
/// `(B, T, E)` or `(B, T, U, E)` for the leading dims `Lead` = `(N,)`, `(B, T)` or `(B, T, U)`
/// ([`GatherRowsShape`]), ids read from the data by `ids` (checked by `compile`: one id per row,
/// each `< V`).
pub fn gather_rows<A: Scalar, D: 'static, S: GatherRowsShape<Lead, Output = O>, Lead, O: Shape, Br>(
    table: Position<S, Br>,
    ids: LabelAccessor<D>,
) -> Compact<GatherRows<D>, A, D, O> {
    let out = O::dims();
    let lead = Dims::new(&out.as_slice()[..out.rank().saturating_sub(1)]).unwrap_or(Dims::vector(0));
    Compact::new(GatherRows::with_lead(table.index(), ids, lead), &[&table])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::graph::{RawGraph, RawNode};
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::saved::RawSavedGraph;

    fn fixed(_: &()) -> &[usize] {
        &[2, 0, 2, 3]
    }

    fn same(_: &()) -> &[usize] {
        &[0, 0, 0]
    }

    #[test]
    fn value() {
        let table = sample(&[4, 3], 360);
        let y = forward(GatherRows::new(0, fixed, 4), std::slice::from_ref(&table));
        assert_eq!(y.dims(), Dims::matrix(4, 3));
        for (r, &id) in fixed(&()).iter().enumerate() {
            assert_eq!(bits(&y)[r * 3..(r + 1) * 3], bits(&table)[id * 3..(id + 1) * 3]);
        }
    }

    #[test]
    fn gradient() {
        gradcheck(GatherRows::new(0, fixed, 4), &[sample(&[4, 3], 361)], 1e-7);
        gradcheck(GatherRows::new(0, fixed, 4), &[sample(&[5, 1], 362)], 1e-7);
        gradcheck(GatherRows::new(0, same, 3), &[sample(&[2, 2], 363)], 1e-7);
    }

    #[test]
    fn scatter_add_is_ascending_from_plus_zero() {
        // Row 0 gets ((0 + 1) + 1e16) + -1e16 = 0 (descending order would give 1); row 1 is never
        // looked up and stays +0; a -0.0 cotangent becomes 0 + -0 = +0.
        let table = sample(&[2, 2], 364);
        let g = RawTensor::from_vec(Dims::matrix(3, 2), vec![1.0, -0.0, 1e16, -0.0, -1e16, -0.0]).unwrap();
        let t = vjp(GatherRows::new(0, same, 3), &[table], &g);
        assert_eq!(bits(&t[0]), [0, 0, 0, 0]);
        let g = RawTensor::from_vec(Dims::matrix(3, 1), vec![0.5, f64::from_bits(0x7ff8_0000_0000_0bad), 2.0]).unwrap();
        let t = vjp(GatherRows::new(0, same, 3), &[sample(&[2, 1], 365)], &g);
        assert_eq!(bits(&t[0]), [0x7ff8_0000_0000_0bad, 0]);
    }

    fn owned(d: &Vec<usize>) -> &[usize] {
        d
    }

    fn compile_error(ids: Vec<usize>) -> Error {
        let mut graph = RawGraph::<f64, Vec<usize>>::new(vec![Dims::matrix(3, 2)]);
        graph.push(RawNode::compact(GatherRows::new(0, owned, 2))).unwrap();
        match RawSavedGraph::compile(&graph, vec![sample(&[3, 2], 366)], ids) {
            Err(e) => e,
            Ok(_) => panic!("compile accepted bad ids"),
        }
    }

    #[test]
    fn bad_ids_are_compile_errors() {
        let mut graph = RawGraph::<f64, Vec<usize>>::new(vec![Dims::matrix(3, 2)]);
        graph.push(RawNode::compact(GatherRows::new(0, owned, 2))).unwrap();
        assert!(RawSavedGraph::compile(&graph, vec![sample(&[3, 2], 366)], vec![2, 2]).is_ok());
        match compile_error(vec![1, 3]) {
            Error::Node { node, op, message, .. } => {
                assert_eq!((node, op.as_str()), (0, "gather_rows"));
                assert_eq!(message, "gather_rows id 3 at row 1 is out of range for a table of 3 rows");
            }
            e => panic!("unexpected error {e}"),
        }
        match compile_error(vec![0, 1, 2]) {
            Error::Node { message, .. } => assert_eq!(message, "gather_rows expects 2 ids, got 3"),
            e => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn non_matrix_table_is_rejected() {
        let op = GatherRows::<()>::new(0, fixed, 4);
        let e = <GatherRows<()> as CompactOp<f64, ()>>::output_dims(&op, &[Dims::vector(3)]);
        assert_eq!(e.unwrap_err(), "gather_rows needs a table matrix (vocab × dim), got shape [3]");
    }

    #[test]
    fn typed_output_shape_gives_the_id_count() {
        use crate::graph::GraphData;
        use typenum::{U2, U3, U4, U5};
        let (g, table) = GraphData::<f64, ()>::new().input::<(U5, U3)>();
        let (g, y) = g.push(gather_rows::<f64, (), _, (U4,), _, _>(table, fixed));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[y.index()], Dims::matrix(4, 3));
        let (g, z) = g.push(gather_rows::<f64, (), _, (U2, U2), _, _>(table, fixed));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[z.index()].as_slice(), [2, 2, 3]);
    }

    #[test]
    fn batched_ids_fill_rows_in_row_major_order() {
        // ids [2, 0, 2, 3] as a [2, 2] batch: output [2, 2, 3], row (b, t) = table[ids[2b + t]].
        let table = sample(&[4, 3], 367);
        let op = GatherRows::with_lead(0, fixed, Dims::matrix(2, 2));
        let y = forward(op.clone(), std::slice::from_ref(&table));
        assert_eq!(y.dims().as_slice(), [2, 2, 3]);
        for (r, &id) in fixed(&()).iter().enumerate() {
            assert_eq!(bits(&y)[r * 3..(r + 1) * 3], bits(&table)[id * 3..(id + 1) * 3]);
        }
        gradcheck(op, &[table], 1e-7);
        let four = GatherRows::<()>::with_lead(0, fixed, Dims::new(&[1, 1, 2, 2]).unwrap());
        let e = <GatherRows<()> as CompactOp<f64, ()>>::output_dims(&four, &[Dims::matrix(4, 3)]);
        assert!(e.unwrap_err().contains("got 4 leading axes"));
    }
}
