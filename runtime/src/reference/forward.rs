//! The reference's forward: each built-in op's value by the formula of its documentation, as a
//! textbook loop over [`RefTensor`]s, with its own shape and data checks (a message, never a
//! panic). Every `+` is the engine's addition ([`plus`], SEMANTICS §0); reductions run in
//! ascending index order from `0` (§8).

use core::cmp::Ordering;

use super::op::{FloatKit, RefOp, Unary};
use super::tensor::{around, fused, numel, plus, RefTensor};
use super::window;
use crate::scalar::Scalar;

/// The value at position `p` of the prefix, or a message.
pub(super) fn at<A>(vals: &[RefTensor<A>], p: usize) -> Result<&RefTensor<A>, String> {
    vals.get(p).ok_or_else(|| format!("reads position {p}, outside its prefix of {}", vals.len()))
}

/// `Ok` when `a` and `b` have the same dims.
fn same<A>(a: &RefTensor<A>, b: &RefTensor<A>) -> Result<(), String> {
    if a.dims == b.dims {
        Ok(())
    } else {
        Err(format!("operands of dims {:?} and {:?} differ", a.dims, b.dims))
    }
}

/// `(rows, cols)` of a matrix.
pub(super) fn matrix(dims: &[usize]) -> Result<(usize, usize), String> {
    match *dims {
        [r, c] => Ok((r, c)),
        _ => Err(format!("needs a matrix, got dims {dims:?}")),
    }
}

/// The sizes of a `matmul` of operands of dims `a` and `b`: `bt` batch items (1 for two matrices)
/// of `m×k · k×n`, `shared` when `b` is one matrix for every item.
pub(super) struct MatMulDims {
    pub(super) bt: usize,
    pub(super) m: usize,
    pub(super) k: usize,
    pub(super) n: usize,
    pub(super) shared: bool,
}

/// [`MatMulDims`] of `a · b`, or a message.
pub(super) fn matmul_dims(a: &[usize], b: &[usize]) -> Result<MatMulDims, String> {
    let (bt, m, k, k2, n, shared) = match (a, b) {
        (&[m, k], &[k2, n]) => (1, m, k, k2, n, true),
        (&[bt, m, k], &[k2, n]) => (bt, m, k, k2, n, true),
        (&[bt, m, k], &[bt2, k2, n]) if bt == bt2 => (bt, m, k, k2, n, false),
        _ => return Err(format!("operands of dims {a:?} and {b:?} are no (batched) matrices")),
    };
    if k != k2 {
        return Err(format!("inner sizes {k} and {k2} differ"));
    }
    Ok(MatMulDims { bt, m, k, n, shared })
}

/// `out[i, j] = mul_add(l, r, … mul_add(l, r, 0))` over `t` ascending in `0..inner` ([`fused`]),
/// `(l, r) = factors(i, t, j)`.
pub(super) fn product<A: Scalar>(
    rows: usize,
    inner: usize,
    cols: usize,
    factors: impl Fn(usize, usize, usize) -> (A, A),
    mul_add: fn(A, A, A) -> A,
) -> Vec<A> {
    let mut out = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        for j in 0..cols {
            let mut acc = A::zero();
            for t in 0..inner {
                let (l, r) = factors(i, t, j);
                acc = fused(l, r, acc, mul_add);
            }
            out.push(acc);
        }
    }
    out
}

/// `t` of dims `[…, t, t]`, or a message.
pub(super) fn causal_size(dims: &[usize]) -> Result<usize, String> {
    match *dims {
        [.., r, c] if r == c => Ok(r),
        _ => Err(format!("needs dims [.., t, t], got {dims:?}")),
    }
}

/// `((0 + xs[0]) + xs[1]) + …`.
pub(super) fn sum<A: Scalar>(xs: impl IntoIterator<Item = A>) -> A {
    xs.into_iter().fold(A::zero(), plus)
}

/// The count `n` as a scalar, or a message.
pub(super) fn count<A>(count: fn(usize) -> Option<A>, n: usize) -> Result<A, String> {
    count(n).ok_or_else(|| format!("cannot represent the count {n} in the scalar type"))
}

/// `x[0]`, replaced by every later `x[j] > m` (softmax step 1).
pub(super) fn row_max<A: Clone>(k: &FloatKit<A>, row: &[A]) -> A {
    let mut m = row[0].clone();
    for v in &row[1..] {
        if (k.cmp)(v, &m) == Some(Ordering::Greater) {
            m = v.clone();
        }
    }
    m
}

/// `(m, e, s)` of a row: its maximum, `e[j] = exp(x[j] - m)` and `s = ((0 + e[0]) + e[1]) + …`.
pub(super) fn shifted<A: Scalar>(k: &FloatKit<A>, row: &[A]) -> (A, Vec<A>, A) {
    let m = row_max(k, row);
    let e: Vec<A> = row.iter().map(|v| (k.exp)((k.sub)(v.clone(), m.clone()))).collect();
    let s = sum(e.iter().cloned());
    (m, e, s)
}

/// The non-empty last axis of `x`, or a message.
fn last_axis(dims: &[usize]) -> Result<usize, String> {
    match dims.last() {
        Some(&n) if n > 0 => Ok(n),
        _ => Err(format!("needs a non-empty last axis, got dims {dims:?}")),
    }
}

/// `(h, r)` of a layer-norm row: `h[j] = (x[j] - μ) * r`, `r = 1 / sqrt(v + eps)`.
pub(super) fn normalise<A: Scalar>(k: &FloatKit<A>, row: &[A], n: &A, eps: &A) -> (Vec<A>, A) {
    let mu = (k.div)(sum(row.iter().cloned()), n.clone());
    let d: Vec<A> = row.iter().map(|v| (k.sub)(v.clone(), mu.clone())).collect();
    let var = (k.div)(sum(d.iter().map(|v| (k.mul)(v.clone(), v.clone()))), n.clone());
    let r = (k.div)(k.one.clone(), (k.sqrt)(plus(var, eps.clone())));
    (d.into_iter().map(|v| (k.mul)(v, r.clone())).collect(), r)
}

/// `tanh(c * (x + k * ((x * x) * x)))` of GELU, with its constants `(0.5, c, k, 3k)`.
pub(super) fn gelu_tanh<A: Scalar>(k: &FloatKit<A>, x: &A) -> A {
    let (c, kk) = ((k.constant)(0.797_884_560_802_865_4), (k.constant)(0.044_715));
    let x3 = (k.mul)((k.mul)(x.clone(), x.clone()), x.clone());
    (k.tanh)((k.mul)(c, plus(x.clone(), (k.mul)(kk, x3))))
}

/// `1 / (1 + exp(-x))`.
pub(super) fn logistic<A: Scalar>(k: &FloatKit<A>, x: &A) -> A {
    (k.div)(k.one.clone(), plus(k.one.clone(), (k.exp)((k.neg)(x.clone()))))
}

/// `f(x)` for one element.
fn unary<A: Scalar>(f: &Unary<A>, x: &A) -> A {
    let zero = A::zero();
    match f {
        Unary::Neg { neg, .. } => neg(x.clone()),
        Unary::Relu { cmp } => {
            if cmp(x, &zero) == Some(Ordering::Less) {
                zero
            } else {
                x.clone()
            }
        }
        Unary::Tanh(k) => (k.tanh)(x.clone()),
        Unary::Exp(k) => (k.exp)(x.clone()),
        Unary::Sigmoid(k) => logistic(k, x),
        Unary::Softplus(k) => {
            if (k.cmp)(x, &zero) == Some(Ordering::Greater) {
                plus(x.clone(), (k.ln_1p)((k.exp)((k.neg)(x.clone()))))
            } else {
                (k.ln_1p)((k.exp)(x.clone()))
            }
        }
        Unary::Log(k) => (k.ln)(x.clone()),
        Unary::Sqrt(k) => (k.sqrt)(x.clone()),
        Unary::Gelu(k) => {
            let half = (k.constant)(0.5);
            (k.mul)((k.mul)(half, x.clone()), plus(k.one.clone(), gelu_tanh(k, x)))
        }
        Unary::Silu(k) => (k.div)(x.clone(), plus(k.one.clone(), (k.exp)((k.neg)(x.clone())))),
    }
}

/// Whether `max`/`min` picks its left operand: unless it loses the comparison; unordered, a NaN
/// wins (the left one if it is a NaN).
pub(super) fn left<A>(cmp: fn(&A, &A) -> Option<Ordering>, max: bool, a: &A, b: &A) -> bool {
    let loses = if max { Ordering::Less } else { Ordering::Greater };
    match cmp(a, b) {
        Some(o) => o != loses,
        None => cmp(a, a).is_none(),
    }
}

/// Elementwise `f(a[i], b[i])` of two positions of the same dims.
fn zip<A: Clone>(vals: &[RefTensor<A>], a: usize, b: usize, f: impl Fn(A, A) -> A) -> Result<RefTensor<A>, String> {
    let (x, y) = (at(vals, a)?, at(vals, b)?);
    same(x, y)?;
    Ok(RefTensor {
        dims: x.dims.clone(),
        data: x.data.iter().zip(&y.data).map(|(u, v)| f(u.clone(), v.clone())).collect(),
    })
}

/// Elementwise `f(a[i])`.
fn map<A: Clone>(vals: &[RefTensor<A>], a: usize, f: impl Fn(&A) -> A) -> Result<RefTensor<A>, String> {
    let x = at(vals, a)?;
    Ok(RefTensor { dims: x.dims.clone(), data: x.data.iter().map(f).collect() })
}

/// The value of `op` on the prefix `vals` and the data.
///
/// # Errors
/// A message when the operands' dims or the data do not fit the op.
pub(super) fn forward<A: Scalar, D>(op: &RefOp<A, D>, vals: &[RefTensor<A>], data: &D) -> Result<RefTensor<A>, String> {
    match op {
        RefOp::Add { a, b } => zip(vals, *a, *b, plus),
        RefOp::Sub { a, b, sub } => zip(vals, *a, *b, sub),
        RefOp::Mul { a, b, mul } => zip(vals, *a, *b, mul),
        RefOp::Div { a, b, div, .. } => zip(vals, *a, *b, div),
        RefOp::Square { a, mul } => map(vals, *a, |x| mul(x.clone(), x.clone())),
        RefOp::Scale { a, factor, mul } => map(vals, *a, |x| mul(x.clone(), factor.clone())),
        RefOp::Offset { a, constant } => map(vals, *a, |x| plus(x.clone(), constant.clone())),
        RefOp::DivConst { a, divisor, div } => map(vals, *a, |x| div(x.clone(), divisor.clone())),
        RefOp::Select { a, b, max, cmp } => zip(vals, *a, *b, |u, v| if left(*cmp, *max, &u, &v) { u } else { v }),
        RefOp::Unary { a, f } => map(vals, *a, |x| unary(f, x)),
        RefOp::MatMul { a, b, mul_add } => {
            let (x, y) = (at(vals, *a)?, at(vals, *b)?);
            let MatMulDims { bt, m, k, n, shared } = matmul_dims(&x.dims, &y.dims)?;
            // Item p of the batch: y[p, i, j] = Σ_t x[p, i, t] * w[p, t, j] (w[t, j] when shared).
            let mut data = Vec::with_capacity(bt * m * n);
            for p in 0..bt {
                let w0 = if shared { 0 } else { p * k * n };
                data.extend(product(
                    m,
                    k,
                    n,
                    |i, t, j| (x.data[(p * m + i) * k + t].clone(), y.data[w0 + t * n + j].clone()),
                    *mul_add,
                ));
            }
            let mut dims = x.dims.clone();
            if let Some(last) = dims.last_mut() {
                *last = n;
            }
            Ok(RefTensor { dims, data })
        }
        RefOp::MatMulData { w, rows, x, mul_add } => {
            let (xv, wv) = (x(data), at(vals, *w)?);
            let ((m, k), (k2, n)) = (matrix(xv.dims().as_slice())?, matrix(&wv.dims)?);
            if m != *rows || k != k2 {
                return Err(format!("data operand of dims {} for {rows} rows and {k2} inner", xv.dims()));
            }
            let xd = xv.data();
            let data = product(m, k, n, |i, t, j| (xd[i * k + t].clone(), wv.data[t * n + j].clone()), *mul_add);
            Ok(RefTensor { dims: vec![m, n], data })
        }
        RefOp::Transpose { a } => {
            let x = at(vals, *a)?;
            let (r, c) = matrix(&x.dims)?;
            Ok(RefTensor::from_fn(&[c, r], |o| x.data[(o % r) * c + o / r].clone()))
        }
        RefOp::Reshape { a, dims } => {
            let x = at(vals, *a)?;
            if numel(dims) != x.data.len() {
                return Err(format!("cannot reshape dims {:?} to {dims:?}", x.dims));
            }
            Ok(RefTensor { dims: dims.clone(), data: x.data.clone() })
        }
        RefOp::Permute { a, perm } => {
            let x = at(vals, *a)?;
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            if sorted != (0..x.dims.len()).collect::<Vec<_>>() {
                return Err(format!("{perm:?} is not a permutation of the axes of {:?}", x.dims));
            }
            Ok(permute(x, perm))
        }
        RefOp::Concat { parts, axis } => {
            let xs: Vec<&RefTensor<A>> = parts.iter().map(|&p| at(vals, p)).collect::<Result<_, _>>()?;
            let Some(first) = xs.first() else { return Err("concat of no part".to_owned()) };
            let fits = *axis < first.dims.len()
                && xs.iter().all(|x| {
                    x.dims.len() == first.dims.len()
                        && (0..x.dims.len()).all(|k| k == *axis || x.dims[k] == first.dims[k])
                });
            if !fits {
                let all: Vec<&Vec<usize>> = xs.iter().map(|x| &x.dims).collect();
                return Err(format!("cannot join {all:?} along axis {axis}"));
            }
            let mut dims = first.dims.clone();
            dims[*axis] = xs.iter().map(|x| x.dims[*axis]).sum();
            let outer = around(&first.dims, *axis).0;
            // Output entry (o, j, i) along the axis: the part whose range holds j, at j minus the
            // sizes before it.
            let mut data = Vec::with_capacity(numel(&dims));
            for o in 0..outer {
                for x in &xs {
                    let (_, n, inner) = around(&x.dims, *axis);
                    for j in 0..n {
                        for i in 0..inner {
                            data.push(x.data[(o * n + j) * inner + i].clone());
                        }
                    }
                }
            }
            Ok(RefTensor { dims, data })
        }
        RefOp::Slice { a, axis, start, len } => {
            let x = at(vals, *a)?;
            if *axis >= x.dims.len() || start + len > x.dims[*axis] {
                return Err(format!("no range {start}..{} on axis {axis} of {:?}", start + len, x.dims));
            }
            let (outer, n, inner) = around(&x.dims, *axis);
            let mut dims = x.dims.clone();
            dims[*axis] = *len;
            let mut data = Vec::with_capacity(numel(&dims));
            for o in 0..outer {
                for j in *start..start + len {
                    data.extend_from_slice(&x.data[(o * n + j) * inner..(o * n + j + 1) * inner]);
                }
            }
            Ok(RefTensor { dims, data })
        }
        RefOp::Sum { a } => Ok(RefTensor { dims: vec![], data: vec![sum(at(vals, *a)?.data.iter().cloned())] }),
        RefOp::Mean { a, div, count: c } => {
            let x = at(vals, *a)?;
            if x.data.is_empty() {
                return Err("mean of no element".to_owned());
            }
            let n = count(*c, x.data.len())?;
            Ok(RefTensor { dims: vec![], data: vec![div(sum(x.data.iter().cloned()), n)] })
        }
        RefOp::SumAxis { a, axis } => along(at(vals, *a)?, *axis, None),
        RefOp::MeanAxis { a, axis, div, count: c } => {
            let x = at(vals, *a)?;
            match x.dims.get(*axis) {
                Some(&n) if n > 0 => along(x, *axis, Some((*div, count(*c, n)?))),
                _ => Err(format!("no non-empty axis {axis} in {:?}", x.dims)),
            }
        }
        RefOp::AddRow { x, b } => {
            let (xv, bv) = (at(vals, *x)?, at(vals, *b)?);
            let (_, c) = matrix(&xv.dims)?;
            if bv.dims != [c] {
                return Err(format!("row of dims {:?} for a matrix {:?}", bv.dims, xv.dims));
            }
            Ok(RefTensor::from_fn(&xv.dims, |i| plus(xv.data[i].clone(), bv.data[i % c].clone())))
        }
        RefOp::Softmax { a, k } | RefOp::LogSoftmax { a, k } => {
            let x = at(vals, *a)?;
            let n = last_axis(&x.dims)?;
            let mut data = Vec::with_capacity(x.data.len());
            for row in x.data.chunks(n) {
                let (m, e, s) = shifted(k, row);
                if matches!(op, RefOp::Softmax { .. }) {
                    data.extend(e.into_iter().map(|v| (k.div)(v, s.clone())));
                } else {
                    let l = (k.ln)(s);
                    data.extend(row.iter().map(|v| (k.sub)((k.sub)(v.clone(), m.clone()), l.clone())));
                }
            }
            Ok(RefTensor { dims: x.dims.clone(), data })
        }
        RefOp::LayerNorm { x, gain, bias, eps, k } => {
            let (xv, g, b) = (at(vals, *x)?, at(vals, *gain)?, at(vals, *bias)?);
            let (_, n) = matrix(&xv.dims)?;
            if n == 0 || g.dims != [n] || b.dims != [n] {
                return Err(format!("gain {:?} and bias {:?} for rows of {n}", g.dims, b.dims));
            }
            let nf = count(k.count, n)?;
            let mut data = Vec::with_capacity(xv.data.len());
            for row in xv.data.chunks(n) {
                let (h, _) = normalise(k, row, &nf, eps);
                data.extend(
                    h.into_iter().enumerate().map(|(j, v)| plus((k.mul)(v, g.data[j].clone()), b.data[j].clone())),
                );
            }
            Ok(RefTensor { dims: xv.dims.clone(), data })
        }
        RefOp::CrossEntropy { logits, labels, k } => {
            let x = at(vals, *logits)?;
            let labels = labels(data);
            let (m, c) = checked_logits(&x.dims, labels)?;
            let mut total = A::zero();
            for (row, &label) in x.data.chunks(c).zip(labels) {
                let (mx, _, s) = shifted(k, row);
                let loss = (k.sub)((k.ln)(s), (k.sub)(row[label].clone(), mx));
                total = plus(total, loss);
            }
            Ok(RefTensor { dims: vec![], data: vec![(k.div)(total, count(k.count, m)?)] })
        }
        RefOp::Mse { a, b, k } => {
            let (x, y) = (at(vals, *a)?, at(vals, *b)?);
            same(x, y)?;
            if x.data.is_empty() {
                return Err("mse of no element".to_owned());
            }
            let s = sum(x.data.iter().zip(&y.data).map(|(u, v)| {
                let d = (k.sub)(u.clone(), v.clone());
                (k.mul)(d.clone(), d)
            }));
            Ok(RefTensor { dims: vec![], data: vec![(k.div)(s, count(k.count, x.data.len())?)] })
        }
        RefOp::GatherRows { table, ids, lead } => {
            let t = at(vals, *table)?;
            let (vocab, dim) = matrix(&t.dims)?;
            let ids = ids(data);
            // A run-time dim among the leading dims takes its size from the ids.
            let lead = crate::shape::Dims::new(lead)
                .and_then(|d| crate::shape::resolve_lead(d, ids.len()))
                .map_or_else(|| lead.clone(), |d| d.as_slice().to_vec());
            let n = numel(&lead);
            if ids.len() != n || ids.iter().any(|&id| id >= vocab) {
                return Err(format!("ids {ids:?} for {n} rows of a table of {vocab}"));
            }
            let mut dims = lead;
            dims.push(dim);
            // Row r of the output (row-major over the leading axes) is table row ids[r].
            Ok(RefTensor::from_fn(&dims, |e| t.data[ids[e / dim] * dim + e % dim].clone()))
        }
        RefOp::MaskedFill { a, mask, value } => {
            let x = at(vals, *a)?;
            let mask = mask(data);
            let fits = (0..=x.dims.len()).any(|r| numel(&x.dims[r..]) == mask.len());
            if !fits {
                return Err(format!("a mask of {} entries for dims {:?}", mask.len(), x.dims));
            }
            Ok(RefTensor::from_fn(&x.dims, |e| if mask[e % mask.len()] { value.clone() } else { x.data[e].clone() }))
        }
        RefOp::CausalMask { a, value } => {
            let x = at(vals, *a)?;
            let t = causal_size(&x.dims)?;
            // Element e sits at row (e / t) mod t and column e mod t of its [t, t] block.
            Ok(RefTensor::from_fn(&x.dims, |e| if e % t > (e / t) % t { value.clone() } else { x.data[e].clone() }))
        }
        RefOp::DataTensor { dims, x } => {
            let v = x(data);
            if v.dims().as_slice() != dims.as_slice() {
                return Err(format!("data tensor of dims {} for {dims:?}", v.dims()));
            }
            Ok(RefTensor::of_raw(v))
        }
        RefOp::Conv { x, w, stride, padding, dilation, mul_add } => {
            let args = window::ConvArgs { stride, padding, dilation, mul_add: *mul_add };
            window::conv(at(vals, *x)?, at(vals, *w)?, &args)
        }
        RefOp::MaxPool { x, kernel, stride, padding, cmp } => {
            window::max_pool(at(vals, *x)?, &window::PoolArgs { kernel, stride, padding }, *cmp)
        }
        RefOp::AvgPool { x, kernel, stride, padding, div, count: c } => {
            window::avg_pool(at(vals, *x)?, &window::PoolArgs { kernel, stride, padding }, *div, *c)
        }
        RefOp::Dropout { a, p, seed, factor, mul } => {
            super::dropout::forward(at(vals, *a)?, *p, seed(data), *factor, A::zero(), *mul)
        }
    }
}

/// `(m, c)` of a logits matrix whose labels fit it, or a message.
pub(super) fn checked_logits(dims: &[usize], labels: &[usize]) -> Result<(usize, usize), String> {
    let (m, c) = matrix(dims)?;
    if m == 0 || c == 0 || labels.len() != m || labels.iter().any(|&l| l >= c) {
        return Err(format!("labels {labels:?} for logits of dims {dims:?}"));
    }
    Ok((m, c))
}

/// Sums along `axis` from `0`, each divided by the count when `mean` is given.
fn along<A: Scalar>(x: &RefTensor<A>, axis: usize, mean: Option<(fn(A, A) -> A, A)>) -> Result<RefTensor<A>, String> {
    if axis >= x.dims.len() {
        return Err(format!("no axis {axis} in {:?}", x.dims));
    }
    let (outer, n, inner) = around(&x.dims, axis);
    let mut dims = x.dims.clone();
    dims.remove(axis);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let s = sum((0..n).map(|j| x.data[(o * n + j) * inner + i].clone()));
            data.push(match &mean {
                Some((div, c)) => div(s, c.clone()),
                None => s,
            });
        }
    }
    Ok(RefTensor { dims, data })
}

/// `x` with its axes reordered: output axis `k` is axis `perm[k]` of `x` (a permutation).
pub(super) fn permute<A: Clone>(x: &RefTensor<A>, perm: &[usize]) -> RefTensor<A> {
    let rank = x.dims.len();
    let mut strides = vec![1; rank];
    for k in (0..rank.saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * x.dims[k + 1];
    }
    let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p]).collect();
    RefTensor::from_fn(&dims, |mut o| {
        let mut j = 0;
        for k in (0..rank).rev() {
            j += (o % dims[k]) * strides[perm[k]];
            o /= dims[k];
        }
        x.data[j].clone()
    })
}
