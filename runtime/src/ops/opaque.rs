//! Opaque nodes: a user forward closure and a dense-VJP closure over the whole prefix.
//!
//! An opaque node has no compact program: every pass calls its VJP with the node's cotangent and
//! adds the whole returned pack (one tensor per earlier position), and the single-output pass
//! treats it as depending on its whole prefix.

use crate::graph::{ErasedPosition, Node};
use crate::scalar::Scalar;
use crate::shape::Shape;
use crate::tensor::RawTensor;

/// A typed opaque node of output shape `S`. `reads` are the handles it reads (checked to belong to
/// the graph, shown in descriptions); `forward` gets the context prefix and the data; `vjp` gets
/// them and the cotangent and must return one tensor per earlier position. Both closures are
/// `Send + Sync`, so the graph can be shared by threads.
///
/// ```
/// use exactgrad_runtime::{ops, GraphData, Pack, RawTensor, Tensor, typenum::U2};
/// let (g, x) = GraphData::<f64, ()>::new().input::<(U2,)>();
/// // y = 2x, with a hand-written dense VJP.
/// let (g, y) = g.push(ops::opaque::<f64, (), (U2,)>(
///     "double",
///     &[&x],
///     move |ctx, _| ctx[0].map(|v| 2.0 * v),
///     move |_ctx, _, g| vec![g.map(|d| 2.0 * d)],
/// ));
/// let saved = g.compile(Pack::new().push(Tensor::from_vec(vec![1.0, 2.0]).unwrap()), ()).unwrap();
/// let grads = saved.backprop_from(y, Tensor::full(1.0)).unwrap();
/// assert_eq!(grads.get(x).unwrap().data(), &[2.0, 2.0]);
/// ```
pub fn opaque<A: Scalar, D: 'static, S: Shape>(
    name: impl Into<String>,
    reads: &[&dyn ErasedPosition],
    forward: impl Fn(&[RawTensor<A>], &D) -> RawTensor<A> + Send + Sync + 'static,
    vjp: impl Fn(&[RawTensor<A>], &D, &RawTensor<A>) -> Vec<RawTensor<A>> + Send + Sync + 'static,
) -> Node<A, D, S> {
    Node::opaque(name, reads, forward, vjp)
}
