//! `concat([x0, x1, …], axis)`: joins one or more tensors along `axis` in one node. Their shapes
//! must be equal except along `axis`; the output has the sum of their sizes there.
//!
//! With every part split around the axis as `outer × n_k × inner` (row-major) and `s_k = n_0 +
//! … + n_(k−1)`, `y[o, s_k + j, i] = x_k[o, j, i]` for `j < n_k`. Each output row `o` is the
//! parts' rows `o` one after another, so the forward copies every element once (a chain of binary
//! concats would copy the early parts again at every link).
//!
//! VJP: one `single(x_k, δ_k)` per part, added left to right —
//! `add(…add(single(x0, δ0), single(x1, δ1))…, single(x_(n−1), δ_(n−1)))` (`single(x0, δ)` for one
//! part) — where `δ_k` is the slice of `δ` along the axis that `x_k` filled (`δ_k[o, j, i] =
//! δ[o, s_k + j, i]`). A position that is several parts (`concat([a, b, a], 0)`) receives their
//! slices added in that order, `(δ0 + 0) + δ2` at `a` (SEMANTICS §4), before reaching the gradient
//! once.

use typenum::Unsigned;

use super::sum_axis::split;
use crate::contributions::{Contrib, Contributions};
use crate::graph::{Compact, CompactOp, SavedValues};
use crate::reference::RefOp;
use crate::scalar::Scalar;
use crate::shape::rules::ConcatShape;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::RawTensor;

/// Concatenation of one or more tensors along one axis.
#[derive(Clone, Debug)]
pub struct Concat {
    parents: Vec<usize>,
    axis: usize,
}

impl Concat {
    /// `concat(a, b, axis)` for the positions `a` and `b`.
    #[must_use]
    pub fn new(a: usize, b: usize, axis: usize) -> Self {
        Concat { parents: vec![a, b], axis }
    }

    /// `concat([x0, x1, …], axis)` for the positions `parts` (one or more, repeats allowed; none
    /// is refused by the shape rule).
    #[must_use]
    pub fn parts(parts: Vec<usize>, axis: usize) -> Self {
        Concat { parents: parts, axis }
    }
}

/// The output dims of joining `parts` along `axis`, or a message.
fn joined(parts: &[Dims], axis: usize) -> Result<Dims, String> {
    let slices: Vec<&[usize]> = parts.iter().map(Dims::as_slice).collect();
    super::ruled(super::spec_rules::concat_all(&slices, axis))
}

impl Concat {
    /// Elements per outer row of a part of dims `d` (`n_k · inner`), computed where needed so
    /// that a run allocates nothing (a generated program runs the op again and again).
    fn width(&self, d: Dims) -> usize {
        let (_, n, inner) = split(d, self.axis);
        n * inner
    }
}

impl<A: Scalar, D> CompactOp<A, D> for Concat {
    fn name(&self) -> &'static str {
        "concat"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let parts: Vec<Dims> =
            self.parents.iter().map(|&p| super::dims_at("concat", prefix, p)).collect::<Result<_, _>>()?;
        joined(&parts, self.axis)
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &D) -> RawTensor<A> {
        let parts: Vec<Dims> = self.parents.iter().map(|&p| ctx[p].dims()).collect();
        let out = joined(&parts, self.axis).expect("output_dims accepted these dims");
        let mut y = Vec::with_capacity(out.numel());
        self.forward_into(ctx, data, &mut y);
        RawTensor::from_parts(out, y)
    }
    fn forward_into(&self, ctx: &[RawTensor<A>], _: &D, y: &mut Vec<A>) {
        if self.parents.iter().all(|&p| self.width(ctx[p].dims()) == 0) {
            return; // no element, however many (empty) rows
        }
        let outer = split(ctx[self.parents[0]].dims(), self.axis).0;
        for o in 0..outer {
            for &p in &self.parents {
                let w = self.width(ctx[p].dims());
                y.extend_from_slice(&ctx[p].data()[o * w..(o + 1) * w]);
            }
        }
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        if let [only] = self.parents[..] {
            return c.single_cotangent(only); // one part: the output is the part, δ its slice
        }
        let row: usize = self.parents.iter().map(|&p| self.width(saved.prefix[p].dims())).sum();
        let gd = g.data();
        let mut root = None;
        let mut from = 0;
        for &p in &self.parents {
            let d = saved.prefix[p].dims();
            let w = self.width(d);
            // Row `o` of `δ_k` is elements `from..from + w` of row `o` of the cotangent.
            let mut t = c.buffer_for(d.numel());
            if w > 0 {
                for r in gd.chunks_exact(row) {
                    t.extend_from_slice(&r[from..from + w]);
                }
            }
            from += w;
            let single = c.single(p, RawTensor::from_parts(d, t));
            root = Some(match root {
                None => single,
                Some(left) => c.add(left, single),
            });
        }
        root.unwrap_or_else(|| c.zero())
    }
    fn reference(&self) -> Option<RefOp<A, D>> {
        Some(RefOp::Concat { parts: self.parents.clone(), axis: self.axis })
    }
}

/// Typed `concat(a, b, axis)` with the axis a typenum value (`U1::new()`): the shapes agree off
/// the axis and the sizes along it add ([`ConcatShape`]).
pub fn concat<A: Scalar, D: 'static, L: ConcatShape<R, Ax, Output = O>, R, Ax: Unsigned, O: Shape, Br>(
    a: Position<L, Br>,
    b: Position<R, Br>,
    _axis: Ax,
) -> Compact<Concat, A, D, O> {
    Compact::new(Concat::new(a.index(), b.index(), Ax::USIZE), &[&a, &b])
}

/// The parts of a typed n-ary `concat` gathered so far (see [`concat_parts`]): `S` is the shape
/// of the parts joined so far, checked part by part by [`ConcatShape`].
#[derive(Debug)]
pub struct ConcatParts<S, Ax, Br> {
    parts: Vec<Position<(), ()>>,
    marker: core::marker::PhantomData<fn() -> (S, Ax, Br)>,
}

/// Typed `concat([x0, x1, …], axis)`: starts with the first part, takes the next ones with
/// [`then`](ConcatParts::then) (each checked against the parts before it by [`ConcatShape`]) and
/// makes **one** node of them all with [`node`](ConcatParts::node).
///
/// ```
/// use exactgrad_runtime::ops::concat_parts;
/// use exactgrad_runtime::typenum::{U1, U2, U3, U4};
/// use exactgrad_runtime::{Dims, GraphData};
/// let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U1)>();
/// let (g, b) = g.input::<(U2, U3)>();
/// let (g, y) = g.push(concat_parts(a, U1::new()).then(b).then(a).node());
/// assert_eq!(g.raw().dims()[y.index()], Dims::matrix(2, 5));
/// ```
pub fn concat_parts<S: Shape, Ax: Unsigned, Br>(first: Position<S, Br>, _axis: Ax) -> ConcatParts<S, Ax, Br> {
    ConcatParts { parts: vec![Position::new(first.graph_id(), first.index())], marker: core::marker::PhantomData }
}

/// `parts.then(next)` as a function whose rule bound is on its own type parameters (what
/// `graph!` calls, every shape spelled out, so a broken rule is reported at the user's `concat`).
pub fn concat_then<S: ConcatShape<R, Ax, Output = O> + Shape, R, Ax: Unsigned, O: Shape, Br>(
    parts: ConcatParts<S, Ax, Br>,
    next: Position<R, Br>,
) -> ConcatParts<O, Ax, Br> {
    parts.then(next)
}

impl<S: Shape, Ax: Unsigned, Br> ConcatParts<S, Ax, Br> {
    /// The parts so far followed by `next`.
    #[must_use]
    pub fn then<R, O: Shape>(mut self, next: Position<R, Br>) -> ConcatParts<O, Ax, Br>
    where
        S: ConcatShape<R, Ax, Output = O>,
    {
        self.parts.push(Position::new(next.graph_id(), next.index()));
        ConcatParts { parts: self.parts, marker: core::marker::PhantomData }
    }

    /// The one node joining every part.
    #[must_use]
    pub fn node<A: Scalar, D: 'static>(self) -> Compact<Concat, A, D, S> {
        let reads: Vec<&dyn crate::graph::ErasedPosition> =
            self.parts.iter().map(|p| p as &dyn crate::graph::ErasedPosition).collect();
        Compact::new(Concat::parts(self.parts.iter().map(Position::index).collect(), Ax::USIZE), &reads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};

    fn dims(d: &[usize]) -> Dims {
        Dims::new(d).unwrap()
    }

    fn tensor(d: &[usize], v: &[f64]) -> RawTensor<f64> {
        RawTensor::from_vec(dims(d), v.to_vec()).unwrap()
    }

    #[test]
    fn value() {
        let a = tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let b = tensor(&[2, 1], &[5.0, 6.0]);
        let y = forward(Concat::new(0, 1, 1), &[a.clone(), b]);
        assert_eq!((y.dims(), y.data()), (dims(&[2, 3]), &[1.0, 2.0, 5.0, 3.0, 4.0, 6.0][..]));
        let c = tensor(&[1, 2], &[7.0, 8.0]);
        let y = forward(Concat::new(0, 1, 0), &[a, c]);
        assert_eq!((y.dims(), y.data()), (dims(&[3, 2]), &[1.0, 2.0, 3.0, 4.0, 7.0, 8.0][..]));
        let v = forward(Concat::new(0, 1, 0), &[tensor(&[1], &[1.0]), tensor(&[2], &[2.0, 3.0])]);
        assert_eq!((v.dims(), v.data()), (dims(&[3]), &[1.0, 2.0, 3.0][..]));
    }

    #[test]
    fn gradient() {
        for axis in 0..3 {
            let mut db = [2, 3, 2];
            db[axis] = 1;
            gradcheck(Concat::new(0, 1, axis), &[sample(&[2, 3, 2], 310 + axis as u64), sample(&db, 320)], 1e-7);
        }
        gradcheck(Concat::new(0, 1, 1), &[sample(&[2, 1, 2, 2], 330), sample(&[2, 3, 2, 2], 331)], 1e-7);
        // Repeated parent: concat(x, x) sends both slices to x.
        gradcheck(Concat::new(0, 0, 1), &[sample(&[2, 3], 332)], 1e-7);
    }

    #[test]
    fn repeated_parent_adds_the_two_slices_first() {
        // concat(x, x, 0) with x = [2^-53]: its VJP at x is δ[0] + δ[1], added before it reaches x.
        let x = tensor(&[1], &[1.0]);
        let g = tensor(&[2], &[1.0, f64::powi(2.0, -53)]);
        let t = vjp(Concat::new(0, 0, 0), std::slice::from_ref(&x), &g);
        assert_eq!(bits(&t[0]), [(1.0 + f64::powi(2.0, -53)).to_bits()]);
    }

    #[test]
    fn many_parts_in_one_node() {
        let a = tensor(&[2, 1], &[1.0, 2.0]);
        let b = tensor(&[2, 2], &[3.0, 4.0, 5.0, 6.0]);
        let y = forward(Concat::parts(vec![0, 1, 0], 1), &[a.clone(), b.clone()]);
        assert_eq!((y.dims(), y.data()), (dims(&[2, 4]), &[1.0, 3.0, 4.0, 1.0, 2.0, 5.0, 6.0, 2.0][..]));
        let one = forward(Concat::parts(vec![0], 0), std::slice::from_ref(&b));
        assert_eq!(bits(&one), bits(&b));
        let y = forward(Concat::parts(vec![0, 1, 1], 0), &[tensor(&[1, 2], &[7.0, 8.0]), b]);
        assert_eq!(y.data(), &[7.0, 8.0, 3.0, 4.0, 5.0, 6.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn many_parts_gradient() {
        for axis in 0..3 {
            let mut db = [2, 3, 2];
            db[axis] = 1;
            let inputs = [sample(&[2, 3, 2], 360 + axis as u64), sample(&db, 370), sample(&[2, 3, 2], 380)];
            gradcheck(Concat::parts(vec![0, 1, 2, 1, 0], axis), &inputs, 1e-7);
        }
        gradcheck(Concat::parts(vec![0], 1), &[sample(&[2, 3], 390)], 1e-7);
    }

    #[test]
    fn repeated_parts_add_left_to_right() {
        // concat([x, x, x], 0) with x = [1] and δ = [1, 2^-53, 2^-53]: (1 + 2^-53) + 2^-53 rounds
        // to 1 twice; the other order, 1 + (2^-53 + 2^-53), would give 1 + 2^-52.
        let e = f64::powi(2.0, -53);
        let x = tensor(&[1], &[1.0]);
        let t = vjp(Concat::parts(vec![0, 0, 0], 0), std::slice::from_ref(&x), &tensor(&[3], &[1.0, e, e]));
        assert_eq!(bits(&t[0]), [1.0f64.to_bits()]);
        let t = vjp(Concat::parts(vec![0, 0, 0], 0), std::slice::from_ref(&x), &tensor(&[3], &[e, e, 1.0]));
        assert_eq!(bits(&t[0]), [(1.0 + 2.0 * e).to_bits()]);
    }

    #[test]
    fn special_values() {
        // Forward copies bits (NaN payloads, -0.0). In the dense VJP each slice is added to the
        // other side's zeros (`δa + 0`), so a -0.0 becomes +0.0 — the reference semantics of
        // `add(single(a, δa), single(b, δb))` (SEMANTICS §4).
        let nan = f64::from_bits(0x7ff8_0000_0000_0bad);
        let a = tensor(&[2], &[-0.0, nan]);
        let b = tensor(&[1], &[f64::NEG_INFINITY]);
        let y = forward(Concat::new(0, 1, 0), &[a.clone(), b.clone()]);
        assert_eq!(bits(&y), [(-0.0f64).to_bits(), nan.to_bits(), f64::NEG_INFINITY.to_bits()]);
        let g = tensor(&[3], &[-0.0, nan, -0.0]);
        let t = vjp(Concat::new(0, 1, 0), &[a, b], &g);
        assert_eq!(bits(&t[0]), [0, nan.to_bits()]);
        assert_eq!(bits(&t[1]), [0]);
    }

    #[test]
    fn shape_errors_name_both_shapes() {
        let rule = |a: &[usize], b: &[usize], axis| {
            <Concat as CompactOp<f64, ()>>::output_dims(&Concat::new(0, 1, axis), &[dims(a), dims(b)]).unwrap_err()
        };
        assert_eq!(rule(&[2, 3], &[2, 4], 0), "concat along axis 0 needs the other dims equal, got [2, 3] and [2, 4]");
        assert_eq!(
            rule(&[2, 3], &[2, 3], 2),
            "concat along axis 2 needs two shapes of one rank with that axis, got [2, 3] and [2, 3]"
        );
        assert_eq!(
            rule(&[2, 3], &[6], 0),
            "concat along axis 0 needs two shapes of one rank with that axis, got [2, 3] and [6]"
        );
        assert_eq!(rule(&[], &[], 0), "concat along axis 0 needs two shapes of one rank with that axis, got [] and []");
        let many = |parts: &[&[usize]], axis| {
            let prefix: Vec<Dims> = parts.iter().map(|d| dims(d)).collect();
            let op = Concat::parts((0..parts.len()).collect(), axis);
            <Concat as CompactOp<f64, ()>>::output_dims(&op, &prefix)
        };
        assert_eq!(
            many(&[&[2, 3], &[2, 1], &[3, 3]], 1).unwrap_err(),
            "concat along axis 1 needs the other dims equal, got [2, 3] and [3, 3] (part 2)"
        );
        assert_eq!(many(&[&[2, 3], &[2, 1], &[2, 3]], 1), Ok(dims(&[2, 7])));
        assert_eq!(many(&[], 0).unwrap_err(), "concat along axis 0 needs at least one part");
    }

    #[test]
    fn typed_shapes_come_from_the_rule_trait() {
        use crate::graph::GraphData;
        use typenum::{U0, U1, U2, U3};
        let (g, a) = GraphData::<f64, ()>::new().input::<(U2, U3)>();
        let (g, b) = g.input::<(U2, U1)>();
        let (g, c) = g.input::<(U1, U3)>();
        let (g, ab) = g.push(concat(a, b, U1::new()));
        let (g, ac) = g.push(concat(a, c, U0::new()));
        let (g, abc) = g.push(concat_parts(a, U1::new()).then(b).then(a).node());
        assert!(g.build_errors().is_empty());
        assert_eq!(g.raw().dims()[abc.index()], Dims::matrix(2, 7));
        assert_eq!(g.raw().nodes()[abc.index() - 3].parents(), [0, 1, 0]);
        assert_eq!(g.raw().dims()[ab.index()], Dims::matrix(2, 4));
        assert_eq!(g.raw().dims()[ac.index()], Dims::matrix(3, 3));
    }
}
