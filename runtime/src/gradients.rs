//! The gradient context of the indexed passes (SEMANTICS §6): stored tensors, epochs, a clock and a
//! history of deferred uniforms.

use crate::contributions::{Contrib, Contributions, Sink};
use crate::deferred::History;
use crate::graph::buffers::Spare;
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// One position's stored tensor: a dense tensor, or `full(dims, v)` kept as the uniform `v` (seed
/// packs are mostly zeros; a position nobody has written to costs no buffer until it is read).
#[derive(Clone, Debug)]
pub(crate) enum Stored<A> {
    Uniform(A, Dims),
    Tensor(RawTensor<A>),
}

impl<A> Stored<A> {
    pub(crate) fn dims(&self) -> Dims {
        match self {
            Stored::Uniform(_, d) => *d,
            Stored::Tensor(t) => t.dims(),
        }
    }

    /// A uniform slot of dims `declared` takes the dims `bound` (a seed built from a graph's
    /// declared dims, used on an execution whose run-time dims are bound).
    pub(crate) fn rebind_uniform(&mut self, declared: Dims, bound: Dims) {
        if let Stored::Uniform(_, d) = self {
            if *d == declared {
                *d = bound;
            }
        }
    }
}

impl<A: Scalar> Stored<A> {
    pub(crate) fn into_tensor(self) -> RawTensor<A> {
        match self {
            Stored::Uniform(v, d) => RawTensor::full(d, v),
            Stored::Tensor(t) => t,
        }
    }

    /// Makes the slot dense (filling a spare buffer when it was `Full`) and returns its elements.
    fn make_dense(&mut self, spare: &mut Spare<A>) -> &mut [A] {
        if let Stored::Uniform(v, d) = self {
            *self = Stored::Tensor(full_in(spare, *d, v));
        }
        match self {
            Stored::Tensor(t) => t.data_mut(),
            Stored::Uniform(..) => unreachable!("made dense above"),
        }
    }
}

/// `full(dims, v)` in a recycled buffer when one is spare.
pub(crate) fn full_in<A: Scalar>(spare: &mut Spare<A>, dims: Dims, v: &A) -> RawTensor<A> {
    let mut buf = spare.take(dims.numel());
    buf.extend((0..dims.numel()).map(|_| v.clone()));
    RawTensor::from_parts(dims, buf)
}

/// `stored`, `epochs`, `clock` and `history` of SEMANTICS §6. The logical gradient at `p` is
/// `stored[p]` followed by the `clock - epoch[p]` most recent uniforms, applied oldest first.
///
/// Only scalars with storage equality may use it (the fixed-point replay needs it); the passes
/// check that before building one.
#[derive(Clone, Debug)]
pub struct GradientContext<A> {
    slots: Vec<Stored<A>>,
    epochs: Vec<usize>,
    history: History<A>,
    distinct: Vec<usize>,
    /// Buffers of finished gradients (and those a pass lends it from its graph), reused for
    /// positions that become dense.
    spare: Spare<A>,
}

impl<A: Scalar> GradientContext<A> {
    /// `of_pack(seed)`: stored = seed, every epoch 0, clock 0, empty history.
    pub fn of_pack(seed: Vec<RawTensor<A>>) -> Self {
        Self::of_stored(seed.into_iter().map(Stored::Tensor).collect())
    }

    pub(crate) fn of_stored(slots: Vec<Stored<A>>) -> Self {
        let epochs = vec![0; slots.len()];
        GradientContext { slots, epochs, history: History::new(), distinct: Vec::new(), spare: Spare::new(SPARE_LIMIT) }
    }

    /// Number of positions still held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// `true` when no position is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The clock: number of uniforms pushed since the last reset.
    #[must_use]
    pub fn clock(&self) -> usize {
        self.history.clock()
    }

    /// Brings position `q` up to date (replays its pending uniforms) without changing its logical
    /// value.
    fn materialise(&mut self, q: usize) {
        let epoch = self.epochs[q];
        if epoch < self.history.clock() {
            match &mut self.slots[q] {
                Stored::Uniform(v, _) => self.history.replay_scalar(v, epoch),
                Stored::Tensor(t) => self.history.replay(t.data_mut(), epoch),
            }
            self.epochs[q] = self.history.clock();
        }
    }

    /// The logical value at `q`, materialised.
    ///
    /// # Panics
    /// When `q` is not held (`q >= len()`), as for a slice.
    pub fn get(&mut self, q: usize) -> RawTensor<A> {
        self.materialise(q);
        self.slots[q].clone().into_tensor()
    }

    /// `add_contributions(c)`: every support position `q` (each distinct one once: duplicates compute
    /// the same value from the same snapshot) becomes `add(logical(q), c.read(q))`, computed in
    /// place with the `+` of the reader fused in; then `c.uniform` is pushed in O(1) for every other
    /// position.
    ///
    /// # Errors
    /// When `root` is not a handle of `c` ([`Contributions::is_handle`]; the context is then
    /// unchanged), a support position is not held or a contribution has the wrong shape (the
    /// context is then left partly updated).
    pub fn add_contributions(
        &mut self,
        c: &mut Contributions<A>,
        root: Contrib,
        cotangent: &RawTensor<A>,
    ) -> Result<(), String> {
        if !c.is_handle(root) {
            return Err(format!("{root:?} is not a handle of these contributions"));
        }
        let mut distinct = core::mem::take(&mut self.distinct);
        distinct.clear();
        c.support_into(root, &mut distinct);
        dedup_small(&mut distinct);
        let result = self.add_at(c, root, cotangent, &distinct);
        self.distinct = distinct;
        result?;
        self.history.push(c.uniform(root));
        let clock = self.history.clock();
        for &q in &self.distinct {
            self.epochs[q] = clock;
        }
        Ok(())
    }

    fn add_at(
        &mut self,
        c: &mut Contributions<A>,
        root: Contrib,
        cotangent: &RawTensor<A>,
        at: &[usize],
    ) -> Result<(), String> {
        for &q in at {
            if q >= self.slots.len() {
                return Err(format!("contributes to position {q}, outside its prefix of {}", self.slots.len()));
            }
            c.check_dims(root, q, cotangent, self.slots[q].dims())?;
            self.materialise(q);
            match &mut self.slots[q] {
                Stored::Tensor(t) => c.read_into(root, q, cotangent, Sink::Accumulate(t.data_mut()))?,
                Stored::Uniform(v, d) => {
                    // `full(v) + read`, written once (no buffer filled with `v` first).
                    let mut out = self.spare.take(d.numel());
                    c.read_into(root, q, cotangent, Sink::OntoUniform(v, &mut out))?;
                    self.slots[q] = Stored::Tensor(RawTensor::from_parts(*d, out));
                }
            }
        }
        Ok(())
    }

    /// The distinct support positions of the last `add_contributions`.
    pub(crate) fn last_support(&self) -> &[usize] {
        &self.distinct
    }

    /// `add_dense(pack)`: materialises every position, adds `pack` (stored value left), and resets
    /// history, clock and epochs.
    ///
    /// # Errors
    /// When the pack's length or shapes do not match the positions held.
    pub fn add_dense(&mut self, pack: &[RawTensor<A>]) -> Result<(), String> {
        if pack.len() != self.slots.len() {
            return Err(format!("returned {} tensors for a prefix of {}", pack.len(), self.slots.len()));
        }
        if let Some((q, t)) = pack.iter().enumerate().find(|(q, t)| t.dims() != self.slots[*q].dims()) {
            return Err(format!(
                "returned shape {} at position {q}, which has shape {}",
                t.dims(),
                self.slots[q].dims()
            ));
        }
        for (q, t) in pack.iter().enumerate() {
            self.materialise(q);
            let target = self.slots[q].make_dense(&mut self.spare);
            for (x, y) in target.iter_mut().zip(t.data()) {
                *x = A::pinned_add(x.clone(), y.clone());
            }
        }
        self.history.reset();
        self.epochs.iter_mut().for_each(|e| *e = 0);
        Ok(())
    }

    /// `pop()`: removes the last position and returns its logical value.
    ///
    /// # Panics
    /// When the context is empty ([`is_empty`](Self::is_empty)), as for `Vec::pop(…).unwrap()`.
    /// The passes pop exactly the positions they hold, one per node.
    pub fn pop(&mut self) -> RawTensor<A> {
        let q = self.slots.len() - 1;
        self.materialise(q);
        self.epochs.pop();
        match self.slots.pop() {
            Some(Stored::Uniform(v, d)) => full_in(&mut self.spare, d, &v),
            Some(Stored::Tensor(t)) => t,
            None => unreachable!("checked non-empty above"),
        }
    }

    /// `pop()` without building a tensor: the last position's slot, up to date (a uniform stays
    /// one scalar).
    pub(crate) fn pop_stored(&mut self) -> Stored<A> {
        let q = self.slots.len() - 1;
        self.materialise(q);
        self.epochs.pop();
        match self.slots.pop() {
            Some(slot) => slot,
            None => unreachable!("checked non-empty above"),
        }
    }

    /// The tensor of a popped slot (a uniform filled into a recycled buffer).
    pub(crate) fn build(&mut self, slot: Stored<A>) -> RawTensor<A> {
        match slot {
            Stored::Uniform(v, d) => full_in(&mut self.spare, d, &v),
            Stored::Tensor(t) => t,
        }
    }

    /// Every position held, up to date, uniforms kept as one scalar.
    pub(crate) fn into_stored(mut self) -> Vec<Stored<A>> {
        for q in 0..self.slots.len() {
            self.materialise(q);
        }
        self.slots
    }

    /// Gives back the buffer of a gradient that is no longer needed, for reuse by later
    /// positions (the inputs-only pass frees each finished gradient this way).
    pub fn recycle(&mut self, t: RawTensor<A>) {
        self.spare.give(t.into_vec());
    }

    /// Lends the context `spare` buffers for its positions (a pass's, from its graph).
    pub(crate) fn lend(&mut self, mut spare: Spare<A>) {
        spare.absorb(core::mem::replace(&mut self.spare, Spare::new(0)));
        self.spare = spare;
    }

    /// The spare buffers left, moved out (a pass gives them back to its graph).
    pub(crate) fn take_spare(&mut self) -> Spare<A> {
        core::mem::replace(&mut self.spare, Spare::new(SPARE_LIMIT))
    }

    /// Every position held, materialised.
    pub fn into_tensors(mut self) -> Vec<RawTensor<A>> {
        for q in 0..self.slots.len() {
            self.materialise(q);
        }
        self.slots.into_iter().map(Stored::into_tensor).collect()
    }
}

/// At most this many spare buffers are kept.
const SPARE_LIMIT: usize = 8;

/// Removes duplicates from a short list, keeping first occurrences in order.
fn dedup_small(v: &mut Vec<usize>) {
    let mut k = 0;
    for i in 0..v.len() {
        if !v[..k].contains(&v[i]) {
            v[k] = v[i];
            k += 1;
        }
    }
    v.truncate(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64]) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::vector(v.len()), v.to_vec()).unwrap()
    }

    #[test]
    fn duplicates_read_the_same_snapshot_and_add_once() {
        // x + x where x = 2^-53 stored 1.0: 1 + (g + g), not (1 + g) + g.
        let g = t(&[f64::powi(2.0, -53)]);
        let mut ctx = GradientContext::of_pack(vec![t(&[1.0])]);
        let mut c = Contributions::new();
        let (a, b) = (c.single_cotangent(0), c.single_cotangent(0));
        let root = c.add(a, b);
        ctx.add_contributions(&mut c, root, &g).unwrap();
        assert_eq!(ctx.pop().data()[0].to_bits(), 0x3FF0_0000_0000_0001);
    }

    #[test]
    fn uniforms_reach_untouched_positions_lazily() {
        let mut ctx =
            GradientContext::of_stored(vec![Stored::Uniform(-0.0, Dims::vector(2)), Stored::Tensor(t(&[-0.0, 5.0]))]);
        let mut c = Contributions::new();
        let root = c.fill(0.0);
        ctx.add_contributions(&mut c, root, &t(&[0.0])).unwrap();
        assert_eq!(ctx.clock(), 1);
        let out = ctx.into_tensors();
        assert_eq!(out[0].data().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [0, 0]);
        assert_eq!(out[1].data()[0].to_bits(), 0);
    }

    /// The writes onto a uniform slot (`stored + read` without a filled buffer, and an owned
    /// contribution updated in place) against `add(full(stored), dense read)` computed by the
    /// dense form, bit for bit, on `-0.0`, NaN payloads and infinities.
    #[test]
    fn writes_onto_uniform_slots_equal_the_dense_sum() {
        let nan = |payload: u64| f64::from_bits(0x7FF8_0000_0000_0000 | payload);
        let stored_values = [-0.0, 0.0, nan(7), f64::INFINITY];
        let own = [-0.0, nan(3), f64::NEG_INFINITY, 2.5];
        let g = t(&[nan(11), -0.0, 1.0, f64::INFINITY]);
        type Build = fn(&mut Contributions<f64>, RawTensor<f64>) -> Contrib;
        let shapes: [Build; 5] = [
            |c, x| c.single(0, x),
            |c, x| {
                let (l, r) = (c.fill(-0.0), c.single(0, x));
                c.add(l, r)
            },
            |c, x| {
                let (l, r) = (c.single(0, x), c.fill(f64::from_bits(0x7FF8_0000_0000_0005)));
                c.add(l, r)
            },
            |c, _| c.single_cotangent(0),
            |c, x| {
                let (l, r) = (c.single(0, x), c.single_cotangent(0));
                c.add(l, r)
            },
        ];
        for stored in stored_values {
            for build in shapes {
                let mut c = Contributions::new();
                let own = c.tensor(Dims::vector(4), |i| own[i]);
                let root = build(&mut c, own);
                let dense = c.dense(root, &[Dims::vector(4)], &g).unwrap();
                let want: Vec<u64> = RawTensor::full(Dims::vector(4), stored)
                    .add(&dense[0])
                    .unwrap()
                    .data()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect();
                let mut ctx = GradientContext::of_stored(vec![Stored::Uniform(stored, Dims::vector(4))]);
                ctx.add_contributions(&mut c, root, &g).unwrap();
                let got: Vec<u64> = ctx.pop().data().iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "stored {stored:?}");
            }
        }
    }

    #[test]
    fn wrong_shape_is_an_error() {
        let mut ctx = GradientContext::of_pack(vec![t(&[1.0, 2.0])]);
        let mut c = Contributions::new();
        let one = c.tensor(Dims::vector(3), |_| 1.0);
        let root = c.single(0, one);
        assert!(ctx.add_contributions(&mut c, root, &t(&[0.0])).is_err());
        assert!(ctx.add_dense(&[t(&[1.0])]).is_err());
    }

    #[test]
    fn dedup_keeps_first_occurrences() {
        let mut v = vec![3, 1, 3, 2, 1];
        dedup_small(&mut v);
        assert_eq!(v, [3, 1, 2]);
    }
}
