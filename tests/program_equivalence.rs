//! The generated backward programs (`Model::program`) against the runtime's passes on the same
//! graph, bit for bit: the all-inputs pass against `backprop_inputs_dense` (the reference) and
//! `backprop_inputs_array`, each output's single-output pass against `backprop_from` and
//! `backprop_from_dense` — for every DSL op, on `f32` and `f64` with adversarial inputs and seeds
//! (−0.0, NaN payloads, ±∞, subnormals), on wrapping integers, and on the symbolic scalar, whose
//! trees prove the generated order of every addition. One program serves every run (its buffers
//! are reused), and a failing run leaves it usable.
#![allow(clippy::unwrap_used, missing_docs)]

mod floats;
mod sym;

use core::num::Wrapping;

use exactgrad::typenum::{U2, U3};
use exactgrad::{
    graph, CompactOp, Contrib, Contributions, Dims, Error, FromParents, RawTensor, SavedValues, Scalar, Seeds, Tensor,
};
use floats::{adv, TestFloat};
use sym::Sym;

/// The encoding of a scalar, for bit-for-bit comparisons.
trait Enc: Scalar + core::fmt::Debug {
    fn enc(&self) -> u64;
}
impl Enc for f32 {
    fn enc(&self) -> u64 {
        u64::from(self.to_bits())
    }
}
impl Enc for f64 {
    fn enc(&self) -> u64 {
        self.to_bits()
    }
}
impl Enc for Wrapping<i64> {
    fn enc(&self) -> u64 {
        self.0 as u64
    }
}
impl Enc for Sym {
    fn enc(&self) -> u64 {
        u64::from(self.0)
    }
}

fn enc<A: Enc>(ts: &[RawTensor<A>]) -> Vec<(Vec<usize>, Vec<u64>)> {
    ts.iter().map(|t| (t.dims().as_slice().to_vec(), t.data().iter().map(Enc::enc).collect())).collect()
}

fn same<A: Enc>(what: &str, got: &[RawTensor<A>], want: &[RawTensor<A>]) {
    assert_eq!(enc(got), enc(want), "{what}: the program differs from the runtime pass");
}

/// The input part (`0..n`) of a context pack's gradients.
fn inputs_of<A: Enc>(g: &exactgrad::RawPack<A>, n: usize) -> Vec<RawTensor<A>> {
    (0..n).map(|k| g.get(k).unwrap().clone()).collect()
}

// ---------------------------------------------------------------------------------------------
// Every pointwise and elementwise op, a broadcast and constants; two outputs.

graph! {
    fn pointwise(a: [2, 3], b: [2, 3], r: [3]) -> ([2, 3], []) {
        let s = a + b;
        let d = a - b;
        let m = a * b;
        let q = div(a, b);
        let act = relu(s) + tanh(d) + exp(m * 0.01) + sigmoid(q) + softplus(max(a, b)) + gelu(min(a, b)) + silu(m);
        let t = act + square(-a) + log(exp(b)) + sqrt(exp(a)) * 0.5 + r;
        (t, sum(t * a))
    }
}

fn check_pointwise<A: TestFloat + Enc>(salt: u64) {
    let (g, h) = pointwise::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2));
    let (s0, s1): (Tensor<A, (U2, U3)>, Tensor<A, ()>) = (adv(salt, 3), adv(salt, 4));
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let dense = saved.backprop_inputs_dense(seeds.clone()).unwrap();
    let array = saved.backprop_inputs_array(seeds).unwrap();
    let mut prog = Pointwise::program::<A>();
    for _ in 0..2 {
        let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
        same("pointwise, all inputs (dense)", got.as_slice(), dense.as_slice());
        same("pointwise, all inputs (array)", got.as_slice(), array.as_slice());
    }
    let from = saved.backprop_from(h.output0, s0.clone()).unwrap();
    let from_dense = saved.backprop_from_dense(h.output0, s0.clone()).unwrap();
    let got = prog.gradients_from(h.output0, &mut inputs, &(), &s0).unwrap();
    same("pointwise, from output 0", got.as_slice(), &inputs_of(from.raw(), 3));
    same("pointwise, from output 0 (dense)", got.as_slice(), &inputs_of(from_dense.raw(), 3));
    let from = saved.backprop_from(h.output1, s1.clone()).unwrap();
    let got = prog.gradients_from(h.output1, &mut inputs, &(), &s1).unwrap();
    same("pointwise, from output 1", got.as_slice(), &inputs_of(from.raw(), 3));
    // The values of the last run are the saved forward's.
    assert_eq!(enc(&[prog.value(h.output1).unwrap().clone()]), enc(&[saved.value(h.output1).unwrap().clone()]));
}

// ---------------------------------------------------------------------------------------------
// Structure ops and reductions.

graph! {
    fn structure(x: [2, 3], w: [3, 4], y: [2, 1]) -> [] {
        let c = concat(x.matmul(w), y, 1);
        let s = slice(c, 1, 1, 3);
        let p = permute(s, [1, 0]);
        let r: [6] = reshape(p);
        let u = sum_axis(transpose(s), 1);
        let v = mean_axis(x, 0);
        sum(r) + mean(u * v) + sum(x.t().matmul(s))
    }
}

fn check_structure<A: TestFloat + Enc>(salt: u64) {
    let (g, h) = structure::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2));
    let s0: Tensor<A, ()> = adv(salt, 3);
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let dense = saved.backprop_inputs_dense(Seeds::single(&g, h.output, s0.clone()).unwrap()).unwrap();
    let mut prog = Structure::program::<A>();
    let got = prog.gradients(&mut inputs, &(), &s0).unwrap();
    same("structure, all inputs", got.as_slice(), dense.as_slice());
    let from = saved.backprop_from(h.output, s0.clone()).unwrap();
    let got = prog.gradients_from(h.output, &mut inputs, &(), &s0).unwrap();
    same("structure, from the output", got.as_slice(), &inputs_of(from.raw(), 3));
}

// ---------------------------------------------------------------------------------------------
// Model ops: layer norm, softmaxes, losses, gathered rows, data tensors.

graph! {
    fn classifier(w: [4, 3], b: [3], gain: [3], bias: [3], table: [5, 3], t: [2, 3];
                  x: [2, 4], labels: Vec<usize>, ids: Vec<usize>) -> ([], []) {
        let z = layer_norm(x.matmul(w) + b, gain, bias);
        let e: [2, 3] = gather_rows(table, ids);
        let p = softmax(z + e);
        let l = log_softmax(z * x.matmul(w));
        (cross_entropy(z * 2, labels), mse(p + l, t))
    }
}

fn classifier_data<A: TestFloat>(salt: u64) -> ClassifierData<A> {
    ClassifierData { x: adv(salt, 9), labels: vec![2, 0], ids: vec![4, 1] }
}

fn check_classifier<A: TestFloat + Enc>(salt: u64) {
    let (g, h) = classifier::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4), adv(salt, 5));
    let (s0, s1): (Tensor<A, ()>, Tensor<A, ()>) = (adv(salt, 6), adv(salt, 7));
    let saved = g.compile(inputs.clone(), classifier_data(salt)).unwrap();
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let dense = saved.backprop_inputs_dense(seeds).unwrap();
    let data = classifier_data(salt);
    let mut prog = Classifier::program::<A>();
    let got = prog.gradients(&mut inputs, &data, &(s0.clone(), s1.clone())).unwrap();
    same("classifier, all inputs", got.as_slice(), dense.as_slice());
    for (o, s) in [(h.output0, &s0), (h.output1, &s1)] {
        let from = saved.backprop_from(o, s.clone()).unwrap();
        let got = prog.gradients_from(o, &mut inputs, &data, s).unwrap();
        same("classifier, one output", got.as_slice(), &inputs_of(from.raw(), 6));
    }
    // A label out of range is the error `compile` gives, and the program stays usable.
    let bad = ClassifierData { labels: vec![7, 0], ..classifier_data(salt) };
    let err = prog.gradients(&mut inputs, &bad, &(s0.clone(), s1.clone())).err().unwrap();
    assert!(matches!(&err, Error::Node { op, .. } if op == "cross_entropy"), "{err}");
    let got = prog.gradients(&mut inputs, &data, &(s0, s1)).unwrap();
    same(
        "classifier, after an error",
        got.as_slice(),
        &saved
            .backprop_inputs_dense({
                let mut seeds = Seeds::zeros(&g);
                seeds.set(h.output0, adv(salt, 6)).unwrap();
                seeds.set(h.output1, adv(salt, 7)).unwrap();
                seeds
            })
            .unwrap()
            .into_vec(),
    );
}

// ---------------------------------------------------------------------------------------------
// Repeated parents, an opaque node, a user compact op.

/// `twice(x) = x + x`, a user compact op whose VJP pushes a non-zero uniform (`fill(0.5)` added).
struct Twice([usize; 1]);
impl FromParents for Twice {
    fn from_parents(p: &[usize]) -> Self {
        Twice([p[0]])
    }
}
impl<A: Scalar + num_traits::FromPrimitive, D> CompactOp<A, D> for Twice {
    fn name(&self) -> &str {
        "twice"
    }
    fn parents(&self) -> &[usize] {
        &self.0
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        Ok(prefix[self.0[0]])
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.0[0]].add(&ctx[self.0[0]]).unwrap()
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, _: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let (l, r) = (c.single_cotangent(self.0[0]), c.single_cotangent(self.0[0]));
        let both = c.add(l, r);
        let half = c.fill(A::from_f64(0.5).unwrap());
        c.add(both, half)
    }
}

graph! {
    fn repeated(x: [2, 2], y: [2, 2]) -> ([], []) {
        let a = x * x + square(x) + x;
        let b = x.matmul(x) - (y + y);
        let o: [2, 2] = opaque(a, b, forward = |a, b| a.add(b).unwrap(), vjp = |_a, b, g| [g.clone(), g.map(|v| *v * b.data()[0])]);
        (sum(o * a), sum(y))
    }
}

graph! {
    fn with_user_op<T: num_traits::FromPrimitive>(x: [2, 2], y: [2, 2]) -> ([], []) {
        let t: [2, 2] = Twice(x * y);
        (sum(t * x + y), sum(y * y))
    }
}

fn check_repeated<A: TestFloat + Enc>(salt: u64) {
    let (g, h) = repeated::<A>();
    let mut inputs = h.inputs(adv(salt, 0), adv(salt, 1));
    let (s0, s1): (Tensor<A, ()>, Tensor<A, ()>) = (adv(salt, 2), adv(salt, 3));
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let dense = saved.backprop_inputs_dense(seeds).unwrap();
    let mut prog = Repeated::program::<A>();
    let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
    same("repeated, all inputs", got.as_slice(), dense.as_slice());
    for (o, s) in [(h.output0, &s0), (h.output1, &s1)] {
        let from = saved.backprop_from(o, s.clone()).unwrap();
        let got = prog.gradients_from(o, &mut inputs, &(), s).unwrap();
        same("repeated, one output (opaque prefix reach)", got.as_slice(), &inputs_of(from.raw(), 2));
    }

    let (g, h) = with_user_op::<A>();
    let mut inputs = h.inputs(adv(salt, 4), adv(salt, 5));
    let (s0, s1): (Tensor<A, ()>, Tensor<A, ()>) = (adv(salt, 6), adv(salt, 7));
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let dense = saved.backprop_inputs_dense(seeds).unwrap();
    let mut prog = WithUserOp::program::<A>();
    let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
    same("user op, all inputs", got.as_slice(), dense.as_slice());
    // The single-output passes run the runtime's loop (the user op's support is declared at run
    // time): each reaches only its own head, as `backprop_from` does.
    for (o, s) in [(h.output0, &s0), (h.output1, &s1)] {
        let from = saved.backprop_from(o, s.clone()).unwrap();
        let got = prog.gradients_from(o, &mut inputs, &(), s).unwrap();
        same("user op, one output", got.as_slice(), &inputs_of(from.raw(), 2));
    }
    assert_ne!(saved.visited_from(h.output0).unwrap(), saved.visited_from(h.output1).unwrap());
}

macro_rules! float_tests {
    ($($name:ident: $check:ident),*) => {$(
        #[test]
        fn $name() {
            for salt in 0..2 * floats::MODES {
                $check::<f32>(salt);
                $check::<f64>(salt);
            }
        }
    )*};
}
float_tests!(
    pointwise_ops_equal_the_runtime: check_pointwise,
    structure_ops_equal_the_runtime: check_structure,
    model_ops_equal_the_runtime: check_classifier,
    repeated_parents_opaque_and_user_ops_equal_the_runtime: check_repeated
);

// ---------------------------------------------------------------------------------------------
// Integers and the symbolic scalar: the ops that need no float.

graph! {
    fn exact(x: [2, 3], w: [3, 2], b: [2], y: [2, 2]) -> ([2, 2], []) {
        let h = x.matmul(w) + b;
        let z = h * y - (-h) + y;
        let c = concat(z, y, 1);
        let s = slice(c, 1, 1, 2);
        let r: [4] = reshape(permute(s, [1, 0]));
        (s, sum(r) + sum(transpose(s).matmul(z)) + sum(sum_axis(z, 0)))
    }
}

fn check_exact<A: Enc + core::ops::Sub<Output = A> + core::ops::Mul<Output = A> + core::ops::Neg<Output = A>>(
    leaf: impl Fn(&str, usize) -> A,
) {
    let t = |name: &str, d: Dims| RawTensor::from_fn(d, |i| leaf(name, i));
    let (g, h) = exact::<A>();
    let mut inputs = h.inputs(
        Tensor::try_from_raw(t("x", Dims::matrix(2, 3))).unwrap(),
        Tensor::try_from_raw(t("w", Dims::matrix(3, 2))).unwrap(),
        Tensor::try_from_raw(t("b", Dims::vector(2))).unwrap(),
        Tensor::try_from_raw(t("y", Dims::matrix(2, 2))).unwrap(),
    );
    let s0: Tensor<A, (U2, U2)> = Tensor::try_from_raw(t("s", Dims::matrix(2, 2))).unwrap();
    let s1: Tensor<A, ()> = Tensor::try_from_raw(t("u", Dims::scalar())).unwrap();
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, s0.clone()).unwrap();
    seeds.set(h.output1, s1.clone()).unwrap();
    let dense = saved.backprop_inputs_dense(seeds).unwrap();
    let mut prog = Exact::program::<A>();
    let got = prog.gradients(&mut inputs, &(), &(s0.clone(), s1.clone())).unwrap();
    same("exact scalar, all inputs", got.as_slice(), dense.as_slice());
    let from = saved.backprop_from_dense(h.output0, s0.clone()).unwrap();
    let got = prog.gradients_from(h.output0, &mut inputs, &(), &s0).unwrap();
    same("exact scalar, from output 0", got.as_slice(), &inputs_of(from.raw(), 4));
    let from = saved.backprop_from_dense(h.output1, s1.clone()).unwrap();
    let got = prog.gradients_from(h.output1, &mut inputs, &(), &s1).unwrap();
    same("exact scalar, from output 1", got.as_slice(), &inputs_of(from.raw(), 4));
}

#[test]
fn wrapping_integers_equal_the_runtime() {
    for salt in 0..16u64 {
        check_exact(|name: &str, i| {
            let h = floats::splitmix(salt * 1_000 + i as u64 + name.bytes().map(u64::from).sum::<u64>() * 7);
            // Small values, zeros, and the extremes (whose products wrap).
            Wrapping(match h % 5 {
                0 => 0,
                1 => i64::MIN,
                2 => i64::MAX,
                _ => (h % 9) as i64 - 4,
            })
        });
    }
}

#[test]
fn symbolic_trees_equal_the_runtime() {
    check_exact(|name: &str, i| if i == 1 { sym::zero() } else { Sym::leaf(format!("{name}{i}")) });
}

graph! {
    fn affine<B>(x: [B, 3], w: [3, 2]) -> [B, 2] {
        x.matmul(w)
    }
}

#[test]
fn planned_bytes_count_values_gradients_and_input_gradients() {
    let prog = Affine::program::<f32, exactgrad::typenum::U4>();
    // The output's value 8 (the inputs are the caller's), gradient buffers 12 + 6 + 8, input
    // gradients handed back 12 + 6.
    assert_eq!(prog.planned_bytes(), 52 * 4);
    let prog = Affine::program::<f64, exactgrad::typenum::U1>();
    assert_eq!(prog.planned_bytes(), (2 + (3 + 6 + 2) + 3 + 6) * 8);
}

graph! {
    fn scaled_chain(x: [1000]) -> [] {
        sum(x * 2.0 * 2.0 * 2.0 * 2.0)
    }
}

#[test]
fn the_forward_keeps_only_what_vjps_read_and_buffers_are_reused() {
    // No VJP here reads a value: the four [1000] values ping-pong between two buffers (the
    // scalar output takes one of them), and so do the gradients of the nodes; x keeps its own.
    let mut prog = ScaledChain::program::<f32>();
    assert_eq!(prog.planned_bytes(), (2 * 1000 + 3 * 1000 + 1000) * 4);
    let text = ScaledChain::describe_backward();
    assert!(text.starts_with("forward (2 value buffers"), "{text}");
    assert!(text.contains("gives back the value buffers of %1"), "{text}");
    let (g, h) = scaled_chain::<f32>();
    let mut inputs = h.inputs(Tensor::from_fn(|i| i as f32 - 500.0));
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let seed: Tensor<f32, ()> = Tensor::from_fn(|_| 1.5);
    let dense = saved.backprop_inputs_dense(Seeds::single(&g, h.output, seed.clone()).unwrap()).unwrap();
    for _ in 0..2 {
        let got = prog.gradients(&mut inputs, &(), &seed).unwrap();
        same("scaled chain", got.as_slice(), dense.as_slice());
        assert_eq!(enc(&[prog.value(h.output).unwrap().clone()]), enc(&[saved.value(h.output).unwrap().clone()]));
    }
}

graph! {
    fn two_heads(x: [3], w0: [3], w1: [3]) -> ([], []) {
        (sum(tanh(w0 * x)), sum(tanh(w1 * x)))
    }
}

#[test]
fn passes_in_any_order_give_the_runtime_gradients() {
    // From output 0 `w1`'s gradient is a uniform zero, from output 1 `w0`'s; a program writes a
    // uniform only into a buffer that does not hold it already, so every order of passes must
    // still hand back exactly the runtime's gradients.
    let (g, h) = two_heads::<f64>();
    let mut inputs = h.inputs(
        Tensor::from_fn(|i| i as f64 - 1.0),
        Tensor::from_fn(|i| 0.5 * i as f64),
        Tensor::from_fn(|i| -0.25 * i as f64),
    );
    let saved = g.compile(inputs.clone(), ()).unwrap();
    let seed: Tensor<f64, ()> = Tensor::from_fn(|_| 2.0);
    let mut seeds = Seeds::zeros(&g);
    seeds.set(h.output0, seed.clone()).unwrap();
    seeds.set(h.output1, seed.clone()).unwrap();
    let all = saved.backprop_inputs_dense(seeds).unwrap();
    let from0 = inputs_of(saved.backprop_from(h.output0, seed.clone()).unwrap().raw(), 3);
    let from1 = inputs_of(saved.backprop_from(h.output1, seed.clone()).unwrap().raw(), 3);
    let all = all.as_slice().to_vec();
    let mut prog = TwoHeads::program::<f64>();
    for pass in [0, 1, 0, 0, 2, 1, 1, 2, 0, 2, 2, 1, 0] {
        let (got, want) = match pass {
            0 => (prog.gradients_from(h.output0, &mut inputs, &(), &seed).unwrap(), &from0),
            1 => (prog.gradients_from(h.output1, &mut inputs, &(), &seed).unwrap(), &from1),
            _ => (prog.gradients(&mut inputs, &(), &(seed.clone(), seed.clone())).unwrap(), &all),
        };
        same(&format!("pass {pass}"), got.as_slice(), want);
    }
}
