//! `gather_rows(table, ids)`: embedding lookup. `table` is a `[vocab, dim]` matrix, `ids` are
//! integers read from the graph's data through a [`LabelAccessor`] (`fn(&D) -> &[usize]`), and
//! the output is the `[ids.len(), dim]` matrix `y[r, j] = table[ids[r], j]`.
//!
//! The output shape depends on data, so the op stores the expected id count `n` (from the typed
//! output shape `(N, E)`, or given to [`GatherRows::new`]). `validate` rejects a count other than
//! `n` and an id `≥ vocab`, naming the row and the id (an error from `compile`, never a panic).
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
use typenum::Unsigned;

/// Row lookup by integer ids from the data.
pub struct GatherRows<D> {
    parents: [usize; 1],
    ids: LabelAccessor<D>,
    count: usize,
}

impl<D> Clone for GatherRows<D> {
    fn clone(&self) -> Self {
        GatherRows { parents: self.parents, ids: self.ids, count: self.count }
    }
}

impl<D> core::fmt::Debug for GatherRows<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GatherRows").field("parents", &self.parents).field("count", &self.count).finish_non_exhaustive()
    }
}

impl<D> GatherRows<D> {
    /// `gather_rows(table, ids(data))` for the position `table`, expecting `count` ids.
    pub fn new(table: usize, ids: LabelAccessor<D>, count: usize) -> Self {
        GatherRows { parents: [table], ids, count }
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
        super::ruled(exactgrad_spec::rules::gather_rows(d.as_slice(), self.count))
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &D) -> Result<(), String> {
        let vocab = ctx[self.parents[0]].dims().as_slice()[0];
        let ids = (self.ids)(data);
        // A run-time count (a stand-in) was bound from the ids by `compile`.
        if ids.len() != self.count && crate::shape::run_time_index(self.count).is_none() {
            return Err(format!("gather_rows expects {} ids, got {}", self.count, ids.len()));
        }
        match ids.iter().enumerate().find(|(_, &id)| id >= vocab) {
            Some((r, id)) => Err(format!("gather_rows id {id} at row {r} is out of range for a table of {vocab} rows")),
            None => Ok(()),
        }
    }
    fn data_dims(&self, data: &D) -> Option<(Dims, Dims)> {
        Some((Dims::vector(self.count), Dims::vector((self.ids)(data).len())))
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let table = &ctx[self.parents[0]];
        let dim = table.dims().as_slice()[1];
        let ids = (self.ids)(data);
        let mut y = Vec::with_capacity(ids.len() * dim);
        for &id in ids {
            y.extend_from_slice(&table.data()[id * dim..(id + 1) * dim]);
        }
        RawTensor::from_parts(Dims::matrix(ids.len(), dim), y)
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
        Some(RefOp::GatherRows { table: self.parents[0], ids: self.ids, count: self.count })
    }
}

/// Typed `gather_rows(table, ids)`: a `(V, E)` table → `(N, E)` rows ([`GatherRowsShape`]), ids
/// read from the data by `ids` (checked by `compile`: `N` ids, each `< V`).
pub fn gather_rows<A: Scalar, D: 'static, S: GatherRowsShape<N, Output = O>, N: Unsigned + 'static, O: Shape, Br>(
    table: Position<S, Br>,
    ids: LabelAccessor<D>,
) -> Compact<GatherRows<D>, A, D, O> {
    Compact::new(GatherRows::new(table.index(), ids, N::USIZE), &[&table])
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
        use typenum::{U3, U4, U5};
        let (g, table) = GraphData::<f64, ()>::new().input::<(U5, U3)>();
        let (g, y) = g.push(gather_rows::<f64, (), _, U4, _, _>(table, fixed));
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[y.index()], Dims::matrix(4, 3));
    }
}
