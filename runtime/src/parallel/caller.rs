//! The caller's thread as one of the pool's: a pass called from a thread outside every pool
//! (a user's training loop on the program's main thread) would hand each of its splits to the
//! global pool and wait for it, paying a hand-off and a wake-up per split (tens of microseconds
//! on a virtual machine) that the same split inside a pool does not pay. So the first pass such
//! a thread calls makes it **worker 0 of a pool of its own** (`ThreadPoolBuilder::use_current_thread`)
//! of as many threads as the global pool has: every later pass on it runs right there, with no
//! hand-off at its start, and its splits share the work with the pool's other threads as the
//! splits of a pass inside [`ThreadPool::install`](super::ThreadPool::install) do. Where work
//! runs only, never a result: the kernels split only over independent outputs (SEMANTICS §8.4).
//!
//! A thread already in a pool (a rayon worker, a pass inside a user's `install`) is left as it
//! is, and so is every thread when the global pool has one thread. Each caller pool lives as long
//! as its thread (its other threads stop when it ends; rayon keeps the small pool record of a
//! pool built this way for the process's life), and at most [`MAX_CALLER_POOLS`] exist at once:
//! threads beyond them run their passes as before, handing each split to the global pool.
//! A caller thread that has become a worker stays one: rayon calls it makes itself afterwards
//! (its own `par_iter`s) run on its caller pool, of the same size as the global pool.

use core::cell::OnceCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// The most caller pools alive at once (each with the global pool's threads less one).
pub const MAX_CALLER_POOLS: usize = 8;

/// The caller pools alive now.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// This thread's caller pool, once it has asked for one (`None` when it got none).
struct CallerPool(Option<ThreadPool>);

impl Drop for CallerPool {
    fn drop(&mut self) {
        if self.0.take().is_some() {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

thread_local! {
    static CALLER_POOL: OnceCell<CallerPool> = const { OnceCell::new() };
}

/// Runs `f`, a whole pass or program step, on a pool's thread without handing it over: on this
/// thread, after making it a pool worker when it is none (see the module's docs).
pub(crate) fn entered<R>(f: impl FnOnce() -> R) -> R {
    if rayon::current_thread_index().is_none() {
        become_worker();
    }
    f()
}

/// Makes this thread worker 0 of a caller pool, if it has not asked before, the global pool has
/// two or more threads and fewer than [`MAX_CALLER_POOLS`] are alive.
fn become_worker() {
    // `try_with`: during this thread's exit (a pass run by another thread-local's destructor)
    // the pass simply runs where it is.
    let _ = CALLER_POOL.try_with(|cell| {
        cell.get_or_init(|| {
            let threads = rayon::current_num_threads();
            if threads < 2 {
                return CallerPool(None);
            }
            if LIVE.fetch_add(1, Ordering::Relaxed) >= MAX_CALLER_POOLS {
                LIVE.fetch_sub(1, Ordering::Relaxed);
                return CallerPool(None);
            }
            let built = ThreadPoolBuilder::new()
                .num_threads(threads)
                .use_current_thread()
                .thread_name(|k| format!("exactgrad-caller-{k}"))
                .build();
            if built.is_err() {
                LIVE.fetch_sub(1, Ordering::Relaxed);
            }
            CallerPool(built.ok())
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_thread_becomes_worker_0_of_a_pool_of_the_global_size() {
        let global = rayon::current_num_threads();
        let (index, threads) =
            std::thread::spawn(|| entered(|| (rayon::current_thread_index(), rayon::current_num_threads())))
                .join()
                .unwrap();
        if global >= 2 {
            assert_eq!(index, Some(0));
        } else {
            assert_eq!(index, None);
        }
        assert_eq!(threads, global);
    }

    #[test]
    fn a_thread_inside_a_pool_stays_in_it() {
        let pool = super::super::pool(3).unwrap();
        let seen = pool.install(|| entered(|| (rayon::current_num_threads(), rayon::current_thread_index().is_some())));
        assert_eq!(seen, (3, true));
    }
}
