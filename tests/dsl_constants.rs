//! Operators with a constant in `graph!`: `x * c` (`scale`), `x + c` and `c + x` (`offset`),
//! `x - c` (`offset` by `-c`: IEEE subtraction is the sum with the negation) and `x / c`
//! (`div_const`: one division per element, not a product with the rounded reciprocal) build
//! exactly the graph pushed by hand with the typed constructors — the same `describe()`, values
//! and results of every pass and of the generated program, bit for bit, in `f64` and `f32`, on
//! adversarial inputs and seeds; a constant the scalar type cannot hold is `compile`'s error
//! naming it; `x / c` over integers refuses a zero constant.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U2, U3};
use exactgrad::{graph, ops, GraphData, Pack, Tensor};
use floats::{adv, all_bits, outcome, TestFloat};

graph! {
    const C: f64 = 0.3;
    fn constants(x: [2, 3], y: [2, 3]) -> [] {
        let a = (x / 10.0 + 1.5) - C;
        let b = 2 + y * 0.5 / C;
        sum(a * b - 0.0)
    }
}

type M = (U2, U3);

/// The hand-built graph's inputs.
type Inputs = exactgrad::Snoc<exactgrad::Snoc<exactgrad::Nil, M>, M>;

/// The graph pushed by hand with the typed constructors, and its output (its node list is the
/// builder's, unnamed).
#[allow(clippy::type_complexity)]
fn by_hand<A: TestFloat>() -> (GraphData<A, (), Inputs, impl Sized, ()>, exactgrad::Position<(), ()>) {
    let c = |v: f64| A::from_f64(v).unwrap();
    let (g, x) = GraphData::<A, ()>::new().input::<M>();
    let (g, y) = g.input::<M>();
    let (g, d) = g.push(ops::div_const(x, c(10.0)));
    let (g, o) = g.push(ops::offset(d, c(1.5)));
    let (g, a) = g.push(ops::offset(o, c(-0.3)));
    let (g, s) = g.push(ops::scale(y, c(0.5)));
    let (g, q) = g.push(ops::div_const(s, c(0.3)));
    let (g, b) = g.push(ops::offset(q, c(2.0)));
    let (g, m) = g.push(ops::mul(a, b));
    let (g, z) = g.push(ops::offset(m, c(-0.0)));
    let (g, out) = g.push(ops::sum(z));
    (g, out)
}

fn check<A: TestFloat>(salt: u64) {
    let (dg, dh) = constants::<A>();
    let (hg, ho) = by_hand::<A>();
    assert_eq!(dg.describe(), hg.describe());
    let inputs = || Pack::new().push(adv::<A, M>(salt, 0)).push(adv::<A, M>(salt, 1));
    let d = outcome(&dg, dh.inputs(adv(salt, 0), adv(salt, 1)), dh.output, salt);
    let h = outcome(&hg, inputs(), ho, salt);
    assert_eq!(d, h);
    let seed: Tensor<A, ()> = adv(salt, 8);
    let mut program = Constants::program::<A>();
    let mut pack = dh.inputs(adv(salt, 0), adv(salt, 1));
    let got = all_bits(program.gradients(&mut pack, &(), &seed).unwrap().as_slice());
    let saved = hg.compile(inputs(), ()).unwrap();
    let want = saved.backprop_from(ho, seed).unwrap();
    assert_eq!(got, all_bits(want.iter().take(2)));
}

#[test]
fn constant_operators_are_their_ops_bit_for_bit() {
    for salt in 0..6 {
        check::<f64>(salt);
        check::<f32>(salt);
    }
}

graph! {
    fn shifted(x: [2]) -> [2] {
        x + 1e39
    }
}

graph! {
    fn halved(x: [2]) -> [2] {
        x / 0
    }
}

#[test]
fn unrepresentable_or_panicking_constants_are_compile_errors() {
    let (g, h) = shifted::<f32>();
    let e = g.compile(h.inputs(Tensor::full(1.0)), ()).err().unwrap();
    assert_eq!(
        e.to_string(),
        "node 0 (offset) with parent shapes [[2]]: the constant `1e39` is not representable in the scalar type"
    );
    let (g, h) = halved::<i64>();
    let e = g.compile(h.inputs(Tensor::full(3)), ()).err().unwrap();
    assert!(
        e.to_string()
            .starts_with("node 0 (div_const) with parent shapes [[2]]: div_const cannot divide by this constant"),
        "{e}"
    );
    // Over floats, `x / 0` is IEEE's: infinities.
    let (g, h) = halved::<f64>();
    let saved = g.compile(h.inputs(Tensor::from_vec(vec![1.0, -1.0]).unwrap()), ()).unwrap();
    assert_eq!(saved.value(h.output).unwrap().data(), &[f64::INFINITY, f64::NEG_INFINITY]);
}
