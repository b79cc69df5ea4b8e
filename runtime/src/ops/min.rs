//! `min(a, b)`: elementwise minimum. `y[i]` is one of the operands, chosen by `left(a[i], b[i])`:
//!
//! * `a < b` or `a == b` (ties, including `-0.0` vs `+0.0`): `a` — so `min(+0.0, -0.0) = +0.0`;
//! * `a > b`: `b`;
//! * unordered (a NaN): the NaN propagates — `a` if `a` is unordered with itself (`a` is NaN),
//!   else `b`. So a NaN operand always wins, and the left NaN's payload when both are NaN.
//!
//! VJP: `add(single(a, ma), single(b, mb))` with `ma[i] = if left { δ[i] } else { 0 }` and
//! `mb[i] = if left { 0 } else { δ[i] }`: the whole cotangent goes to the chosen operand and the
//! other gets `+0`. It is a select, not a product (like `relu`), so a NaN or infinite cotangent
//! does not leak to the operand that was not chosen. With `a == b` (same position) the local
//! gradient is `δ + 0`.

/// Elementwise minimum of two positions of the same shape (ties and NaNs: see the module docs).
pub type Min = super::select::Select<false>;

typed_op!(min(a: L, b: R) -> Min: Elementwise, "`min(a, b)` (elementwise), both operands of one shape");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::{bits, forward, gradcheck, sample, vjp};
    use crate::shape::Dims;
    use crate::tensor::RawTensor;

    fn v(x: &[f64]) -> RawTensor<f64> {
        RawTensor::from_vec(Dims::vector(x.len()), x.to_vec()).unwrap()
    }

    #[test]
    fn values_and_gradient() {
        let (a, b) = (v(&[1.0, -3.0, 2.0]), v(&[0.5, 4.0, 2.0]));
        assert_eq!(forward(Min::new(0, 1), &[a.clone(), b.clone()]).data(), &[0.5, -3.0, 2.0]);
        let d = vjp(Min::new(0, 1), &[a, b], &v(&[7.0, 8.0, 9.0]));
        // Tie at element 2: the left operand gets δ.
        assert_eq!((d[0].data(), d[1].data()), (&[0.0, 8.0, 9.0][..], &[7.0, 0.0, 0.0][..]));
    }

    #[test]
    fn gradient_matches_finite_differences_away_from_ties() {
        gradcheck(Min::new(0, 1), &[sample(&[3, 3], 30), sample(&[3, 3], 31)], 1e-7);
    }

    #[test]
    fn special_values() {
        let nan1 = f64::from_bits(0x7ff8_0000_0000_0001);
        let nan2 = f64::from_bits(0xfff8_0000_0000_0002);
        let a = v(&[-0.0, 0.0, nan1, 1.0, nan1, f64::NEG_INFINITY, 3.0]);
        let b = v(&[0.0, -0.0, 1.0, nan2, nan2, f64::NEG_INFINITY, f64::INFINITY]);
        let y = forward(Min::new(0, 1), &[a.clone(), b.clone()]);
        let expected = [(-0.0f64).to_bits(), 0, nan1.to_bits(), nan2.to_bits(), nan1.to_bits()];
        assert_eq!(bits(&y)[..5], expected);
        assert_eq!(y.data()[5..], [f64::NEG_INFINITY, 3.0]);
        // A NaN cotangent reaches only the chosen operand; the other gets +0.
        let g = v(&[f64::NAN, -0.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]);
        let d = vjp(Min::new(0, 1), &[a, b], &g);
        // At `a` the local value is `ma + 0` (SEMANTICS §4): the `-0.0` cotangent becomes `+0.0`.
        assert!(d[0].data()[0].is_nan());
        assert_eq!(bits(&d[0])[1..6], [0, 2.0f64.to_bits(), 0, 4.0f64.to_bits(), 5.0f64.to_bits()]);
        assert!(d[0].data()[6].is_nan());
        assert_eq!(bits(&d[1]), [0, 0, 0, 3.0f64.to_bits(), 0, 0, 0]);
    }

    #[test]
    fn min_of_x_and_x_passes_delta_plus_zero() {
        let x = v(&[1.0, f64::NAN]);
        let d = vjp(Min::new(0, 0), &[x], &v(&[-0.0, 2.0]));
        assert_eq!(bits(&d[0]), [0, 2.0f64.to_bits()]); // -0 + +0 = +0
    }

    #[test]
    fn integers() {
        let a = RawTensor::from_vec(Dims::vector(3), vec![1i64, 5, -2]).unwrap();
        let b = RawTensor::from_vec(Dims::vector(3), vec![3i64, 5, -7]).unwrap();
        let mut graph = crate::graph::RawGraph::<i64, ()>::new(vec![Dims::vector(3), Dims::vector(3)]);
        let p = graph.push(crate::graph::RawNode::compact(Min::new(0, 1))).unwrap();
        let saved = crate::saved::RawSavedGraph::compile(&graph, vec![a, b], ()).unwrap();
        assert_eq!(saved.values()[p.index()].data(), &[1, 5, -7]);
        let grads = saved.backprop_from(p, RawTensor::from_vec(Dims::vector(3), vec![10, 20, 30]).unwrap()).unwrap();
        assert_eq!((grads[0].data(), grads[1].data()), (&[10, 20, 0][..], &[0, 0, 30][..]));
    }
}
