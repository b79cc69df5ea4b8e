//! Symbolic scalars prove that the fast passes perform **the same scalar additions, with the same
//! operands, in the same order** as the dense reference passes (SEMANTICS §3, §6, §7).
//!
//! [`Sym`] records every `+`, `-`, `*` and unary `-` as an expression tree in a hash-consed arena:
//! two values are storage-equal exactly when their trees are structurally identical, and that is
//! decided in O(1) by comparing interned ids. No algebraic law holds for `Sym` (not even
//! `x + 0 == x`), so the fixed-point stop of the deferred replay never fires and every deferred
//! uniform is really applied: if a fast pass ever reassociated, reordered, dropped or duplicated an
//! addition, its tree would differ from the reference's.
//!
//! * `readable_*` tests spell out, by hand from SEMANTICS, the gradient trees of `x + x` and of a
//!   small chain, and check every pass against them;
//! * `random_graphs_*` builds random graphs (1–30 nodes) of add, sub, mul, neg, scale, matmul,
//!   transpose, sum, `add_row` and opaque nodes written with `Sym` operations (half of them with a
//!   VJP that is non-zero at a zero cotangent), with distinct symbolic leaves as inputs and seeds
//!   (and some zero leaves), and asserts that the array, stored and inputs-only passes give the
//!   same interned trees as the dense all-seeds passes, and `backprop_from` the same as
//!   `backprop_from_dense`.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod common;
mod sym;

use common::{plans, Kind, Plan, Rng, Step};
use exactgrad::{ops, Dims, RawGraph, RawNode, RawPosition, RawSavedGraph, RawTensor};
use proptest::prelude::*;
use sym::{leaves, zero, Sym};

/// Asserts two packs are the same trees (same interned ids), position by position.
fn assert_same<'t>(
    what: &str,
    fast: impl IntoIterator<Item = &'t RawTensor<Sym>>,
    reference: impl IntoIterator<Item = &'t RawTensor<Sym>>,
) {
    let fast: Vec<&RawTensor<Sym>> = fast.into_iter().collect();
    let reference: Vec<&RawTensor<Sym>> = reference.into_iter().collect();
    assert_eq!(fast.len(), reference.len(), "{what}: pack lengths differ");
    for (p, (a, b)) in fast.iter().zip(reference).enumerate() {
        assert_eq!(a.dims(), b.dims(), "{what}: dims differ at position {p}");
        for (i, (x, y)) in a.data().iter().zip(b.data()).enumerate() {
            assert!(
                x == y,
                "{what}: position {p} element {i} differs\n  fast:      {}\n  reference: {}",
                x.render(12),
                y.render(12)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Readable examples, trees written by hand from SEMANTICS.
// ---------------------------------------------------------------------------------------------

/// Every pass of a saved graph on `seeds`, checked against `expected` (all seeds) and
/// `expected_from` (single-output from `output` with `seed`).
fn check_every_pass(
    saved: &RawSavedGraph<'_, Sym, ()>,
    seeds: &[RawTensor<Sym>],
    expected: &[RawTensor<Sym>],
    output: RawPosition,
    seed: &RawTensor<Sym>,
    expected_from: &[RawTensor<Sym>],
) {
    let n_in = saved.graph().num_inputs();
    assert_same("dense", &saved.backprop_all_dense(seeds.to_vec()).unwrap(), expected);
    assert_same("array", &saved.backprop_all_array(seeds.to_vec()).unwrap(), expected);
    assert_same("stored", &saved.backprop_all_stored(seeds.to_vec()).unwrap(), expected);
    assert_same("inputs_dense", &saved.backprop_inputs_dense(seeds.to_vec()).unwrap(), &expected[..n_in]);
    assert_same("inputs_array", &saved.backprop_inputs_array(seeds.to_vec()).unwrap(), &expected[..n_in]);
    assert_same("inputs_stored", &saved.backprop_inputs_stored(seeds.to_vec()).unwrap(), &expected[..n_in]);
    assert_same("from_dense", &saved.backprop_from_dense(output, seed.clone()).unwrap(), expected_from);
    assert_same("from", &saved.backprop_from(output, seed.clone()).unwrap(), expected_from);
}

/// `y = x0 + x0` with a second, unused input `x1`. SEMANTICS §4: `add(a, b)` contributes
/// `add(single(a, δ), single(b, δ))`; at `a == b` the reader gives `δ + δ`, and the uniform
/// (what every other position receives) is `0 + 0`. §3: accumulation is `acc + contribution`.
#[test]
fn readable_x_plus_x() {
    Sym::reset();
    let d = Dims::vector(1);
    let mut g = RawGraph::<Sym, ()>::new(vec![d, d]);
    let y = g.push(RawNode::compact(ops::Add::new(0, 0))).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![leaves(d, "x0_"), leaves(d, "x1_")], ()).unwrap();
    assert_eq!(saved.values()[y.index()].data()[0].render(9), "(x0_0 + x0_0)");

    let (s0, s1, sy) = (Sym::leaf("s0"), Sym::leaf("s1"), Sym::leaf("sy"));
    let t = |s: Sym| RawTensor::full(d, s);
    let seeds = [t(s0), t(s1), t(sy)];
    // x0: seed + (g + g); x1: seed + (0 + 0); y: its seed.
    let expected = [t(s0 + (sy + sy)), t(s1 + (zero() + zero())), t(sy)];
    assert_eq!(expected[0].data()[0].render(9), "(s0 + (sy + sy))");
    assert_eq!(expected[1].data()[0].render(9), "(s1 + (0 + 0))");
    // From y: the same loop on single(y, sy), zeros elsewhere.
    let expected_from = [t(zero() + (sy + sy)), t(zero() + (zero() + zero())), t(sy)];
    check_every_pass(&saved, &seeds, &expected, y, &t(sy), &expected_from);

    // From x0 itself: y is not reached and is skipped, x0 keeps its seed untouched.
    let from_x0 = saved.backprop_from(g.position(0).unwrap(), t(s0)).unwrap();
    assert_same("from x0", &from_x0, &[t(s0), t(zero()), t(zero())]);
    assert_same(
        "from x0 (dense)",
        &saved.backprop_from_dense(g.position(0).unwrap(), t(s0)).unwrap(),
        &[t(s0), t(zero()), t(zero())],
    );
}

/// `y = x + x`, `z = y + x`. Node `z` runs first: `x` receives `0 + sz` (its single's left operand
/// is outside its support and reads the uniform `0`), `y` receives `sz + 0`. Then `y` runs with
/// `g = sy + (sz + 0)` and `x` receives `g + g` on top of what it had.
#[test]
fn readable_chain() {
    Sym::reset();
    let d = Dims::vector(1);
    let mut g = RawGraph::<Sym, ()>::new(vec![d]);
    let y = g.push(RawNode::compact(ops::Add::new(0, 0))).unwrap();
    let z = g.push(RawNode::compact(ops::Add::new(y.index(), 0))).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![leaves(d, "x")], ()).unwrap();
    assert_eq!(saved.values()[z.index()].data()[0].render(9), "((x0 + x0) + x0)");

    let (sx, sy, sz, o) = (Sym::leaf("sx"), Sym::leaf("sy"), Sym::leaf("sz"), zero());
    let t = |s: Sym| RawTensor::full(d, s);
    let gy = sy + (sz + o);
    let expected = [t((sx + (o + sz)) + (gy + gy)), t(gy), t(sz)];
    assert_eq!(expected[0].data()[0].render(9), "((sx + (0 + sz)) + ((sy + (sz + 0)) + (sy + (sz + 0))))");
    let gy0 = o + (sz + o);
    let expected_from = [t((o + (o + sz)) + (gy0 + gy0)), t(gy0), t(sz)];
    check_every_pass(&saved, &[t(sx), t(sy), t(sz)], &expected, z, &t(sz), &expected_from);
}

/// An opaque node whose VJP is non-zero at a zero cotangent: the all-seeds passes run it (and add
/// its constant) even though nothing is seeded above it; `backprop_from` from an earlier position
/// does not reach it and skips it.
#[test]
fn readable_opaque_constant_vjp() {
    Sym::reset();
    let d = Dims::vector(1);
    let mut g = RawGraph::<Sym, ()>::new(vec![d]);
    let node = RawNode::opaque(
        "k_plus",
        d,
        vec![0],
        |ctx: &[RawTensor<Sym>], (): &()| ctx[0].clone(),
        |_: &[RawTensor<Sym>], (): &(), g: &RawTensor<Sym>| vec![g.map(|&v| v + Sym::leaf("k"))],
    );
    let y = g.push(node).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![leaves(d, "x")], ()).unwrap();
    let t = |s: Sym| RawTensor::full(d, s);
    let (sx, o, k) = (Sym::leaf("sx"), zero(), Sym::leaf("k"));
    let expected = [t(sx + (o + k)), t(o)];
    let expected_from = [t(o + (o + k)), t(o)];
    check_every_pass(&saved, &[t(sx), t(o)], &expected, y, &t(o), &expected_from);
    assert_same("from x", &saved.backprop_from(g.position(0).unwrap(), t(sx)).unwrap(), &[t(sx), t(o)]);
}

// ---------------------------------------------------------------------------------------------
// Random graphs.
// ---------------------------------------------------------------------------------------------

const KINDS: &[Kind] = &[
    Kind::Add,
    Kind::Sub,
    Kind::Mul,
    Kind::Neg,
    Kind::Scale,
    Kind::MatMul,
    Kind::Transpose,
    Kind::Sum,
    Kind::AddRow,
    Kind::Opaque,
];

/// An opaque elementwise node `y = a * b + a`, with the VJP `a: δ * b + δ`, `b: δ * a` (added to
/// a zeros pack, `a` first). An odd `variant` also adds a constant leaf `k{node}` to every element
/// of one position, so the VJP is non-zero at a zero cotangent.
fn opaque(node: usize, a: usize, b: usize, variant: u32, dims: Dims) -> RawNode<Sym, ()> {
    RawNode::opaque(
        format!("opaque{node}"),
        dims,
        vec![a, b],
        move |ctx: &[RawTensor<Sym>], (): &()| {
            let (x, y) = (ctx[a].data(), ctx[b].data());
            RawTensor::from_fn(ctx[a].dims(), |i| x[i] * y[i] + x[i])
        },
        move |ctx: &[RawTensor<Sym>], (): &(), g: &RawTensor<Sym>| {
            let mut pack: Vec<RawTensor<Sym>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
            let (x, y, d) = (ctx[a].data(), ctx[b].data(), g.data());
            let ga = RawTensor::from_fn(g.dims(), |i| d[i] * y[i] + d[i]);
            pack[a] = pack[a].add(&ga).unwrap();
            let gb = RawTensor::from_fn(g.dims(), |i| d[i] * x[i]);
            pack[b] = pack[b].add(&gb).unwrap();
            if variant % 2 == 1 {
                let q = (variant as usize / 2) % ctx.len();
                let k = Sym::leaf(format!("k{node}"));
                pack[q] = pack[q].map(|&v| v + k);
            }
            pack
        },
    )
}

fn build(plan: &Plan) -> RawGraph<Sym, ()> {
    let mut g = RawGraph::new(plan.inputs.clone());
    for (k, &step) in plan.steps.iter().enumerate() {
        let node = match step {
            Step::Add(a, b) => RawNode::compact(ops::Add::new(a, b)),
            Step::Sub(a, b) => RawNode::compact(ops::Sub::new(a, b)),
            Step::Mul(a, b) => RawNode::compact(ops::Mul::new(a, b)),
            Step::Neg(a) => RawNode::compact(ops::Neg::new(a)),
            Step::Scale(a, r) => RawNode::compact(ops::Scale::new(a, Sym::leaf(format!("c{}", r % 3)))),
            Step::MatMul(a, b) => RawNode::compact(ops::MatMul::new(a, b)),
            Step::Transpose(a) => RawNode::compact(ops::Transpose::new(a)),
            Step::Sum(a) => RawNode::compact(ops::Sum::new(a)),
            Step::AddRow(a, b) => RawNode::compact(ops::AddRow::new(a, b)),
            Step::Opaque { a, b, variant } => opaque(k, a, b, variant, plan.dims[a]),
            Step::Mean(_) | Step::Relu(_) => unreachable!("not planned for Sym"),
        };
        let p = g.push(node).unwrap().index();
        assert_eq!(g.dims()[p], plan.dims[p], "planner and engine agree on shapes");
    }
    g
}

/// Distinct leaves named `{prefix}{p}_{i}`, or (one time in `zero_in`) the zero leaf.
fn symbolic_pack(plan_dims: &[Dims], prefix: &str, rng: &mut Rng, zero_in: u64) -> Vec<RawTensor<Sym>> {
    plan_dims
        .iter()
        .enumerate()
        .map(|(p, &d)| {
            let all_zero = rng.below(zero_in) == 0;
            RawTensor::from_fn(d, |i| {
                if all_zero || rng.below(8) == 0 {
                    zero()
                } else {
                    Sym::leaf(format!("{prefix}{p}_{i}"))
                }
            })
        })
        .collect()
}

fn run_case(plan: &Plan, seed: u64) {
    Sym::reset();
    let g = build(plan);
    check_graph(&g, &plan.inputs, &plan.dims, seed);
}

/// Every pass of `g` (inputs of dims `input_dims`, positions of dims `dims`) on symbolic inputs
/// and seeds drawn from `seed`, against the reference's trees.
fn check_graph(g: &RawGraph<Sym, ()>, input_dims: &[Dims], dims: &[Dims], seed: u64) {
    let mut rng = Rng::new(seed);
    let inputs = symbolic_pack(input_dims, "x", &mut rng, 6);
    let saved = RawSavedGraph::compile(g, inputs.clone(), ()).unwrap();
    let n_in = input_dims.len();

    let seeds = symbolic_pack(dims, "s", &mut rng, 3);
    // The graph-level reference (`ofGraph_*`): its trees are the dense pass's.
    let reference = g.backprop_all_ctx(&inputs, &(), seeds.clone()).unwrap();
    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(dense.len(), dims.len());
    assert_same("all_dense vs backprop_all_ctx", &dense, &reference);
    assert_same("all_array", &saved.backprop_all_array(seeds.clone()).unwrap(), &dense);
    assert_same("all_stored", &saved.backprop_all_stored(seeds.clone()).unwrap(), &dense);
    let inputs_dense = saved.backprop_inputs_dense(seeds.clone()).unwrap();
    assert_same("inputs_dense vs all_dense", &inputs_dense, &dense[..n_in]);
    assert_same("inputs_array", &saved.backprop_inputs_array(seeds.clone()).unwrap(), &inputs_dense);
    assert_same("inputs_stored", &saved.backprop_inputs_stored(seeds).unwrap(), &inputs_dense);
    assert_same("compile's values vs eval_ctx", saved.values(), &g.eval_ctx(&inputs, &()).unwrap());

    // Single-output pass from two outputs: the last node, and a random position.
    for output in [dims.len() - 1, rng.below(dims.len() as u64) as usize] {
        let seed = if rng.below(5) == 0 {
            RawTensor::zeros(dims[output])
        } else {
            leaves(dims[output], &format!("o{output}_"))
        };
        let at = saved.graph().position(output).unwrap();
        let reference = g.backprop_from_ctx(&inputs, &(), at, seed.clone()).unwrap();
        let dense = saved.backprop_from_dense(at, seed.clone()).unwrap();
        assert_same(&format!("from_dense({output}) vs backprop_from_ctx"), &dense, &reference);
        assert_same(&format!("from({output})"), &saved.backprop_from(at, seed).unwrap(), &reference);
    }
    // Keep the arena bounded: a 30-node graph makes tens of thousands of nodes, not millions.
    assert!(Sym::arena_len() < 5_000_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_graphs_fast_passes_build_the_reference_trees(plan in plans(KINDS, 4, 30), seed in any::<u64>()) {
        run_case(&plan, seed);
    }
}

/// Fixed plans that hit the interesting cases on every run, whatever proptest draws: repeated
/// parents everywhere, square `matmul(x, x)`, an opaque node with a constant VJP in the middle of
/// compact nodes (it resets the deferred history), and long runs of zero uniforms.
#[test]
fn fixed_graphs_fast_passes_build_the_reference_trees() {
    let k = |kind: Kind| KINDS.iter().position(|&x| x == kind).unwrap() as u8;
    let raw = [
        (k(Kind::Mul), 0, 0, 0),       // x0 * x0
        (k(Kind::MatMul), 1, 1, 0),    // matmul(x, x) on the square input
        (k(Kind::Opaque), 2, 4, 1),    // constant VJP
        (k(Kind::Add), 4, 0, 0),       // repeated parent
        (k(Kind::Sub), 5, 0, 0),       // x - x
        (k(Kind::AddRow), 0, 0, 0),    //
        (k(Kind::Scale), 6, 1, 0),     //
        (k(Kind::Transpose), 0, 0, 0), //
        (k(Kind::Sum), 7, 0, 0),       //
        (k(Kind::Neg), 8, 0, 0),       //
    ];
    // Inputs: [2, 3], [3], [2, 2].
    let plan = common::resolve(KINDS, &[0, 3, 2], &raw);
    assert!(plan.steps.contains(&Step::MatMul(2, 2)), "{plan:?}");
    for seed in 0..16 {
        run_case(&plan, seed);
    }
}

// ---------------------------------------------------------------------------------------------
// Convolutions and poolings (SEMANTICS §8.1).
// ---------------------------------------------------------------------------------------------

/// The input shapes of the window graphs: images `[n, c, h, w]` and sequences `[n, c, l]`, and
/// weights that fit them.
const WINDOW_SHAPES: [&[usize]; 6] =
    [&[2, 2, 3, 3], &[1, 2, 4, 3], &[3, 2, 2, 2], &[1, 2, 5], &[2, 2, 2], &[2, 2, 2, 1]];

/// A random graph of `conv1d`, `conv2d`, `max_pool2d`, `avg_pool2d` and `add` nodes over
/// [`WINDOW_SHAPES`] inputs, each node's constants drawn from `raw` (and replaced by ones that
/// fit when they do not).
fn window_graph(shapes: &[usize], raw: &[(u8, u32, u32, u8)]) -> RawGraph<Sym, ()> {
    use exactgrad::spec::rules::{self, Sliding};
    let dims: Vec<Dims> = shapes.iter().map(|&s| Dims::new(WINDOW_SHAPES[s % WINDOW_SHAPES.len()]).unwrap()).collect();
    let mut g = RawGraph::<Sym, ()>::new(dims);
    for &(kind, r1, r2, bits) in raw {
        let all = g.dims().to_vec();
        let pick = |c: &[usize], r: u32| c[r as usize % c.len()];
        let bit = |k: u8| usize::from((bits >> k) & 1);
        let node = match kind % 5 {
            0 | 1 => {
                // conv(x, w) over every pair of one rank (3 or 4) with the same channels, a
                // position with itself included.
                let pairs: Vec<usize> = (0..all.len() * all.len())
                    .filter(|&q| {
                        let (x, w) = (all[q / all.len()].as_slice(), all[q % all.len()].as_slice());
                        x.len() >= 3 && x.len() == w.len() && x[1] == w[1] && w[2..].iter().all(|&k| k > 0)
                    })
                    .collect();
                // Kind 0 prefers conv2d, kind 1 conv1d.
                let rank = if kind % 5 == 0 { 4 } else { 3 };
                let preferred: Vec<usize> =
                    pairs.iter().copied().filter(|&q| all[q / all.len()].rank() == rank).collect();
                let pairs = if preferred.is_empty() { pairs } else { preferred };
                if pairs.is_empty() {
                    continue;
                }
                let q = pick(&pairs, r1);
                let (x, w) = (q / all.len(), q % all.len());
                let (sx, sw) = (all[x].as_slice(), all[w].as_slice());
                if sx.len() == 3 {
                    let fit = |s: Sliding<1>| rules::conv("conv1d", sx, sw, &s).is_ok().then_some(s);
                    let s = Sliding { stride: [1 + bit(0)], padding: [bit(1) + bit(2)], dilation: [1 + bit(3)] };
                    let s = fit(s).or_else(|| fit(Sliding { padding: [sw[2]], ..Sliding::default() }));
                    let Some(s) = s else { continue };
                    RawNode::compact(ops::Conv1d::with_sliding(x, w, s))
                } else {
                    let fit = |s: Sliding<2>| rules::conv("conv2d", sx, sw, &s).is_ok().then_some(s);
                    let s = Sliding {
                        stride: [1 + bit(0), 1 + bit(4)],
                        padding: [bit(1) + bit(2), bit(5)],
                        dilation: [1 + bit(3), 1 + bit(6)],
                    };
                    let s = fit(s).or_else(|| fit(Sliding { padding: [sw[2], sw[3]], ..Sliding::default() }));
                    let Some(s) = s else { continue };
                    RawNode::compact(ops::Conv2d::with_sliding(x, w, s))
                }
            }
            2 | 3 => {
                let images: Vec<usize> = (0..all.len())
                    .filter(|&q| all[q].rank() == 4 && all[q].as_slice()[2..].iter().all(|&s| s > 0))
                    .collect();
                if images.is_empty() {
                    continue;
                }
                let x = pick(&images, r1);
                let kernel = [1 + bit(0) + bit(1), 1 + bit(2)];
                let (stride, padding) = ([1 + bit(3), 1 + bit(4)], [bit(5), bit(6)]);
                let fits = rules::pool("max_pool2d", all[x].as_slice(), kernel, stride, padding).is_ok();
                let (kernel, stride, padding) = if fits { (kernel, stride, padding) } else { ([1, 1], [1, 1], [0, 0]) };
                if kind % 5 == 2 {
                    RawNode::compact(ops::MaxPool2d::new(x, kernel, stride, padding))
                } else {
                    RawNode::compact(ops::AvgPool2d::new(x, kernel, stride, padding))
                }
            }
            _ => {
                let a = r1 as usize % all.len();
                let same: Vec<usize> = (0..all.len()).filter(|&q| all[q] == all[a]).collect();
                RawNode::compact(ops::Add::new(a, pick(&same, r2)))
            }
        };
        g.push(node).unwrap();
    }
    g
}

/// Runs [`check_graph`] on a window graph.
fn run_window_case(shapes: &[usize], raw: &[(u8, u32, u32, u8)], seed: u64) {
    Sym::reset();
    let g = window_graph(shapes, raw);
    let dims = g.dims().to_vec();
    check_graph(&g, &dims[..g.num_inputs()], &dims, seed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Convolutions and poolings (with repeated parents, padding, strides and dilations) build the
    /// reference's trees in every pass: the order of every addition of SEMANTICS §8.1.
    #[test]
    fn conv_and_pool_graphs_build_the_reference_trees(
        shapes in proptest::collection::vec(0..WINDOW_SHAPES.len(), 1..=3),
        raw in proptest::collection::vec(any::<(u8, u32, u32, u8)>(), 1..=6),
        seed in any::<u64>(),
    ) {
        run_window_case(&shapes, &raw, seed);
    }
}

/// A fixed window graph with every window op, padding, strides, dilations and overlapping
/// pooling windows (the constants come from the bits; ones that do not fit are replaced).
#[test]
fn fixed_window_graph_builds_the_reference_trees() {
    // Inputs [2, 2, 3, 3], [3, 2, 2, 2], [1, 2, 5].
    let raw = [
        (0, 1, 0, 0b0000_0110),
        (0, 0, 0, 0b0010_1001),
        (2, 0, 0, 0b0010_0101),
        (3, 0, 0, 0b0110_0011),
        (1, 8, 0, 0b0000_1010),
        (4, 0, 0, 0),
    ];
    Sym::reset();
    let g = window_graph(&[0, 2, 3], &raw);
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(names, ["conv2d", "conv2d", "max_pool2d", "avg_pool2d", "conv1d", "add"], "{}", g.describe());
    for seed in 0..8 {
        run_window_case(&[0, 2, 3], &raw, seed);
    }
}

// ---------------------------------------------------------------------------------------------
// Attention ops: batched matmul, embedding, masked_fill, causal_mask (SEMANTICS §8.2).
// ---------------------------------------------------------------------------------------------

/// The input shapes of the attention graphs: batches of matrices, matrices that a batch may share
/// on the right, a square batch and a table of rows.
const ATTENTION_SHAPES: [&[usize]; 6] = [&[2, 3, 2], &[2, 2, 3], &[2, 3], &[3, 3], &[2, 3, 3], &[4, 2]];

/// Token ids of the embedding nodes (row 1 three times: its gradient adds three cotangent rows in
/// ascending position order; row 3 never).
fn ids(_: &()) -> &[usize] {
    &[1, 0, 1, 2, 1, 0]
}

/// Masks of the `masked_fill` nodes, by length (a prefix of one pattern).
fn mask(len: usize) -> exactgrad::ops::MaskAccessor<()> {
    const M: [bool; 18] = [
        true, false, false, true, true, false, false, false, true, true, false, true, false, false, true, false, true,
        true,
    ];
    match len {
        1 => |_| &M[..1],
        2 => |_| &M[..2],
        3 => |_| &M[..3],
        4 => |_| &M[..4],
        6 => |_| &M[..6],
        8 => |_| &M[..8],
        9 => |_| &M[..9],
        12 => |_| &M[..12],
        _ => |_| &M[..18],
    }
}

/// A random graph of batched and shared `matmul`, `embedding` (ids as `[2, 3]` or `[6]`),
/// `masked_fill`, `causal_mask` and `add` nodes over [`ATTENTION_SHAPES`] inputs; fill values are
/// symbolic leaves.
fn attention_graph(shapes: &[usize], raw: &[(u8, u32, u32, u8)]) -> RawGraph<Sym, ()> {
    use exactgrad::spec::rules;
    let dims: Vec<Dims> =
        shapes.iter().map(|&s| Dims::new(ATTENTION_SHAPES[s % ATTENTION_SHAPES.len()]).unwrap()).collect();
    let mut g = RawGraph::<Sym, ()>::new(dims);
    for (k, &(kind, r1, r2, bits)) in raw.iter().enumerate() {
        let all = g.dims().to_vec();
        let pick = |c: &[usize], r: u32| c[r as usize % c.len()];
        let fill = || Sym::leaf(format!("v{k}"));
        let node = match kind % 5 {
            0 => {
                let pairs: Vec<usize> = (0..all.len() * all.len())
                    .filter(|&q| rules::matmul(all[q / all.len()].as_slice(), all[q % all.len()].as_slice()).is_ok())
                    .collect();
                if pairs.is_empty() {
                    continue;
                }
                let q = pick(&pairs, r1);
                RawNode::compact(ops::MatMul::new(q / all.len(), q % all.len()))
            }
            1 => {
                let tables: Vec<usize> =
                    (0..all.len()).filter(|&q| all[q].rank() == 2 && all[q].as_slice()[0] >= 3).collect();
                if tables.is_empty() {
                    continue;
                }
                let lead = if bits.is_multiple_of(2) { Dims::matrix(2, 3) } else { Dims::vector(6) };
                RawNode::compact(ops::GatherRows::with_lead(pick(&tables, r1), ids, lead))
            }
            2 => {
                let a = r1 as usize % all.len();
                let d = all[a].as_slice();
                let lens: Vec<usize> = (0..=d.len())
                    .map(|r| d[r..].iter().product::<usize>())
                    .filter(|n| [1, 2, 3, 4, 6, 8, 9, 12, 18].contains(n))
                    .collect();
                if lens.is_empty() {
                    continue;
                }
                RawNode::compact(ops::MaskedFill::new(a, mask(pick(&lens, r2)), fill()))
            }
            3 => {
                let squares: Vec<usize> =
                    (0..all.len()).filter(|&q| matches!(all[q].as_slice(), [.., r, c] if r == c)).collect();
                if squares.is_empty() {
                    continue;
                }
                RawNode::compact(ops::CausalMask::new(pick(&squares, r1), fill()))
            }
            _ => {
                let a = r1 as usize % all.len();
                let same: Vec<usize> = (0..all.len()).filter(|&q| all[q] == all[a]).collect();
                RawNode::compact(ops::Add::new(a, pick(&same, r2)))
            }
        };
        g.push(node).unwrap();
    }
    g
}

fn run_attention_case(shapes: &[usize], raw: &[(u8, u32, u32, u8)], seed: u64) {
    Sym::reset();
    let g = attention_graph(shapes, raw);
    let dims = g.dims().to_vec();
    check_graph(&g, &dims[..g.num_inputs()], &dims, seed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Batched matmuls (a shared right matrix's gradient summed over every row of every item),
    /// embeddings with repeated ids, masks and causal masks build the reference's trees in every
    /// pass: the order of every addition of SEMANTICS §8.2.
    #[test]
    fn attention_graphs_build_the_reference_trees(
        shapes in proptest::collection::vec(0..ATTENTION_SHAPES.len(), 1..=3),
        raw in proptest::collection::vec(any::<(u8, u32, u32, u8)>(), 1..=8),
        seed in any::<u64>(),
    ) {
        run_attention_case(&shapes, &raw, seed);
    }
}

/// A fixed attention graph with every op: a shared-matrix product, a batched product, both
/// embeddings, a mask and a causal mask.
#[test]
fn fixed_attention_graph_builds_the_reference_trees() {
    // Inputs [2, 3, 2], [2, 3], [4, 2], [2, 2, 3].
    let shapes = [0, 2, 5, 1];
    let raw = [(0, 1, 0, 0), (0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 0, 1), (2, 4, 0, 0), (3, 5, 0, 0), (4, 0, 0, 0)];
    Sym::reset();
    let g = attention_graph(&shapes, &raw);
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(
        names,
        ["matmul", "matmul", "gather_rows", "gather_rows", "masked_fill", "causal_mask", "add"],
        "{}",
        g.describe()
    );
    for seed in 0..8 {
        run_attention_case(&shapes, &raw, seed);
    }
}

// ---------------------------------------------------------------------------------------------
// Concatenation of many parts, slices and dropout (SEMANTICS §8.3).
// ---------------------------------------------------------------------------------------------

fn dropout_seed(_: &()) -> u64 {
    0xC0FF_EE00
}

/// A graph of `concat` nodes of one to five parts (repeats included), slices (a `split`), dropouts
/// and additions over the inputs `[2, 3]`, `[2, 1]`, `[1, 3]`, from the choices `raw`.
fn structure_graph(raw: &[(u8, u32, u32, u8)]) -> RawGraph<Sym, ()> {
    let dims = [[2, 3], [2, 1], [1, 3]].map(|d| Dims::new(&d).unwrap()).to_vec();
    let mut g = RawGraph::<Sym, ()>::new(dims);
    for &(kind, r1, r2, bits) in raw {
        let all = g.dims().to_vec();
        let a = r1 as usize % all.len();
        let sa = all[a].as_slice().to_vec();
        let node = match kind % 4 {
            0 if !sa.is_empty() => {
                let axis = usize::from(bits) % sa.len();
                let fits: Vec<usize> = (0..all.len())
                    .filter(|&q| {
                        let sq = all[q].as_slice();
                        sq.len() == sa.len() && (0..sa.len()).all(|k| k == axis || sa[k] == sq[k])
                    })
                    .collect();
                let count = 1 + (usize::from(bits) / 4) % 5;
                let parts = (0..count).map(|k| if k == 0 { a } else { fits[(r2 as usize + k) % fits.len()] }).collect();
                RawNode::compact(ops::Concat::parts(parts, axis))
            }
            1 if sa.iter().any(|&n| n > 1) => {
                let axis = sa.iter().position(|&n| n > 1).unwrap_or(0);
                let start = r2 as usize % sa[axis];
                RawNode::compact(ops::Slice::new(a, axis, start, sa[axis] - start))
            }
            2 => RawNode::compact(ops::Dropout::new(a, [0.0, 0.5, 0.75][usize::from(bits) % 3], dropout_seed)),
            _ => {
                let same: Vec<usize> = (0..all.len()).filter(|&q| all[q] == all[a]).collect();
                RawNode::compact(ops::Add::new(a, same[r2 as usize % same.len()]))
            }
        };
        g.push(node).unwrap();
    }
    g
}

fn run_structure_case(raw: &[(u8, u32, u32, u8)], seed: u64) {
    Sym::reset();
    let g = structure_graph(raw);
    let dims = g.dims().to_vec();
    check_graph(&g, &dims[..g.num_inputs()], &dims, seed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Concats of many parts (a part repeated: its slices added left to right), slices and
    /// dropouts build the reference's trees in every pass.
    #[test]
    fn concat_slice_dropout_graphs_build_the_reference_trees(
        raw in proptest::collection::vec(any::<(u8, u32, u32, u8)>(), 1..=8),
        seed in any::<u64>(),
    ) {
        run_structure_case(&raw, seed);
    }
}

/// `concat([x0, x1, x0, x1], 1)` then a dropout and a slice: `x0` and `x1` read two slices of the
/// cotangent each, added in part order.
#[test]
fn fixed_concat_graph_builds_the_reference_trees() {
    let raw = [(0, 0, 2, 0b0000_1101), (2, 3, 0, 1), (1, 4, 1, 0), (3, 3, 0, 0)];
    Sym::reset();
    let g = structure_graph(&raw);
    assert_eq!(g.nodes()[0].parents().len(), 4, "{}", g.describe());
    for seed in 0..8 {
        run_structure_case(&raw, seed);
    }
}
