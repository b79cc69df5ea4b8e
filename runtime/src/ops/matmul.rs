//! `matmul(a, b)`: `y[i, j] = Σ_t a[i, t] * b[t, j]` for `a: m×k`, `b: k×n`, each sum a chain of
//! fused multiply-adds `acc ← mul_add(a[i, t], b[t, j], acc)` in ascending `t` from `acc = 0`
//! (SEMANTICS §8).
//!
//! VJP: `add(single(a, δ · bᵀ), single(b, aᵀ · δ))`, each product with δ on the left
//! (`δ[i, j] * b[t, j]` and `δ[i, j] * a[i, t]`).
//!
//! Batched (SEMANTICS §8.2):
//! * `a: [bt, m, k]`, `b: [bt, k, n]` → `[bt, m, n]`: one product per batch item,
//!   `y[p] = a[p] · b[p]`; the gradients are per item too, `ga[p] = δ[p] · b[p]ᵀ` and
//!   `gb[p] = a[p]ᵀ · δ[p]` (every sum over `t`, `j` or `i` of that item, ascending);
//! * `a: [bt, m, k]`, `b: [k, n]` (the matrix shared by every batch item) → `[bt, m, n]`: exactly
//!   the rank-2 product of `a` read as the `[bt·m, k]` matrix of its rows, so
//!   `gb[t, j] = Σ_(p, i) δ[p, i, j] * a[p, i, t]` over the rows `(p, i)` in ascending row-major
//!   order (`p` outer, `i` inner), from `0` — one GEMM, no per-item partial sums.
//!
//! Every batch item runs the same [`gemm`] as a rank-2 product, appended in batch order to one
//! buffer (reserved once for all items: nothing is allocated per item). The items are
//! independent outputs: for enough work, blocks of items run on threads ([`each_item`]).

use crate::reference::RefOp;
use core::ops::Mul;

use crate::contributions::{Contrib, Contributions};
use crate::graph::{CompactOp, SavedValues};
use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

mod fast;
typed_op!(matmul(a: L, b: R) -> MatMul: MatMul, "`a · b`, `(M, K)` · `(K, N)` → `(M, N)`, `(B, M, K)` · `(B, K, N)` → `(B, M, N)` or `(B, M, K)` · `(K, N)` → `(B, M, N)`");

#[cfg(test)]
mod gemm_tests;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // the one module with `unsafe`: see its docs
mod simd;
mod small;
mod split;
#[cfg(target_arch = "x86_64")]
pub(crate) use simd::{elementwise, WideLoop};
/// Runs `f` (no wider build on this architecture).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn elementwise<R>(f: impl FnOnce() -> R) -> R {
    f()
}
#[cfg(test)]
mod small_tests;
mod thin;
#[cfg(test)]
mod thin_tests;
#[cfg(test)]
mod thread_tests;

/// A strided view of a matrix: element `(r, c)` is `data[r * row_stride + c * col_stride]`.
#[derive(Debug)]
pub struct MatrixView<'a, A> {
    /// The elements.
    pub data: &'a [A],
    /// Step between rows.
    pub row_stride: usize,
    /// Step between columns.
    pub col_stride: usize,
}

impl<A> Clone for MatrixView<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for MatrixView<'_, A> {}

impl<'a, A> MatrixView<'a, A> {
    /// A row-major `rows × cols` matrix.
    pub fn row_major(data: &'a [A], cols: usize) -> Self {
        MatrixView { data, row_stride: cols, col_stride: 1 }
    }

    /// The transpose of a row-major matrix with `cols` columns.
    pub fn transposed(data: &'a [A], cols: usize) -> Self {
        MatrixView { data, row_stride: 1, col_stride: cols }
    }

    #[inline]
    fn at(&self, r: usize, c: usize) -> &A {
        &self.data[r * self.row_stride + c * self.col_stride]
    }
}

/// The GEMM of every pass: appends to `out` the `rows × cols` matrix whose element `(r, c)` is
/// the dot product `acc ← mul_add(lhs[r, t], rhs[t, c], acc)` for `t` ascending from `acc = +0`
/// ([`Storage::pinned_mul_add`](crate::Storage::pinned_mul_add), the scalar's fused multiply-add;
/// `mul_add(rhs[t, c], lhs[r, t], acc)` when `RHS_LEFT`, which keeps the cotangent on the left:
/// the same value, the NaN precedence of SEMANTICS §1).
///
/// For `f32` and `f64` an order-preserving blocked kernel runs (packed panels, a register tile
/// vectorised across output columns, FMA instructions where the CPU has them); it performs, for
/// every output element, the same fused multiply-adds in the same order as the portable loop
/// below, so the results are bit-identical (SEMANTICS §8). Other scalars run the portable loop.
///
/// NaN payloads (`f32`, `f64`): Rust does not specify which NaN an operation returns when several
/// operands are NaNs, and LLVM may swap the operands of `+`, `*` and `mul_add`, so for such
/// elements the payload is pinned: each step returns the accumulator's NaN (quieted) if it is one,
/// else the left factor's, else the right one's, else the platform's default NaN (`∞ - ∞`,
/// `0 · ∞`). Elements that are not NaN are untouched.
///
/// Thin products (one side of the output at most 8 — a matrix–vector product, a vector–matrix
/// product — or at most 8 inner indices, as in an outer product) run kernels vectorised across the
/// long side, with the same guarantee.
///
/// ```
/// use exactgrad_runtime::ops::{gemm, MatrixView};
///
/// // [-1, 1 + 2⁻³⁰] · [1, 1 - 2⁻³⁰]ᵀ: the second product, 1 - 2⁻⁶⁰, is added to -1 exactly
/// // (one rounding); two roundings would give 1 - 1 = 0.
/// let (e, one) = (2f64.powi(-30), 1.0);
/// let (x, w) = ([-one, one + e], [one, one - e]);
/// let mut out = Vec::new();
/// gemm::<f64, false>(1, 2, 1, MatrixView::row_major(&x, 2), MatrixView::row_major(&w, 1), &mut out);
/// assert_eq!(out, [-(2f64.powi(-60))]);
/// ```
pub fn gemm<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    out: &mut Vec<A>,
) {
    crate::parallel::entered(|| gemm_into::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, None, out));
}

/// [`gemm`] added onto a uniform: appends `A::pinned_add(stored.clone(), element)` for every
/// element of the product, where `element` is exactly what [`gemm`] appends (NaN payloads
/// pinned) — the accumulation `stored + contribution` of a gradient position that still holds the
/// uniform `stored` (SEMANTICS §4–6), without a pass of its own: the `f32`/`f64` kernels add
/// `stored` (left operand) in their final store, while the sums are still in registers. Other
/// scalars run the portable loop and then the additions.
///
/// A NaN `stored` gives `stored` quieted everywhere (the left operand's NaN wins); a NaN element
/// with a number `stored` gives the element's pinned NaN; `∞ + -∞` the platform's default NaN.
///
/// ```
/// use exactgrad_runtime::ops::{gemm, gemm_onto, MatrixView};
/// use exactgrad_runtime::Storage;
///
/// let w = [1.0f32, 2.0, 3.0, 4.0]; // 2 × 2
/// let x = [0.5f32, -1.0]; // 2 × 1
/// let (w, x) = (MatrixView::row_major(&w, 2), MatrixView::row_major(&x, 1));
///
/// // A gradient slot still holding the uniform -0.0 receives w · x.
/// let mut fused = Vec::new();
/// gemm_onto::<f32, false>(2, 2, 1, w, x, &-0.0, &mut fused);
/// assert_eq!(fused, [-1.5, -2.5]);
///
/// // The same bits as the product followed by a pass of pinned additions.
/// let mut product = Vec::new();
/// gemm::<f32, false>(2, 2, 1, w, x, &mut product);
/// let pass: Vec<u32> = product.iter().map(|&g| f32::pinned_add(-0.0, g).to_bits()).collect();
/// assert_eq!(fused.iter().map(|g| g.to_bits()).collect::<Vec<_>>(), pass);
/// ```
#[allow(clippy::too_many_arguments)] // gemm's arguments and the uniform
pub fn gemm_onto<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    stored: &A,
    out: &mut Vec<A>,
) {
    crate::parallel::entered(|| gemm_into::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, Some(stored), out));
}

/// [`gemm`] (`onto = None`) or [`gemm_onto`]: a fast kernel when there is one (the epilogue
/// fused, NaNs pinned only if it may have stored one), else the portable loop, the pinning and the
/// additions.
fn gemm_into<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut Vec<A>,
) {
    if A::COMPILED {
        let k = A::compiled();
        let gemm = if RHS_LEFT { k.gemm_rhs_left } else { k.gemm };
        return gemm(rows, inner, cols, lhs, rhs, onto, out);
    }
    gemm_body::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, onto, out);
}

/// [`gemm_into`]'s body (compiled in this crate for `f32` and `f64`: [`crate::compiled`]).
pub(crate) fn gemm_body<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    onto: Option<&A>,
    out: &mut Vec<A>,
) {
    let start = out.len();
    if let Some(nan) = fast::try_gemm::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, onto, out) {
        if nan {
            fast::pin_nans::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, out, start, onto);
        }
    } else {
        gemm_portable::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, out);
        fast::pin_nans::<A, RHS_LEFT>(rows, inner, cols, lhs, rhs, out, start, None);
        if let Some(stored) = onto {
            for x in &mut out[start..] {
                *x = A::pinned_add(stored.clone(), x.clone());
            }
        }
    }
}

/// The portable kernel: the definition of [`gemm`]'s result for every scalar.
fn gemm_portable<A: Scalar + Mul<Output = A>, const RHS_LEFT: bool>(
    rows: usize,
    inner: usize,
    cols: usize,
    lhs: MatrixView<'_, A>,
    rhs: MatrixView<'_, A>,
    out: &mut Vec<A>,
) {
    let start = out.len();
    out.extend((0..rows * cols).map(|_| A::zero()));
    for r in 0..rows {
        let row = &mut out[start + r * cols..start + (r + 1) * cols];
        for t in 0..inner {
            let l = lhs.at(r, t);
            for (c, acc) in row.iter_mut().enumerate() {
                let x = rhs.at(t, c);
                *acc = if RHS_LEFT {
                    A::pinned_mul_add(x.clone(), l.clone(), acc.clone())
                } else {
                    A::pinned_mul_add(l.clone(), x.clone(), acc.clone())
                };
            }
        }
    }
}

/// Matrix product.
#[derive(Clone, Debug)]
pub struct MatMul {
    parents: [usize; 2],
}

impl MatMul {
    /// `a · b` for the operands at positions `a` (`m×k` or `bt×m×k`) and `b` (`k×n` or
    /// `bt×k×n`).
    #[must_use]
    pub fn new(a: usize, b: usize) -> Self {
        MatMul { parents: [a, b] }
    }

    /// The positions of `a` and `b`.
    pub(crate) fn positions(&self) -> [usize; 2] {
        self.parents
    }
}

/// The products of a `matmul` of operands of dims `a` and `b` (checked by the shape rule):
/// `count` items of `m×k · k×n`, `batched` when `b` has one matrix per item. A shared `b` folds
/// the batch into `m` (`[bt, m, k]` is the `[bt·m, k]` matrix of its rows): one item.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch {
    pub(crate) count: usize,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) batched: bool,
}

impl Batch {
    pub(crate) fn of(a: Dims, b: Dims) -> Batch {
        match (a.as_slice(), b.as_slice()) {
            (&[bt, m, k], &[_, _, n]) => Batch { count: bt, m, k, n, batched: true },
            (&[bt, m, k], &[_, n]) => Batch { count: 1, m: bt * m, k, n, batched: false },
            (&[m, k], &[_, n]) => Batch { count: 1, m, k, n, batched: false },
            _ => Batch { count: 0, m: 0, k: 0, n: 0, batched: false },
        }
    }

    /// Whether the VJP's two products (`δ · bᵀ` and `aᵀ · δ`, as many multiply-adds each) should
    /// run side by side on threads (`parallel::concurrent`; the same bits either way).
    pub(crate) fn vjp_products_concurrent(&self) -> bool {
        crate::parallel::concurrent(2, || {
            self.count.saturating_mul(self.m).saturating_mul(self.k).saturating_mul(self.n).saturating_mul(2)
        })
    }

    /// Item `p` of a tensor of items of `size` elements each.
    fn item<A>(data: &[A], p: usize, size: usize) -> &[A] {
        &data[p * size..(p + 1) * size]
    }

    /// `b`'s item `p` (the one matrix when `b` is shared).
    fn right<'t, A>(&self, b: &'t [A], p: usize) -> &'t [A] {
        if self.batched {
            Self::item(b, p, self.k * self.n)
        } else {
            b
        }
    }
}

/// The output dims of `a · b`: `a`'s dims with the last replaced by `b`'s columns.
fn output_dims(a: Dims, b: Dims) -> Dims {
    let mut d = a.as_slice().to_vec();
    if let (Some(last), Some(&n)) = (d.last_mut(), b.as_slice().last()) {
        *last = n;
    }
    Dims::new(&d).unwrap_or(a)
}

/// `a · b` for row-major operands of a `matmul` (the forward of every matmul op).
pub(crate) fn product<A: Scalar + Mul<Output = A>>(a: &RawTensor<A>, b: &RawTensor<A>) -> RawTensor<A> {
    let d = output_dims(a.dims(), b.dims());
    let mut out = Vec::with_capacity(d.numel());
    product_into(a, b, &mut out);
    RawTensor::from_parts(d, out)
}

/// Appends `count` batch items of `size` elements each to `out`, in batch order, item `p` by
/// `item(p, v)` appending its `size` elements to `v`; `item_work` is one item's multiply-adds.
///
/// The items are independent outputs: when `parallel::item_parts` splits them (enough total work,
/// items not large enough to be split themselves), contiguous blocks of items run on threads,
/// each block appending its items to a buffer of its own (under `parallel::sequential`: no
/// nested split) and copying it into its part of `out`. Every item runs the same `item(p, …)`
/// either way, so the bits do not depend on the split.
pub(crate) fn each_item<A: Scalar>(
    count: usize,
    size: usize,
    item_work: usize,
    out: &mut Vec<A>,
    item: impl Fn(usize, &mut Vec<A>) + Sync,
) {
    let parts = if size == 0 { 1 } else { crate::parallel::item_parts(count, item_work) };
    if parts < 2 {
        out.reserve(count * size);
        for p in 0..count {
            item(p, out);
        }
        return;
    }
    use rayon::prelude::*;
    let start = out.len();
    out.resize(start + count * size, A::zero());
    let per = count.div_ceil(parts);
    crate::parallel::split(|| {
        out[start..].par_chunks_mut(per * size).enumerate().for_each(|(b, chunk)| {
            crate::parallel::part(|| {
                crate::parallel::sequential(|| {
                    let mut v = Vec::with_capacity(chunk.len());
                    for p in b * per..b * per + chunk.len() / size {
                        item(p, &mut v);
                    }
                    chunk.clone_from_slice(&v);
                });
            });
        });
    });
}

/// [`product`] appended to `out`: one [`gemm`] per batch item, in batch order ([`each_item`]).
pub(crate) fn product_into<A: Scalar + Mul<Output = A>>(a: &RawTensor<A>, b: &RawTensor<A>, out: &mut Vec<A>) {
    if A::COMPILED {
        return (A::compiled().product)(a, b, out);
    }
    product_body(a, b, out);
}

/// [`product_into`]'s body (compiled in this crate for `f32` and `f64`: [`crate::compiled`]).
pub(crate) fn product_body<A: Scalar + Mul<Output = A>>(a: &RawTensor<A>, b: &RawTensor<A>, out: &mut Vec<A>) {
    let bt = Batch::of(a.dims(), b.dims());
    let Batch { count, m, k, n, .. } = bt;
    each_item(count, m * n, m.saturating_mul(k).saturating_mul(n), out, |p, out| {
        let (ap, bp) = (Batch::item(a.data(), p, m * k), bt.right(b.data(), p));
        gemm::<A, false>(m, k, n, MatrixView::row_major(ap, k), MatrixView::row_major(bp, n), out);
    });
}

/// The left operand's gradient `δ · bᵀ` (`(m×n)(n×k)` per batch item, products
/// `δ[i, j] * b[t, j]`), appended to `out`.
pub(crate) fn left_gradient<A: Scalar + Mul<Output = A>>(
    a: &RawTensor<A>,
    g: &RawTensor<A>,
    b: &RawTensor<A>,
    out: &mut Vec<A>,
) {
    if A::COMPILED {
        return (A::compiled().left_gradient)(a, g, b, out);
    }
    left_gradient_body(a, g, b, out);
}

/// [`left_gradient`]'s body (compiled in this crate for `f32` and `f64`: [`crate::compiled`]).
pub(crate) fn left_gradient_body<A: Scalar + Mul<Output = A>>(
    a: &RawTensor<A>,
    g: &RawTensor<A>,
    b: &RawTensor<A>,
    out: &mut Vec<A>,
) {
    let bt = Batch::of(a.dims(), b.dims());
    let Batch { count, m, k, n, .. } = bt;
    each_item(count, m * k, m.saturating_mul(k).saturating_mul(n), out, |p, out| {
        let (gp, bp) = (Batch::item(g.data(), p, m * n), bt.right(b.data(), p));
        gemm::<A, false>(m, n, k, MatrixView::row_major(gp, n), MatrixView::transposed(bp, n), out);
    });
}

/// The right operand's gradient `aᵀ · δ` (`(k×m)(m×n)` per batch item — for a shared `b` one
/// product over every row of every item — products `δ[i, j] * a[i, t]`, the cotangent left),
/// appended to `out`.
pub(crate) fn right_gradient<A: Scalar + Mul<Output = A>>(
    a: &RawTensor<A>,
    g: &RawTensor<A>,
    b: Dims,
    out: &mut Vec<A>,
) {
    if A::COMPILED {
        return (A::compiled().right_gradient)(a, g, b, out);
    }
    right_gradient_body(a, g, b, out);
}

/// [`right_gradient`]'s body (compiled in this crate for `f32` and `f64`: [`crate::compiled`]).
pub(crate) fn right_gradient_body<A: Scalar + Mul<Output = A>>(
    a: &RawTensor<A>,
    g: &RawTensor<A>,
    b: Dims,
    out: &mut Vec<A>,
) {
    let Batch { count, m, k, n, .. } = Batch::of(a.dims(), b);
    each_item(count, k * n, m.saturating_mul(k).saturating_mul(n), out, |p, out| {
        let (ap, gp) = (Batch::item(a.data(), p, m * k), Batch::item(g.data(), p, m * n));
        gemm::<A, true>(k, m, n, MatrixView::transposed(ap, k), MatrixView::row_major(gp, n), out);
    });
}

impl<A: Scalar + Mul<Output = A>, D> CompactOp<A, D> for MatMul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let (da, db) =
            (super::dims_at("matmul", prefix, self.parents[0])?, super::dims_at("matmul", prefix, self.parents[1])?);
        super::ruled(super::spec_rules::matmul(da.as_slice(), db.as_slice()))
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        product(&ctx[self.parents[0]], &ctx[self.parents[1]])
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, out: &mut Vec<A>) {
        product_into(&ctx[self.parents[0]], &ctx[self.parents[1]], out);
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let [pa, pb] = self.parents;
        let (a, b) = (&saved.prefix[pa], &saved.prefix[pb]);
        let mut ga = c.buffer_for(a.numel());
        let mut gb = c.buffer_for(b.numel());
        // The two products land in different positions: on threads at the same time when their
        // multiply-adds (as many for each) reach `parallel::min_node_work` (the same bits).
        if Batch::of(a.dims(), b.dims()).vjp_products_concurrent() {
            crate::parallel::pair(|| left_gradient(a, g, b, &mut ga), || right_gradient(a, g, b.dims(), &mut gb));
        } else {
            left_gradient(a, g, b, &mut ga);
            right_gradient(a, g, b.dims(), &mut gb);
        }
        let ga = c.single(pa, RawTensor::from_parts(a.dims(), ga));
        let gb = c.single(pb, RawTensor::from_parts(b.dims(), gb));
        c.add(ga, gb)
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::matmul(self.parents[0], self.parents[1]))
    }
    fn as_product(&self) -> Option<&dyn super::ProductVjp<A, D>> {
        Some(self)
    }
}

#[cfg(test)]
mod op_tests;
