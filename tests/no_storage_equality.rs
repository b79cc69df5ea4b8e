//! A scalar type **without storage equality** (SEMANTICS §1, §6, §7) runs the dense program in every
//! pass that may choose, and is refused by the passes that cannot run without it:
//!
//! * `backprop_all_stored` / `backprop_inputs_stored` equal `backprop_all_dense` /
//!   `backprop_inputs_dense` bit for bit;
//! * `backprop_from(output, seed)` equals `backprop_all_dense(single(output, seed))` bit for bit
//!   (every node runs, as in the all-seeds pass — not the reachability-pruned program);
//! * `backprop_all_array` / `backprop_inputs_array` return `Error::NoStorageEquality` whose message
//!   names the scalar type;
//! * `storage_eq` is never called: [`F::storage_eq`] panics.
//!
//! [`F`] wraps an `f64` and compares the inner bits, so signed zeros, NaN payloads, infinities and
//! subnormals in inputs, seeds and opaque VJPs are all checked exactly. Graphs are random (1–30
//! nodes) over add, sub, mul, neg, scale, matmul, transpose, sum, mean, `add_row`, relu and opaque
//! nodes (some with a VJP that is non-zero at a zero cotangent).
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

mod common;

use core::ops;

use common::{plans, Kind, Plan, Rng, Step};
use exactgrad::typenum::U2;
use exactgrad::{Dims, Error, GraphData, Pack, RawGraph, RawNode, RawSavedGraph, RawTensor, Seeds, Storage, Tensor};
use proptest::prelude::*;

/// An `f64` that does not claim storage equality. `PartialEq`/`PartialOrd` are the numeric ones
/// (relu needs `<`); the tests compare [`F::bits`].
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct F(f64);

impl F {
    fn bits(self) -> u64 {
        self.0.to_bits()
    }
}

impl ops::Add for F {
    type Output = F;
    fn add(self, rhs: F) -> F {
        F(self.0 + rhs.0)
    }
}
impl ops::Sub for F {
    type Output = F;
    fn sub(self, rhs: F) -> F {
        F(self.0 - rhs.0)
    }
}
impl ops::Mul for F {
    type Output = F;
    fn mul(self, rhs: F) -> F {
        F(self.0 * rhs.0)
    }
}
impl ops::Div for F {
    type Output = F;
    fn div(self, rhs: F) -> F {
        F(self.0 / rhs.0)
    }
}
impl ops::Neg for F {
    type Output = F;
    fn neg(self) -> F {
        F(-self.0)
    }
}
impl num_traits::Zero for F {
    fn zero() -> F {
        F(0.0)
    }
    fn is_zero(&self) -> bool {
        self.0 == 0.0
    }
}
impl num_traits::FromPrimitive for F {
    fn from_i64(n: i64) -> Option<F> {
        Some(F(n as f64))
    }
    fn from_u64(n: u64) -> Option<F> {
        Some(F(n as f64))
    }
}
impl Storage for F {
    const HAS_STORAGE_EQUALITY: bool = false;
    fn storage_eq(&self, _: &F) -> bool {
        panic!("storage_eq called on a scalar type that declares no storage equality")
    }
}

fn bits<'t>(pack: impl IntoIterator<Item = &'t RawTensor<F>>) -> Vec<(Dims, Vec<u64>)> {
    pack.into_iter().map(|t| (t.dims(), t.data().iter().map(|x| x.bits()).collect())).collect()
}

fn assert_bits<'t>(
    what: &str,
    a: impl IntoIterator<Item = &'t RawTensor<F>>,
    b: impl IntoIterator<Item = &'t RawTensor<F>>,
) {
    let a: Vec<&RawTensor<F>> = a.into_iter().collect();
    let b: Vec<&RawTensor<F>> = b.into_iter().collect();
    assert_eq!(a.len(), b.len(), "{what}: pack lengths differ");
    for (p, (x, y)) in bits(a).iter().zip(bits(b)).enumerate() {
        assert_eq!(*x, y, "{what}: position {p} differs");
    }
}

fn assert_no_storage_equality(r: Result<Vec<RawTensor<F>>, Error>) {
    let e = r.expect_err("array passes need storage equality");
    let name = core::any::type_name::<F>();
    assert_eq!(e, Error::NoStorageEquality { scalar: name });
    let msg = e.to_string();
    assert!(msg.contains(name) && name.ends_with('F'), "message does not name the type: {msg}");
    assert!(msg.contains("storage equality"), "{msg}");
}

/// Values with every interesting encoding.
fn special(rng: &mut Rng) -> F {
    const SPECIAL: [u64; 12] = [
        0x8000_0000_0000_0000, // -0.0
        0x0000_0000_0000_0000, // +0.0
        0x7ff8_0000_0000_0001, // NaN, payload 1
        0xfff8_0000_0000_0002, // -NaN, payload 2
        0x7ff0_0000_0000_0000, // +inf
        0xfff0_0000_0000_0000, // -inf
        0x0000_0000_0000_0001, // smallest subnormal
        0x800f_ffff_ffff_ffff, // largest negative subnormal
        0x7fef_ffff_ffff_ffff, // f64::MAX
        0x3ff0_0000_0000_0000, // 1.0
        0xc004_0000_0000_0000, // -2.5
        0x3ca0_0000_0000_0000, // 2^-53
    ];
    if rng.below(3) == 0 {
        F(f64::from_bits(SPECIAL[rng.below(SPECIAL.len() as u64) as usize]))
    } else {
        F((rng.below(2001) as f64 - 1000.0) / 256.0)
    }
}

fn pack(dims: &[Dims], rng: &mut Rng) -> Vec<RawTensor<F>> {
    dims.iter()
        .map(|&d| match rng.below(4) {
            0 => RawTensor::zeros(d),
            1 => RawTensor::full(d, F(-0.0)),
            _ => RawTensor::from_fn(d, |_| special(rng)),
        })
        .collect()
}

const KINDS: &[Kind] = &[
    Kind::Add,
    Kind::Sub,
    Kind::Mul,
    Kind::Neg,
    Kind::Scale,
    Kind::MatMul,
    Kind::Transpose,
    Kind::Sum,
    Kind::Mean,
    Kind::AddRow,
    Kind::Relu,
    Kind::Opaque,
];

/// `y = tanh(a) * b`, VJP `a: (δ * (1 - t*t)) * b`, `b: δ * t` added to a zeros pack. An odd
/// `variant` adds `0.25` (or, for `variant % 4 == 3`, a NaN with payload 3) to one position, so the
/// VJP is non-zero at a zero cotangent.
fn opaque(node: usize, a: usize, b: usize, variant: u32, dims: Dims) -> RawNode<F, ()> {
    RawNode::opaque(
        format!("tanh_mul{node}"),
        dims,
        vec![a, b],
        move |ctx: &[RawTensor<F>], (): &()| {
            let (x, y) = (ctx[a].data(), ctx[b].data());
            RawTensor::from_fn(ctx[a].dims(), |i| F(x[i].0.tanh()) * y[i])
        },
        move |ctx: &[RawTensor<F>], (): &(), g: &RawTensor<F>| {
            let mut out: Vec<RawTensor<F>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
            let (x, y, d) = (ctx[a].data(), ctx[b].data(), g.data());
            let ga = RawTensor::from_fn(g.dims(), |i| {
                let t = F(x[i].0.tanh());
                (d[i] * (F(1.0) - t * t)) * y[i]
            });
            out[a].add_assign(&ga).unwrap();
            let gb = RawTensor::from_fn(g.dims(), |i| d[i] * F(x[i].0.tanh()));
            out[b].add_assign(&gb).unwrap();
            if variant % 2 == 1 {
                let q = (variant as usize / 4) % ctx.len();
                let k = if variant % 4 == 3 { F(f64::from_bits(0x7ff8_0000_0000_0003)) } else { F(0.25) };
                out[q] = out[q].map(|&v| v + k);
            }
            out
        },
    )
}

fn build(plan: &Plan) -> RawGraph<F, ()> {
    use exactgrad::ops as o;
    let mut g = RawGraph::new(plan.inputs.clone());
    for (k, &step) in plan.steps.iter().enumerate() {
        let node = match step {
            Step::Add(a, b) => RawNode::compact(o::Add::new(a, b)),
            Step::Sub(a, b) => RawNode::compact(o::Sub::new(a, b)),
            Step::Mul(a, b) => RawNode::compact(o::Mul::new(a, b)),
            Step::Neg(a) => RawNode::compact(o::Neg::new(a)),
            Step::Scale(a, r) => {
                RawNode::compact(o::Scale::new(a, [F(-0.5), F(3.0), F(-0.0), F(1e300)][r as usize % 4]))
            }
            Step::MatMul(a, b) => RawNode::compact(o::MatMul::new(a, b)),
            Step::Transpose(a) => RawNode::compact(o::Transpose::new(a)),
            Step::Sum(a) => RawNode::compact(o::Sum::new(a)),
            Step::Mean(a) => RawNode::compact(o::Mean::new(a)),
            Step::AddRow(a, b) => RawNode::compact(o::AddRow::new(a, b)),
            Step::Relu(a) => RawNode::compact(o::Relu::new(a)),
            Step::Opaque { a, b, variant } => opaque(k, a, b, variant, plan.dims[a]),
        };
        let p = g.push(node).unwrap();
        assert_eq!(g.dims()[p.index()], plan.dims[p.index()]);
    }
    g
}

fn run_case(plan: &Plan, seed: u64) {
    let mut rng = Rng::new(seed);
    let g = build(plan);
    let saved = RawSavedGraph::compile(&g, pack(&plan.inputs, &mut rng), ()).unwrap();
    let n_in = plan.inputs.len();

    let seeds = pack(&plan.dims, &mut rng);
    let dense = saved.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(dense.len(), plan.len());
    assert_bits("all_stored", &saved.backprop_all_stored(seeds.clone()).unwrap(), &dense);
    let inputs_dense = saved.backprop_inputs_dense(seeds.clone()).unwrap();
    assert_bits("inputs_dense vs all_dense", &inputs_dense, &dense[..n_in]);
    assert_bits("inputs_stored", &saved.backprop_inputs_stored(seeds.clone()).unwrap(), &inputs_dense);
    assert_no_storage_equality(saved.backprop_all_array(seeds.clone()));
    assert_no_storage_equality(saved.backprop_inputs_array(seeds));

    for output in [plan.len() - 1, rng.below(plan.len() as u64) as usize] {
        let seed = pack(&plan.dims[output..=output], &mut rng).remove(0);
        let single: Vec<RawTensor<F>> = plan
            .dims
            .iter()
            .enumerate()
            .map(|(p, &d)| if p == output { seed.clone() } else { RawTensor::zeros(d) })
            .collect();
        let reference = saved.backprop_all_dense(single).unwrap();
        assert_bits(
            &format!("from({output})"),
            &saved.backprop_from(saved.graph().position(output).unwrap(), seed).unwrap(),
            &reference,
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_graphs_run_the_dense_program(plan in plans(KINDS, 4, 30), seed in any::<u64>()) {
        run_case(&plan, seed);
    }
}

/// The worked example of SEMANTICS §8 on this type: `y = x + x`, seed `[-0, +0]` on `x`. The
/// all-seeds dense pass adds `y`'s zero contribution and gives `[+0, +0]`; so does `backprop_from`
/// here (it *is* the dense all-seeds pass without storage equality), while the pruned reference
/// `backprop_from_dense` skips `y` and keeps `[-0, +0]`.
#[test]
fn from_runs_every_node_without_storage_equality() {
    let (g, x) = GraphData::<F, ()>::new().input::<(U2,)>();
    let (g, y) = g.push(exactgrad::ops::add(x, x));
    let saved = g.compile(Pack::new().push(Tensor::from_vec(vec![F(1.0), F(2.0)]).unwrap()), ()).unwrap();
    let seed = || Tensor::<F, (U2,)>::from_vec(vec![F(-0.0), F(0.0)]).unwrap();

    let from = saved.backprop_from(x, seed()).unwrap();
    assert_eq!(from.get(x).unwrap().data().iter().map(|v| v.bits()).collect::<Vec<_>>(), [0, 0]);
    let all = saved.backprop_all_dense(Seeds::single(&g, x, seed()).unwrap()).unwrap();
    assert_bits("typed from vs dense", from.iter(), all.iter());
    let pruned = saved.backprop_from_dense(x, seed()).unwrap();
    assert_eq!(pruned.get(x).unwrap().data()[0].bits(), (-0.0f64).to_bits());

    // The typed array passes are refused too, naming the type.
    let e = saved.backprop_all_array(Seeds::single(&g, y, Tensor::full(F(1.0))).unwrap()).err().unwrap();
    assert_eq!(e, Error::NoStorageEquality { scalar: core::any::type_name::<F>() });
    let e = saved.backprop_inputs_array(Seeds::zeros(&g)).err().unwrap();
    assert!(e.to_string().contains(core::any::type_name::<F>()), "{e}");
    let stored = saved.backprop_inputs_stored(Seeds::single(&g, y, Tensor::full(F(1.0))).unwrap()).unwrap();
    assert_eq!(stored.get(x).unwrap().data().iter().map(|v| v.bits()).collect::<Vec<_>>(), [2.0f64.to_bits(); 2]);
}
