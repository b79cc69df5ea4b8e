//! Data-parallel workers on separate processes, through MPI (the `mpi` feature; the `mpi` crate,
//! on the system's MPI library, e.g. Open MPI).
//!
//! Every process of the communicator runs the same program (SPMD): each computes a contiguous
//! [`block`] of the micro-batches (on its own worker states, which may be several threads), then
//! every process **gathers every micro-batch's gradients in index order** (`MPI_Allgatherv` of
//! their bits) and adds them itself in the fixed tree of [`tree_sum`](super::tree_sum). MPI's own
//! reductions (`MPI_Allreduce`), whose order the library chooses, are never used, so the sum is
//! bit-identical on every process and for any number of processes, threads or both.
//!
//! ```no_run
//! use exactgrad_runtime::data_parallel::{self, mpi::Mpi};
//! use exactgrad_runtime::{Pack, Tensor, typenum::U2};
//!
//! let universe = exactgrad_runtime::mpi::initialize().expect("MPI initialises once");
//! let workers = Mpi::new(universe.world());
//! let mut states = vec![()]; // one worker state on this process
//! let sum = data_parallel::gradients(&workers, &mut states, 8, |_: &mut (), i| {
//!     Ok(Pack::new().push(Tensor::<f32, (U2,)>::from_vec(vec![i as f32, 1.0])?))
//! })
//! .unwrap();
//! assert_eq!(sum.as_slice()[0].data(), &[28.0, 8.0]); // on every process
//! ```

use mpi::collective::CommunicatorCollectives;
use mpi::datatype::PartitionMut;
use mpi::topology::Communicator;
use mpi::Count;

use super::{block, run_local, Compute, MicroBatchResult, Workers};
use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{Dims, MAX_RANK};
use crate::tensor::RawTensor;

/// A scalar that crosses a process boundary as its exact bits (NaN payloads and `-0.0` kept).
pub trait WireScalar: Scalar {
    /// Bytes per scalar.
    const BYTES: usize;
    /// Appends the scalar's bits, little-endian.
    fn write(&self, out: &mut Vec<u8>);
    /// The scalar whose bits `bytes` holds (exactly [`BYTES`](Self::BYTES) of them, as
    /// [`write`](Self::write) wrote them).
    fn read(bytes: &[u8]) -> Self;
}

macro_rules! wire_float {
    ($t:ty, $bits:ty) => {
        impl WireScalar for $t {
            const BYTES: usize = size_of::<$t>();
            fn write(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_bits().to_le_bytes());
            }
            fn read(bytes: &[u8]) -> Self {
                let mut b = [0u8; size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_bits(<$bits>::from_le_bytes(b))
            }
        }
    };
}

wire_float!(f32, u32);
wire_float!(f64, u64);

/// The workers of an MPI communicator: one block of micro-batches per process.
#[derive(Debug)]
pub struct Mpi<C> {
    comm: C,
}

impl<C: Communicator> Mpi<C> {
    /// Workers on every process of `comm` (typically `universe.world()`).
    pub fn new(comm: C) -> Self {
        Mpi { comm }
    }

    /// This process's rank in the communicator.
    #[must_use]
    pub fn rank(&self) -> usize {
        usize::try_from(self.comm.rank()).unwrap_or(0)
    }

    /// The number of processes.
    #[must_use]
    pub fn size(&self) -> usize {
        usize::try_from(self.comm.size()).unwrap_or(1)
    }

    /// The communicator.
    pub fn communicator(&self) -> &C {
        &self.comm
    }
}

impl<A: WireScalar, C: CommunicatorCollectives> Workers<A> for Mpi<C> {
    /// Every process computes its block, then all gather every block: every process must call
    /// this with the same `count` (it is a collective operation). A failure on any process —
    /// a micro-batch's error or panic, no worker state — is returned on every process, so none
    /// is left waiting.
    fn gather<S: Send>(
        &self,
        states: &mut [S],
        count: usize,
        compute: &Compute<'_, A, S>,
    ) -> Result<Vec<Vec<RawTensor<A>>>, Error> {
        let (rank, size) = (self.rank(), self.size());
        let payload = match run_local(states, block(0..count, size, rank), compute) {
            Ok(results) => encode(&results),
            Err(Error::Workers { message }) => failure(&message),
            Err(e) => failure(&e.to_string()),
        };
        let len = u64::try_from(payload.len()).unwrap_or(u64::MAX);
        let mut lens = vec![0u64; size];
        self.comm.all_gather_into(&len, &mut lens[..]);
        // Every process sees the same lengths, so every one takes the same branch here.
        let Some((counts, displs, total)) = partition(&lens) else {
            return Err(Error::Workers {
                message: format!(
                    "the gradients to gather ({lens:?} bytes by process) exceed MPI's 2^31 - 1 byte count"
                ),
            });
        };
        let mut all = vec![0u8; total];
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(&payload[..], &mut partition);
        }
        let mut results = Vec::with_capacity(count);
        let mut at = 0;
        for (r, &n) in lens.iter().enumerate() {
            let bytes = &all[at..at + n as usize];
            at += n as usize;
            decode(bytes, block(0..count, size, r), &mut results)
                .map_err(|what| Error::Workers { message: format!("process {r}: {what}") })?;
        }
        results.into_iter().collect()
    }
}

/// MPI's counts and displacements of the gathered buffer, and its length; `None` when it
/// exceeds MPI's `int` counts.
fn partition(lens: &[u64]) -> Option<(Vec<Count>, Vec<Count>, usize)> {
    let (mut counts, mut displs, mut total) = (Vec::with_capacity(lens.len()), Vec::with_capacity(lens.len()), 0usize);
    for &l in lens {
        displs.push(Count::try_from(total).ok()?);
        counts.push(Count::try_from(l).ok()?);
        total = total.checked_add(usize::try_from(l).ok()?)?;
    }
    Count::try_from(total).ok()?;
    Some((counts, displs, total))
}

const OK: u8 = 0;
const FAILED: u8 = 1;

/// A process's payload: `OK`, then per micro-batch `OK` + tensors or `FAILED` + message.
fn encode<A: WireScalar>(results: &[MicroBatchResult<A>]) -> Vec<u8> {
    let mut out = vec![OK];
    for r in results {
        match r {
            Ok(tensors) => {
                out.push(OK);
                put_len(&mut out, tensors.len());
                for t in tensors {
                    let dims = t.dims();
                    put_len(&mut out, dims.rank());
                    for &d in dims.as_slice() {
                        put_len(&mut out, d);
                    }
                    out.reserve(t.numel() * A::BYTES);
                    for v in t.data() {
                        v.write(&mut out);
                    }
                }
            }
            Err(e) => {
                out.push(FAILED);
                // `run_local` names the micro-batch: send its message alone.
                let message = match e {
                    Error::MicroBatch { message, .. } => message.clone(),
                    e => e.to_string(),
                };
                put_text(&mut out, &message);
            }
        }
    }
    out
}

/// The payload of a process that could not compute its block at all.
fn failure(message: &str) -> Vec<u8> {
    let mut out = vec![FAILED];
    put_text(&mut out, message);
    out
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put_text(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Reads one process's payload for micro-batches `mine` onto `results`; a malformed payload is
/// an error (never a panic or an allocation the bytes do not back).
fn decode<A: WireScalar>(
    bytes: &[u8],
    mine: core::ops::Range<usize>,
    results: &mut Vec<MicroBatchResult<A>>,
) -> Result<(), String> {
    let mut r = Reader { bytes };
    if r.byte()? == FAILED {
        let message = r.text()?;
        results.push(Err(Error::Workers { message }));
        return Ok(());
    }
    for index in mine {
        if r.byte()? == FAILED {
            results.push(Err(Error::MicroBatch { index, message: r.text()? }));
            continue;
        }
        let n = r.len()?;
        let mut tensors = Vec::with_capacity(n.min(r.bytes.len()));
        for _ in 0..n {
            let rank = r.len()?;
            if rank > MAX_RANK {
                return Err(format!("a tensor of rank {rank}"));
            }
            let mut ds = [0; MAX_RANK];
            for d in &mut ds[..rank] {
                *d = r.len()?;
            }
            let dims = Dims::new(&ds[..rank]).ok_or_else(|| format!("a tensor of rank {rank}"))?;
            let numel = dims.checked_numel().ok_or_else(|| format!("a tensor of shape {dims} overflows"))?;
            let raw = r.take(numel.checked_mul(A::BYTES).ok_or("a tensor too large")?)?;
            let data = raw.chunks_exact(A::BYTES).map(A::read).collect();
            tensors.push(RawTensor::from_vec(dims, data).map_err(|e| e.to_string())?);
        }
        results.push(Ok(tensors));
    }
    if r.bytes.is_empty() {
        Ok(())
    } else {
        Err(format!("{} bytes left over", r.bytes.len()))
    }
}

struct Reader<'b> {
    bytes: &'b [u8],
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], String> {
        if n > self.bytes.len() {
            return Err(format!("the payload ends {} bytes early", n - self.bytes.len()));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> Result<usize, String> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        usize::try_from(u64::from_le_bytes(b)).map_err(|e| e.to_string())
    }

    fn text(&mut self) -> Result<String, String> {
        let n = self.len()?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
}

#[cfg(test)]
mod tests;
