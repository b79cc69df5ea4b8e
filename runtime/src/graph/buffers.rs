//! Spare tensor buffers a graph's compiles and passes reuse: the raw API's counterpart of a
//! generated program's planned buffers.
//!
//! `compile` writes each built-in node's value into a buffer drawn from its graph's pool, and a
//! saved graph gives its values' buffers back when it is dropped; the passes draw the buffers of
//! the gradients they build from it, and a training loop gives the last step's gradients back
//! with [`RawGraph::recycle`](crate::RawGraph::recycle). A step of `compile` and a pass then
//! allocates no buffer per node after the first (`tests/raw_allocations.rs`). Buffers only
//! change hands: every value is written in full before it is read, so the bits cannot depend on
//! which buffer a tensor lives in.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Spare buffers by capacity; a take is the smallest one that holds the request (best fit).
#[derive(Clone, Debug)]
pub(crate) struct Spare<A> {
    by_capacity: BTreeMap<usize, Vec<Vec<A>>>,
    count: usize,
    limit: usize,
}

impl<A> Spare<A> {
    /// No buffers; at most `limit` kept.
    pub(crate) fn new(limit: usize) -> Self {
        Spare { by_capacity: BTreeMap::new(), count: 0, limit }
    }

    /// An empty buffer with room for `n` elements: the smallest spare one that holds them, else a
    /// new one.
    pub(crate) fn take(&mut self, n: usize) -> Vec<A> {
        // A capacity's list is kept when it empties (a few capacities recur step after step: no
        // list is allocated again).
        let Some(mut v) = self.by_capacity.range_mut(n..).find_map(|(_, list)| list.pop()) else {
            return Vec::with_capacity(n);
        };
        self.count -= 1;
        v.clear();
        v
    }

    /// Keeps `v` for a later take (dropped when empty or when the limit is reached).
    pub(crate) fn give(&mut self, v: Vec<A>) {
        if v.capacity() > 0 && self.count < self.limit {
            self.count += 1;
            self.by_capacity.entry(v.capacity()).or_default().push(v);
        }
    }

    /// Every buffer of `other` kept here (up to the larger limit). When this one is empty,
    /// `other` is taken whole: its lists are not built again.
    pub(crate) fn absorb(&mut self, mut other: Spare<A>) {
        other.limit = other.limit.max(self.limit);
        if self.count == 0 {
            *self = other;
            return;
        }
        if other.count > self.count {
            core::mem::swap(self, &mut other);
        }
        for v in other.by_capacity.into_values().flatten() {
            self.give(v);
        }
    }

    /// Number of buffers kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

/// A graph's spare buffers, shared by the compiles and passes that run on it (behind a lock:
/// they may run on several threads at once).
#[derive(Debug)]
pub struct BufferPool<A> {
    spare: Mutex<Spare<A>>,
}

impl<A> BufferPool<A> {
    /// An empty pool keeping at most `limit` buffers.
    pub(crate) fn new(limit: usize) -> Self {
        BufferPool { spare: Mutex::new(Spare::new(limit)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spare<A>> {
        // A panic while the lock was held left only a pool of spare buffers behind: still usable.
        self.spare.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An empty buffer with room for `n` elements ([`Spare::take`]).
    pub(crate) fn take(&self, n: usize) -> Vec<A> {
        self.lock().take(n)
    }

    /// Keeps every buffer of `vs` ([`Spare::give`]).
    pub(crate) fn give_all(&self, vs: impl IntoIterator<Item = Vec<A>>) {
        let mut spare = self.lock();
        for v in vs {
            spare.give(v);
        }
    }

    /// Every spare buffer, moved out for one pass (which gives back what it does not return,
    /// with [`absorb`](Self::absorb)), with a limit of `limit` buffers while the pass runs.
    pub(crate) fn lend(&self, limit: usize) -> Spare<A> {
        let mut spare = self.lock();
        let kept = spare.limit;
        let mut lent = core::mem::replace(&mut *spare, Spare::new(kept));
        lent.limit = lent.limit.max(limit);
        lent
    }

    /// Keeps the buffers a pass did not use (at most the pool's own limit).
    pub(crate) fn absorb(&self, mut other: Spare<A>) {
        let mut spare = self.lock();
        other.limit = spare.limit;
        spare.absorb(other);
    }

    /// Raises the pool's limit to at least `limit` buffers.
    pub(crate) fn reserve(&self, limit: usize) {
        let mut spare = self.lock();
        spare.limit = spare.limit.max(limit);
    }

    /// Number of buffers kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_smallest_buffer_that_fits() {
        let pool = BufferPool::<f32>::new(3);
        pool.give_all([Vec::with_capacity(4), Vec::with_capacity(16), Vec::with_capacity(8), Vec::with_capacity(2)]);
        assert_eq!(pool.len(), 3, "the limit holds");
        let v = pool.take(5);
        assert!(v.is_empty() && v.capacity() >= 8 && v.capacity() < 16);
        assert!(pool.take(100).capacity() >= 100, "nothing fits: a new one");
        assert_eq!(pool.len(), 2);
        pool.give_all([Vec::new()]);
        assert_eq!(pool.len(), 2, "empty buffers are not kept");
        let lent = pool.lend(10);
        assert_eq!((lent.len(), pool.len()), (2, 0));
        pool.absorb(lent);
        assert_eq!(pool.len(), 2);
    }
}
