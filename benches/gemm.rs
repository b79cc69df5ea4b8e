//! `gemm` on the MLP shapes of issue 4 and on the attention block's small products (`attn_*`,
//! `benches/programs.rs`): the portable kernel vs the fast `f32` kernel, for the forward product
//! `a · b` and the two VJP products `δ · bᵀ` and `aᵀ · δ` (strided views, δ on the left); the thin products of W4's heads (`head_*`: `W · x`, `Wᵀ · δ`, `δ · xᵀ`) and two more
//! thin shapes (`thin_*`: a vector–matrix product, 8 columns); and `gemm_onto` against `gemm`
//! followed by a pass of `pinned_add` on W1's largest weight gradient (`onto`).
//!
//! `cargo bench --bench gemm` (`-- attn_` for the attention shapes alone; `-- threads` for the
//! products on 1 and 2 threads, batched products included). Throughput is in FLOP (`2·m·k·n`): criterion's "elem/s" is FLOP/s.
//! The portable kernel is reached through [`P`], an `f32` newtype (any scalar other than
//! `f32`/`f64` runs the portable loop); its products are the same fused multiply-adds.
//!
//! `-- peer`: `gemm` against `matrixmultiply::sgemm` (the issue-26 figures), both called from the
//! bench's main thread as a user's code calls them; run once with `RAYON_NUM_THREADS=1` and once
//! with `=2` (our products split over the global pool; `sgemm` runs on one thread either way).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use core::ops::{Add, Mul};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use exactgrad::ops::{gemm, gemm_onto, MatrixView};
use exactgrad::Storage;

/// `f32` behind a newtype: runs the portable kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
struct P(f32);

impl Add for P {
    type Output = P;
    #[inline]
    fn add(self, o: P) -> P {
        P(self.0 + o.0)
    }
}
impl Mul for P {
    type Output = P;
    #[inline]
    fn mul(self, o: P) -> P {
        P(self.0 * o.0)
    }
}
impl num_traits::Zero for P {
    fn zero() -> P {
        P(0.0)
    }
    fn is_zero(&self) -> bool {
        self.0 == 0.0
    }
}
impl Storage for P {
    const HAS_STORAGE_EQUALITY: bool = true;
    fn storage_eq(&self, other: &P) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
    fn pinned_mul_add(a: P, b: P, acc: P) -> P {
        P(a.0.mul_add(b.0, acc.0))
    }
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
}

/// `(name, rows, inner, cols, RHS_LEFT)` of one product, with its operands as
/// `(lhs data, lhs transposed?, lhs stored cols, rhs data, rhs transposed?, rhs stored cols)`.
struct Product {
    name: String,
    rows: usize,
    inner: usize,
    cols: usize,
    rhs_left: bool,
    lhs: (Vec<f32>, bool, usize),
    rhs: (Vec<f32>, bool, usize),
}

fn view<T>(data: &[T], transposed: bool, stored_cols: usize) -> MatrixView<'_, T> {
    if transposed {
        MatrixView::transposed(data, stored_cols)
    } else {
        MatrixView::row_major(data, stored_cols)
    }
}

fn products() -> Vec<Product> {
    let mut v = Vec::new();
    // W4's one head (`h = sum(tanh(W · x))`, `W` 64×64, `x` 64×1): the forward `W · x`, the
    // backward's `Wᵀ · δ` (a transposed view, δ left) and `δ · xᵀ` (an outer product).
    let (w, x, d) = (values(64 * 64, 4), values(64, 5), values(64, 6));
    v.push(Product {
        name: "head_W.x/64x64x1".into(),
        rows: 64,
        inner: 64,
        cols: 1,
        rhs_left: false,
        lhs: (w.clone(), false, 64),
        rhs: (x.clone(), false, 1),
    });
    v.push(Product {
        name: "head_WT.d/64x64x1".into(),
        rows: 64,
        inner: 64,
        cols: 1,
        rhs_left: true,
        lhs: (w, true, 64),
        rhs: (d.clone(), false, 1),
    });
    v.push(Product {
        name: "head_d.xT/64x1x64".into(),
        rows: 64,
        inner: 1,
        cols: 64,
        rhs_left: false,
        lhs: (d, false, 1),
        rhs: (x.clone(), true, 1),
    });
    let w = values(64 * 64, 7);
    v.push(Product {
        name: "thin_xT.W/1x64x64".into(),
        rows: 1,
        inner: 64,
        cols: 64,
        rhs_left: false,
        lhs: (x, false, 64),
        rhs: (w.clone(), false, 64),
    });
    v.push(Product {
        name: "thin_W.X/64x64x8".into(),
        rows: 64,
        inner: 64,
        cols: 8,
        rhs_left: false,
        lhs: (w, false, 64),
        rhs: (values(64 * 8, 8), false, 8),
    });
    // The MLP of issue 4, then the attention block of `benches/programs.rs` (sequence 32, model
    // 64, 4 heads of 16, MLP 64→256→64: `x·W_qkv`, `q·kᵀ` and `P·v` per head, `o·W_o`, `·W_1`,
    // `·W_2`), each with its two VJP products.
    let mlp = [(64usize, 784usize, 256usize), (64, 256, 128), (64, 128, 10)].map(|s| ("", s));
    let attention =
        [(32, 64, 192), (32, 16, 32), (32, 32, 16), (32, 64, 64), (32, 64, 256), (32, 256, 64)].map(|s| ("attn_", s));
    for (prefix, (m, k, n)) in mlp.into_iter().chain(attention) {
        let (a, b, g) = (values(m * k, 1), values(k * n, 2), values(m * n, 3));
        let shape = format!("{m}x{k}x{n}");
        v.push(Product {
            name: format!("{prefix}fwd_a.b/{shape}"),
            rows: m,
            inner: k,
            cols: n,
            rhs_left: false,
            lhs: (a.clone(), false, k),
            rhs: (b.clone(), false, n),
        });
        v.push(Product {
            name: format!("{prefix}vjp_d.bT/{shape}"),
            rows: m,
            inner: n,
            cols: k,
            rhs_left: false,
            lhs: (g.clone(), false, n),
            rhs: (b, true, n),
        });
        v.push(Product {
            name: format!("{prefix}vjp_aT.d/{shape}"),
            rows: k,
            inner: m,
            cols: n,
            rhs_left: true,
            lhs: (a, true, k),
            rhs: (g, false, n),
        });
    }
    v
}

fn run<T: exactgrad::Scalar + Mul<Output = T>>(p: &Product, lhs: &[T], rhs: &[T], out: &mut Vec<T>) {
    out.clear();
    let (l, r) = (view(lhs, p.lhs.1, p.lhs.2), view(rhs, p.rhs.1, p.rhs.2));
    if p.rhs_left {
        gemm::<T, true>(p.rows, p.inner, p.cols, l, r, out);
    } else {
        gemm::<T, false>(p.rows, p.inner, p.cols, l, r, out);
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("gemm_f32");
    group.sample_size(20);
    for p in products() {
        group.throughput(Throughput::Elements((2 * p.rows * p.inner * p.cols) as u64));
        let (lhs, rhs) = (&p.lhs.0, &p.rhs.0);
        let (plhs, prhs): (Vec<P>, Vec<P>) = (lhs.iter().map(|&x| P(x)).collect(), rhs.iter().map(|&x| P(x)).collect());
        // Same bits on both paths (no NaNs here, so no payload question).
        let (mut fast, mut portable) = (Vec::new(), Vec::new());
        run(&p, lhs, rhs, &mut fast);
        run(&p, &plhs, &prhs, &mut portable);
        assert!(fast.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.0.to_bits()), "{}", p.name);
        group.bench_function(BenchmarkId::new("portable", &p.name), |bch| {
            bch.iter(|| run(&p, &plhs, &prhs, &mut portable));
        });
        group.bench_function(BenchmarkId::new("fast", &p.name), |bch| bch.iter(|| run(&p, lhs, rhs, &mut fast)));
    }
    group.finish();
}

/// W1's first weight gradient `xᵀ · δ1` (784 × 64 × 256, δ left, 800 KB) onto a gradient that
/// still holds the uniform `+0`: `gemm_onto` (the addition in the kernel's last store) against
/// `gemm` and then the pass `pinned_add(0, g)` the engine ran before.
fn onto(c: &mut Criterion) {
    let mut group = c.benchmark_group("gemm_onto_f32");
    group.sample_size(20);
    let (m, k, n) = (784, 64, 256);
    group.throughput(Throughput::Elements((2 * m * k * n) as u64));
    let (x, d) = (values(k * m, 9), values(k * n, 10));
    let (xt, d) = (MatrixView::transposed(&x, m), MatrixView::row_major(&d, n));
    let (mut fused, mut pass) = (Vec::new(), Vec::new());
    gemm_onto::<f32, true>(m, k, n, xt, d, &0.0, &mut fused);
    gemm::<f32, true>(m, k, n, xt, d, &mut pass);
    pass.iter_mut().for_each(|g| *g = f32::pinned_add(0.0, *g));
    assert!(fused.iter().zip(&pass).all(|(a, b)| a.to_bits() == b.to_bits()));
    group.bench_function("fused/W1_xT.d1/784x64x256", |b| {
        b.iter(|| {
            fused.clear();
            gemm_onto::<f32, true>(m, k, n, xt, d, &0.0, &mut fused);
        });
    });
    group.bench_function("gemm+pass/W1_xT.d1/784x64x256", |b| {
        b.iter(|| {
            pass.clear();
            gemm::<f32, true>(m, k, n, xt, d, &mut pass);
            for g in &mut pass {
                *g = f32::pinned_add(0.0, *g);
            }
        });
    });
    group.finish();
}

/// `gemm` (`f32`, row-major) on 1 and 2 threads, in one run: square products of 64 to 1024 (the
/// size threshold of `parallel::min_work` comes from the small ones) and the MLP's largest
/// weight-gradient product. `-- threads`.
fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("threads");
    group.sample_size(20);
    for (m, k, n) in
        [(64, 64, 64), (128, 128, 128), (256, 256, 256), (1024, 1024, 1024), (784, 64, 256), (64, 784, 256)]
    {
        let (a, b) = (values(m * k, 1), values(k * n, 2));
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        for threads in [1, 2] {
            let pool = exactgrad::parallel::pool(threads).expect("threads");
            let mut out = Vec::with_capacity(m * n);
            let id = BenchmarkId::new(format!("{m}x{k}x{n}"), format!("{threads}t"));
            // The measuring loop runs on the pool: no iteration pays for waking a pool thread.
            group.bench_function(id, |bench| {
                pool.install(|| {
                    bench.iter(|| {
                        out.clear();
                        gemm::<f32, false>(
                            m,
                            k,
                            n,
                            MatrixView::row_major(&a, k),
                            MatrixView::row_major(&b, n),
                            &mut out,
                        );
                    });
                });
            });
        }
    }
    // Batched products `[bt, m, k] · [bt, k, n]` (the `matmul` op's forward): split over blocks
    // of batch items (`each_item`), items too small to split their own row panels (`16×32³`:
    // 2^15 multiply-adds each) or as large as `min_work` (`16×64³`).
    for (bt, m, k, n) in [(16usize, 32usize, 32usize, 32usize), (16, 64, 64, 64), (64, 64, 64, 64)] {
        let tensor = |d: &[usize], seed| {
            let d = exactgrad::Dims::new(d).expect("dims");
            exactgrad::RawTensor::from_vec(d, values(d.numel(), seed)).expect("a tensor")
        };
        let ab = [tensor(&[bt, m, k], 1), tensor(&[bt, k, n], 2)];
        let op = exactgrad::ops::MatMul::new(0, 1);
        group.throughput(Throughput::Elements((2 * bt * m * k * n) as u64));
        for threads in [1, 2] {
            let pool = exactgrad::parallel::pool(threads).expect("threads");
            let mut out = Vec::with_capacity(bt * m * n);
            let id = BenchmarkId::new(format!("batched_{bt}x{m}x{k}x{n}"), format!("{threads}t"));
            group.bench_function(id, |bench| {
                pool.install(|| {
                    bench.iter(|| {
                        out.clear();
                        exactgrad::CompactOp::<f32, ()>::forward_into(&op, &ab, &(), &mut out);
                    });
                });
            });
        }
    }
    group.finish();
}

/// `gemm` (`f32`, row-major `a · b`, called from the bench's main thread: the global pool of
/// `RAYON_NUM_THREADS` threads, as a user's code runs it) against `matrixmultiply::sgemm` on the
/// same operands (one thread; its FMA kernel where the CPU has one), squares of 256 and 1024.
/// The two do not give the same bits (`sgemm` sums in blocks), so only the time is compared.
fn peer(c: &mut Criterion) {
    let mut group = c.benchmark_group("peer");
    group.sample_size(10);
    for n in [256usize, 1024] {
        let (a, b) = (values(n * n, 1), values(n * n, 2));
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        let mut out = Vec::with_capacity(n * n);
        group.bench_function(BenchmarkId::new("exactgrad", format!("{n}x{n}x{n}")), |bench| {
            bench.iter(|| {
                out.clear();
                gemm::<f32, false>(n, n, n, MatrixView::row_major(&a, n), MatrixView::row_major(&b, n), &mut out);
            });
        });
        let mut c = vec![0.0f32; n * n];
        group.bench_function(BenchmarkId::new("matrixmultiply", format!("{n}x{n}x{n}")), |bench| {
            bench.iter(|| sgemm(n, &a, &b, &mut c));
        });
    }
    group.finish();
}

/// `c = a · b` for row-major `n × n` matrices with `matrixmultiply::sgemm`.
#[allow(unsafe_code)] // the peer's API takes raw pointers and strides
fn sgemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= n * n && b.len() >= n * n && c.len() >= n * n);
    let s = isize::try_from(n).expect("n fits isize");
    // SAFETY: `a`, `b` and `c` hold `n × n` elements each (checked above), row-major with row
    // stride `n` and column stride 1, so every address sgemm forms is inside them; `c` is
    // borrowed mutably and does not alias `a` or `b`.
    unsafe {
        matrixmultiply::sgemm(n, n, n, 1.0, a.as_ptr(), s, 1, b.as_ptr(), s, 1, 0.0, c.as_mut_ptr(), s, 1);
    }
}

criterion_group!(benches, bench, onto, threads, peer);
criterion_main!(benches);
