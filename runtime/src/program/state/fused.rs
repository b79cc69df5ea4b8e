//! The VJP paths that do not go through [`vjp`](ProgramState::vjp) and
//! [`accumulate`](ProgramState::accumulate): products computed straight into their gradient
//! buffers, windows added in one pass, and nodes run through the graph's own node (opaque closures,
//! user compact ops), which touch their whole prefix. Each makes the same additions in the same
//! order as the general path.

use core::ops::Range;

use super::{apply_pending, apply_pending_scalar, take_buffer, ProgramState};
use crate::error::Error;
use crate::gradients::Stored;
use crate::guard::guarded;
use crate::ops::window_vjp as window;
use crate::ops::{ElementwiseVjp, Onto};
use crate::program::bound::BoundGraph;
use crate::scalar::Scalar;
use crate::tensor::RawTensor;

impl<A: Scalar> ProgramState<A> {
    /// The VJP of a product node `k` (`matmul` of distinct operands, `matmul_data`; visit `visit`)
    /// and its accumulation at its support `writes` (position, pending visits; support order):
    /// where every written position still holds a uniform, each contribution is computed straight
    /// into the position's gradient buffer, `stored +` fused into the GEMM's store
    /// ([`ProductVjp`]); from the first position already written on, as [`vjp`](Self::vjp) and
    /// [`accumulate`](Self::accumulate). The same additions in the same order either way.
    ///
    /// # Errors
    /// [`Error::Vjp`] when a contribution does not fit its position or the op panics (caught at
    /// the node, as in [`vjp`](Self::vjp)).
    #[doc(hidden)]
    pub fn vjp_product(
        &mut self,
        visit: usize,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        g: &RawTensor<A>,
        writes: &[(usize, Range<usize>)],
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        let Some(uniform) = graph.product_uniform(k) else {
            return Err(super::sweep::vjp_error(
                k,
                graph.name(k),
                "the plan writes it as a product, it is none".into(),
            ));
        };
        self.uniforms[visit] = uniform;
        if let [(qa, pa), (qb, pb)] = writes {
            if self.side_by_side(*qa, *qb) {
                return self.product_pair(k, graph, g, [(*qa, pa.clone()), (*qb, pb.clone())]);
            }
        }
        for (i, (q, pending)) in writes.iter().enumerate() {
            let q = *q;
            let Stored::Uniform(v, _) = &mut self.slots[q] else {
                // A position already written: the contributions, built once, for the rest.
                let root = self.vjp(visit, k, graph, g)?;
                for (q, pending) in &writes[i..] {
                    self.accumulate(k, graph.name(k), root, *q, pending.clone(), g)?;
                }
                return Ok(());
            };
            apply_pending_scalar(v, &self.uniforms[pending.clone()]);
            let mut out = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, q);
            let (prefix, output) = (&self.values[..p], &self.values[p]);
            guarded("the VJP", || graph.product_onto(k, prefix, output, g, i, v, &mut out))
                .map_err(|m| super::sweep::vjp_error(k, graph.name(k), m))?;
            self.store_written(k, graph, q, out)?;
        }
        Ok(())
    }

    /// Position `q`'s gradient becomes `out`, which node `k` wrote onto its uniform (a product, an
    /// elementwise read); [`Error::Vjp`] when `out` does not have the position's element count.
    fn store_written(
        &mut self,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        q: usize,
        out: Vec<A>,
    ) -> Result<(), Error> {
        let d = self.dims[q];
        if out.len() != d.numel() {
            let message = format!(
                "its contribution at position {q} has {} elements, the position's shape {d} has {}",
                out.len(),
                d.numel()
            );
            return Err(Error::Vjp { node: k, op: graph.name(k).to_owned(), message });
        }
        self.slots[q] = Stored::Tensor(RawTensor::from_parts(d, out));
        Ok(())
    }

    /// Whether a product's two contributions, at distinct positions `qa` and `qb` that both still
    /// hold a uniform, are worth computing at the same time: their multiply-adds (as many for
    /// each) reach `parallel::min_node_work` on two or more threads.
    fn side_by_side(&self, qa: usize, qb: usize) -> bool {
        let uniform = |q: usize| matches!(self.slots.get(q), Some(Stored::Uniform(..)));
        if qa == qb || !uniform(qa) || !uniform(qb) {
            return false;
        }
        crate::ops::Batch::of(self.dims[qa], self.dims[qb]).vjp_products_concurrent()
    }

    /// [`vjp_product`](Self::vjp_product)'s fast path for both operands at once: each position's
    /// pending uniforms applied, then the two products computed side by side, each straight into
    /// its own position's buffer (the same additions as one after the other; a failure of the
    /// first operand is reported before one of the second, as in order).
    fn product_pair(
        &mut self,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        g: &RawTensor<A>,
        writes: [(usize, Range<usize>); 2],
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        let mut stored = Vec::with_capacity(2);
        for (q, pending) in &writes {
            let Stored::Uniform(v, _) = &mut self.slots[*q] else { unreachable!("checked by side_by_side") };
            apply_pending_scalar(v, &self.uniforms[pending.clone()]);
            stored.push(v.clone());
        }
        let [(qa, _), (qb, _)] = &writes;
        let mut out_a = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, *qa);
        let mut out_b = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, *qb);
        let (prefix, output) = (&self.values[..p], &self.values[p]);
        let (ra, rb) = crate::parallel::pair(
            || guarded("the VJP", || graph.product_onto(k, prefix, output, g, 0, &stored[0], &mut out_a)),
            || guarded("the VJP", || graph.product_onto(k, prefix, output, g, 1, &stored[1], &mut out_b)),
        );
        for ((q, _), (result, out)) in writes.iter().zip([(ra, out_a), (rb, out_b)]) {
            result.map_err(|m| super::sweep::vjp_error(k, graph.name(k), m))?;
            self.store_written(k, graph, *q, out)?;
        }
        Ok(())
    }

    /// The read of elementwise node `k` (`op`, the node's [`ElementwiseVjp`]; its uniform
    /// recorded by the caller) added at its support position `q` in one loop:
    /// `(slot_q + the uniforms of the pending visits) + read(q)[e]`, the term computed in the
    /// same loop — the additions of [`vjp`](Self::vjp) and [`accumulate`](Self::accumulate),
    /// without building the contributions.
    ///
    /// Not guarded here: [`sweep_rows`](Self::sweep_rows) catches a panic of the op (say an
    /// integer overflow) around its rows and reports it at the node it ran — a guard per call cost
    /// a tenth of a chain of small nodes.
    ///
    /// # Errors
    /// [`Error::Vjp`] when the cotangent does not fit the position.
    pub(crate) fn vjp_elementwise(
        &mut self,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        op: &dyn ElementwiseVjp<A>,
        g: &RawTensor<A>,
        q: usize,
        pending: Range<usize>,
    ) -> Result<(), Error> {
        let d = self.dims[q];
        let vjp_error = |message| super::sweep::vjp_error(k, graph.name(k), message);
        if g.dims() != d {
            return Err(vjp_error(format!(
                "contribution to position {q} has shape {}, the position has shape {d}",
                g.dims()
            )));
        }
        self.write_onto(k, graph, q, pending, |prefix, output, onto| op.read_onto(prefix, output, g, q, onto))
    }

    /// Position `q` becomes `(slot_q + the uniforms of the pending visits) + read[e]` for the read
    /// `write` computes and adds onto the slot in one pass, with node `k`'s saved prefix and
    /// output: onto a dense slot, all but the last pending uniform in their own passes (only for
    /// scalars whose zeros do not collapse) and the last fused with the read's addition; onto a
    /// uniform, its pending uniforms applied to the scalar and the sum written into the
    /// position's planned buffer. The paths that fuse a contribution into its accumulation
    /// (elementwise reads, windows) share it.
    ///
    /// # Errors
    /// `write`'s message, and a written tensor of the wrong length, as [`Error::Vjp`].
    fn write_onto(
        &mut self,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        q: usize,
        pending: Range<usize>,
        write: impl FnOnce(&[RawTensor<A>], &RawTensor<A>, Onto<'_, A>) -> Result<(), String>,
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        let (prefix, output) = (&self.values[..p], &self.values[p]);
        let vjp_error = |message| super::sweep::vjp_error(k, graph.name(k), message);
        let us = super::effective(&self.uniforms[pending]);
        match &mut self.slots[q] {
            Stored::Tensor(t) => {
                let (last, before) = us.split_last().map_or((None, us), |(l, b)| (Some(l), b));
                apply_pending(t.data_mut(), before);
                write(prefix, output, Onto::Slot(t.data_mut(), last)).map_err(vjp_error)
            }
            Stored::Uniform(v, _) => {
                apply_pending_scalar(v, us);
                let mut out = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, q);
                write(prefix, output, Onto::Uniform(v, &mut out)).map_err(vjp_error)?;
                self.store_written(k, graph, q, out)
            }
        }
    }

    /// The VJP of a window node `k` (`slice`; visit `visit`) added at its one support position
    /// `q` in one pass: `(slot_q + the uniforms of the pending visits) + t[e]`, `t` the cotangent
    /// in the op's [`Window`](crate::ops::Window) of `q` and zeros around it — the additions of
    /// [`vjp`](Self::vjp) and [`accumulate`](Self::accumulate), without building `t`.
    ///
    /// # Errors
    /// [`Error::Vjp`] when the window does not fit the position or the cotangent.
    #[doc(hidden)]
    pub fn vjp_window(
        &mut self,
        visit: usize,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        g: &RawTensor<A>,
        q: usize,
        pending: Range<usize>,
    ) -> Result<(), Error> {
        self.uniforms[visit] = A::zero();
        let d = self.dims[q];
        let Some(w) = graph.window(k, d) else {
            return Err(super::sweep::vjp_error(k, graph.name(k), "the plan writes it as a window, it is none".into()));
        };
        if !w.fits(d.numel(), g.numel()) {
            let message = format!(
                "its window {w:?} does not fit position {q} of shape {d} and a cotangent of shape {}",
                g.dims()
            );
            return Err(Error::Vjp { node: k, op: graph.name(k).to_owned(), message });
        }
        self.write_onto(k, graph, q, pending, |_, _, onto| {
            match onto {
                Onto::Slot(x, u) => window::accumulate(x, u, g.data(), w),
                Onto::Uniform(v, out) => window::onto(v, g.data(), w, out),
            }
            Ok(())
        })
    }

    /// The VJP of node `k` (visit `visit`) through the graph's own node, which touches its whole
    /// prefix: an opaque node adds its dense VJP to every position below it (SEMANTICS §6
    /// `add_dense`); a user compact op adds its contributions at its support and its uniform
    /// everywhere else. `pending[q]` are the pending visits of each position `q` below the node.
    ///
    /// # Errors
    /// [`Error::Vjp`] for a VJP that does not fit the prefix or panics (caught at the node; the
    /// state stays usable for the next run).
    #[doc(hidden)]
    pub fn vjp_node(
        &mut self,
        visit: usize,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        g: &RawTensor<A>,
        pending: &[Range<usize>],
    ) -> Result<(), Error> {
        let p = self.inputs + k;
        let name = graph.name(k);
        let vjp_error = |message: String| Error::Vjp { node: k, op: name.to_owned(), message };
        self.uniforms[visit] = A::zero();
        if graph.is_compact(k) {
            self.contributions.clear();
            let (prefix, output) = (&self.values[..p], &self.values[p]);
            let c = &mut self.contributions;
            let root = guarded("the VJP", || graph.contributions(k, prefix, output, g, c)).map_err(vjp_error)?;
            if !c.is_handle(root) {
                return Err(vjp_error("returned a handle that is not one of its contributions".to_owned()));
            }
            let u = self.contributions.uniform(root);
            let mut support = Vec::new();
            self.contributions.support_into(root, &mut support);
            if let Some(&q) = support.iter().find(|&&q| q >= p) {
                return Err(vjp_error(format!("contributes to position {q}, outside its prefix of {p}")));
            }
            for (q, pending) in pending.iter().enumerate().take(p) {
                if support.contains(&q) {
                    self.accumulate(k, name, root, q, pending.clone(), g)?;
                } else {
                    // One more uniform, applied now: the position's pending run ends here.
                    let us = &self.uniforms[pending.clone()];
                    match &mut self.slots[q] {
                        Stored::Tensor(t) => {
                            apply_pending(t.data_mut(), us);
                            apply_pending(t.data_mut(), core::slice::from_ref(&u));
                        }
                        Stored::Uniform(v, _) => {
                            apply_pending_scalar(v, us);
                            *v = A::pinned_add(v.clone(), u.clone());
                        }
                    }
                }
            }
            return Ok(());
        }
        let prefix = &self.values[..p];
        let out = guarded("the VJP", || graph.opaque_vjp(k, prefix, g)).map_err(vjp_error)?.unwrap_or_default();
        if out.len() != p {
            return Err(vjp_error(format!("returned {} tensors for a prefix of {p}", out.len())));
        }
        if let Some((q, t)) = out.iter().enumerate().find(|(q, t)| t.dims() != self.dims[*q]) {
            return Err(vjp_error(format!(
                "returned shape {} at position {q}, which has shape {}",
                t.dims(),
                self.dims[q]
            )));
        }
        for (q, t) in out.iter().enumerate() {
            let slot = self.dense_slot(q, pending[q].clone());
            for (x, y) in slot.iter_mut().zip(t.data()) {
                *x = A::pinned_add(x.clone(), y.clone());
            }
        }
        Ok(())
    }

    /// The slot of `q` made dense, with its pending uniforms applied.
    fn dense_slot(&mut self, q: usize, pending: Range<usize>) -> &mut [A] {
        let us = &self.uniforms[pending];
        if let Stored::Uniform(v, d) = &mut self.slots[q] {
            apply_pending_scalar(v, us);
            let mut buf = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, q);
            buf.extend((0..d.numel()).map(|_| v.clone()));
            let d = *d;
            self.slots[q] = Stored::Tensor(RawTensor::from_parts(d, buf));
        } else if let Stored::Tensor(t) = &mut self.slots[q] {
            apply_pending(t.data_mut(), us);
        }
        match &mut self.slots[q] {
            Stored::Tensor(t) => t.data_mut(),
            Stored::Uniform(..) => &mut [],
        }
    }
}
