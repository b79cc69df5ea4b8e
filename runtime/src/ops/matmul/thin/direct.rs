//! The direct kernel: `a` contiguous along the long side, one vector load per inner index.

use super::*;

/// Lanes per accumulator block: one column at a time (`W1`: eight vectors of the instruction set,
/// eight independent chains of additions), [`GROUP`] columns at a time (`WG`: two vectors per
/// column), and one vector (`V`, for what is left of the long side).
///
/// An AVX-512 CPU runs the AVX2 build, as the transposing kernel does: these sums are chains of
/// dependent additions, and 64-byte vectors measured slower on the AVX-512 machine we have (AMD
/// Zen 4, which splits them in two): `Wᵀ · δ` at 64 × 64 took ~250 ns against ~185 ns.
pub(super) fn direct_on<A: 'static, T: Lane, const B_LEFT: bool>(
    isa: Isa,
    p: Thin<'_, A>,
    onto: Option<T>,
    out: Out<'_, T>,
) -> bool {
    let single = core::mem::size_of::<T>() == 4;
    match (isa, single) {
        (Isa::Baseline, true) => isa.run(Direct::<A, T, 32, 8, 4, B_LEFT> { p, onto, out }),
        (Isa::Baseline, false) => isa.run(Direct::<A, T, 16, 4, 2, B_LEFT> { p, onto, out }),
        (_, true) => Isa::Avx2.run(Direct::<A, T, 64, 16, 8, B_LEFT> { p, onto, out }),
        (_, false) => Isa::Avx2.run(Direct::<A, T, 32, 8, 4, B_LEFT> { p, onto, out }),
    }
}

/// The direct kernel as a [`Kernel`]: columns in groups of [`GROUP`] (`WG` lanes per block), the
/// rest one at a time (`W1` lanes); the long side's last outputs `V` lanes at a time.
struct Direct<'k, A, T, const W1: usize, const WG: usize, const V: usize, const B_LEFT: bool> {
    p: Thin<'k, A>,
    onto: Option<T>,
    out: Out<'k, T>,
}

impl<A: 'static, T: Lane, const W1: usize, const WG: usize, const V: usize, const B_LEFT: bool> Kernel
    for Direct<'_, A, T, W1, WG, V, B_LEFT>
{
    #[inline(always)]
    fn run(self) -> bool {
        let Direct { p, onto, mut out } = self;
        debug_assert!(p.a.row_stride == 1, "the direct kernel reads `a` along unit-stride rows");
        let (mut j, mut nan) = (0, false);
        if let Out::Append(v) = &mut out {
            if p.k <= THIN {
                // A short inner dimension (an outer product): each output row is a few passes
                // over a row in L1, the first one appending.
                for j in 0..p.n {
                    nan |= short_row::<A, T, B_LEFT>(&p, j, onto, v);
                }
                return nan;
            }
        }
        if let Out::Slice(_) = out {
            while j + GROUP <= p.n {
                nan |= columns::<A, T, WG, V, GROUP, B_LEFT>(&p, j, onto, &mut out);
                j += GROUP;
            }
        }
        while j < p.n {
            nan |= columns::<A, T, W1, V, 1, B_LEFT>(&p, j, onto, &mut out);
            j += 1;
        }
        nan
    }
}

/// Appends output row `j` (`out[.., j]`, `m` contiguous) of a product with few inner indices:
/// `mul_add(a, b(0), +0)` appended for the whole row, then `mul_add(a, b(t), ·)` for each further
/// `t` in place (all in L1), then `stored +` for `gemm_onto`; whether a NaN was stored.
#[inline(always)]
fn short_row<A: 'static, T: Lane, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    j: usize,
    onto: Option<T>,
    v: &mut Vec<T>,
) -> bool {
    if p.m == 0 {
        return false;
    }
    let start = v.len();
    let fused = |x: T, bt: T, acc: T| if B_LEFT { bt.fma(x, acc) } else { x.fma(bt, acc) };
    if p.k == 0 {
        v.resize(start + p.m, T::ZERO);
    } else {
        let b0: T = lane(p.b.at(0, j));
        v.extend(p.a.data[..p.m].iter().map(|x| fused(lane(x), b0, T::ZERO)));
    }
    let row = &mut v[start..];
    for t in 1..p.k {
        let bt: T = lane(p.b.at(t, j));
        let column = &p.a.data[t * p.a.col_stride..][..p.m];
        for (o, x) in row.iter_mut().zip(column) {
            *o = fused(lane(x), bt, *o);
        }
    }
    if let Some(stored) = onto {
        for o in row.iter_mut() {
            *o = stored + *o;
        }
    }
    any_nan(row)
}

/// Columns `j0..j0 + NJ` of the output: `W` outputs `m` at a time, then `V` at a time, then the
/// last (fewer than `V`) in a `V`-lane block whose missing lanes are computed on zeros and
/// dropped.
#[inline(always)]
fn columns<A: 'static, T: Lane, const W: usize, const V: usize, const NJ: usize, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    j0: usize,
    onto: Option<T>,
    out: &mut Out<'_, T>,
) -> bool {
    let (mut m0, mut nan) = (0, false);
    while m0 + W <= p.m {
        nan |= block::<A, T, W, NJ, B_LEFT>(p, m0, W, j0, onto, out);
        m0 += W;
    }
    while m0 + V <= p.m {
        nan |= block::<A, T, V, NJ, B_LEFT>(p, m0, V, j0, onto, out);
        m0 += V;
    }
    if m0 < p.m {
        nan |= block::<A, T, V, NJ, B_LEFT>(p, m0, p.m - m0, j0, onto, out);
    }
    nan
}

/// Outputs `m0..m0 + live` (`live ≤ W`) of columns `j0..j0 + NJ`: `acc = mul_add(a[m, t], b[t, j],
/// acc)` for `t` ascending, then stored (`stored + acc` for `gemm_onto`); whether a NaN may have been
/// stored (dropped lanes included).
#[inline(always)]
fn block<A: 'static, T: Lane, const W: usize, const NJ: usize, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    m0: usize,
    live: usize,
    j0: usize,
    onto: Option<T>,
    out: &mut Out<'_, T>,
) -> bool {
    let mut acc = [[T::ZERO; W]; NJ];
    for t in 0..p.k {
        let base = m0 + t * p.a.col_stride;
        let av: [T; W] = if live == W {
            let src: &[A; W] = (&p.a.data[base..base + W]).try_into().expect("a slice of exactly the array length");
            core::array::from_fn(|i| lane(&src[i]))
        } else {
            let src = &p.a.data[base..base + live];
            core::array::from_fn(|i| src.get(i).map_or(T::ZERO, lane))
        };
        for (g, row) in acc.iter_mut().enumerate() {
            let bj: T = lane(p.b.at(t, j0 + g));
            for (s, &x) in row.iter_mut().zip(&av) {
                *s = if B_LEFT { bj.fma(x, *s) } else { x.fma(bj, *s) };
            }
        }
    }
    if let Some(stored) = onto {
        for s in acc.iter_mut().flatten() {
            *s = stored + *s;
        }
    }
    for (g, row) in acc.iter().enumerate() {
        let o = m0 * p.o_m + (j0 + g) * p.o_j;
        match out {
            Out::Append(v) => v.extend_from_slice(&row[..live]),
            Out::Slice(out) if p.o_m == 1 => out[o..o + live].copy_from_slice(&row[..live]),
            Out::Slice(out) => {
                for (i, &x) in row[..live].iter().enumerate() {
                    out[o + i * p.o_m] = x;
                }
            }
        }
    }
    any_nan(acc.as_flattened())
}

/// Outputs `m0..p.m` of columns `j0..j0 + nj`, one sum at a time (the rows the transposing
/// kernel leaves over after whole vectors); whether a NaN was stored.
pub(super) fn tail_rows<A: 'static, T: Lane, const B_LEFT: bool>(
    p: &Thin<'_, A>,
    m0: usize,
    j0: usize,
    nj: usize,
    onto: Option<T>,
    out: &mut [T],
) -> bool {
    let mut nan = false;
    for m in m0..p.m {
        for j in j0..j0 + nj {
            let mut s = T::ZERO;
            for t in 0..p.k {
                let (x, y): (T, T) = (lane(p.a.at(m, t)), lane(p.b.at(t, j)));
                s = if B_LEFT { y.fma(x, s) } else { x.fma(y, s) };
            }
            let s = match onto {
                Some(stored) => stored + s,
                None => s,
            };
            nan |= s.is_nan();
            out[m * p.o_m + j * p.o_j] = s;
        }
    }
    nan
}
