//! A packed product ([`fast`](super::fast)) split over the current thread pool, by rows or by
//! columns of its output. Every output element is one dot product, computed by the same kernel
//! with the same operations in the same order whichever part it falls in (the parts are
//! independent outputs, never pieces of a sum), so the result does not depend on the number of
//! parts (`thread_tests.rs` compares 1 to 4 threads bit for bit).
//!
//! By rows each part writes its own rows of the output from its own row panels of the left
//! operand and all of the right one. That reads the whole right operand once per part: when it
//! is the larger operand (`cols > rows`: a batch of 64 rows times a 784 × 256 weight), each part
//! instead takes its own column panels of it ([`columns`]) and reads only those.

use rayon::prelude::*;

use super::fast::{Geometry, Isa, Lane, Packed};

/// The product on parts of `per` row panels each: every part writes its own rows of `out` from
/// its own panels of `pa` and all of `pb`. Needs `inner > 0` and `cols > 0`.
pub(super) fn rows<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool>(
    g: Geometry,
    pa: &[T],
    pb: &[T],
    out: &mut [T],
    onto: Option<T>,
    isa: Isa,
    per: usize,
) -> bool {
    let Geometry { inner, cols, .. } = g;
    crate::parallel::split(|| {
        out.par_chunks_mut(per * MR * cols)
            .zip(pa.par_chunks(per * MR * inner))
            .map(|(out, pa)| {
                let g = Geometry { rows: out.len() / cols, inner, cols };
                crate::parallel::part(|| isa.run(Packed::<T, MR, NR, HALF, RHS_LEFT> { g, pa, pb, out, onto }))
            })
            .reduce(|| false, |a, b| a | b)
    })
}

/// The product on parts of `per` column panels each: every part computes its own columns of the
/// output from all of `pa` and its own panels of `pb` into a buffer of its own (the caller
/// thread's, reused from product to product), and the parts' columns are then copied into the
/// rows of `out` (rows in blocks over the pool; each element is only moved). Needs `inner > 0`
/// and `cols > 0`.
pub(super) fn columns<T: Lane, const MR: usize, const NR: usize, const HALF: usize, const RHS_LEFT: bool>(
    g: Geometry,
    pa: &[T],
    pb: &[T],
    out: &mut [T],
    onto: Option<T>,
    isa: Isa,
    per: usize,
) -> bool {
    let Geometry { rows, inner, cols } = g;
    let width = per * NR;
    let parts = cols.div_ceil(width);
    let mut compute = |bufs: &mut Vec<Vec<T>>| {
        bufs.resize_with(bufs.len().max(parts), Vec::new);
        crate::parallel::split(|| {
            let nan = bufs[..parts]
                .par_iter_mut()
                .zip(pb.par_chunks(width * inner))
                .enumerate()
                .map(|(i, (buf, pb))| {
                    let g = Geometry { rows, inner, cols: width.min(cols - i * width) };
                    // Every element is stored by the first inner chunk: the buffer's old values
                    // are never read.
                    buf.resize(rows * g.cols, T::ZERO);
                    let out = &mut buf[..rows * g.cols];
                    crate::parallel::part(|| isa.run(Packed::<T, MR, NR, HALF, RHS_LEFT> { g, pa, pb, out, onto }))
                })
                .reduce(|| false, |a, b| a | b);
            let bufs = &bufs[..parts];
            let block = rows.div_ceil(rayon::current_num_threads().max(1)).max(1);
            out.par_chunks_mut(block * cols).enumerate().for_each(|(b, out)| {
                for (r, row) in out.chunks_exact_mut(cols).enumerate() {
                    let r = b * block + r;
                    for (i, buf) in bufs.iter().enumerate() {
                        let w = width.min(cols - i * width);
                        row[i * width..][..w].copy_from_slice(&buf[r * w..][..w]);
                    }
                }
            });
            nan
        })
    };
    T::column_parts().with(|cell| match cell.try_borrow_mut() {
        Ok(mut bufs) => compute(&mut bufs),
        // A product of this thread holds them (taken off the pool while waiting): fresh buffers.
        Err(_) => compute(&mut Vec::new()),
    })
}
