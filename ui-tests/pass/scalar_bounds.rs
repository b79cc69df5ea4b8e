//! The scalar type parameter can be named with bounds, for user ops that need more than the
//! built-in ops of the graph ask for.
use exactgrad::num_traits::Float;
use exactgrad::{CompactOp, Contrib, Contributions, Dims, FromParents, RawTensor, SavedValues, Scalar, Tensor};

/// `square(x) = x * x`, a user op that needs `Float` of its scalar.
struct Square([usize; 1]);

impl FromParents for Square {
    fn from_parents(p: &[usize]) -> Self {
        Square([p[0]])
    }
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Square {
    fn name(&self) -> &str {
        "square"
    }
    fn parents(&self) -> &[usize] {
        &self.0
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        Ok(prefix[self.0[0]])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.0[0]].map(|v| *v * *v)
    }
    fn contributions(&self, saved: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let x = saved.prefix[self.0[0]].data();
        let t = c.tensor(g.dims(), |i| g.data()[i] * (x[i] + x[i]));
        c.single(self.0[0], t)
    }
}

exactgrad::graph! {
    /// Sum of squares, with the scalar named `T`.
    pub fn squares<T: Float, B>(x: [B, 2]) -> [] {
        let y: [B, 2] = Square(x);
        sum(y)
    }
}

fn main() {
    let (g, h) = squares::<f32, exactgrad::typenum::U3>();
    let saved = g.compile(h.inputs(Tensor::full(2.0)), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[24.0]);
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.x).unwrap().data(), &[4.0; 6]);
}
