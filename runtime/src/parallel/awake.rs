//! Keeping the pool's other threads awake between the splits of a pass.
//!
//! A rayon thread with nothing to do sleeps after a few microseconds of looking for work, and on a
//! virtual machine waking it again costs about as much as the piece of work it would take over
//! (`cargo bench --bench inter_op -- wake_up`), so a model whose splits are tens of microseconds
//! apart would pay a wake-up at each of them. So every split starts, when none is running,
//! **keepers**: pool jobs that look for work without sleeping (`rayon::yield_now`, which runs any
//! job of the pool it finds, and the operating system's `yield` between looks, so other ready
//! threads still run) until no split has been made for [`keep_awake`]. The same spin-wait
//! OpenMP runtimes use between parallel regions; it moves where work runs, never a result.
//!
//! A keeper never holds a thread that is inside split work (a split's call, one of its parts, or
//! another keeper): a thread waiting at a split for a part another thread runs may pick up a
//! keeper job, and that keeper must return at once, or the split (and the pass) would wait for the
//! keeper's spin-wait to end. The marks are [`split`] around every call that hands parts to the
//! pool and [`part`] around every part. A thread can still pick up a keeper while it waits for
//! other work (a user's own `join` beside a model's pass), so a keeper also returns after
//! [`TURNS`] times [`keep_awake`] in all, splits or not: such a wait is held that long at most,
//! and the next split starts a new keeper.

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The default of [`keep_awake`]: 1 ms, longer than the gaps between a model step's splits (tens
/// to hundreds of microseconds) and between the steps of a training loop. Measured with `cargo
/// bench --bench programs -- "/program/"` on a 2-core (virtual) machine, two threads kept awake
/// against sleeping, one run (the README's scaling table): the one head of 64 59.0 against 76.4
/// µs, the attention block 356 against 396 µs.
pub const DEFAULT_KEEP_AWAKE: Duration = Duration::from_millis(1);

/// A keeper's whole life, in [`keep_awake`]s.
const TURNS: u32 = 4;

/// [`keep_awake`] in nanoseconds.
static KEEP_AWAKE_NS: AtomicU64 = AtomicU64::new(DEFAULT_KEEP_AWAKE.as_nanos() as u64);

/// The splits made so far, in every pool: a keeper stays while this moves.
static SPLITS: AtomicUsize = AtomicUsize::new(0);

/// The keepers running now, in every pool together (so a keeper still running in one pool may
/// delay starting one in another: where work runs, never a result).
static KEEPERS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// How deep this thread is inside split work or a keeper.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// How long the pool's other threads keep looking for work, without sleeping, after the last
/// split of a kernel or of a pass's independent work (they use their cores meanwhile).
#[must_use]
pub fn keep_awake() -> Duration {
    Duration::from_nanos(KEEP_AWAKE_NS.load(Ordering::Relaxed))
}

/// Sets [`keep_awake`] for the whole process (`Duration::ZERO`: never keep threads awake; the
/// threads then sleep as rayon's own do). Like [`set_min_work`](super::set_min_work), it changes
/// only where work runs, never a result.
///
/// ```
/// use exactgrad_runtime::parallel;
/// use std::time::Duration;
/// let before = parallel::keep_awake();
/// parallel::set_keep_awake(Duration::ZERO); // the pool's threads sleep between splits
/// assert_eq!(parallel::keep_awake(), Duration::ZERO);
/// parallel::set_keep_awake(before);
/// ```
pub fn set_keep_awake(d: Duration) {
    KEEP_AWAKE_NS.store(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Runs `f`, one part of a split, marked as split work (a keeper it picks up returns at once).
pub(crate) fn part<R>(f: impl FnOnce() -> R) -> R {
    /// Takes the mark off when `f` returns or unwinds.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}

/// Runs `f`, a call that hands parts of its work to the pool, marked as split work, after
/// counting the split and starting keepers for the pool's other threads when fewer run.
pub(crate) fn split<R>(f: impl FnOnce() -> R) -> R {
    SPLITS.fetch_add(1, Ordering::Relaxed);
    if KEEP_AWAKE_NS.load(Ordering::Relaxed) > 0 {
        // The calling thread is busy with the split when it is one of the pool's.
        let others = super::threads().saturating_sub(usize::from(rayon::current_thread_index().is_some()));
        let mut running = KEEPERS.load(Ordering::Relaxed);
        while running < others {
            match KEEPERS.compare_exchange_weak(running, running + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    rayon::spawn(keeper);
                    running += 1;
                }
                Err(now) => running = now,
            }
        }
    }
    part(f)
}

/// A keeper: runs the pool's jobs as it finds them until no split has been made and no job found
/// for [`keep_awake`], or [`TURNS`] times that in all; returns at once inside split work.
fn keeper() {
    /// Counts the keeper out when it returns (or a job it ran unwinds through it).
    struct Out;
    impl Drop for Out {
        fn drop(&mut self) {
            KEEPERS.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _out = Out;
    if DEPTH.with(Cell::get) > 0 {
        return;
    }
    part(|| {
        let mut seen = SPLITS.load(Ordering::Relaxed);
        let start = Instant::now();
        let mut since = start;
        loop {
            let awake = keep_awake();
            if start.elapsed() >= awake.saturating_mul(TURNS) {
                return;
            }
            if rayon::yield_now() == Some(rayon::Yield::Executed) {
                since = Instant::now();
                continue;
            }
            let now = SPLITS.load(Ordering::Relaxed);
            if now != seen {
                seen = now;
                since = Instant::now();
            } else if since.elapsed() >= awake {
                return;
            }
            // Nothing to run: let the operating system run any other thread that is ready (a
            // keeper must not slow the machine's other work down, only stay ready for its own).
            std::thread::yield_now();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_finish_while_keepers_run_and_a_keeper_inside_split_work_returns_at_once() {
        let pool = super::super::pool(4).unwrap();
        let before = keep_awake();
        // Long enough that a keeper holding a thread inside split work would stall the splits
        // (and this test) for seconds.
        set_keep_awake(Duration::from_secs(10));
        let start = Instant::now();
        // Nested splits, as a level's node splitting its own product: their threads wait for
        // parts while keepers are queued beside them.
        let total: usize = pool.install(|| {
            (0..100)
                .map(|k| {
                    let inner = |k: usize| split(|| pool.join(|| part(|| k), || part(|| std::hint::black_box(k) + 1)));
                    let ((a, b), (c, d)) = split(|| pool.join(|| part(|| inner(k)), || part(|| inner(2 * k))));
                    a + b + c + d
                })
                .sum()
        });
        assert_eq!(total, (0..100).map(|k| 6 * k + 2).sum::<usize>());
        // A keeper called inside split work returns at once.
        pool.install(|| part(keeper_counted));
        let took = start.elapsed();
        set_keep_awake(before);
        assert!(took < Duration::from_secs(5), "a keeper held a thread inside split work ({took:?})");
    }

    #[test]
    fn a_keeper_returns_after_its_turns_while_splits_go_on() {
        let pool = super::super::pool(2).unwrap();
        let before = keep_awake();
        set_keep_awake(Duration::from_millis(20));
        let done = std::sync::atomic::AtomicBool::new(false);
        let took = std::thread::scope(|s| {
            // Splits that go on until the keeper below has returned (at most 30 s).
            s.spawn(|| {
                let start = Instant::now();
                while !done.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(30) {
                    split(|| ());
                    std::thread::sleep(Duration::from_micros(100));
                }
            });
            let start = Instant::now();
            pool.install(keeper_counted);
            done.store(true, Ordering::Relaxed);
            start.elapsed()
        });
        set_keep_awake(before);
        // Its turns are 80 ms; without them it would wait for the splits to stop (30 s).
        assert!(took < Duration::from_secs(10), "the keeper outlived its turns ({took:?})");
    }

    /// [`keeper`], counted in as [`split`] counts it.
    fn keeper_counted() {
        KEEPERS.fetch_add(1, Ordering::Relaxed);
        keeper();
    }
}
