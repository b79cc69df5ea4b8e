//! Small helpers the `graph!` macro's generated code calls (also usable by hand).

use num_traits::FromPrimitive;

use crate::scalar::Scalar;
use crate::tensor::RawTensor;

/// The constant `c` in the scalar type, or `None` when it is not representable.
///
/// ```
/// assert_eq!(exactgrad_runtime::dsl::constant::<f32>(0.5), Some(0.5));
/// assert_eq!(exactgrad_runtime::dsl::constant::<u8>(1e9), None);
/// ```
pub fn constant<A: FromPrimitive>(c: f64) -> Option<A> {
    A::from_f64(c)
}

/// The dense VJP pack of an opaque node that returned one gradient per value it read: `zeros` at
/// every position of the prefix, the gradient at each read position, and at a position read
/// several times the gradients added in read order (`(g1 + g2) + …`, first one left).
///
/// ```
/// use exactgrad_runtime::{dsl::opaque_pack, Dims, RawTensor};
/// let ctx = vec![RawTensor::full(Dims::vector(1), 5.0), RawTensor::full(Dims::vector(1), 6.0)];
/// let g = |v| RawTensor::full(Dims::vector(1), v);
/// let pack = opaque_pack(&ctx, &[1, 1], [g(1.0), g(2.0)]);
/// assert_eq!(pack[0].data(), &[0.0]);
/// assert_eq!(pack[1].data(), &[3.0]);
/// ```
pub fn opaque_pack<A: Scalar>(
    ctx: &[RawTensor<A>],
    reads: &[usize],
    grads: impl IntoIterator<Item = RawTensor<A>>,
) -> Vec<RawTensor<A>> {
    let mut out: Vec<Option<RawTensor<A>>> = ctx.iter().map(|_| None).collect();
    for (&p, g) in reads.iter().zip(grads) {
        out[p] = Some(match out[p].take() {
            None => g,
            Some(prev) if prev.dims() == g.dims() => prev.add(&g),
            // A gradient of the wrong shape: keep it, so the pass reports the shape error.
            Some(_) => g,
        });
    }
    out.into_iter().zip(ctx).map(|(g, t)| g.unwrap_or_else(|| RawTensor::zeros(t.dims()))).collect()
}
