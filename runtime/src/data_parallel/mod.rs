//! Data-parallel gradients with a fixed reduction tree (SEMANTICS §8.5).
//!
//! The caller splits a batch into `count` **micro-batches** and says how to compute one
//! micro-batch's parameter gradients (`compute(state, i)`, typically a [`Program`]'s
//! [`gradients`] on micro-batch `i`'s data). A set of [`Workers`] computes every micro-batch once
//! — on the threads of a pool ([`Threads`]), or on separate processes (the `mpi` feature's
//! `Mpi`) — and brings every result back in micro-batch order; [`gradients`] then adds them in a
//! **fixed binary tree over the micro-batch index** ([`tree_sum`]). The tree depends on `count`
//! only, and each micro-batch's gradients depend on its data only, so the summed gradient is
//! bit-identical whatever the number of workers, threads or processes.
//!
//! ```
//! use exactgrad_runtime::data_parallel::{self, Threads};
//! use exactgrad_runtime::{Pack, Tensor, typenum::U2};
//!
//! // Four "micro-batch gradients" (here just constants), on two threads. Each worker has a
//! // state (here a counter; in training, its own program and parameter copy).
//! let workers = Threads::new(2).unwrap();
//! let mut states = vec![0usize; 2];
//! let sum = data_parallel::gradients(&workers, &mut states, 4, |calls: &mut usize, i| {
//!     *calls += 1;
//!     Ok(Pack::new().push(Tensor::<f32, (U2,)>::from_vec(vec![i as f32, 1.0])?))
//! })
//! .unwrap();
//! // ((g0 + g1) + (g2 + g3)), elementwise.
//! assert_eq!(sum.as_slice()[0].data(), &[6.0, 4.0]);
//! assert_eq!(states.iter().sum::<usize>(), 4);
//! ```
//!
//! [`Program`]: crate::Program
//! [`gradients`]: crate::Program::gradients

#[cfg(feature = "mpi")]
pub mod mpi;
mod tree;

use core::ops::Range;

use rayon::prelude::*;

use crate::error::Error;
use crate::guard::guarded;
use crate::pack::Pack;
use crate::parallel::{self, ThreadPool, ThreadPoolBuildError};
use crate::scalar::Scalar;
use crate::tensor::RawTensor;

pub use tree::tree_sum;

/// One micro-batch's result: its tensors (a parameter-gradient pack, as a list).
pub type MicroBatchResult<A> = Result<Vec<RawTensor<A>>, Error>;

/// How one micro-batch is computed: `compute(state, i)` with the state of the worker that runs
/// it and the micro-batch index `i`.
pub type Compute<'a, A, S> = dyn Fn(&mut S, usize) -> MicroBatchResult<A> + Sync + 'a;

/// A set of workers that computes micro-batches and brings every result back in index order.
///
/// Implementations decide only **where** each micro-batch runs; they never combine results
/// (that is [`tree_sum`]'s fixed tree), so any implementation gives the same bits.
pub trait Workers<A> {
    /// Calls `compute(state, i)` once for every micro-batch `i` in `0..count`, somewhere in the
    /// set, and returns every result to this caller in index order. The `states` are this
    /// process's workers' states, one per worker that runs here; a state is used by one thread
    /// at a time.
    ///
    /// # Errors
    /// [`Error::MicroBatch`] for the lowest-numbered micro-batch whose `compute` failed or
    /// panicked; [`Error::Workers`] when the set cannot run (no state here) or its transport
    /// fails.
    fn gather<S: Send>(
        &self,
        states: &mut [S],
        count: usize,
        compute: &Compute<'_, A, S>,
    ) -> Result<Vec<Vec<RawTensor<A>>>, Error>;
}

/// Workers on the threads of one process: the states run concurrently on a rayon pool, each
/// computing a contiguous block of micro-batches.
#[derive(Debug)]
pub struct Threads {
    pool: Option<ThreadPool>,
}

impl Threads {
    /// Workers on a new pool of `n` threads (`0`: one per core). The kernels a micro-batch runs
    /// use that pool too.
    ///
    /// # Errors
    /// rayon's error when the operating system refuses the threads.
    pub fn new(n: usize) -> Result<Self, ThreadPoolBuildError> {
        Ok(Threads { pool: Some(parallel::pool(n)?) })
    }

    /// Workers on the pool the caller runs in (the global pool, sized by `RAYON_NUM_THREADS`,
    /// unless the caller is inside [`ThreadPool::install`]).
    #[must_use]
    pub fn current() -> Self {
        Threads { pool: None }
    }
}

impl<A: Scalar> Workers<A> for Threads {
    fn gather<S: Send>(
        &self,
        states: &mut [S],
        count: usize,
        compute: &Compute<'_, A, S>,
    ) -> Result<Vec<Vec<RawTensor<A>>>, Error> {
        let results = match &self.pool {
            Some(pool) => pool.install(|| run_local(states, 0..count, compute)),
            None => run_local(states, 0..count, compute),
        }?;
        // The lowest-numbered failure, whatever finished first.
        results.into_iter().collect()
    }
}

/// The micro-batches worker `w` of `workers` computes out of `range`: the `w`-th of `workers`
/// contiguous blocks whose sizes differ by at most one (the first ones get the larger size).
#[must_use]
pub fn block(range: Range<usize>, workers: usize, w: usize) -> Range<usize> {
    let n = range.len();
    if workers == 0 || w >= workers {
        return range.end..range.end;
    }
    let (size, extra) = (n / workers, n % workers);
    let start = range.start + w * size + w.min(extra);
    start..start + size + usize::from(w < extra)
}

/// Computes the micro-batches of `range` on this process: the states run concurrently on the
/// current pool, state `w` taking [`block`]`(range, states.len(), w)`, each guarded against
/// panics (a failure is an [`Error::MicroBatch`] naming it). The results come back in index
/// order, failures included, for the caller to report.
pub(crate) fn run_local<A: Send, S: Send>(
    states: &mut [S],
    range: Range<usize>,
    compute: &Compute<'_, A, S>,
) -> Result<Vec<MicroBatchResult<A>>, Error> {
    if states.is_empty() && !range.is_empty() {
        return Err(Error::Workers { message: "no worker state to compute micro-batches with".to_owned() });
    }
    let workers = states.len();
    let parts: Vec<Vec<MicroBatchResult<A>>> = crate::parallel::split(|| {
        states
            .par_iter_mut()
            .enumerate()
            .map(|(w, state)| {
                crate::parallel::part(|| {
                    block(range.clone(), workers, w)
                        .map(|i| match guarded("compute", || compute(state, i)) {
                            Ok(Ok(tensors)) => Ok(tensors),
                            Ok(Err(e)) => Err(Error::MicroBatch { index: i, message: e.to_string() }),
                            Err(message) => Err(Error::MicroBatch { index: i, message }),
                        })
                        .collect()
                })
            })
            .collect()
    });
    Ok(parts.into_iter().flatten().collect())
}

/// The sum of every micro-batch's gradients: `workers` computes `compute(state, i)` for each
/// micro-batch `i` in `0..count`, and the results are added in the fixed tree of [`tree_sum`].
/// The bits depend on `count` and on what `compute` returns for each `i`, never on the workers.
///
/// # Errors
/// As [`Workers::gather`], and [`Error::Workers`] for `count = 0` or micro-batch gradients of
/// different shapes.
pub fn gradients<A: Scalar, L, S: Send, W: Workers<A>>(
    workers: &W,
    states: &mut [S],
    count: usize,
    compute: impl Fn(&mut S, usize) -> Result<Pack<A, L>, Error> + Sync,
) -> Result<Pack<A, L>, Error> {
    let compute = |s: &mut S, i| compute(s, i).map(Pack::into_vec);
    let parts = workers.gather(states, count, &compute)?;
    Ok(Pack::from_raw(None, tree_sum(parts)?))
}

#[cfg(test)]
mod tests;
