//! Deferred uniform updates (SEMANTICS §5): a run-length history of the uniforms pushed so far and
//! the fixed-point replay that brings one position up to date.
//!
//! ```
//! use exactgrad_runtime::History;
//! let mut h = History::<f64>::new();
//! for _ in 0..1000 { h.push(0.0); }
//! h.push(1.0);
//! assert_eq!(h.clock(), 1001);
//! assert_eq!(h.runs(), 2);
//! // -0.0 + 0.0 = +0.0, then the run is at a fixed point; then + 1.0.
//! let mut x = -0.0;
//! h.replay_scalar(&mut x, 0);
//! assert_eq!(x.to_bits(), 1.0f64.to_bits());
//! ```

use crate::scalar::Scalar;

#[derive(Clone, Debug)]
struct Run<A> {
    value: A,
    /// Clock index of the run's first uniform.
    start: usize,
    count: usize,
}

/// Runs of storage-equal uniforms, newest last, and the clock (number of uniforms pushed).
#[derive(Clone, Debug)]
pub struct History<A> {
    runs: Vec<Run<A>>,
    clock: usize,
}

impl<A: Scalar> Default for History<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Scalar> History<A> {
    /// An empty history at clock 0.
    #[must_use]
    pub fn new() -> Self {
        History { runs: Vec::new(), clock: 0 }
    }

    /// Number of uniforms pushed so far.
    #[must_use]
    pub fn clock(&self) -> usize {
        self.clock
    }

    /// Number of runs (a measure of memory, not of meaning).
    #[must_use]
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Appends a uniform: extends the newest run if its value is storage-equal to `u`, else starts
    /// a new run. O(1).
    pub fn push(&mut self, u: A) {
        match self.runs.last_mut() {
            Some(run) if run.value.storage_eq(&u) => run.count += 1,
            _ => self.runs.push(Run { value: u, start: self.clock, count: 1 }),
        }
        self.clock += 1;
    }

    /// Forgets every uniform and resets the clock to 0.
    pub fn reset(&mut self) {
        self.runs.clear();
        self.clock = 0;
    }

    /// Applies, oldest first, every uniform pushed since clock `epoch` to `x` (a tensor's elements),
    /// each as `x[i] = x[i] + u`, stopping a run as soon as a step leaves every element
    /// storage-equal (keeping the new values).
    pub fn replay(&self, x: &mut [A], epoch: usize) {
        self.replay_with(epoch, |u| {
            let mut changed = false;
            for e in x.iter_mut() {
                let new = A::pinned_add(e.clone(), u.clone());
                changed |= !new.storage_eq(e);
                *e = new;
            }
            changed
        });
    }

    /// [`replay`](Self::replay) for a uniform tensor represented by one scalar.
    pub fn replay_scalar(&self, x: &mut A, epoch: usize) {
        self.replay_with(epoch, |u| {
            let new = A::pinned_add(x.clone(), u.clone());
            let changed = !new.storage_eq(x);
            *x = new;
            changed
        });
    }

    /// Runs `step(u)` for the uniforms since `epoch`, oldest first; `step` returns whether anything
    /// changed, and a `false` ends the current run early.
    fn replay_with(&self, epoch: usize, mut step: impl FnMut(&A) -> bool) {
        if epoch >= self.clock {
            return;
        }
        let first = self.runs.partition_point(|r| r.start + r.count <= epoch);
        for run in &self.runs[first..] {
            let steps = run.start + run.count - epoch.max(run.start);
            for _ in 0..steps {
                if !step(&run.value) {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: apply every uniform, no runs, no fixed-point stop.
    fn replay_naive(uniforms: &[f32], x: &mut [f32], epoch: usize) {
        for u in &uniforms[epoch..] {
            for e in x.iter_mut() {
                *e += *u;
            }
        }
    }

    #[test]
    fn equal_uniforms_merge_by_bits_not_by_value() {
        let mut h = History::<f32>::new();
        h.push(0.0);
        h.push(0.0);
        h.push(-0.0);
        h.push(f32::from_bits(0x7fc0_0001));
        h.push(f32::from_bits(0x7fc0_0001));
        h.push(f32::from_bits(0x7fc0_0002));
        assert_eq!(h.runs(), 4);
        assert_eq!(h.clock(), 6);
    }

    #[test]
    fn replay_matches_naive_from_every_epoch() {
        let uniforms = [0.0, 0.0, -0.0, 1.0, 1.0, 1e30, 0.5, 0.5, 0.5, -0.0];
        let mut h = History::new();
        for u in uniforms {
            h.push(u);
        }
        let starts = [-0.0f32, 0.0, 1.0, -1e30, f32::from_bits(1), f32::NAN, f32::INFINITY];
        for epoch in 0..=uniforms.len() {
            let mut fast = starts;
            let mut slow = starts;
            h.replay(&mut fast, epoch);
            replay_naive(&uniforms, &mut slow, epoch);
            for (a, b) in fast.iter().zip(&slow) {
                assert_eq!(a.to_bits(), b.to_bits(), "epoch {epoch}");
            }
            for (&s, b) in starts.iter().zip(&slow) {
                let mut x = s;
                h.replay_scalar(&mut x, epoch);
                assert_eq!(x.to_bits(), b.to_bits(), "scalar, epoch {epoch}");
            }
        }
    }

    #[test]
    fn fixed_point_keeps_the_new_value() {
        // -0.0 + 0.0 = +0.0 (changed), then +0.0 + 0.0 = +0.0 (fixed): the result is +0.0.
        let mut h = History::<f64>::new();
        for _ in 0..1_000_000 {
            h.push(0.0);
        }
        let mut x = [-0.0f64];
        h.replay(&mut x, 0);
        assert_eq!(x[0].to_bits(), 0.0f64.to_bits());
    }
}
