//! No panic on user input (issue 11, item 2): every shape, closure, op, constant and argument a
//! user passes either works or comes back as a typed [`Error`] naming what is wrong — never a
//! panic, never a silently wrong answer — and the graph stays usable afterwards.
//!
//! A panic inside a user closure or op is caught at the node and converted; the panic hook still
//! prints it (nothing is suppressed), so these tests print a few "panicked at" lines on purpose.
#![allow(clippy::unwrap_used)] // test helpers unwrap: a failure is a test failure

use core::num::Wrapping;

use exactgrad::num_traits::Float;
use exactgrad::typenum::{U2, U4294967296};
use exactgrad::{
    graph, ops, CompactOp, Contrib, Contributions, Dims, Error, FromParents, GraphData, Init, Nil, Node, Pack,
    Position, RawGraph, RawNode, RawSavedGraph, RawTensor, SavedValues, Scalar, Seeds, Snoc, Tensor,
};

const BIG: usize = 1 << (usize::BITS - 1); // 2^63 on a 64-bit target

fn v(x: &[f64]) -> Tensor<f64, (U2,)> {
    Tensor::from_vec(x.to_vec()).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Shapes whose element count overflows `usize`.

#[test]
fn tensor_constructors_refuse_shapes_whose_count_overflows() {
    for dims in [Dims::matrix(BIG, 2), Dims::matrix(usize::MAX, usize::MAX)] {
        let e = RawTensor::<f64>::from_vec(dims, vec![]).unwrap_err();
        assert_eq!(e, Error::ShapeOverflow { what: "a tensor".into(), dims });
        assert!(e.to_string().ends_with("whose element count overflows usize"), "{e}");
        assert!(RawTensor::<f64>::try_zeros(dims).is_err());
        assert!(RawTensor::try_full(dims, 1.0f32).is_err());
        assert!(RawTensor::try_from_fn(dims, |i| i).is_err());
    }
    let big = Dims::matrix(4294967296, 4294967296);
    assert_eq!(
        Tensor::<f64, (U4294967296, U4294967296)>::from_vec(vec![]).err(),
        Some(Error::ShapeOverflow { what: "a tensor".into(), dims: big })
    );
    assert!(Tensor::<f64, (U4294967296, U4294967296)>::try_zeros().is_err());
    // Zero elements are fine, however large the other dims.
    assert!(RawTensor::<f64>::from_vec(Dims::new(&[BIG, 0, BIG]).unwrap(), vec![]).is_ok());
}

#[test]
fn reshape_and_concat_to_shapes_whose_count_overflows_are_refused_at_push() {
    // reshape: a 0-element tensor once passed for [2^63, 2], whose count wraps to 0.
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(0)]);
    let e = g.push(RawNode::compact(ops::Reshape::new(0, Dims::matrix(BIG, 2)))).unwrap_err();
    let Error::Node { node: 0, op, message, .. } = e else { panic!("a node error, got {e}") };
    assert_eq!(op, "reshape");
    assert!(message.contains("[9223372036854775808, 2]") && message.contains("overflows"), "{message}");
    // concat: each axis fits, the result's count does not.
    let half = Dims::matrix(BIG / 2, 2);
    let mut g = RawGraph::<f64, ()>::new(vec![half, half]);
    let e = g.push(RawNode::compact(ops::Concat::new(0, 1, 0))).unwrap_err();
    let Error::Node { op, message, parent_shapes, .. } = e else { panic!("a node error, got {e}") };
    assert_eq!((op.as_str(), parent_shapes), ("concat", vec![half, half]));
    assert_eq!(message, "its shape [9223372036854775808, 2] has more elements than fit in usize");
    assert_eq!(g.nodes().len(), 0, "the graph is unchanged");
    // An opaque node declared with such a shape.
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(1)]);
    let node = RawNode::opaque("wide", Dims::matrix(usize::MAX, 3), vec![0], |c, _| c[0].clone(), |c, _, _| c.to_vec());
    assert!(matches!(g.push(node), Err(Error::Node { op, .. }) if op == "wide"));
}

#[test]
fn a_typed_node_whose_count_overflows_is_a_compile_error() {
    let (g, x) = GraphData::<f64, ()>::new().input::<(U2,)>();
    let (g, _) = g.push(ops::opaque::<f64, (), (U4294967296, U4294967296)>(
        "huge",
        &[&x],
        |c, _| c[0].clone(),
        |c, _, _| c.to_vec(),
    ));
    let e = g.compile(Pack::new().push(v(&[1.0, 2.0])), ()).err().unwrap();
    assert_eq!(
        e.to_string(),
        "node 0 (huge) with parent shapes [[2]]: its shape [4294967296, 4294967296] has more elements than fit in usize"
    );
}

graph! {
    fn huge_input(x: [4294967296, 4294967296], y: [2]) -> [] {
        sum(y * y)
    }
}

#[test]
fn a_graph_input_whose_count_overflows_does_not_panic() {
    let (g, _) = huge_input::<f64>();
    assert!(g.describe().contains("%0 = input [4294967296, 4294967296]"));
    // Building the program once took `zeros` of the input's shape.
    let prog = HugeInput::program::<f64>();
    assert_eq!(prog.planned_bytes(), usize::MAX);
}

// ---------------------------------------------------------------------------------------------
// User code that panics or returns the wrong shape.

/// A user compact op `y = x` that misbehaves on cue: its forward panics on a negative first
/// element and returns a wrong shape on 99; its VJP panics on a negative cotangent and
/// contributes a wrong shape on 99.
#[derive(Clone)]
struct Flaky([usize; 1]);

impl FromParents for Flaky {
    fn from_parents(p: &[usize]) -> Self {
        Flaky([p[0]])
    }
}

/// The first element, as an `f64` (the cue).
fn first<A: Float>(t: &RawTensor<A>) -> f64 {
    t.data()[0].to_f64().unwrap_or(0.0)
}

impl<A: Scalar + Float, D> CompactOp<A, D> for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn parents(&self) -> &[usize] {
        &self.0
    }
    fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
        prefix.get(self.0[0]).copied().ok_or_else(|| "no parent".to_owned())
    }
    fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> {
        let x = &ctx[self.0[0]];
        match first(x) {
            v if v < 0.0 => panic!("negative input {v}"),
            99.0 => RawTensor::zeros(Dims::vector(5)),
            _ => x.clone(),
        }
    }
    fn contributions(&self, _: &SavedValues<'_, A, D>, g: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
        match first(g) {
            v if v < 0.0 => panic!("negative cotangent {v}"),
            99.0 => c.single(self.0[0], RawTensor::zeros(Dims::vector(7))),
            _ => c.single_cotangent(self.0[0]),
        }
    }
}

/// `x -> op(x) -> sum`, with the op a [`Flaky`] or an opaque node misbehaving the same way.
type FlakyGraph = GraphData<f64, (), Snoc<Nil, (U2,)>, Snoc<Snoc<Nil, (U2,)>, ()>>;

fn flaky_graph(opaque: bool) -> (FlakyGraph, Position<(U2,)>, Position<(U2,)>) {
    let (g, x) = GraphData::<f64, ()>::new().input::<(U2,)>();
    let node: Node<f64, (), (U2,)> = if opaque {
        ops::opaque(
            "flaky",
            &[&x],
            |c, d| CompactOp::<f64, ()>::forward(&Flaky([0]), c, d),
            |c, _, g| match g.data()[0] {
                v if v < 0.0 => panic!("negative cotangent {v}"),
                99.0 => vec![RawTensor::zeros(Dims::vector(7)); c.len()],
                98.0 => Vec::new(),
                _ => vec![g.clone()],
            },
        )
    } else {
        Node::compact(Flaky([x.index()]), &[&x])
    };
    let (g, y) = g.push(node);
    let (g, _s) = g.push(ops::sum(y));
    (g, x, y)
}

#[test]
fn a_panicking_or_misshapen_forward_is_a_compile_error_and_the_graph_stays_usable() {
    for opaque in [false, true] {
        let (g, x, y) = flaky_graph(opaque);
        let e = g.compile(Pack::new().push(v(&[-1.0, 2.0])), ()).err().unwrap();
        assert_eq!(e.to_string(), "node 0 (flaky) with parent shapes [[2]]: the forward panicked: negative input -1");
        let e = g.compile(Pack::new().push(v(&[99.0, 2.0])), ()).err().unwrap();
        assert!(
            matches!(&e, Error::Node { node: 0, op, message, .. } if op == "flaky" && message.contains("[5]")),
            "{e}"
        );
        // The same graph, a well-behaved input.
        let saved = g.compile(Pack::new().push(v(&[3.0, 4.0])), ()).unwrap();
        assert_eq!(saved.value(y).unwrap().data(), &[3.0, 4.0]);
        let grads = saved.backprop_from(y, v(&[1.0, 5.0])).unwrap();
        assert_eq!(grads.get(x).unwrap().data(), &[1.0, 5.0]);
    }
}

#[test]
fn a_panicking_or_misshapen_vjp_is_an_error_from_every_pass() {
    for opaque in [false, true] {
        let (g, x, y) = flaky_graph(opaque);
        let saved = g.compile(Pack::new().push(v(&[3.0, 4.0])), ()).unwrap();
        let mut cases = vec![(-2.0, "the VJP panicked: negative cotangent -2"), (99.0, "[7]")];
        if opaque {
            cases.push((98.0, "returned 0 tensors for a prefix of 1"));
        }
        for (seed, what) in cases {
            let seeds = || Seeds::single(&g, y, v(&[seed, 0.0])).unwrap();
            let results = [
                saved.backprop_all_dense(seeds()).err(),
                saved.backprop_all_array(seeds()).err(),
                saved.backprop_all_stored(seeds()).err(),
                saved.backprop_inputs_dense(seeds()).err(),
                saved.backprop_inputs_array(seeds()).err(),
                saved.backprop_inputs_stored(seeds()).err(),
                saved.backprop_from(y, v(&[seed, 0.0])).err(),
                saved.backprop_from_dense(y, v(&[seed, 0.0])).err(),
            ];
            for e in results {
                let e = e.expect("an error");
                assert!(
                    matches!(&e, Error::Vjp { node: 0, op, message } if op == "flaky" && message.contains(what)),
                    "opaque {opaque}: {e}"
                );
            }
        }
        // Still usable: a well-behaved seed on the same saved graph.
        assert_eq!(saved.backprop_from(y, v(&[1.0, 2.0])).unwrap().get(x).unwrap().data(), &[1.0, 2.0]);
        let all = saved.backprop_inputs_stored(Seeds::single(&g, y, v(&[1.0, 2.0])).unwrap()).unwrap();
        assert_eq!(all.get(x).unwrap().data(), &[1.0, 2.0]);
    }
}

#[test]
fn a_vjp_returning_a_foreign_handle_is_an_error() {
    struct Foreign([usize; 1]);
    impl CompactOp<f64, ()> for Foreign {
        fn name(&self) -> &str {
            "foreign"
        }
        fn parents(&self) -> &[usize] {
            &self.0
        }
        fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
            Ok(prefix[self.0[0]])
        }
        fn forward(&self, ctx: &[RawTensor<f64>], _: &()) -> RawTensor<f64> {
            ctx[self.0[0]].clone()
        }
        fn contributions(
            &self,
            _: &SavedValues<'_, f64, ()>,
            _: &RawTensor<f64>,
            _: &mut Contributions<f64>,
        ) -> Contrib {
            let mut other = Contributions::<f64>::new();
            (0..5).map(|_| other.zero()).last().unwrap()
        }
    }
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    let y = g.push(RawNode::compact(Foreign([0]))).unwrap();
    let saved = RawSavedGraph::compile(&g, vec![RawTensor::zeros(Dims::vector(2))], ()).unwrap();
    for e in [
        saved.backprop_from(y, RawTensor::zeros(Dims::vector(2))).err(),
        saved.backprop_from_dense(y, RawTensor::zeros(Dims::vector(2))).err(),
    ] {
        assert!(matches!(e, Some(Error::Vjp { ref op, .. }) if op == "foreign"), "{e:?}");
    }
}

graph! {
    fn with_flaky<T: exactgrad::num_traits::Float>(x: [2]) -> [] {
        let y: [2] = Flaky(x);
        sum(y * y)
    }
}

graph! {
    fn with_flaky_closure<T: exactgrad::num_traits::Float>(x: [2]) -> [] {
        let y: [2] = opaque(x, forward = |x| {
            assert!(x.data()[0] >= <T as exactgrad::num_traits::Zero>::zero(), "negative input");
            x.clone()
        }, vjp = |_x, g| {
            assert!(g.data()[0] >= <T as exactgrad::num_traits::Zero>::zero(), "negative cotangent");
            [g.clone()]
        });
        sum(y * x)
    }
}

#[test]
fn generated_programs_turn_panics_into_errors_and_stay_usable() {
    let (_, h) = with_flaky::<f64>();
    let mut prog = WithFlaky::program::<f64>();
    let one = Tensor::full(1.0);
    let mut bad = h.inputs(v(&[-1.0, 2.0]));
    let e = prog.gradients(&mut bad, &(), &one).err().unwrap();
    assert!(
        matches!(&e, Error::Node { op, message, .. } if op == "flaky" && message.contains("negative input")),
        "{e}"
    );
    assert_eq!(bad.as_slice()[0].data(), &[-1.0, 2.0], "the inputs come back");
    // The cotangent of the user op is `2 y δ`: negative for a negative seed, and its VJP panics.
    let mut good = h.inputs(v(&[1.0, 2.0]));
    let e = prog.gradients_from(h.output, &mut good, &(), &Tensor::full(-1.0)).err().unwrap();
    assert!(matches!(&e, Error::Vjp { op, .. } if op == "flaky"), "{e}");
    let e = prog.gradients(&mut good, &(), &Tensor::full(-1.0)).err().unwrap();
    assert!(matches!(&e, Error::Vjp { op, .. } if op == "flaky"), "{e}");
    assert_eq!(prog.gradients(&mut good, &(), &one).unwrap().as_slice()[0].data(), &[2.0, 4.0]);
    assert_eq!(prog.gradients_from(h.output, &mut good, &(), &one).unwrap().as_slice()[0].data(), &[2.0, 4.0]);

    let (_, h) = with_flaky_closure::<f64>();
    let mut prog = WithFlakyClosure::program::<f64>();
    let e = prog.gradients(&mut h.inputs(v(&[-1.0, 2.0])), &(), &one).err().unwrap();
    assert!(matches!(&e, Error::Node { message, .. } if message == "the forward panicked: negative input"), "{e}");
    let e = prog.gradients(&mut h.inputs(v(&[1.0, 2.0])), &(), &Tensor::full(-1.0)).err().unwrap();
    assert!(matches!(&e, Error::Vjp { message, .. } if message == "the VJP panicked: negative cotangent"), "{e}");
    let mut good = h.inputs(v(&[1.0, 2.0]));
    assert_eq!(prog.gradients(&mut good, &(), &one).unwrap().as_slice()[0].data(), &[2.0, 4.0]);
    assert_eq!(prog.gradients_from(h.output, &mut good, &(), &one).unwrap().as_slice()[0].data(), &[2.0, 4.0]);
}

// ---------------------------------------------------------------------------------------------
// Constants, integer division, initialisation, tensor arithmetic.

graph! {
    fn times_big(x: [2]) -> [2] {
        x * 1e39
    }
}

#[test]
fn a_constant_not_finite_in_the_scalar_type_is_a_compile_error() {
    let (g, h) = times_big::<f32>();
    let e = g.compile(h.inputs(Tensor::full(1.0)), ()).err().unwrap();
    assert_eq!(
        e.to_string(),
        "node 0 (scale) with parent shapes [[2]]: the constant `1e39` is not representable in the scalar type"
    );
    let mut prog = TimesBig::program::<f32>();
    assert!(prog.gradients(&mut h.inputs(Tensor::full(1.0)), &(), &Tensor::full(1.0)).is_err());
    // 1e39 is finite in f64.
    let (g, h) = times_big::<f64>();
    let saved = g.compile(h.inputs(Tensor::full(1.0)), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[1e39, 1e39]);
}

graph! {
    fn ratio(x: [2], y: [2]) -> [2] {
        div(x, y)
    }
}

#[test]
fn an_integer_division_by_zero_is_an_error_naming_the_node() {
    type W = Wrapping<i64>;
    let t = |a: i64, b: i64| Tensor::<W, (U2,)>::from_vec(vec![Wrapping(a), Wrapping(b)]).unwrap();
    let (g, h) = ratio::<W>();
    let e = g.compile(h.inputs(t(6, 1), t(3, 0)), ()).err().unwrap();
    assert!(
        matches!(&e, Error::Node { node: 0, op, message, .. } if op == "div" && message.contains("element 1")),
        "{e}"
    );
    let mut prog = Ratio::program::<W>();
    let e = prog.gradients(&mut h.inputs(t(6, 1), t(3, 0)), &(), &t(1, 1)).err().unwrap();
    assert!(matches!(&e, Error::Node { op, .. } if op == "div"), "{e}");
    // Usable afterwards; `Wrapping` wraps `MIN / -1`.
    let saved = g.compile(h.inputs(t(6, i64::MIN), t(3, -1)), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[Wrapping(2), Wrapping(i64::MIN)]);
    let got = prog.gradients(&mut h.inputs(t(6, 1), t(3, 1)), &(), &t(1, 1)).unwrap();
    assert_eq!(got.as_slice()[0].data(), &[Wrapping(0), Wrapping(1)]);
}

graph! {
    fn weighted(x: [2], w: [2]) -> [] {
        sum(x * w)
    }
}

/// The VJP of a built-in op in a generated program is guarded as in the runtime passes: with
/// overflow checks on (debug builds), `i64::MAX * 3` in `mul`'s VJP is an `Error::Vjp` from both,
/// not a panic; without them (release) both wrap, identically.
#[test]
fn an_overflowing_integer_vjp_in_a_generated_program_is_an_error_as_in_the_runtime() {
    let t = |a: i64, b: i64| Tensor::<i64, (U2,)>::from_vec(vec![a, b]).unwrap();
    let (g, h) = weighted::<i64>();
    let mut prog = Weighted::program::<i64>();
    let big = Tensor::full(i64::MAX);
    let saved = g.compile(h.inputs(t(2, 1), t(3, 1)), ()).unwrap();
    let results = [
        saved.backprop_from(h.output, big.clone()).err(),
        prog.gradients(&mut h.inputs(t(2, 1), t(3, 1)), &(), &big).err(),
        prog.gradients_from(h.output, &mut h.inputs(t(2, 1), t(3, 1)), &(), &big).err(),
    ];
    for e in results {
        if cfg!(debug_assertions) {
            assert!(
                matches!(&e, Some(Error::Vjp { node: 0, op, message }) if op == "mul" && message.contains("overflow")),
                "{e:?}"
            );
        } else {
            assert_eq!(e, None);
        }
    }
    // Usable afterwards.
    let got = prog.gradients(&mut h.inputs(t(2, 1), t(3, 1)), &(), &Tensor::full(1)).unwrap();
    assert_eq!(got.as_slice()[0].data(), &[3, 1]);
}

#[test]
fn init_bounds_whose_samples_overflow_are_errors() {
    let mut init = Init::seeded(0);
    assert_eq!(init.uniform::<f64, (U2,)>(-f64::MAX, f64::MAX).unwrap_err().name, "hi");
    assert_eq!(init.uniform::<f64, (U2,)>(-1e308, 1e308).unwrap_err().name, "hi");
    assert_eq!(init.normal::<f64, (U2,)>(0.0, 1e308).unwrap_err().name, "std");
    assert_eq!(init.normal::<f64, (U2,)>(f64::MAX, 1.0e300).unwrap_err().name, "std");
    assert_eq!(init.normal::<f32, (U2,)>(0.0, 1.0e38).unwrap_err().name, "std");
    // Large but safe bounds still draw finite samples.
    let t: Tensor<f64, (U2,)> = init.uniform(-1e307, 1e307).unwrap();
    assert!(t.data().iter().all(|x| x.is_finite()));
}

#[test]
fn adding_tensors_of_different_shapes_is_an_error() {
    let (a, b) = (RawTensor::<f64>::zeros(Dims::vector(3)), RawTensor::zeros(Dims::vector(2)));
    let e = Error::ShapeMismatch { expected: Dims::vector(3), actual: Dims::vector(2) };
    assert_eq!(a.add(&b).err(), Some(e.clone()));
    let mut a = a;
    assert_eq!(a.add_assign(&b).err(), Some(e));
}

// ---------------------------------------------------------------------------------------------
// Raw positions of another graph.

/// Two raw graphs of the same shapes: `x: [2]`, `sum(x * x)`. Before `RawPosition`, a bare index
/// of graph A was in range for graph B and B's gradients came back as if nothing were wrong.
fn twin() -> (RawGraph<f64, ()>, exactgrad::RawPosition) {
    let mut g = RawGraph::<f64, ()>::new(vec![Dims::vector(2)]);
    let sq = g.push(RawNode::compact(ops::Mul::new(0, 0))).unwrap();
    let s = g.push(RawNode::compact(ops::Sum::new(sq.index()))).unwrap();
    (g, s)
}

#[test]
fn a_raw_position_of_another_graph_of_the_same_shape_is_refused() {
    let (a, sum_a) = twin();
    let (b, sum_b) = twin();
    assert_eq!((sum_a.index(), sum_b.index()), (2, 2));
    assert_ne!(sum_a, sum_b);
    let x = || vec![RawTensor::from_vec(Dims::vector(2), vec![3.0, 4.0]).unwrap()];
    let saved_b = RawSavedGraph::compile(&b, x(), ()).unwrap();
    let one = || RawTensor::full(Dims::scalar(), 1.0);
    let foreign = |index| Some(Error::ForeignPosition { index, len: 3 });

    // The single-output entry points.
    assert_eq!(saved_b.backprop_from(sum_a, one()).err(), foreign(2));
    assert_eq!(saved_b.backprop_from_dense(sum_a, one()).err(), foreign(2));
    assert_eq!(saved_b.reached_from(sum_a).err(), foreign(2));
    let input_a = a.position(0).unwrap();
    assert_eq!(saved_b.reached_from(input_a).err(), foreign(0));
    assert_eq!(b.position(3).err(), Some(Error::ForeignPosition { index: 3, len: 3 }));

    // Seeds: B's pack refuses A's position; a pack tied to A by a `set` is refused by B's passes.
    let mut seeds_b = saved_b.zero_seeds();
    assert_eq!(seeds_b.set(sum_a, one()).err(), foreign(2));
    let mut seeds_a = exactgrad::RawSeeds::zeros(a.dims());
    seeds_a.set(sum_a, one()).unwrap();
    assert!(seeds_a.set(sum_b, one()).is_err(), "a pack belongs to one graph");
    for e in [
        saved_b.backprop_all_dense(seeds_a.clone()).err(),
        saved_b.backprop_all_array(seeds_a.clone()).err(),
        saved_b.backprop_all_stored(seeds_a.clone()).err(),
        saved_b.backprop_inputs_dense(seeds_a.clone()).err(),
        saved_b.backprop_inputs_array(seeds_a.clone()).err(),
        saved_b.backprop_inputs_stored(seeds_a.clone()).err(),
    ] {
        assert!(matches!(e, Some(Error::ForeignPosition { .. })), "{e:?}");
    }

    // The same calls with B's own handles work, and A's handles work on A.
    seeds_b.set(sum_b, one()).unwrap();
    let from_b = saved_b.backprop_from(sum_b, one()).unwrap();
    assert_eq!(from_b[0].data(), &[6.0, 8.0]);
    assert_eq!(saved_b.backprop_all_array(seeds_b).unwrap()[0].data(), &[6.0, 8.0]);
    let saved_a = RawSavedGraph::compile(&a, x(), ()).unwrap();
    assert_eq!(saved_a.backprop_all_dense(seeds_a).unwrap()[0].data(), &[6.0, 8.0]);
    assert_eq!(saved_a.reached_from(input_a).unwrap(), [true, false, false]);

    // A typed handle converted to a raw one keeps its graph.
    let (g, tx) = GraphData::<f64, ()>::new().input::<(U2,)>();
    let (g, _) = g.push(ops::sum(tx));
    let typed_saved = g.compile(Pack::new().push(v(&[1.0, 2.0])), ()).unwrap();
    assert_eq!(typed_saved.raw().reached_from(tx.into()).unwrap(), [true, false]);
    assert_eq!(saved_b.reached_from(tx.into()).err(), foreign(0));
}

// ---------------------------------------------------------------------------------------------
// Contribution handles of another arena or made before the last clear.

#[test]
fn a_stale_contribution_handle_is_an_error_from_read_and_dense() {
    let mut c = Contributions::<f64>::new();
    let g = RawTensor::full(Dims::vector(2), 1.0);
    let s = c.single(0, RawTensor::full(Dims::vector(2), 2.0));
    assert_eq!(c.read(s, 0, &g).unwrap().data(), &[2.0, 2.0]);
    c.clear();
    assert!(!c.is_handle(s));
    // Before: an index past the arena's descriptions, a panic.
    assert!(c.read(s, 0, &g).unwrap_err().contains("not a handle of this arena"));
    assert!(c.dense(s, &[Dims::vector(2)], &g).unwrap_err().contains("not a handle of this arena"));
}

// ---------------------------------------------------------------------------------------------
// Convolutions and poolings on degenerate shapes and constants.
// ---------------------------------------------------------------------------------------------

/// Every pass of a one-node graph over inputs of `dims`, against the reference; `Err` when the
/// node is refused at push.
fn window_node(dims: &[&[usize]], node: RawNode<f64, ()>) -> Result<Vec<RawTensor<f64>>, Error> {
    let dims: Vec<Dims> = dims.iter().map(|d| Dims::new(d).unwrap()).collect();
    let mut g = RawGraph::<f64, ()>::new(dims.clone());
    let y = g.push(node)?;
    let inputs: Vec<RawTensor<f64>> = dims.iter().map(|&d| RawTensor::from_fn(d, |i| i as f64 * 0.5 - 1.0)).collect();
    let saved = RawSavedGraph::compile(&g, inputs.clone(), ()).unwrap();
    let seed = RawTensor::full(g.dims()[y.index()], 1.0);
    let from = saved.backprop_from(y, seed.clone()).unwrap().into_vec();
    let reference = g.backprop_from_ctx(&inputs, &(), y, seed).unwrap();
    let bits = |p: &[RawTensor<f64>]| {
        p.iter().map(|t| t.data().iter().map(|x| x.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>()
    };
    assert_eq!(bits(&from), bits(&reference));
    Ok(from)
}

#[test]
fn window_ops_on_degenerate_shapes_are_errors_or_run() {
    use ops::Sliding;
    let s2 = |stride: [usize; 2], padding: [usize; 2], dilation: [usize; 2]| Sliding { stride, padding, dilation };
    // Empty batch, channels or filters, or only padding to slide over: sums of no term, or of
    // products with padded zeros, are zeros.
    for (x, w) in [
        (&[0, 2, 3, 3][..], &[4, 2, 2, 2][..]),
        (&[2, 0, 3, 3], &[4, 0, 2, 2]),
        (&[2, 2, 3, 3], &[0, 2, 2, 2]),
        (&[2, 2, 0, 3], &[1, 2, 1, 2]),
    ] {
        let padding = if x[2] == 0 { [1, 0] } else { [0, 0] };
        let out = window_node(&[x, w], RawNode::compact(ops::Conv2d::with_sliding(0, 1, s2([1, 1], padding, [1, 1]))))
            .unwrap();
        assert!(out[0].data().iter().chain(out[1].data()).all(|&v| v == 0.0), "{x:?} {w:?}");
    }
    window_node(&[&[0, 1, 4, 4]], RawNode::compact(ops::MaxPool2d::new(0, [2, 2], [2, 2], [0, 0]))).unwrap();
    window_node(&[&[2, 0, 4, 4]], RawNode::compact(ops::AvgPool2d::new(0, [2, 2], [2, 2], [1, 1]))).unwrap();
    // A kernel far larger than the input, half of it padding: 2 × 3 windows, each found without
    // visiting its 2^64 taps; every window holds both elements.
    let huge = 1 << 32;
    let out = window_node(
        &[&[1, 1, 1, 2]],
        RawNode::compact(ops::MaxPool2d::new(0, [huge, huge], [1, 1], [huge / 2, huge / 2])),
    );
    assert_eq!(out.unwrap()[0].data(), &[0.0, 6.0]);
    let out = window_node(
        &[&[1, 1, 1, 2]],
        RawNode::compact(ops::AvgPool2d::new(0, [huge, huge], [1, 1], [huge / 2, huge / 2])),
    );
    assert_eq!(out.unwrap()[0].data(), &[3.0, 3.0]);
    // Refused at push, in words: zero constants, overflowing padding, a patch matrix beyond usize.
    let refused = |dims: &[&[usize]], node: RawNode<f64, ()>, words: &str| match window_node(dims, node) {
        Err(Error::Node { message, .. }) => assert!(message.contains(words), "{message}"),
        other => panic!("{words}: {:?}", other.map(|p| p.len())),
    };
    refused(
        &[&[1, 1, 3, 3], &[1, 1, 2, 2]],
        RawNode::compact(ops::Conv2d::with_sliding(0, 1, s2([0, 1], [0, 0], [1, 1]))),
        "at least 1",
    );
    refused(
        &[&[1, 1, 3, 3], &[1, 1, 2, 2]],
        RawNode::compact(ops::Conv2d::with_sliding(0, 1, s2([1, 1], [usize::MAX, 0], [1, 1]))),
        "overflows",
    );
    refused(
        &[&[1, 1, 3, 3], &[1, 1, 3, 3]],
        RawNode::compact(ops::Conv2d::with_sliding(0, 1, s2([1, 1], [0, 0], [BIG, 1]))),
        "overflows",
    );
    refused(
        &[&[0, 1, 3, 3], &[1, 1, 1, 1]],
        RawNode::compact(ops::Conv2d::with_sliding(0, 1, s2([1, 1], [BIG / 4, BIG / 4], [1, 1]))),
        "patch matrix",
    );
    refused(
        &[&[1, 1, 3], &[1, 2, 1]],
        RawNode::compact(ops::Conv1d::with_sliding(0, 1, Sliding::default())),
        "input channels",
    );
    refused(&[&[1, 1, 3, 3]], RawNode::compact(ops::MaxPool2d::new(0, [2, 2], [0, 1], [0, 0])), "at least 1");
    refused(
        &[&[1, 1, 3, 3]],
        RawNode::compact(ops::AvgPool2d::new(0, [2, 2], [1, 1], [usize::MAX, 0])),
        "half the kernel",
    );
    refused(
        &[&[1, 1, 3, 3]],
        RawNode::compact(ops::AvgPool2d::new(0, [usize::MAX, 2], [1, 1], [usize::MAX / 2, 0])),
        "overflows",
    );
    refused(&[&[2, 3]], RawNode::compact(ops::MaxPool2d::new(0, [1, 1], [1, 1], [0, 0])), "[n, c, h, w]");
}

fn no_ids(_: &()) -> &[usize] {
    &[]
}

fn no_flags(_: &()) -> &[bool] {
    &[]
}

#[test]
fn attention_ops_on_degenerate_shapes_are_errors_or_run() {
    // Empty batches, rows, inner sizes and columns: sums of no term are zeros.
    for (a, b) in [
        (&[0, 2, 3][..], &[0, 3, 4][..]),
        (&[0, 2, 3], &[3, 4]),
        (&[2, 0, 3], &[2, 3, 4]),
        (&[2, 3, 0], &[2, 0, 4]),
        (&[2, 3, 0], &[0, 4]),
        (&[2, 3, 2], &[2, 2, 0]),
    ] {
        let out = window_node(&[a, b], RawNode::compact(ops::MatMul::new(0, 1))).unwrap();
        assert!(out[0].data().iter().chain(out[1].data()).all(|&v| v == 0.0), "{a:?} {b:?}");
    }
    window_node(&[&[0, 0]], RawNode::compact(ops::CausalMask::new(0, f64::NEG_INFINITY))).unwrap();
    window_node(&[&[0, 3, 3]], RawNode::compact(ops::CausalMask::new(0, 1.0))).unwrap();
    window_node(&[&[0, 3]], RawNode::compact(ops::MaskedFill::new(0, no_flags, 1.0))).unwrap();
    window_node(&[&[4, 3]], RawNode::compact(ops::GatherRows::new(0, no_ids, 0))).unwrap();
    window_node(&[&[0, 3]], RawNode::compact(ops::GatherRows::with_lead(0, no_ids, Dims::matrix(0, 2)))).unwrap();
    // Refused at push, in words.
    let refused = |dims: &[&[usize]], node: RawNode<f64, ()>, words: &str| match window_node(dims, node) {
        Err(Error::Node { message, .. }) => assert!(message.contains(words), "{message}"),
        other => panic!("{words}: {:?}", other.map(|p| p.len())),
    };
    refused(&[&[2, 3, 4], &[3, 4, 5]], RawNode::compact(ops::MatMul::new(0, 1)), "batch sizes");
    refused(&[&[3, 4], &[2, 4, 5]], RawNode::compact(ops::MatMul::new(0, 1)), "two matrices");
    refused(&[&[1, 2, 3, 4], &[4, 5]], RawNode::compact(ops::MatMul::new(0, 1)), "two matrices");
    refused(&[&[2, 3]], RawNode::compact(ops::CausalMask::new(0, 0.0)), "last two axes");
    refused(&[&[3]], RawNode::compact(ops::CausalMask::new(0, 0.0)), "last two axes");
}

fn no_seed(_: &()) -> u64 {
    7
}

/// `concat` of empty parts, of no part, and of parts that do not fit; `dropout` with a probability
/// outside `[0, 1)`: runs or errors in words, never a panic.
#[test]
fn concat_and_dropout_on_degenerate_inputs_are_errors_or_run() {
    // Empty parts along the axis and empty rows: the output has the sizes' sum, and nothing
    // breaks in the VJP.
    let out = window_node(&[&[2, 0], &[2, 3], &[2, 0]], RawNode::compact(ops::Concat::parts(vec![0, 1, 2, 1], 1)));
    assert_eq!(out.unwrap()[1].data(), &[2.0; 6]);
    window_node(&[&[0, 3], &[0, 1]], RawNode::compact(ops::Concat::parts(vec![0, 1, 0], 1))).unwrap();
    let refused = |dims: &[&[usize]], node: RawNode<f64, ()>, words: &str| match window_node(dims, node) {
        Err(Error::Node { message, .. }) => assert!(message.contains(words), "{message}"),
        other => panic!("{words}: {:?}", other.map(|p| p.len())),
    };
    refused(&[&[2]], RawNode::compact(ops::Concat::parts(vec![], 0)), "at least one part");
    refused(&[&[2, 1], &[3, 1]], RawNode::compact(ops::Concat::parts(vec![0, 0, 1], 1)), "(part 2)");
    refused(&[&[2]], RawNode::compact(ops::Concat::parts(vec![0], 1)), "with that axis");
    refused(&[&[2]], RawNode::compact(ops::Concat::parts(vec![0, 5], 0)), "reads position 5");
    for p in [1.0, 2.0, -0.1, f64::NAN, f64::INFINITY] {
        refused(&[&[2]], RawNode::compact(ops::Dropout::new(0, p, no_seed)), "probability p in [0, 1)");
    }
    window_node(&[&[0, 4]], RawNode::compact(ops::Dropout::new(0, 0.5, no_seed))).unwrap();
}
