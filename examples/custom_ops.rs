//! Two ways to add an op of your own:
//!
//! * a **custom compact op** — implement [`CompactOp`] with the same contribution combinators the
//!   built-in ops use (`single`, `add`, `fill`), and every fast pass handles it exactly;
//! * an **opaque node** — a forward closure and a dense-VJP closure over the whole prefix; it is
//!   always correct, and the single-output pass treats it conservatively.
//!
//! `cargo run --release --example custom_op`

use exactgrad::typenum::U3;
use exactgrad::{
    ops, CompactOp, Contrib, Contributions, Dims, Error, GraphData, Node, Pack, RawTensor, SavedValues, Tensor,
};

/// `axpy(a, x, y) = a * x + y` elementwise for three vectors of the same shape.
#[derive(Clone)]
struct Axpy {
    parents: [usize; 3],
}

impl<D> CompactOp<f64, D> for Axpy {
    fn name(&self) -> &str {
        "axpy"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let [a, x, y] = self.parents.map(|p| prefix[p]);
        if a == x && x == y {
            Ok(a)
        } else {
            Err(format!("axpy needs three operands of one shape, got {a}, {x} and {y}"))
        }
    }
    fn forward(&self, ctx: &[RawTensor<f64>], _: &D) -> RawTensor<f64> {
        let [a, x, y] = self.parents.map(|p| ctx[p].data());
        RawTensor::from_fn(ctx[self.parents[0]].dims(), |i| a[i] * x[i] + y[i])
    }
    fn contributions(
        &self,
        saved: &SavedValues<'_, f64, D>,
        g: &RawTensor<f64>,
        c: &mut Contributions<f64>,
    ) -> Contrib {
        // d/da = δ * x, d/dx = δ * a, d/dy = δ (δ left in products, SEMANTICS §4).
        let [pa, px, py] = self.parents;
        let (a, x, d) = (saved.prefix[pa].data(), saved.prefix[px].data(), g.data());
        let ga = c.tensor(g.dims(), |i| d[i] * x[i]);
        let gx = c.tensor(g.dims(), |i| d[i] * a[i]);
        let (sa, sx, sy) = (c.single(pa, ga), c.single(px, gx), c.single_cotangent(py));
        let ax = c.add(sa, sx);
        c.add(ax, sy)
    }
}

fn main() -> Result<(), Error> {
    let g = GraphData::<f64, ()>::new();
    let (g, a) = g.input::<(U3,)>();
    let (g, x) = g.input::<(U3,)>();
    // axpy(a, x, x) = a * x + x: `x` is read twice, and its two terms are added before they reach
    // the gradient (SEMANTICS §4).
    let axpy = Axpy { parents: [a.index(), x.index(), x.index()] };
    let (g, y) = g.push(Node::<f64, (), (U3,)>::compact(axpy, &[&a, &x]));
    // An opaque softplus, with its dense VJP (one tensor per earlier position) written by hand.
    let py = y.index();
    let (g, s) = g.push(ops::opaque::<f64, (), (U3,)>(
        "softplus",
        &[&y],
        move |ctx, _| ctx[py].map(|v| v.exp().ln_1p()),
        move |ctx, _, g| {
            let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
            out[py] = RawTensor::from_fn(g.dims(), |i| g.data()[i] / (1.0 + (-ctx[py].data()[i]).exp()));
            out
        },
    ));
    let (g, loss) = g.push(ops::sum(s));
    let (g, unrelated) = g.push(ops::sum(a));
    println!("{g}");

    let inputs =
        Pack::new().push(Tensor::from_vec(vec![1.0, 2.0, -1.0])?).push(Tensor::from_vec(vec![0.5, -0.5, 3.0])?);
    let saved = g.compile(inputs, ())?;
    let grads = saved.backprop_from(loss, Tensor::full(1.0))?;
    let reference = saved.backprop_from_dense(loss, Tensor::full(1.0))?;
    for (f, r) in grads.as_slice().iter().zip(reference.as_slice()) {
        assert!(f.data().iter().zip(r.data()).all(|(u, v)| u.to_bits() == v.to_bits()));
    }
    println!("d loss / d a = {:?}", grads.get(a)?.data());
    println!("d loss / d x = {:?}", grads.get(x)?.data());
    println!("the unrelated head's gradient stays as seeded: {:?}", grads.get(unrelated)?.data());
    Ok(())
}
