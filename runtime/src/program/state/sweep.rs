//! The steps of a reverse sweep (SEMANTICS §3, §7, as the [parent module](super) describes
//! them): a node's cotangent, its VJP through the concrete op, each support position's
//! accumulation, an input's final gradient; and the runtime's own single-output loop for models
//! whose supports are known only at run time.

use core::ops::Range;

use super::{apply_pending, apply_pending_scalar, take_buffer, ProgramState};
use crate::contributions::{Contrib, Sink};
use crate::error::Error;
use crate::gradients::Stored;
use crate::graph::RawGraph;
use crate::guard::guarded;
use crate::program::bound::{Bound, BoundGraph};
use crate::saved::View;
use crate::scalar::Scalar;
use crate::tensor::RawTensor;

/// [`Error::Vjp`] of node `k`, op `op` (built only on the error path).
#[cold]
pub(super) fn vjp_error(k: usize, op: &str, message: String) -> Error {
    Error::Vjp { node: k, op: op.to_owned(), message }
}

impl<A: Scalar> ProgramState<A> {
    /// The final gradient of position `p`: its slot with the uniforms of the `pending` visits
    /// applied, as a tensor (a uniform slot is filled into a reused buffer).
    #[doc(hidden)]
    pub fn cotangent(&mut self, p: usize, pending: Range<usize>) -> RawTensor<A> {
        let slot = core::mem::replace(&mut self.slots[p], Stored::Uniform(A::zero(), self.dims[p]));
        let us = &self.uniforms[pending];
        match slot {
            Stored::Tensor(mut t) => {
                apply_pending(t.data_mut(), us);
                t
            }
            Stored::Uniform(mut v, d) => {
                apply_pending_scalar(&mut v, us);
                let mut buf = self.take_buf(p);
                buf.extend((0..d.numel()).map(|_| v.clone()));
                RawTensor::from_parts(d, buf)
            }
        }
    }

    /// Gives back the cotangent of position `p` once its node has run.
    #[doc(hidden)]
    pub fn release(&mut self, p: usize, g: RawTensor<A>) {
        self.give_buf(p, g);
    }

    /// The VJP of built-in node `k` (visit `visit`) at cotangent `g`: its contributions, built
    /// by the node's op; records their uniform. Returns the root description for
    /// [`accumulate`](Self::accumulate).
    ///
    /// # Errors
    /// [`Error::Vjp`] when the op panics (say an integer overflow in its arithmetic, caught at the
    /// node as the runtime passes catch it) or returns a handle that is not one of its
    /// contributions.
    #[doc(hidden)]
    pub fn vjp(
        &mut self,
        visit: usize,
        k: usize,
        graph: &(dyn BoundGraph<A> + Sync),
        g: &RawTensor<A>,
    ) -> Result<Contrib, Error> {
        let p = self.inputs + k;
        self.contributions.clear();
        let (prefix, output) = (&self.values[..p], &self.values[p]);
        let c = &mut self.contributions;
        let root = match guarded("the VJP", || graph.contributions(k, prefix, output, g, c)) {
            Ok(root) if c.is_handle(root) => root,
            Ok(_) => {
                return Err(vjp_error(
                    k,
                    graph.name(k),
                    "returned a handle that is not one of its contributions".into(),
                ))
            }
            Err(message) => return Err(vjp_error(k, graph.name(k), message)),
        };
        self.uniforms[visit] = self.contributions.uniform(root);
        Ok(root)
    }

    /// Position `q` becomes `(slot_q + the uniforms of the pending visits) + read(q)` for the last
    /// [`vjp`](Self::vjp) (of node `k`, named `op` in errors), `+ read` fused with the reader.
    ///
    /// # Errors
    /// [`Error::Vjp`] when the contribution does not fit the position.
    #[doc(hidden)]
    pub fn accumulate(
        &mut self,
        k: usize,
        op: &str,
        root: Contrib,
        q: usize,
        pending: Range<usize>,
        g: &RawTensor<A>,
    ) -> Result<(), Error> {
        let vjp_error = |message| Error::Vjp { node: k, op: op.to_owned(), message };
        let c = &mut self.contributions;
        c.check_dims(root, q, g, self.dims[q]).map_err(vjp_error)?;
        let us = &self.uniforms[pending];
        match &mut self.slots[q] {
            Stored::Tensor(t) => {
                apply_pending(t.data_mut(), us);
                c.read_into(root, q, g, Sink::Accumulate(t.data_mut())).map_err(vjp_error)?;
            }
            Stored::Uniform(v, d) => {
                apply_pending_scalar(v, us);
                let mut out = take_buffer(self.plan.gradient(self.pass), &mut self.gradient_pool, q);
                c.read_into(root, q, g, Sink::OntoUniformInto(v, &mut out)).map_err(vjp_error)?;
                let d = *d;
                self.slots[q] = Stored::Tensor(RawTensor::from_parts(d, out));
            }
        }
        Ok(())
    }

    /// Finishes input `q`: its final gradient (pending uniforms applied) becomes the run's result.
    /// A uniform is written into the result's buffer, unless that buffer already holds it
    /// everywhere (storage-equal: the same bits).
    #[doc(hidden)]
    pub fn input_gradient(&mut self, q: usize, pending: Range<usize>) {
        let d = self.dims[q];
        match core::mem::replace(&mut self.slots[q], Stored::Uniform(A::zero(), d)) {
            Stored::Tensor(mut t) => {
                apply_pending(t.data_mut(), &self.uniforms[pending]);
                let old = core::mem::replace(&mut self.input_gradients[q], t);
                self.give_buf(q, old);
                self.input_fills[q] = None;
            }
            Stored::Uniform(mut v, _) => {
                apply_pending_scalar(&mut v, &self.uniforms[pending]);
                let holds = A::HAS_STORAGE_EQUALITY && self.input_fills[q].as_ref().is_some_and(|u| u.storage_eq(&v));
                if !holds {
                    let mut buf = self.input_gradients[q].take_data();
                    buf.clear();
                    buf.extend((0..d.numel()).map(|_| v.clone()));
                    self.input_gradients[q] = RawTensor::from_parts(d, buf);
                    self.input_fills[q] = Some(v);
                }
            }
        }
    }

    /// The single-output pass from position `output` run by the runtime's own loop
    /// (`RawSavedGraph::backprop_from`, SEMANTICS §7) over this run's values and slots: for a
    /// model with user compact ops, whose supports — and so the nodes the pass reaches — are
    /// declared only when the graph is built. Every input's gradient is written. (The values the
    /// pass reads are kept: the plan keeps every value below a user op.)
    ///
    /// # Errors
    /// As `backprop_from`: [`Error::Vjp`] for a malformed VJP.
    #[doc(hidden)]
    pub fn sweep_from_runtime<D: 'static>(
        &mut self,
        graph: &RawGraph<A, D>,
        data: &D,
        output: usize,
    ) -> Result<(), Error> {
        let slots: Vec<Stored<A>> = self
            .slots
            .iter_mut()
            .zip(&self.dims)
            .map(|(s, &d)| core::mem::replace(s, Stored::Uniform(A::zero(), d)))
            .collect();
        let bound = Bound { graph, data };
        let gradients = View::bound(&bound, &self.dims, &self.values).inputs_from(slots, output)?;
        for (q, t) in gradients.into_vec().into_iter().enumerate().take(self.inputs) {
            self.input_gradients[q] = t;
            self.input_fills[q] = None;
        }
        Ok(())
    }
}
