//! The `graph!` macro builds exactly the graph one would build by hand, and every reverse pass over
//! a macro-built graph keeps the bit-exact contract of SEMANTICS.md.
//!
//! 1. **Macro == hand-built, op by op.** For every construct of the DSL (`+`, `-`, `*`, unary `-`,
//!    `x * c`, `c * x`, `scale(x, c)`, `matmul(a, b)` and `a.matmul(b)`, `transpose(x)` and `x.t()`,
//!    `sum`, `mean`, `relu`, `tanh`, `exp`, `add_row(m, r)` and the broadcast `m + r`, `opaque(…)`
//!    with single and repeated reads and with `vjp_all`, and a user compact op called through
//!    [`FromParents`]) a small macro graph and the same graph pushed by hand on `GraphData::new()`
//!    with `ops::…` have the same `describe()` listing (op names may differ only on opaque nodes,
//!    which the macro may name after their binding), bit-identical values at every position, and
//!    bit-identical results of every pass: `backprop_all_{array,stored,dense}` and
//!    `backprop_inputs_{array,stored,dense}` (typed `Seeds::single` on the output; raw seeds on the
//!    output and an input; adversarial seeds on every position, dense and sparse; `-0.0` seeds on
//!    every position), and `backprop_from` / `backprop_from_dense` from every position. Within each
//!    graph every fast pass is also checked against its dense reference. Inputs and seeds mix `±0`,
//!    NaNs with payloads (quiet, signalling, negative), `±inf`, subnormals and ordinary values; all
//!    comparisons are on `to_bits`. Both `f64` and `f32`.
//! 2. **Properties of macro-built graphs** (proptest, 256 cases each): an MLP with a generic batch
//!    dim at two batch sizes (and in `f32`), a graph with repeated parents (`x * x + x`), a graph
//!    with an opaque node whose VJP is non-zero at a zero cotangent, and a graph with two outputs.
//!    For random adversarial inputs and seeds: array == stored == dense (all positions, dense and
//!    sparse seeds), inputs-only array == inputs-only stored == inputs-only dense == the inputs of
//!    the all-seeds dense pass, and `backprop_from == backprop_from_dense` for every output (and a
//!    random extra position).
//! 3. **Data parameters.** `fn f(x: [3]; labels: Vec<usize>) -> [] {…}` generates
//!    `FData { labels }`, which is the graph's Δ: `compile` takes it, a user op reads it in its
//!    forward, VJP and validation, and the result equals the hand-built graph over the same Δ.
//!
//! The last test pins a bug: `bug_scale_constant_truncated_for_integer_scalars` (a constant that
//! does not fit an integer scalar is truncated instead of reported).
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{Unsigned, U2, U3, U4, U5, U6};
use exactgrad::{
    graph, ops, CompactOp, Contrib, Contributions, Dims, FromParents, GraphData, Node, Pack, Position, RawSeeds,
    RawTensor, SavedValues, Scalar, Seeds, Shape, Tensor,
};
use floats::{adv, adversarial, all_bits, assert_all_eq, Bits, TestFloat, MODES};
use num_traits::Float;
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

// ---------------------------------------------------------------------------------------------
// What a graph computes, as bits
// ---------------------------------------------------------------------------------------------

/// Everything a graph computes on one input pack and one family of seeds.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    describe: String,
    values: Vec<Bits>,
    /// Typed passes, seeds on `output` and on the first input.
    typed_all: [Vec<Bits>; 3],
    typed_inputs: [Vec<Bits>; 3],
    typed_from: [Vec<Bits>; 2],
    /// Raw all-seeds passes, seeds on the output and on input 0.
    output_and_input: [Vec<Bits>; 3],
    /// Raw passes, adversarial seeds on every position.
    all: [Vec<Bits>; 3],
    inputs: [Vec<Bits>; 3],
    /// Raw passes, adversarial seeds on every other position (the rest are buffer-free zeros).
    sparse_all: [Vec<Bits>; 3],
    sparse_inputs: [Vec<Bits>; 3],
    /// `backprop_from` and `backprop_from_dense` from every position.
    from: Vec<[Vec<Bits>; 2]>,
    /// All passes with `-0.0` seeds on every position (where `δ + 0` and `δ` differ).
    neg_zero_all: [Vec<Bits>; 3],
    neg_zero_inputs: [Vec<Bits>; 3],
    neg_zero_from: Vec<[Vec<Bits>; 2]>,
}

/// Runs every pass of `g` and checks each fast pass against its dense reference on the way.
fn outcome<A: TestFloat, D: Sync + 'static, G, Ss, Br, S: Shape>(
    g: &GraphData<A, D, G, Ss, Br>,
    inputs: Pack<A, G>,
    data: D,
    output: Position<S, Br>,
    salt: u64,
) -> Outcome {
    let saved = g.compile(inputs, data).unwrap();
    let raw = saved.raw();
    let dims = g.raw().dims().to_vec();
    let n_in = g.raw().num_inputs();
    let seed_at = |p: usize, s: u64| adversarial::<A>(dims[p], salt + MODES * (31 * p as u64 + s + 1));

    // Typed API: `single(output, seed)`.
    let out_seed: Tensor<A, S> = Tensor::try_from_raw(seed_at(output.index(), 7)).unwrap();
    let typed = Seeds::single(g, output, out_seed.clone()).unwrap();
    let typed_all = [
        all_bits(saved.backprop_all_dense(typed.clone()).unwrap().iter()),
        all_bits(saved.backprop_all_array(typed.clone()).unwrap().iter()),
        all_bits(saved.backprop_all_stored(typed.clone()).unwrap().iter()),
    ];
    assert_all_eq("typed backprop_all", &typed_all);
    let mut single_raw = RawSeeds::zeros(&dims);
    single_raw.set(output.into(), seed_at(output.index(), 7)).unwrap();
    assert_eq!(typed_all[0], all_bits(&raw.backprop_all_dense(single_raw).unwrap()), "typed seeds == raw seeds");
    let typed_inputs = [
        all_bits(saved.backprop_inputs_dense(typed.clone()).unwrap().as_slice()),
        all_bits(saved.backprop_inputs_array(typed.clone()).unwrap().as_slice()),
        all_bits(saved.backprop_inputs_stored(typed).unwrap().as_slice()),
    ];
    assert_all_eq("typed backprop_inputs", &typed_inputs);
    assert_eq!(typed_inputs[0][..], typed_all[0][..n_in], "typed inputs-only == inputs of all-seeds");
    let typed_from = [
        all_bits(saved.backprop_from_dense(output, out_seed.clone()).unwrap().iter()),
        all_bits(saved.backprop_from(output, out_seed).unwrap().iter()),
    ];
    assert_all_eq("typed backprop_from", &typed_from);

    // Raw API, seeds on the output and on input 0.
    let mut seeds_raw = RawSeeds::zeros(&dims);
    seeds_raw.set(output.into(), seed_at(output.index(), 7)).unwrap();
    seeds_raw.set(raw.graph().position(0).unwrap(), seed_at(0, 8)).unwrap();
    let two = [
        all_bits(&raw.backprop_all_dense(seeds_raw.clone()).unwrap()),
        all_bits(&raw.backprop_all_array(seeds_raw.clone()).unwrap()),
        all_bits(&raw.backprop_all_stored(seeds_raw).unwrap()),
    ];
    assert_all_eq("backprop_all, seeds on output and input 0", &two);

    // Raw API, adversarial seeds everywhere.
    let dense_seeds: Vec<RawTensor<A>> = (0..dims.len()).map(|p| seed_at(p, 0)).collect();
    let all = [
        all_bits(&raw.backprop_all_dense(dense_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_array(dense_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_stored(dense_seeds.clone()).unwrap()),
    ];
    assert_all_eq("backprop_all", &all);
    let inputs = [
        all_bits(&raw.backprop_inputs_dense(dense_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_array(dense_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_stored(dense_seeds).unwrap()),
    ];
    assert_all_eq("backprop_inputs", &inputs);
    assert_eq!(inputs[0][..], all[0][..n_in], "inputs-only == inputs of all-seeds");

    // Sparse seeds: every other position left as buffer-free zeros.
    let mut sparse = RawSeeds::zeros(&dims);
    for p in (0..dims.len()).filter(|p| p % 2 == 1) {
        sparse.set(raw.graph().position(p).unwrap(), seed_at(p, 3)).unwrap();
    }
    let sparse_all = [
        all_bits(&raw.backprop_all_dense(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_all_array(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_all_stored(sparse.clone()).unwrap()),
    ];
    assert_all_eq("backprop_all, sparse seeds", &sparse_all);
    let sparse_inputs = [
        all_bits(&raw.backprop_inputs_dense(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_array(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_stored(sparse).unwrap()),
    ];
    assert_all_eq("backprop_inputs, sparse seeds", &sparse_inputs);

    let from = (0..dims.len())
        .map(|p| {
            let r = [
                all_bits(&raw.backprop_from_dense(raw.graph().position(p).unwrap(), seed_at(p, 5)).unwrap()),
                all_bits(&raw.backprop_from(raw.graph().position(p).unwrap(), seed_at(p, 5)).unwrap()),
            ];
            assert_all_eq(&format!("backprop_from({p})"), &r);
            r
        })
        .collect();

    let neg_zero = |p: usize| RawTensor::full(dims[p], -<A as Scalar>::zero());
    let nz_seeds: Vec<RawTensor<A>> = (0..dims.len()).map(neg_zero).collect();
    let neg_zero_all = [
        all_bits(&raw.backprop_all_dense(nz_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_array(nz_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_all_stored(nz_seeds.clone()).unwrap()),
    ];
    assert_all_eq("backprop_all, -0.0 seeds", &neg_zero_all);
    let neg_zero_inputs = [
        all_bits(&raw.backprop_inputs_dense(nz_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_array(nz_seeds.clone()).unwrap()),
        all_bits(&raw.backprop_inputs_stored(nz_seeds).unwrap()),
    ];
    assert_all_eq("backprop_inputs, -0.0 seeds", &neg_zero_inputs);
    let neg_zero_from = (0..dims.len())
        .map(|p| {
            let r = [
                all_bits(&raw.backprop_from_dense(raw.graph().position(p).unwrap(), neg_zero(p)).unwrap()),
                all_bits(&raw.backprop_from(raw.graph().position(p).unwrap(), neg_zero(p)).unwrap()),
            ];
            assert_all_eq(&format!("backprop_from({p}), -0.0 seed"), &r);
            r
        })
        .collect();

    Outcome {
        describe: g.describe(),
        values: all_bits(raw.values()),
        typed_all,
        typed_inputs,
        typed_from,
        output_and_input: two,
        all,
        inputs,
        sparse_all,
        sparse_inputs,
        from,
        neg_zero_all,
        neg_zero_inputs,
        neg_zero_from,
    }
}

/// Compares the outcomes of the macro graph and the hand-built graph field by field.
fn assert_same(op: &str, salt: u64, m: &Outcome, h: &Outcome) {
    assert_describe_eq(op, &m.describe, &h.describe);
    assert_eq!(m.values, h.values, "{op} (salt {salt}): values differ");
    assert_eq!(m.typed_all, h.typed_all, "{op} (salt {salt}): typed backprop_all differs");
    assert_eq!(m.typed_inputs, h.typed_inputs, "{op} (salt {salt}): typed backprop_inputs differs");
    assert_eq!(m.typed_from, h.typed_from, "{op} (salt {salt}): typed backprop_from differs");
    assert_eq!(m.output_and_input, h.output_and_input, "{op} (salt {salt}): backprop_all (output + input) differs");
    assert_eq!(m.all, h.all, "{op} (salt {salt}): backprop_all differs");
    assert_eq!(m.inputs, h.inputs, "{op} (salt {salt}): backprop_inputs differs");
    assert_eq!(m.sparse_all, h.sparse_all, "{op} (salt {salt}): sparse backprop_all differs");
    assert_eq!(m.sparse_inputs, h.sparse_inputs, "{op} (salt {salt}): sparse backprop_inputs differs");
    assert_eq!(m.from, h.from, "{op} (salt {salt}): backprop_from differs");
    assert_eq!(m.neg_zero_all, h.neg_zero_all, "{op} (salt {salt}): backprop_all with -0.0 seeds differs");
    assert_eq!(m.neg_zero_inputs, h.neg_zero_inputs, "{op} (salt {salt}): backprop_inputs with -0.0 seeds differs");
    assert_eq!(m.neg_zero_from, h.neg_zero_from, "{op} (salt {salt}): backprop_from with -0.0 seeds differs");
}

/// `%p = name(parents) : dims  support …` → (`%p`, `name`, `(parents) : dims  support …`); an input
/// line has an empty name.
fn split_line(line: &str) -> (&str, &str, &str) {
    let (pos, rest) = line.split_once(" = ").unwrap();
    match rest.find('(') {
        Some(k) if !rest.starts_with("input ") => (pos, &rest[..k], &rest[k..]),
        _ => (pos, "", rest),
    }
}

/// `describe()` listings are equal line by line; an op name may differ only on an opaque node (the
/// macro may name an opaque node after its binding), and then the rest of the line must match.
fn assert_describe_eq(op: &str, m: &str, h: &str) {
    let (ml, hl): (Vec<&str>, Vec<&str>) = (m.lines().collect(), h.lines().collect());
    assert_eq!(ml.len(), hl.len(), "{op}: describe() has another number of lines:\n{m}\n--\n{h}");
    for (a, b) in ml.iter().zip(&hl) {
        if a == b {
            continue;
        }
        let ((pa, na, ra), (pb, nb, rb)) = (split_line(a), split_line(b));
        assert_eq!((pa, ra), (pb, rb), "{op}: describe() lines differ beyond the op name:\n{a}\n{b}");
        assert!(
            ra.contains("opaque (support"),
            "{op}: op names differ on a node that is not opaque: `{na}` vs `{nb}`:\n{a}\n{b}"
        );
    }
}

const SALTS: core::ops::Range<u64> = 0..MODES;

fn c<A: TestFloat>(v: f64) -> A {
    A::from_f64(v).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Opaque closures and a user compact op
// ---------------------------------------------------------------------------------------------

/// Forward of the opaque test nodes: `a * b + a`.
fn fwd2<A: Float>(a: &RawTensor<A>, b: &RawTensor<A>) -> RawTensor<A> {
    RawTensor::from_fn(a.dims(), |i| a.data()[i] * b.data()[i] + a.data()[i])
}

/// VJP of `fwd2` plus a bump: `[g * b + 1, g * a]` — non-zero at a zero cotangent.
fn vjp2<A: Float>(a: &RawTensor<A>, b: &RawTensor<A>, g: &RawTensor<A>) -> [RawTensor<A>; 2] {
    [
        RawTensor::from_fn(a.dims(), |i| g.data()[i] * b.data()[i] + A::one()),
        RawTensor::from_fn(a.dims(), |i| g.data()[i] * a.data()[i]),
    ]
}

/// Forward of a three-read opaque node: `p - q * r`.
fn fwd3<A: Float>(p: &RawTensor<A>, q: &RawTensor<A>, r: &RawTensor<A>) -> RawTensor<A> {
    RawTensor::from_fn(p.dims(), |i| p.data()[i] - q.data()[i] * r.data()[i])
}

/// VJP of `fwd3`: `[g, 0 - g * r, 0 - g * q]`.
fn vjp3<A: Float>(_p: &RawTensor<A>, q: &RawTensor<A>, r: &RawTensor<A>, g: &RawTensor<A>) -> [RawTensor<A>; 3] {
    let z = A::zero();
    [
        g.clone(),
        RawTensor::from_fn(g.dims(), |i| z - g.data()[i] * r.data()[i]),
        RawTensor::from_fn(g.dims(), |i| z - g.data()[i] * q.data()[i]),
    ]
}

/// A sign-keeping VJP for `fwd3`: `[g * q, g * r, g * p]` (a `-0.0` cotangent gives `-0.0`s, so
/// how repeated reads are added is visible in the bits).
fn vjp3_signed<A: Float>(p: &RawTensor<A>, q: &RawTensor<A>, r: &RawTensor<A>, g: &RawTensor<A>) -> [RawTensor<A>; 3] {
    [
        RawTensor::from_fn(g.dims(), |i| g.data()[i] * q.data()[i]),
        RawTensor::from_fn(g.dims(), |i| g.data()[i] * r.data()[i]),
        RawTensor::from_fn(g.dims(), |i| g.data()[i] * p.data()[i]),
    ]
}

/// A whole-prefix VJP (`vjp_all`): at every earlier position `q`, `g[i % n] - prefix[q][i]` —
/// non-zero at positions the node does not read, and at a zero cotangent.
fn spread_all<A: Float>(prefix: &[RawTensor<A>], g: &RawTensor<A>) -> Vec<RawTensor<A>> {
    prefix.iter().map(|t| RawTensor::from_fn(t.dims(), |i| g.data()[i % g.numel()] - t.data()[i])).collect()
}

/// The dense VJP pack an opaque node that read `reads` and returned `grads` stands for, written
/// out independently of the runtime's helper: zeros elsewhere; at a position read several times,
/// the gradients added in read order, the first one as is (no `0 +`).
fn dense_pack<A: Scalar + Float>(ctx: &[RawTensor<A>], reads: &[usize], grads: Vec<RawTensor<A>>) -> Vec<RawTensor<A>> {
    let mut out: Vec<Option<RawTensor<A>>> = vec![None; ctx.len()];
    for (&p, g) in reads.iter().zip(grads) {
        out[p] = Some(match out[p].take() {
            None => g,
            Some(prev) => RawTensor::from_fn(g.dims(), |i| prev.data()[i] + g.data()[i]),
        });
    }
    out.into_iter().zip(ctx).map(|(g, t)| g.unwrap_or_else(|| RawTensor::zeros(t.dims()))).collect()
}

/// A user compact op: `a + b`, whose VJP also spreads the uniform `g[0]` over every position (a
/// non-zero uniform, which exercises the deferred updates of SEMANTICS §5).
#[derive(Clone, Debug)]
struct SpreadAdd {
    parents: [usize; 2],
}

impl FromParents for SpreadAdd {
    fn from_parents(parents: &[usize]) -> Self {
        SpreadAdd { parents: [parents[0], parents[1]] }
    }
}

impl<A: Scalar, D> CompactOp<A, D> for SpreadAdd {
    fn name(&self) -> &str {
        "spread_add"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        let [a, b] = self.parents.map(|p| prefix[p]);
        if a == b {
            Ok(a)
        } else {
            Err(format!("spread_add needs one shape, got {a} and {b}"))
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        ctx[self.parents[0]].add(&ctx[self.parents[1]]).unwrap()
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let l = c.single_cotangent(self.parents[0]);
        let r = c.single_cotangent(self.parents[1]);
        let lr = c.add(l, r);
        let u = c.fill(g.data()[0].clone());
        c.add(lr, u)
    }
}

// ---------------------------------------------------------------------------------------------
// Part 1: one macro graph per construct, and the same graph by hand
// ---------------------------------------------------------------------------------------------

graph! {
    fn m_add(a: [2, 3], b: [2, 3]) -> [2, 3] {
        let y = a + b;
        y + y
    }
}

graph! {
    fn m_sub(a: [2, 3], b: [2, 3]) -> [2, 3] {
        let y = a - b;
        let z = y - y;
        z - a
    }
}

graph! {
    fn m_mul(a: [4], b: [4]) -> [4] {
        let y = a * b;
        y * y
    }
}

graph! {
    fn m_neg(a: [4]) -> [4] {
        let y = -a;
        -(-y)
    }
}

graph! {
    fn m_scale_right(a: [4]) -> [4] {
        let y = a * 0.5;
        let z = y * -0.0;
        z * 3
    }
}

graph! {
    fn m_scale_left(a: [4]) -> [4] {
        let y = 2.0 * a;
        let z = -1.5 * y;
        (0.25 * 4.0) * z
    }
}

graph! {
    fn m_scale_fn(a: [4]) -> [4] {
        let y = scale(a, 0.75);
        let z = scale(y, -2);
        scale(z, 1e-3)
    }
}

graph! {
    fn m_matmul_fn(a: [2, 3], b: [3, 4], c: [3, 3]) -> [2, 4] {
        let y = matmul(a, b);
        let cc = matmul(c, c);
        matmul(matmul(a, cc), b) + y
    }
}

graph! {
    fn m_matmul_method(a: [2, 3], b: [3, 4], c: [3, 3]) -> [2, 4] {
        let y = a.matmul(b);
        let cc = c.matmul(c);
        a.matmul(cc).matmul(b) + y
    }
}

graph! {
    fn m_transpose_fn(a: [2, 3]) -> [2, 2] {
        let y = transpose(a);
        let z = transpose(transpose(y));
        matmul(a, z)
    }
}

graph! {
    fn m_transpose_method(a: [2, 3]) -> [2, 2] {
        let y = a.t();
        let z = y.t().t();
        a.matmul(z)
    }
}

graph! {
    fn m_sum(a: [2, 3]) -> [] {
        let s = sum(a);
        sum(s)
    }
}

graph! {
    fn m_mean(a: [2, 3]) -> [] {
        let m = mean(a);
        mean(m)
    }
}

graph! {
    fn m_relu(a: [6]) -> [6] {
        let y = relu(a);
        relu(-y)
    }
}

graph! {
    fn m_tanh(a: [6]) -> [6] {
        let y = tanh(a);
        tanh(y)
    }
}

graph! {
    fn m_exp(a: [6]) -> [6] {
        let y = exp(a);
        exp(-y)
    }
}

graph! {
    fn m_add_row(m: [3, 2], r: [2]) -> [3, 2] {
        let y = add_row(m, r);
        add_row(y, r)
    }
}

graph! {
    fn m_broadcast<B>(m: [B, 2], r: [2]) -> [B, 2] {
        let y = m + r;
        y + r
    }
}

graph! {
    fn m_opaque(a: [3], b: [3]) -> [3] {
        let y: [3] = opaque(a, b, forward = |a, b| fwd2(a, b), vjp = |a, b, g| vjp2(a, b, g));
        let z: [3] = opaque(y, y, forward = |u, v| fwd2(u, v), vjp = |u, v, g| vjp2(u, v, g));
        let w: [3] = opaque(a, z, a, forward = |p, q, r| fwd3(p, q, r), vjp = |p, q, r, g| vjp3(p, q, r, g));
        w
    }
}

graph! {
    fn m_opaque_first(a: [3], b: [3]) -> [3] {
        let y: [3] = opaque(a, b, a, forward = |p, q, r| fwd3(p, q, r), vjp = |p, q, r, g| vjp3_signed(p, q, r, g));
        y
    }
}

graph! {
    fn m_opaque_all(a: [3], b: [2]) -> [] {
        let s = sum(b);
        let y: [3] = opaque(a, forward = |a| a.clone(), vjp_all = |prefix, g| spread_all(prefix, g));
        sum(y) + s
    }
}

graph! {
    fn m_custom(a: [3], b: [3]) -> [3] {
        let y: [3] = SpreadAdd(a, b);
        let z: [3] = SpreadAdd(y, y);
        z
    }
}

#[test]
fn add_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_add::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, b) = g.input::<(U2, U3)>();
            let (g, y) = g.push(ops::add(a, b));
            let (g, o) = g.push(ops::add(y, y));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("add", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn sub_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_sub::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, b) = g.input::<(U2, U3)>();
            let (g, y) = g.push(ops::sub(a, b));
            let (g, z) = g.push(ops::sub(y, y));
            let (g, o) = g.push(ops::sub(z, a));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("sub", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn mul_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_mul::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U4,)>();
            let (g, b) = g.input::<(U4,)>();
            let (g, y) = g.push(ops::mul(a, b));
            let (g, o) = g.push(ops::mul(y, y));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("mul", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn unary_minus_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_neg::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U4,)>();
            let (g, y) = g.push(ops::neg(a));
            let (g, z) = g.push(ops::neg(y));
            let (g, o) = g.push(ops::neg(z));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("neg", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn value_times_constant_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_scale_right::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U4,)>();
            let (g, y) = g.push(ops::scale(a, c::<A>(0.5)));
            let (g, z) = g.push(ops::scale(y, c::<A>(-0.0)));
            let (g, o) = g.push(ops::scale(z, c::<A>(3.0)));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("x * c", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn constant_times_value_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_scale_left::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U4,)>();
            let (g, y) = g.push(ops::scale(a, c::<A>(2.0)));
            let (g, z) = g.push(ops::scale(y, c::<A>(-1.5)));
            let (g, o) = g.push(ops::scale(z, c::<A>(1.0)));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("c * x", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn scale_call_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_scale_fn::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U4,)>();
            let (g, y) = g.push(ops::scale(a, c::<A>(0.75)));
            let (g, z) = g.push(ops::scale(y, c::<A>(-2.0)));
            let (g, o) = g.push(ops::scale(z, c::<A>(1e-3)));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("scale(x, c)", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn matmul_both_forms_match_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, b) = g.input::<(U3, U4)>();
            let (g, cm) = g.input::<(U3, U3)>();
            let (g, y) = g.push(ops::matmul(a, b));
            let (g, cc) = g.push(ops::matmul(cm, cm));
            let (g, acc) = g.push(ops::matmul(a, cc));
            let (g, accb) = g.push(ops::matmul(acc, b));
            let (g, o) = g.push(ops::add(accb, y));
            let inputs = || Pack::new().push(adv(salt, 0)).push(adv(salt, 1)).push(adv(salt, 2));
            let h = outcome(&g, inputs(), (), o, salt);

            let (mg, mh) = m_matmul_fn::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2)), (), mh.output, salt);
            assert_same("matmul(a, b)", salt, &m, &h);
            let (mg, mh) = m_matmul_method::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1), adv(salt, 2)), (), mh.output, salt);
            assert_same("a.matmul(b)", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn transpose_both_forms_match_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, y) = g.push(ops::transpose(a));
            let (g, yt) = g.push(ops::transpose(y));
            let (g, z) = g.push(ops::transpose(yt));
            let (g, o) = g.push(ops::matmul(a, z));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);

            let (mg, mh) = m_transpose_fn::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            assert_same("transpose(x)", salt, &m, &h);
            let (mg, mh) = m_transpose_method::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            assert_same("x.t()", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn sum_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_sum::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, s) = g.push(ops::sum(a));
            let (g, o) = g.push(ops::sum(s));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("sum", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn mean_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_mean::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U2, U3)>();
            let (g, s) = g.push(ops::mean(a));
            let (g, o) = g.push(ops::mean(s));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("mean", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn relu_tanh_exp_match_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_relu::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U6,)>();
            let (g, y) = g.push(ops::relu(a));
            let (g, n) = g.push(ops::neg(y));
            let (g, o) = g.push(ops::relu(n));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("relu", salt, &m, &h);

            let (mg, mh) = m_tanh::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U6,)>();
            let (g, y) = g.push(ops::tanh(a));
            let (g, o) = g.push(ops::tanh(y));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("tanh", salt, &m, &h);

            let (mg, mh) = m_exp::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U6,)>();
            let (g, y) = g.push(ops::exp(a));
            let (g, n) = g.push(ops::neg(y));
            let (g, o) = g.push(ops::exp(n));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)), (), o, salt);
            assert_same("exp", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn add_row_both_forms_match_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let g = GraphData::<A, ()>::new();
            let (g, mm) = g.input::<(U3, U2)>();
            let (g, r) = g.input::<(U2,)>();
            let (g, y) = g.push(ops::add_row(mm, r));
            let (g, o) = g.push(ops::add_row(y, r));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);

            let (mg, mh) = m_add_row::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            assert_same("add_row(m, r)", salt, &m, &h);
            let (mg, mh) = m_broadcast::<A, U3>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            assert_same("m + r", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn opaque_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_opaque::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);

            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U3,)>();
            let (g, b) = g.input::<(U3,)>();
            let (pa, pb) = (a.index(), b.index());
            let (g, y) = g.push(ops::opaque::<A, (), (U3,)>(
                "y",
                &[&a, &b],
                move |ctx, _| fwd2(&ctx[pa], &ctx[pb]),
                move |ctx, _, g| dense_pack(ctx, &[pa, pb], vjp2(&ctx[pa], &ctx[pb], g).into()),
            ));
            let py = y.index();
            let (g, z) = g.push(ops::opaque::<A, (), (U3,)>(
                "z",
                &[&y, &y],
                move |ctx, _| fwd2(&ctx[py], &ctx[py]),
                move |ctx, _, g| dense_pack(ctx, &[py, py], vjp2(&ctx[py], &ctx[py], g).into()),
            ));
            let pz = z.index();
            let (g, o) = g.push(ops::opaque::<A, (), (U3,)>(
                "w",
                &[&a, &z, &a],
                move |ctx, _| fwd3(&ctx[pa], &ctx[pz], &ctx[pa]),
                move |ctx, _, g| dense_pack(ctx, &[pa, pz, pa], vjp3(&ctx[pa], &ctx[pz], &ctx[pa], g).into()),
            ));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("opaque", salt, &m, &h);

            // The only node reads an input twice: its pack reaches the input unchanged.
            let (mg, mh) = m_opaque_first::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U3,)>();
            let (g, b) = g.input::<(U3,)>();
            let (pa, pb) = (a.index(), b.index());
            let (g, o) = g.push(ops::opaque::<A, (), (U3,)>(
                "y",
                &[&a, &b, &a],
                move |ctx, _| fwd3(&ctx[pa], &ctx[pb], &ctx[pa]),
                move |ctx, _, g| dense_pack(ctx, &[pa, pb, pa], vjp3_signed(&ctx[pa], &ctx[pb], &ctx[pa], g).into()),
            ));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("opaque reading an input twice", salt, &m, &h);

            // `vjp_all`: the closure returns the dense VJP over the whole prefix.
            let (mg, mh) = m_opaque_all::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U3,)>();
            let (g, b) = g.input::<(U2,)>();
            let (g, s) = g.push(ops::sum(b));
            let pa = a.index();
            let (g, y) = g.push(ops::opaque::<A, (), (U3,)>(
                "y",
                &[&a],
                move |ctx, _| ctx[pa].clone(),
                move |ctx, _, g| spread_all(ctx, g),
            ));
            let (g, sy) = g.push(ops::sum(y));
            let (g, o) = g.push(ops::add(sy, s));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("opaque with vjp_all", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn user_compact_op_matches_hand_built() {
    fn check<A: TestFloat>() {
        for salt in SALTS {
            let (mg, mh) = m_custom::<A>();
            let m = outcome(&mg, mh.inputs(adv(salt, 0), adv(salt, 1)), (), mh.output, salt);
            let g = GraphData::<A, ()>::new();
            let (g, a) = g.input::<(U3,)>();
            let (g, b) = g.input::<(U3,)>();
            let op = SpreadAdd { parents: [a.index(), b.index()] };
            let (g, y) = g.push(Node::<A, (), (U3,)>::compact(op, &[&a, &b]));
            let op = SpreadAdd { parents: [y.index(), y.index()] };
            let (g, o) = g.push(Node::<A, (), (U3,)>::compact(op, &[&y, &y]));
            let h = outcome(&g, Pack::new().push(adv(salt, 0)).push(adv(salt, 1)), (), o, salt);
            assert_same("user compact op", salt, &m, &h);
        }
    }
    check::<f64>();
    check::<f32>();
}

/// A literal constant is parsed in the scalar type itself, so it is rounded once: at `f32`,
/// `x * 1.0000000596046448` scales by the `f32` literal `1.0000000596046448f32` (`1.0000001`, bits
/// `0x3f800001`), not by `1.0000000596046448f64 as f32` (`1.0`, a double rounding).
#[test]
fn literal_constants_are_rounded_once_in_the_scalar_type() {
    graph! {
        fn boundary(x: [1]) -> [1] {
            x * 1.0000000596046448
        }
    }
    let (g, h) = boundary::<f32>();
    let saved = g.compile(h.inputs(Tensor::full(1.0)), ()).unwrap();
    #[allow(clippy::excessive_precision)]
    let direct = 1.000_000_059_604_644_8_f32;
    assert_eq!(saved.value(h.output).unwrap().data()[0].to_bits(), direct.to_bits());
    assert_eq!(direct.to_bits(), 0x3f80_0001);
}

// ---------------------------------------------------------------------------------------------
// Part 2: properties of fixed macro-built graphs
// ---------------------------------------------------------------------------------------------

graph! {
    /// A two-layer perceptron with a generic batch dim.
    fn mlp<B>(x: [B, 3], w1: [3, 4], b1: [4], w2: [4, 2]) -> [] {
        let h = relu(x.matmul(w1) + b1);
        let y = h.matmul(w2);
        mean(tanh(y) * 0.5)
    }
}

graph! {
    /// Repeated parents.
    fn repeated(x: [4], w: [4]) -> [] {
        let p = x * x + x;
        let q = p * w - p;
        sum(q + q)
    }
}

graph! {
    /// An opaque node whose VJP is non-zero at a zero cotangent, and a node the output skips.
    fn bumped(x: [3], y: [3]) -> [] {
        let h = x * y;
        let o: [3] = opaque(h, x, forward = |h, x| fwd2(h, x), vjp = |h, x, g| vjp2(h, x, g));
        let side = tanh(o);
        sum(o * 2.0) + sum(x)
    }
}

graph! {
    /// Two outputs: an intermediate matrix and a scalar.
    fn two_heads(x: [2, 3], w: [3, 3]) -> ([2, 3], []) {
        let h = tanh(x.matmul(w));
        let e = exp(h - x);
        (h, mean(e * h))
    }
}

/// A cursor over proptest-drawn scalars (cycled).
struct Draw<'v, A> {
    vals: &'v [A],
    at: usize,
}

impl<A: TestFloat> Draw<'_, A> {
    fn raw(&mut self, dims: Dims) -> RawTensor<A> {
        RawTensor::from_fn(dims, |_| {
            let v = self.vals[self.at % self.vals.len()];
            self.at += 1;
            v
        })
    }
    fn tensor<S: Shape>(&mut self) -> Tensor<A, S> {
        Tensor::try_from_raw(self.raw(S::dims())).unwrap()
    }
}

fn scalar_strategy<A: TestFloat>() -> impl Strategy<Value = A> {
    prop_oneof![
        3 => prop::sample::select(A::specials()),
        1 => any::<u64>().prop_map(A::from_raw_bits),
        4 => (-3.0f64..3.0).prop_map(|v| A::from_f64(v).unwrap()),
    ]
}

fn prop_eq<'t, A: TestFloat>(
    what: &str,
    a: impl IntoIterator<Item = &'t RawTensor<A>>,
    b: impl IntoIterator<Item = &'t RawTensor<A>>,
) -> Result<(), TestCaseError> {
    let a: Vec<&RawTensor<A>> = a.into_iter().collect();
    let b: Vec<&RawTensor<A>> = b.into_iter().collect();
    let (a, b) = (all_bits(a), all_bits(b));
    prop_assert_eq!(a, b, "{}", what);
    Ok(())
}

/// Every equality of the brief on one saved macro graph: seeds drawn from `draw`, positions whose
/// bit in `mask` is clear left as buffer-free zeros in the sparse run.
fn check_passes<A: TestFloat, D: Sync + 'static, G, Ss, Br>(
    g: &GraphData<A, D, G, Ss, Br>,
    inputs: Pack<A, G>,
    data: D,
    outputs: &[usize],
    draw: &mut Draw<'_, A>,
    mask: u64,
) -> Result<(), TestCaseError> {
    let saved = g.compile(inputs, data).unwrap();
    let raw = saved.raw();
    let dims = g.raw().dims().to_vec();
    let n_in = g.raw().num_inputs();
    let seeds: Vec<RawTensor<A>> = dims.iter().map(|&d| draw.raw(d)).collect();

    let dense = raw.backprop_all_dense(seeds.clone()).unwrap();
    prop_eq("array == dense", &raw.backprop_all_array(seeds.clone()).unwrap(), &dense)?;
    prop_eq("stored == dense", &raw.backprop_all_stored(seeds.clone()).unwrap(), &dense)?;
    let inputs_dense = raw.backprop_inputs_dense(seeds.clone()).unwrap();
    prop_eq("inputs dense == inputs of all dense", &inputs_dense, &dense[..n_in])?;
    prop_eq("inputs array == inputs dense", &raw.backprop_inputs_array(seeds.clone()).unwrap(), &inputs_dense)?;
    prop_eq("inputs stored == inputs dense", &raw.backprop_inputs_stored(seeds.clone()).unwrap(), &inputs_dense)?;

    let mut sparse = RawSeeds::zeros(&dims);
    for (p, s) in seeds.iter().enumerate() {
        if mask >> (p % 64) & 1 == 1 {
            sparse.set(raw.graph().position(p).unwrap(), s.clone()).unwrap();
        }
    }
    let dense = raw.backprop_all_dense(sparse.clone()).unwrap();
    prop_eq("sparse: array == dense", &raw.backprop_all_array(sparse.clone()).unwrap(), &dense)?;
    prop_eq("sparse: stored == dense", &raw.backprop_all_stored(sparse.clone()).unwrap(), &dense)?;
    let inputs_dense = raw.backprop_inputs_dense(sparse.clone()).unwrap();
    prop_eq("sparse: inputs dense == inputs of all dense", &inputs_dense, &dense[..n_in])?;
    prop_eq("sparse: inputs array == dense", &raw.backprop_inputs_array(sparse.clone()).unwrap(), &inputs_dense)?;
    prop_eq("sparse: inputs stored == dense", &raw.backprop_inputs_stored(sparse).unwrap(), &inputs_dense)?;

    let extra = (mask >> 40) as usize % dims.len();
    for &p in outputs.iter().chain([&extra]) {
        let seed = draw.raw(dims[p]);
        prop_eq(
            &format!("backprop_from({p}) == backprop_from_dense({p})"),
            &raw.backprop_from(raw.graph().position(p).unwrap(), seed.clone()).unwrap(),
            &raw.backprop_from_dense(raw.graph().position(p).unwrap(), seed).unwrap(),
        )?;
    }
    Ok(())
}

/// The MLP at batch size `B`, through the typed handles.
fn check_mlp<A: TestFloat, B: Unsigned + 'static>(vals: &[A], mask: u64) -> Result<(), TestCaseError> {
    let (g, h) = mlp::<A, B>();
    let mut draw = Draw { vals, at: 0 };
    let inputs = h.inputs(draw.tensor(), draw.tensor(), draw.tensor(), draw.tensor());
    check_passes(&g, inputs, (), &[h.output.index()], &mut draw, mask)?;
    // The typed single-output passes through the output handle agree too.
    let saved = g.compile(h.inputs(draw.tensor(), draw.tensor(), draw.tensor(), draw.tensor()), ()).unwrap();
    let seed: Tensor<A, ()> = draw.tensor();
    prop_eq(
        "typed backprop_from",
        saved.backprop_from(h.output, seed.clone()).unwrap().iter(),
        saved.backprop_from_dense(h.output, seed).unwrap().iter(),
    )
}

fn cases() -> ProptestConfig {
    ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn prop_mlp_batch_2(vals in prop::collection::vec(scalar_strategy::<f64>(), 160), mask in any::<u64>()) {
        check_mlp::<f64, U2>(&vals, mask)?;
    }

    #[test]
    fn prop_mlp_batch_5(vals in prop::collection::vec(scalar_strategy::<f64>(), 240), mask in any::<u64>()) {
        check_mlp::<f64, U5>(&vals, mask)?;
    }

    #[test]
    fn prop_mlp_batch_2_f32(vals in prop::collection::vec(scalar_strategy::<f32>(), 160), mask in any::<u64>()) {
        check_mlp::<f32, U2>(&vals, mask)?;
    }

    #[test]
    fn prop_repeated_parents(vals in prop::collection::vec(scalar_strategy::<f64>(), 64), mask in any::<u64>()) {
        let (g, h) = repeated::<f64>();
        let mut draw = Draw { vals: &vals, at: 0 };
        let inputs = h.inputs(draw.tensor(), draw.tensor());
        check_passes(&g, inputs, (), &[h.output.index()], &mut draw, mask)?;
    }

    #[test]
    fn prop_opaque_bumped(vals in prop::collection::vec(scalar_strategy::<f64>(), 64), mask in any::<u64>()) {
        let (g, h) = bumped::<f64>();
        let mut draw = Draw { vals: &vals, at: 0 };
        let inputs = h.inputs(draw.tensor(), draw.tensor());
        check_passes(&g, inputs, (), &[h.output.index()], &mut draw, mask)?;
    }

    #[test]
    fn prop_two_outputs(vals in prop::collection::vec(scalar_strategy::<f64>(), 96), mask in any::<u64>()) {
        let (g, h) = two_heads::<f64>();
        let mut draw = Draw { vals: &vals, at: 0 };
        let inputs = h.inputs(draw.tensor(), draw.tensor());
        check_passes(&g, inputs, (), &[h.output0.index(), h.output1.index()], &mut draw, mask)?;
    }
}

/// Sanity of the fixed graphs: the MLP instantiates at two batch sizes with the expected shapes,
/// the two-output graph has handles `output0`/`output1`, and the opaque VJP really is non-zero at
/// a zero cotangent (so the all-seeds pass and a single-output pass that skips the node differ,
/// SEMANTICS §7).
#[test]
fn fixed_graphs_have_the_expected_structure() {
    let (g2, h2) = mlp::<f64, U2>();
    let (g5, h5) = mlp::<f64, U5>();
    assert_eq!(g2.raw().dims()[h2.x.index()].as_slice(), &[2, 3]);
    assert_eq!(g5.raw().dims()[h5.x.index()].as_slice(), &[5, 3]);
    assert_eq!(g2.raw().nodes().len(), g5.raw().nodes().len());

    let (g, h) = two_heads::<f64>();
    assert_eq!(g.raw().dims()[h.output0.index()].as_slice(), &[2, 3]);
    assert_eq!(g.raw().dims()[h.output1.index()].as_slice(), &[] as &[usize]);

    let (g, h) = bumped::<f64>();
    let saved = g.compile(h.inputs(Tensor::full(1.0), Tensor::full(2.0)), ()).unwrap();
    // All seeds zero: every node still runs in the all-seeds pass, and the opaque node's bump
    // reaches `x`. From `x` itself nothing is reached and `x` keeps its zero seed.
    let all = saved.raw().backprop_all_dense(saved.raw().zero_seeds()).unwrap();
    assert!(all[h.x.index()].data().iter().all(|&v| v != 0.0));
    let from = saved.backprop_from(h.x, Tensor::zeros()).unwrap();
    assert!(from.get(h.x).unwrap().data().iter().all(|&v| v == 0.0));
}

// ---------------------------------------------------------------------------------------------
// Part 3: data parameters are the graph's Δ
// ---------------------------------------------------------------------------------------------

graph! {
    /// Picks `x[label]` for every label (summed in order) and doubles it.
    fn f(x: [3]; labels: Vec<usize>) -> [] {
        let picked: [] = Pick(x);
        picked * 2.0
    }
}

/// `y = ((0 + x[l0]) + x[l1]) + …` over the labels of the data; rejects labels out of range.
#[derive(Clone, Debug)]
struct Pick {
    parents: [usize; 1],
}

impl FromParents for Pick {
    fn from_parents(parents: &[usize]) -> Self {
        Pick { parents: [parents[0]] }
    }
}

impl<A: Scalar> CompactOp<A, FData> for Pick {
    fn name(&self) -> &str {
        "pick"
    }
    fn parents(&self) -> &[usize] {
        &self.parents
    }
    fn output_dims(&self, _prefix: &[Dims]) -> Result<Dims, String> {
        Ok(Dims::scalar())
    }
    fn validate(&self, ctx: &[RawTensor<A>], data: &FData) -> Result<(), String> {
        let n = ctx[self.parents[0]].numel();
        match data.labels.iter().find(|&&l| l >= n) {
            Some(l) => Err(format!("label {l} out of range for {n} classes")),
            None => Ok(()),
        }
    }
    fn forward(&self, ctx: &[RawTensor<A>], data: &FData) -> RawTensor<A> {
        let x = ctx[self.parents[0]].data();
        let v = data.labels.iter().fold(A::zero(), |acc, &l| acc + x[l].clone());
        RawTensor::full(Dims::scalar(), v)
    }
    fn contributions(&self, saved: &SavedValues<'_, A, FData>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        let d = saved.prefix[self.parents[0]].dims();
        let mut t: RawTensor<A> = RawTensor::zeros(d);
        for &l in &saved.data.labels {
            t.data_mut()[l] = t.data()[l].clone() + g.data()[0].clone();
        }
        c.single(self.parents[0], t)
    }
}

#[test]
fn data_params_are_the_graphs_delta() {
    let (g, h) = f::<f64>();
    // The generated data struct is Δ of the generated graph's type.
    let _: &GraphData<f64, FData, _, _, _> = &g;
    let x = || Tensor::from_vec(vec![10.0, 20.0, 30.0]).unwrap();
    let saved = g.compile(h.inputs(x()), FData { labels: vec![2, 0, 2] }).unwrap();
    assert_eq!(saved.raw().data().labels, [2, 0, 2]);
    assert_eq!(saved.value(h.output).unwrap().data(), &[2.0 * (30.0 + 10.0 + 30.0)]);
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.x).unwrap().data(), &[2.0, 0.0, 4.0]);

    // Validation reads Δ: an out-of-range label is rejected by `compile`, naming node 0 (`pick`).
    let err = g.compile(h.inputs(x()), FData { labels: vec![1, 3] }).err().unwrap();
    assert_eq!(err.to_string(), "node 0 (pick) with parent shapes [[3]]: label 3 out of range for 3 classes");

    // Same graph by hand over the same Δ: bit-identical everywhere, on adversarial values.
    for salt in SALTS {
        let labels = vec![(salt % 3) as usize, 1, (salt * 7 % 3) as usize, 1];
        let m = outcome(&g, h.inputs(adv(salt, 0)), FData { labels: labels.clone() }, h.output, salt);
        let hg = GraphData::<f64, FData>::new();
        let (hg, hx) = hg.input::<(U3,)>();
        let (hg, p) = hg.push(Node::<f64, FData, ()>::compact(Pick { parents: [hx.index()] }, &[&hx]));
        let (hg, o) = hg.push(ops::scale(p, 2.0));
        let hand = outcome(&hg, Pack::new().push(adv(salt, 0)), FData { labels }, o, salt);
        assert_same("data params", salt, &m, &hand);
    }
}

// ---------------------------------------------------------------------------------------------
// Bugs found
// ---------------------------------------------------------------------------------------------

graph! {
    fn halve(x: [2]) -> [2] {
        x * 0.5
    }
}

/// A constant the scalar type cannot represent (`0.5` over `i64`) is reported by `compile` with
/// the node and op, not truncated (it once was: the constant went through `FromPrimitive::from_f64`).
#[test]
fn unrepresentable_scale_constant_is_a_compile_error_for_integer_scalars() {
    let (g, h) = halve::<i64>();
    let err = g.compile(h.inputs(Tensor::from_vec(vec![3, -4]).unwrap()), ()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "node 0 (scale) with parent shapes [[2]]: the constant `0.5` is not representable in the scalar type"
    );
    let (g, h) = halve::<f64>();
    let saved = g.compile(h.inputs(Tensor::from_vec(vec![3.0, -4.0]).unwrap()), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[1.5, -2.0]);
}
