//! Exact gradients: the `graph!` MLP (with a rational-friendly head) over `Ratio<i64>`, so every
//! gradient is an exact fraction and the fast single-output pass, the all-seeds pass and the dense
//! reference agree exactly (SEMANTICS §7).
//!
//! Only ops that are exact over rationals: `matmul`, `+` (`add_row`), `-`, `relu`, `*` and
//! `mean`. No scaling by a literal constant: `graph!` parses constants with
//! `num_traits::Num::from_str_radix`, which `Ratio` only implements for the form `n/d`, so `y * 3`
//! would be reported by `compile` as not representable.
//!
//! `cargo run --release --example exact`

use exactgrad::typenum::U2;
use exactgrad::{graph, Error, RawTensor, Seeds, Tensor};
use num_rational::Ratio;

type Q = Ratio<i64>;

graph! {
    /// A two-layer perceptron with a batch dim `B` and a squared-error head.
    pub fn mlp<B>(x: [B, 3], w1: [3, 4], b1: [4], w2: [4, 2], target: [B, 2]) -> [] {
        let h = relu(x.matmul(w1) + b1);
        let e = h.matmul(w2) - target;
        mean(e * e)
    }
}

fn q(n: i64, d: i64) -> Q {
    Ratio::new(n, d)
}

/// The loss and the gradients of `w1`, `b1`, `w2` (row-major), after checking the passes agree.
pub(crate) fn run(verbose: bool) -> Result<(Q, [Vec<Q>; 3]), Error> {
    let (g, h) = mlp::<Q, U2>();
    let inputs = h.inputs(
        Tensor::from_fn(|i| q(i as i64 - 2, 3)),
        Tensor::from_fn(|i| q((i as i64 * 5) % 7 - 3, 4)),
        Tensor::from_vec(vec![q(1, 2), q(-1, 3), q(1, 5), q(0, 1)])?,
        Tensor::from_fn(|i| q(i as i64 - 4, 6)),
        Tensor::from_vec(vec![q(1, 1), q(-1, 1), q(0, 1), q(1, 2)])?,
    );
    let saved = g.compile(inputs, ())?;
    let loss = saved.value(h.output)?.data()[0];
    let fast = saved.backprop_from(h.output, Tensor::full(q(1, 1)))?;
    let dense = saved.backprop_from_dense(h.output, Tensor::full(q(1, 1)))?;
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output, Tensor::full(q(1, 1)))?;
    let all = saved.backprop_all_dense(seeds)?;
    // Over an exact scalar the skipped nodes would only have added exact zeros: all three agree.
    assert!(fast.iter().eq(dense.iter()));
    assert!(fast.iter().eq(all.iter()));

    let data = |t: &RawTensor<Q>| t.data().to_vec();
    let grads = [data(fast.get(h.w1)?), data(fast.get(h.b1)?), data(fast.get(h.w2)?)];
    if verbose {
        println!("{g}");
        println!("loss = {loss}");
        for (name, grad) in ["w1", "b1", "w2"].iter().zip(&grads) {
            let shown: Vec<String> = grad.iter().map(ToString::to_string).collect();
            println!("d loss / d {name} = [{}]", shown.join(", "));
        }
    }
    Ok((loss, grads))
}

fn main() -> Result<(), Error> {
    let (loss, grads) = run(true)?;
    assert!(loss >= q(0, 1));
    assert_eq!(grads.iter().map(Vec::len).sum::<usize>(), 12 + 4 + 8);
    Ok(())
}
