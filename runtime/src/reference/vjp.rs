//! The reference's dense VJPs: each built-in op's VJP by the formula of its documentation, as a
//! list of terms `(position, tensor)` whose dense form is their left-to-right pack sum
//! (SEMANTICS §4: `single(p, t)` is `t` at `p` and zeros elsewhere, `add(l, r)` is the dense sum,
//! `l` left; no term at all is `fill(0)`). Textbook loops over [`RefTensor`]s; negation is
//! `0 - δ` and products put the cotangent on the left, as every op documents.

use core::cmp::Ordering;

use super::forward::{
    at, causal_size, checked_logits, count, gelu_tanh, left, logistic, matmul_dims, matrix, normalise, permute,
    product, shifted, sum, MatMulDims,
};
use super::op::{RefOp, Unary};
use super::tensor::{around, numel, plus, RefTensor};
use super::window;
use crate::scalar::Scalar;

/// The terms of one node's dense VJP, added left to right at every position of the prefix.
pub(super) type Terms<A> = Vec<(usize, RefTensor<A>)>;

/// `t[i] = f(g[i], i)` over the dims of `g`.
fn each<A: Clone>(g: &RefTensor<A>, f: impl Fn(&A, usize) -> A) -> RefTensor<A> {
    RefTensor { dims: g.dims.clone(), data: g.data.iter().enumerate().map(|(i, v)| f(v, i)).collect() }
}

/// The derivative of a pointwise function at one element: cotangent `g`, input `x`, output `y`.
fn unary<A: Scalar>(f: &Unary<A>, g: &A, x: &A, y: &A) -> A {
    let zero = A::zero();
    match f {
        Unary::Neg { sub, .. } => sub(zero, g.clone()),
        Unary::Relu { cmp } => {
            if cmp(x, &zero) == Some(Ordering::Greater) {
                g.clone()
            } else {
                zero
            }
        }
        Unary::Tanh(k) => (k.mul)(g.clone(), (k.sub)(k.one.clone(), (k.mul)(y.clone(), y.clone()))),
        Unary::Exp(k) => (k.mul)(g.clone(), y.clone()),
        Unary::Sigmoid(k) => (k.mul)(g.clone(), (k.mul)(y.clone(), (k.sub)(k.one.clone(), y.clone()))),
        Unary::Softplus(k) => (k.mul)(g.clone(), logistic(k, x)),
        Unary::Log(k) => (k.div)(g.clone(), x.clone()),
        Unary::Sqrt(k) => (k.div)(g.clone(), plus(y.clone(), y.clone())),
        Unary::Gelu(k) => {
            let (half, c, k3) = ((k.constant)(0.5), (k.constant)(0.797_884_560_802_865_4), (k.constant)(0.134_145));
            let t = gelu_tanh(k, x);
            let s = (k.sub)(k.one.clone(), (k.mul)(t.clone(), t.clone()));
            let tail = if (k.cmp)(&s, &zero) == Some(Ordering::Equal) {
                zero
            } else {
                let du = (k.mul)(c, plus(k.one.clone(), (k.mul)(k3, (k.mul)(x.clone(), x.clone()))));
                (k.mul)((k.mul)(half.clone(), x.clone()), (k.mul)(s, du))
            };
            (k.mul)(g.clone(), plus((k.mul)(half, plus(k.one.clone(), t)), tail))
        }
        Unary::Silu(k) => {
            let s = logistic(k, x);
            let rest = (k.sub)(k.one.clone(), s.clone());
            let t = if (k.cmp)(&rest, &zero) == Some(Ordering::Equal) { zero } else { (k.mul)(x.clone(), rest) };
            (k.mul)(g.clone(), (k.mul)(s, plus(k.one.clone(), t)))
        }
    }
}

/// The terms of `op`'s dense VJP at cotangent `g`, with the prefix `vals`, the node's own value
/// `y` and the data (the forward has checked every shape).
///
/// # Errors
/// A message when an operand does not fit (only for a prefix the forward did not check).
pub(super) fn vjp<A: Scalar, D>(
    op: &RefOp<A, D>,
    vals: &[RefTensor<A>],
    y: &RefTensor<A>,
    g: &RefTensor<A>,
    data: &D,
) -> Result<Terms<A>, String> {
    let zero = A::zero;
    Ok(match op {
        RefOp::Add { a, b } => vec![(*a, g.clone()), (*b, g.clone())],
        RefOp::Sub { a, b, sub } => vec![(*a, g.clone()), (*b, each(g, |v, _| sub(zero(), v.clone())))],
        RefOp::Mul { a, b, mul } => {
            let (x, w) = (at(vals, *a)?, at(vals, *b)?);
            vec![
                (*a, each(g, |v, i| mul(v.clone(), w.data[i].clone()))),
                (*b, each(g, |v, i| mul(v.clone(), x.data[i].clone()))),
            ]
        }
        RefOp::Div { a, b, div, mul, sub } => {
            let w = at(vals, *b)?;
            let ga = each(g, |v, i| div(v.clone(), w.data[i].clone()));
            let gb = each(g, |v, i| sub(zero(), div(mul(v.clone(), y.data[i].clone()), w.data[i].clone())));
            vec![(*a, ga), (*b, gb)]
        }
        RefOp::Square { a, mul } => {
            let x = at(vals, *a)?;
            let t = each(g, |v, i| mul(v.clone(), x.data[i].clone()));
            vec![(*a, t.clone()), (*a, t)]
        }
        RefOp::Scale { a, factor, mul } => vec![(*a, each(g, |v, _| mul(v.clone(), factor.clone())))],
        RefOp::Offset { a, .. } => vec![(*a, g.clone())],
        RefOp::DivConst { a, divisor, div } => vec![(*a, each(g, |v, _| div(v.clone(), divisor.clone())))],
        RefOp::Select { a, b, max, cmp } => {
            let (x, w) = (at(vals, *a)?, at(vals, *b)?);
            let picks = |i: usize| left(*cmp, *max, &x.data[i], &w.data[i]);
            let ga = each(g, |v, i| if picks(i) { v.clone() } else { zero() });
            let gb = each(g, |v, i| if picks(i) { zero() } else { v.clone() });
            vec![(*a, ga), (*b, gb)]
        }
        RefOp::Unary { a, f } => {
            let x = at(vals, *a)?;
            vec![(*a, each(g, |v, i| unary(f, v, &x.data[i], &y.data[i])))]
        }
        RefOp::MatMul { a, b, mul_add } => {
            let (x, w) = (at(vals, *a)?, at(vals, *b)?);
            let MatMulDims { bt, m, k, n, shared } = matmul_dims(&x.dims, &w.dims)?;
            // Per item p: δ · wᵀ, products δ[p, i, j] * w[t, j] summed over j ascending.
            let mut ga = Vec::with_capacity(bt * m * k);
            for p in 0..bt {
                let w0 = if shared { 0 } else { p * k * n };
                ga.extend(product(
                    m,
                    n,
                    k,
                    |i, j, t| (g.data[(p * m + i) * n + j].clone(), w.data[w0 + t * n + j].clone()),
                    *mul_add,
                ));
            }
            // xᵀ · δ: per item when w is batched; when w is shared, one sum over every row r of
            // every item (r = p·m + i ascending) of δ[r, j] * x[r, t] (SEMANTICS §8.2).
            let gw = if shared {
                let rows = bt * m;
                product(k, rows, n, |t, r, j| (g.data[r * n + j].clone(), x.data[r * k + t].clone()), *mul_add)
            } else {
                let mut gw = Vec::with_capacity(bt * k * n);
                for p in 0..bt {
                    gw.extend(product(
                        k,
                        m,
                        n,
                        |t, i, j| (g.data[(p * m + i) * n + j].clone(), x.data[(p * m + i) * k + t].clone()),
                        *mul_add,
                    ));
                }
                gw
            };
            vec![(*a, RefTensor { dims: x.dims.clone(), data: ga }), (*b, RefTensor { dims: w.dims.clone(), data: gw })]
        }
        RefOp::MatMulData { w, x, mul_add, .. } => {
            let (xv, wv) = (x(data), at(vals, *w)?);
            let ((m, k), (_, n)) = (matrix(xv.dims().as_slice())?, matrix(&wv.dims)?);
            let xd = xv.data();
            let gw = product(k, m, n, |t, i, j| (g.data[i * n + j].clone(), xd[i * k + t].clone()), *mul_add);
            vec![(*w, RefTensor { dims: wv.dims.clone(), data: gw })]
        }
        RefOp::Transpose { a } => {
            let (r, c) = matrix(&at(vals, *a)?.dims)?;
            // g is c × r; t[i, j] = g[j, i].
            vec![(*a, RefTensor::from_fn(&[r, c], |o| g.data[(o % c) * r + o / c].clone()))]
        }
        RefOp::Reshape { a, .. } => vec![(*a, RefTensor { dims: at(vals, *a)?.dims.clone(), data: g.data.clone() })],
        RefOp::Permute { a, perm } => {
            let mut inverse = vec![0; perm.len()];
            for (k, &p) in perm.iter().enumerate() {
                inverse[p] = k;
            }
            vec![(*a, permute(g, &inverse))]
        }
        RefOp::Concat { parts, axis } => {
            // Part k's term: δ[o, s_k + j, i] at its (o, j, i), s_k the sizes of the parts before.
            let total: usize = parts.iter().map(|&p| at(vals, p).map(|x| x.dims[*axis])).sum::<Result<_, _>>()?;
            let mut terms = Vec::with_capacity(parts.len());
            let mut before = 0;
            for &p in parts {
                let x = at(vals, p)?;
                let (_, n, inner) = around(&x.dims, *axis);
                let t = RefTensor::from_fn(&x.dims, |e| {
                    let (o, j, i) = (e / (n * inner), (e / inner) % n, e % inner);
                    g.data[(o * total + before + j) * inner + i].clone()
                });
                before += n;
                terms.push((p, t));
            }
            terms
        }
        RefOp::Slice { a, axis, start, len } => {
            let x = at(vals, *a)?;
            let (_, n, inner) = around(&x.dims, *axis);
            let t = RefTensor::from_fn(&x.dims, |e| {
                let (o, j, i) = (e / (n * inner), (e / inner) % n, e % inner);
                if j >= *start && j < start + len {
                    g.data[(o * len + (j - start)) * inner + i].clone()
                } else {
                    zero()
                }
            });
            vec![(*a, t)]
        }
        RefOp::Sum { a } => vec![(*a, RefTensor::full(&at(vals, *a)?.dims, g.data[0].clone()))],
        RefOp::Mean { a, div, count: c } => {
            let x = at(vals, *a)?;
            let v = div(g.data[0].clone(), count(*c, x.data.len())?);
            vec![(*a, RefTensor::full(&x.dims, v))]
        }
        RefOp::SumAxis { a, axis } | RefOp::MeanAxis { a, axis, .. } => {
            let x = at(vals, *a)?;
            let (_, n, inner) = around(&x.dims, *axis);
            let mean = match op {
                RefOp::MeanAxis { div, count: c, .. } => Some((*div, count(*c, n)?)),
                _ => None,
            };
            let t = RefTensor::from_fn(&x.dims, |e| {
                let v = g.data[(e / (n * inner)) * inner + e % inner].clone();
                match &mean {
                    Some((div, c)) => div(v, c.clone()),
                    None => v,
                }
            });
            vec![(*a, t)]
        }
        RefOp::AddRow { x, b } => {
            let c = at(vals, *b)?.data.len();
            let rows = g.data.len().checked_div(c).unwrap_or(0);
            let s = RefTensor::from_fn(&[c], |j| sum((0..rows).map(|i| g.data[i * c + j].clone())));
            vec![(*x, g.clone()), (*b, s)]
        }
        RefOp::Softmax { a, k } => {
            let n = y.dims.last().copied().unwrap_or(1).max(1);
            let mut t = Vec::with_capacity(y.data.len());
            for (yr, gr) in y.data.chunks(n).zip(g.data.chunks(n)) {
                let d = sum(gr.iter().zip(yr).map(|(gv, yv)| (k.mul)(gv.clone(), yv.clone())));
                t.extend(gr.iter().zip(yr).map(|(gv, yv)| (k.mul)((k.sub)(gv.clone(), d.clone()), yv.clone())));
            }
            vec![(*a, RefTensor { dims: y.dims.clone(), data: t })]
        }
        RefOp::LogSoftmax { a, k } => {
            let n = y.dims.last().copied().unwrap_or(1).max(1);
            let mut r = Vec::with_capacity(y.data.len());
            for (yr, gr) in y.data.chunks(n).zip(g.data.chunks(n)) {
                let t = sum(gr.iter().cloned());
                r.extend(
                    gr.iter().zip(yr).map(|(gv, yv)| (k.sub)(gv.clone(), (k.mul)(t.clone(), (k.exp)(yv.clone())))),
                );
            }
            vec![(*a, RefTensor { dims: y.dims.clone(), data: r })]
        }
        RefOp::LayerNorm { x, gain, bias, eps, k } => {
            let (xv, gv) = (at(vals, *x)?, at(vals, *gain)?);
            let n = gv.data.len();
            let nf = count(k.count, n)?;
            let (mut gx, mut ggain, mut gbias) = (Vec::new(), vec![zero(); n], vec![zero(); n]);
            for (row, dr) in xv.data.chunks(n.max(1)).zip(g.data.chunks(n.max(1))) {
                let (h, r) = normalise(k, row, &nf, eps);
                let q: Vec<A> = dr.iter().zip(&gv.data).map(|(d, w)| (k.mul)(d.clone(), w.clone())).collect();
                let a = (k.div)(sum(q.iter().cloned()), nf.clone());
                let b = (k.div)(sum(q.iter().zip(&h).map(|(qv, hv)| (k.mul)(qv.clone(), hv.clone()))), nf.clone());
                for (qv, hv) in q.iter().zip(&h) {
                    let centred = (k.sub)((k.sub)(qv.clone(), a.clone()), (k.mul)(b.clone(), hv.clone()));
                    gx.push((k.mul)(centred, r.clone()));
                }
                for j in 0..n {
                    ggain[j] = plus(ggain[j].clone(), (k.mul)(dr[j].clone(), h[j].clone()));
                    gbias[j] = plus(gbias[j].clone(), dr[j].clone());
                }
            }
            vec![
                (*x, RefTensor { dims: xv.dims.clone(), data: gx }),
                (*gain, RefTensor { dims: vec![n], data: ggain }),
                (*bias, RefTensor { dims: vec![n], data: gbias }),
            ]
        }
        RefOp::CrossEntropy { logits, labels, k } => {
            let x = at(vals, *logits)?;
            let labels = labels(data);
            let (m, c) = checked_logits(&x.dims, labels)?;
            let w = (k.div)(g.data[0].clone(), count(k.count, m)?);
            let mut t = Vec::with_capacity(x.data.len());
            for (row, &label) in x.data.chunks(c).zip(labels) {
                let (_, e, s) = shifted(k, row);
                for (j, v) in e.into_iter().enumerate() {
                    let onehot = if j == label { k.one.clone() } else { zero() };
                    t.push((k.mul)(w.clone(), (k.sub)((k.div)(v, s.clone()), onehot)));
                }
            }
            vec![(*logits, RefTensor { dims: x.dims.clone(), data: t })]
        }
        RefOp::Mse { a, b, k } => {
            let (x, w) = (at(vals, *a)?, at(vals, *b)?);
            let n = count(k.count, x.data.len())?;
            let ga = RefTensor::from_fn(&x.dims, |i| {
                let d = (k.sub)(x.data[i].clone(), w.data[i].clone());
                (k.mul)(g.data[0].clone(), (k.div)(plus(d.clone(), d), n.clone()))
            });
            let gb = each(&ga, |v, _| (k.sub)(zero(), v.clone()));
            vec![(*a, ga), (*b, gb)]
        }
        RefOp::GatherRows { table, ids, .. } => {
            let t = at(vals, *table)?;
            let dim = t.dims.get(1).copied().unwrap_or(0);
            let mut acc = RefTensor::<A>::zeros(&t.dims);
            for (r, &id) in ids(data).iter().enumerate() {
                for j in 0..dim {
                    let e = id * dim + j;
                    acc.data[e] = plus(acc.data[e].clone(), g.data[r * dim + j].clone());
                }
            }
            vec![(*table, acc)]
        }
        RefOp::MaskedFill { a, mask, .. } => {
            let mask = mask(data);
            let n = mask.len().max(1);
            // Masked elements get the scalar's 0, the others the cotangent itself.
            vec![(*a, each(g, |v, e| if mask.get(e % n) == Some(&true) { zero() } else { v.clone() }))]
        }
        RefOp::CausalMask { a, .. } => {
            let t = causal_size(&at(vals, *a)?.dims)?;
            vec![(*a, each(g, |v, e| if e % t > (e / t) % t { zero() } else { v.clone() }))]
        }
        RefOp::DataTensor { .. } => Vec::new(),
        RefOp::Conv { x, w, stride, padding, dilation, mul_add } => {
            let args = window::ConvArgs { stride, padding, dilation, mul_add: *mul_add };
            let (gx, gw) = window::conv_vjp(at(vals, *x)?, at(vals, *w)?, g, &args)?;
            vec![(*x, gx), (*w, gw)]
        }
        RefOp::MaxPool { x, kernel, stride, padding, cmp } => {
            let args = window::PoolArgs { kernel, stride, padding };
            vec![(*x, window::max_pool_vjp(at(vals, *x)?, g, &args, *cmp)?)]
        }
        RefOp::AvgPool { x, kernel, stride, padding, div, count: c } => {
            let args = window::PoolArgs { kernel, stride, padding };
            vec![(*x, window::avg_pool_vjp(at(vals, *x)?, g, &args, *div, *c)?)]
        }
        RefOp::Dropout { a, p, seed, factor, mul } => {
            vec![(*a, super::dropout::vjp(g, *p, seed(data), *factor, zero(), *mul)?)]
        }
    })
}

/// The dense form of `terms` at a position of dims `dims`: `fill(0)` without terms, else the
/// left-to-right sum of each term's tensor there (zeros for a term at another position).
///
/// # Errors
/// A message when a term at `q` does not have the dims of `q`.
pub(super) fn dense_at<A: Scalar>(terms: &Terms<A>, q: usize, dims: &[usize]) -> Result<RefTensor<A>, String> {
    let mut acc: Option<RefTensor<A>> = None;
    for (p, t) in terms {
        let term = if *p == q {
            if t.dims != dims || t.data.len() != numel(dims) {
                return Err(format!("a term of dims {:?} at position {q} of dims {dims:?}", t.dims));
            }
            t.clone()
        } else {
            RefTensor::zeros(dims)
        };
        acc = Some(match acc {
            None => term,
            Some(l) => l.plus(&term),
        });
    }
    Ok(acc.unwrap_or_else(|| RefTensor::zeros(dims)))
}
