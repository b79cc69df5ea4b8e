//! Threads. Kernels run on the current [rayon] thread pool — the global one (sized by the
//! `RAYON_NUM_THREADS` environment variable, else one thread per core), or the pool a caller
//! runs them in with [`ThreadPool::install`] — and split work **only over independent outputs**
//! (today: the row panels of a packed matrix product, the batch items of a batched product
//! `[bt, m, k] · [bt, k, n]` and of its VJPs, contiguous chunks of the pointwise ops' loops,
//! blocks of whole rows of `softmax`'s and `log_softmax`'s forward and VJP, `layer_norm`'s forward
//! and VJP (its `gx` and normalised rows) and `cross_entropy`'s VJP and per-row losses, and blocks of
//! the output elements of `sum_axis` / `mean_axis`), never over a reduction: every output element
//! is computed by the same operations in the same order whatever the number of threads, so every
//! result is bit-identical for 1, 2, 3 or 4 threads (SEMANTICS §8.4). The sums across rows —
//! `cross_entropy`'s sum of its losses, `layer_norm`'s gain and bias gradients — stay on the
//! calling thread, in row order.
//!
//! Independent work also runs at the same time (inter-op parallelism): the nodes of one level of
//! `compile`'s forward (nodes that read none of each other's values), and the two products of a
//! matrix product's VJP, when their work reaches [`min_node_work`] (SEMANTICS §8.4).
//!
//! Between splits the pool's other threads keep looking for work for [`keep_awake`] (default
//! [`DEFAULT_KEEP_AWAKE`]) instead of sleeping, so a model's splits, tens of microseconds apart,
//! do not each pay for waking a thread (see the `awake` module's docs).
//!
//! A pass or program step called from a thread outside every pool (a training loop on the
//! program's main thread) makes that thread a worker of a pool of its own, of the global pool's
//! size, the first time: its splits then cost what they cost inside a pool, with no hand-off per
//! split and none per call (see the `caller` module's docs and [`MAX_CALLER_POOLS`]).
//!
//! Small work stays on the calling thread: a product is split only when it has at least
//! [`min_work`] multiply-adds (default [`DEFAULT_MIN_WORK`], measured: see its docs), a batched
//! product over its items when all of them together have (and, with fewer items than threads,
//! only when the items are too small to split their own row panels), a pointwise or row-wise
//! loop when its work reaches [`min_pointwise_work`] (default [`DEFAULT_MIN_POINTWISE_WORK`]).
//!
//! ```
//! use exactgrad_runtime::parallel;
//! // A model run on a pool of two threads (`pool.install(|| …)` runs any pass on it).
//! let pool = parallel::pool(2).unwrap();
//! assert_eq!(pool.install(parallel::threads), 2);
//! ```

use core::sync::atomic::{AtomicUsize, Ordering};

pub use rayon::{ThreadPool, ThreadPoolBuildError};

mod awake;
mod caller;

pub use awake::{keep_awake, set_keep_awake, DEFAULT_KEEP_AWAKE};
pub(crate) use awake::{part, split};
pub(crate) use caller::entered;
pub use caller::MAX_CALLER_POOLS;

/// The default of [`min_work`]: `2^18` multiply-adds (a 64 × 64 × 64 product). Measured with
/// `cargo bench --bench gemm -- threads` on a 2-core machine: 256³ runs 1.32× faster on two
/// threads, 784 × 64 × 256 1.55×, 1024³ 1.83×, while products whose operands hold at most 32 768
/// elements (64³, 128³) take the unpacked small-product path, which is never split. Between
/// those the threshold is a conservative choice, not a tuned one: a split costs one hand-off to
/// the pool (a few microseconds), which the smallest packed products do not pay back.
pub const DEFAULT_MIN_WORK: usize = 1 << 18;

static MIN_WORK: AtomicUsize = AtomicUsize::new(DEFAULT_MIN_WORK);

/// The default of [`min_pointwise_work`]: `2^19` units (see [`min_pointwise_work`]).
pub const DEFAULT_MIN_POINTWISE_WORK: usize = 1 << 19;

static MIN_POINTWISE_WORK: AtomicUsize = AtomicUsize::new(DEFAULT_MIN_POINTWISE_WORK);

/// The least work a pointwise loop (the forward or the derivative of `relu`, `tanh`, `exp`,
/// `gelu`, …) needs before it is split over threads in contiguous chunks: its length times the
/// loop's work per element (`PointwiseFn::FORWARD_WORK`, `DERIVATIVE_WORK`; `0` for loops bound
/// by memory, which are never split by default).
#[must_use]
pub fn min_pointwise_work() -> usize {
    MIN_POINTWISE_WORK.load(Ordering::Relaxed)
}

/// Sets [`min_pointwise_work`] for the whole process (`0`: split every loop of two or more
/// elements, memory-bound ones included). Like [`set_min_work`], it changes only where work runs.
pub fn set_min_pointwise_work(n: usize) {
    MIN_POINTWISE_WORK.store(n, Ordering::Relaxed);
}

/// How many contiguous chunks to split a pointwise loop of `len` elements, each costing
/// `work_per_element`, into: 1 (run here) for short or cheap loops, or one thread.
pub(crate) fn element_parts(len: usize, work_per_element: usize) -> usize {
    // The size test first: a short loop does not ask the pool for its threads.
    if len < 2 || len.saturating_mul(work_per_element) < min_pointwise_work() {
        return 1;
    }
    let threads = split_threads();
    if threads < 2 {
        1
    } else {
        threads.min(len)
    }
}

/// Fills `out`, whole rows of `row_len` elements, by `f(first_row, block)` on contiguous blocks
/// of rows: split over threads when the rows' work (`out.len() · work_per_element`) reaches
/// [`min_pointwise_work`], else one call on all of `out`. For row-wise ops (softmax's rows):
/// every row is computed by the same code whatever block it is in, its own sums inside it.
pub(crate) fn rows<A: Send>(
    out: &mut [A],
    row_len: usize,
    work_per_element: usize,
    f: impl Fn(usize, &mut [A]) + Sync,
) {
    use rayon::prelude::*;
    let Some(per) = rows_per_block(out.len(), row_len, work_per_element) else {
        f(0, out);
        return;
    };
    split(|| out.par_chunks_mut(per * row_len).enumerate().for_each(|(k, block)| part(|| f(k * per, block))));
}

/// The rows per block of [`rows`] and [`rows_pair`] for `len` elements in rows of `row_len`:
/// `None` when they stay one block on the calling thread.
fn rows_per_block(len: usize, row_len: usize, work_per_element: usize) -> Option<usize> {
    let rows = len.checked_div(row_len).unwrap_or(0);
    let parts = element_parts(rows, row_len.saturating_mul(work_per_element));
    (parts >= 2).then(|| rows.div_ceil(parts))
}

/// The default of [`min_node_work`]: `2^16` units (see [`min_node_work`]). Measured with
/// `cargo bench --bench inter_op` on a 2-core machine, 2 threads with the split off against on:
/// `compile` of 64 heads of 64 × 64 products (a level of 64 × 4 224 units) 1.27× faster, 8 heads of
/// 256 × 256 1.28×; the two VJP products of 32 × 64 × 64 (2^18 multiply-adds) 1.57×, of 64 × 128 ×
/// 128 2.2×. Those run back to back, with the pool's threads awake; a model's step has gaps
/// between its splits, which [`keep_awake`] bridges: without it, waking a sleeping thread costs
/// that machine tens of microseconds at every split after a gap, and the attention block of
/// `benches/programs.rs` ran slower on two threads than on one.
pub const DEFAULT_MIN_NODE_WORK: usize = 1 << 16;

static MIN_NODE_WORK: AtomicUsize = AtomicUsize::new(DEFAULT_MIN_NODE_WORK);

/// The least work independent pieces of a pass need, together, before they run at the same time
/// (inter-op parallelism): the nodes of one level of a forward (counted as the elements they read
/// and write), or the two products of a matrix product's VJP (counted as multiply-adds).
#[must_use]
pub fn min_node_work() -> usize {
    MIN_NODE_WORK.load(Ordering::Relaxed)
}

/// Sets [`min_node_work`] for the whole process (`0`: run every group of two or more
/// independent pieces at the same time). Like [`set_min_work`], it changes only where work runs.
pub fn set_min_node_work(n: usize) {
    MIN_NODE_WORK.store(n, Ordering::Relaxed);
}

/// `true` when two or more independent pieces of `work()` in all should run at the same time
/// here (`work` is only counted when there are pieces and threads to share).
pub(crate) fn concurrent(pieces: usize, work: impl FnOnce() -> usize) -> bool {
    pieces >= 2 && split_threads() >= 2 && work() >= min_node_work()
}

/// Runs `f`, one of `pieces` independent pieces run at the same time ([`concurrent`]), as a part
/// of split work ([`part`]); its own kernels split further only when the pieces are fewer than
/// the threads (as many pieces as threads keep every thread busy; splitting inside them as well
/// only adds hand-offs). Measured with `cargo bench --bench inter_op -- forward_levels` on a
/// 2-core machine, one run each: levels of 4 and 8 products of 512 × 512 × 1 (each large enough
/// to split its own row panels) ran 0.78× and 0.38× as fast at the same time as one after the
/// other before this rule, 1.32× and 1.37× after it.
pub(crate) fn piece<R>(pieces: usize, f: impl FnOnce() -> R) -> R {
    part(|| if pieces >= threads() { sequential(f) } else { f() })
}

/// `(a(), b())`, two independent pieces ([`piece`]) run at the same time on the pool: the split
/// of a product's two VJP products, once [`concurrent`] has said yes.
pub(crate) fn pair<RA: Send, RB: Send>(a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
    split(|| rayon::join(|| piece(2, a), || piece(2, b)))
}

/// How many contiguous blocks to split `count` independent batch items into, each a product of
/// `item_work` multiply-adds: 1 (run here) for one item, no work, total work (`count ·
/// item_work`) under [`min_work`] or one thread, and also when the items are fewer than the
/// threads while each is large enough for its own product to split its row panels (which then
/// balances the threads better); else one block per thread. The blocks run under
/// [`sequential`], so their products are never split again (no nested splits). Measured with
/// `cargo bench --bench gemm -- threads/batched` on a 2-core machine: 16 items of 32³ (2^19
/// multiply-adds in all, each item too small to split) and 16 of 64³ run 2.0× faster on two
/// threads, 64 of 64³ 1.5× (a 256³ product's row-panel split: 1.4×).
pub(crate) fn item_parts(count: usize, item_work: usize) -> usize {
    let threads = split_threads();
    let total = count.saturating_mul(item_work);
    if threads < 2 || count < 2 || total == 0 || total < min_work() || (count < threads && item_work >= min_work()) {
        1
    } else {
        threads.min(count)
    }
}

thread_local! {
    /// Whether this thread runs inside [`sequential`].
    static SEQUENTIAL: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Runs `f` with every split of this thread's kernels off ([`parts`], [`element_parts`] and
/// [`item_parts`] give 1): for work that is already one part of a split (a block of batch items).
/// Where work runs only, never a result.
pub(crate) fn sequential<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the flag back when `f` returns or unwinds (a panic caught at a node must not leave
    /// the thread's later kernels unsplit).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SEQUENTIAL.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SEQUENTIAL.with(|s| s.replace(true)));
    f()
}

/// The threads a split may use here: 1 inside [`sequential`], else [`threads`].
fn split_threads() -> usize {
    if SEQUENTIAL.with(core::cell::Cell::get) {
        1
    } else {
        threads()
    }
}

/// [`rows`] over two outputs of the same length, row by row: `f(first_row, a_block, b_block)` on
/// the same rows of `a` and `b` (for a row-wise op that writes two values per element, such as
/// `layer_norm`'s VJP with its normalised rows).
pub(crate) fn rows_pair<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    row_len: usize,
    work_per_element: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync,
) {
    use rayon::prelude::*;
    let Some(per) = rows_per_block(a.len().min(b.len()), row_len, work_per_element) else {
        f(0, a, b);
        return;
    };
    split(|| {
        a.par_chunks_mut(per * row_len)
            .zip(b.par_chunks_mut(per * row_len))
            .enumerate()
            .for_each(|(k, (a, b))| part(|| f(k * per, a, b)));
    });
}

/// The fewest multiply-adds (`rows · inner · cols`) a matrix product needs before it is split
/// over threads.
#[must_use]
pub fn min_work() -> usize {
    MIN_WORK.load(Ordering::Relaxed)
}

/// Sets [`min_work`] for the whole process (`0`: split every product that has two row panels).
/// It changes only where work runs, never a result (tests set it to 0 to split small products).
pub fn set_min_work(n: usize) {
    MIN_WORK.store(n, Ordering::Relaxed);
}

/// The threads kernels may use here: those of the pool the caller runs in, else of the global
/// pool.
#[must_use]
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// A new pool of `n` threads (`n = 0`: one per core), to run models on with
/// [`ThreadPool::install`].
///
/// # Errors
/// rayon's error when the operating system refuses the threads.
pub fn pool(n: usize) -> Result<ThreadPool, ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new().num_threads(n).build()
}

/// How many parts to split `panels` independent row panels of a product with `work`
/// multiply-adds into: 1 (run here) for no work, small work or one thread.
pub(crate) fn parts(work: usize, panels: usize) -> usize {
    let threads = split_threads();
    if threads < 2 || panels < 2 || work == 0 || work < min_work() {
        1
    } else {
        threads.min(panels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_work_and_one_thread_stay_whole() {
        let one = pool(1).unwrap();
        assert_eq!(one.install(|| parts(usize::MAX, 100)), 1);
        let two = pool(2).unwrap();
        assert_eq!(two.install(|| parts(DEFAULT_MIN_WORK.max(min_work()), 100)), 2);
        assert_eq!(two.install(|| parts(usize::MAX, 1)), 1);
        let four = pool(4).unwrap();
        assert_eq!(four.install(|| parts(usize::MAX, 3)), 3);
        // An empty product (an empty inner sum) is never split, whatever `min_work` is.
        assert_eq!(four.install(|| parts(0, 3)), 1);
    }

    #[test]
    fn batch_items_split_only_without_nesting() {
        let (two, four) = (pool(2).unwrap(), pool(4).unwrap());
        let big = DEFAULT_MIN_WORK.max(min_work());
        // Small items with enough work together: one block per thread.
        assert_eq!(two.install(|| item_parts(16, big / 4)), 2);
        // Fewer items than threads, each large enough to split its own panels: not split here.
        assert_eq!(four.install(|| item_parts(3, big)), 1);
        assert_eq!(four.install(|| item_parts(4, big)), 4);
        // One item, no work, one thread: never.
        assert_eq!(four.install(|| item_parts(1, big)), 1);
        assert_eq!(four.install(|| item_parts(8, 0)), 1);
        assert_eq!(pool(1).unwrap().install(|| item_parts(8, big)), 1);
        // Inside `sequential` nothing splits.
        assert_eq!(four.install(|| sequential(|| (parts(usize::MAX, 8), element_parts(8, usize::MAX)))), (1, 1));
    }
}
