//! Data-parallel gradients across processes (the `mpi` feature): run under
//! `mpirun -n 2 cargo test --features mpi --test mpi` (what `.ci/test` does), every process
//! computes its block of micro-batches, gathers all of them and adds them in the fixed tree; the
//! summed gradient must be bit-identical to the one process reference (every micro-batch on one
//! program, in order), on every process, for ordinary and adversarial values, f32 and f64, and
//! micro-batch counts below, at and above the number of processes. A failing micro-batch must be
//! reported on every process (none left waiting). Run without `mpirun`, it is one process (an MPI
//! singleton) and checks the same. `EXACTGRAD_MPI_PROCESSES`, when set, is the number of
//! processes the run must have (so a launcher that silently started one is caught).
//!
//! Not a libtest harness (`harness = false`): MPI is initialised once per process, on its main
//! thread.
#![allow(clippy::unwrap_used)]

mod dp_model;
mod floats;

use dp_model::{micro_batch, one_by_one, params, Mlp};
use exactgrad::data_parallel::{self, mpi::Mpi};
use exactgrad::mpi;
use exactgrad::{Error, Tensor};
use floats::{adv, all_bits, Bits, TestFloat};
use mpi::topology::Communicator;

fn across<A: TestFloat + data_parallel::mpi::WireScalar, C: mpi::collective::CommunicatorCollectives>(
    workers: &Mpi<C>,
    salt: u64,
    count: usize,
) -> Vec<Bits> {
    let (p, seed): (_, Tensor<A, ()>) = (params::<A>(salt), adv(salt, 7));
    // Two worker states per process: its block runs on two threads of this process too.
    let mut states: Vec<_> = (0..2).map(|_| (Mlp::program::<A>(), p.clone())).collect();
    let sum = data_parallel::gradients(workers, &mut states, count, |(program, copy), i| {
        program.gradients(copy, &micro_batch(salt, i), &seed).cloned()
    })
    .unwrap();
    all_bits(sum.as_slice())
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    if let Ok(n) = std::env::var("EXACTGRAD_MPI_PROCESSES") {
        assert_eq!(n.parse::<i32>().ok(), Some(size), "EXACTGRAD_MPI_PROCESSES={n} but the run has {size} processes");
    }
    let workers = Mpi::new(world);
    let mut checked = 0;
    for count in [1, 2, 3, 8] {
        for salt in [0, 3, 5] {
            assert!(
                across::<f32, _>(&workers, salt, count) == one_by_one::<f32>(salt, count),
                "f32 salt {salt}, {count} micro-batches: process {rank} of {size} differs"
            );
            assert!(
                across::<f64, _>(&workers, salt, count) == one_by_one::<f64>(salt, count),
                "f64 salt {salt}, {count} micro-batches: process {rank} of {size} differs"
            );
            checked += 2;
        }
    }
    // Micro-batch 5 fails (on whichever process owns it): every process gets its error.
    let mut states = vec![(); 1];
    // The expected panic is caught by the workers; keep the default hook's report out of the log.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failed = data_parallel::gradients(&workers, &mut states, 8, |_: &mut (), i| {
        if i == 5 {
            panic!("micro-batch five is broken");
        }
        Ok(dp_model::params::<f32>(0))
    });
    std::panic::set_hook(hook);
    assert!(
        matches!(&failed, Err(Error::MicroBatch { index: 5, message }) if message == "compute panicked: micro-batch five is broken"),
        "process {rank}: {failed:?}"
    );
    println!("mpi data-parallel: process {rank} of {size}: {checked} gradient sums bit-identical to one process; a failing micro-batch reported on every process");
}
