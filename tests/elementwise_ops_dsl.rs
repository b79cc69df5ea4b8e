//! The elementwise ops `sigmoid`, `softplus`, `log`, `sqrt`, `gelu`, `square`, `div`, `max` and
//! `min` called from `graph!`, in function form (`sigmoid(x)`, `div(a, b)`) and method form
//! (`x.sqrt()`, `a.max(b)`):
//!
//! * both forms build exactly the graph pushed by hand with the typed constructors in `ops` (same
//!   `describe()`, bit-identical values and results of every pass, on ordinary and adversarial
//!   inputs and seeds, in `f64` and `f32`);
//! * the gradient of the macro graph matches central finite differences (`f64`);
//! * `square`, `div`, `max` and `min` ask the scalar only for `*`, `/`, `-` and `PartialOrd`, so a
//!   graph of them runs over `i64`.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::typenum::{U2, U3};
use exactgrad::{graph, ops, Dims, GraphData, Pack, RawSeeds, RawTensor, Tensor};
use floats::{adv, adversarial, all_bits, Bits, TestFloat, MODES};

graph! {
    /// Every new op in function form.
    fn dsl_functions(x: [2, 3], y: [2, 3]) -> [] {
        let s = sigmoid(x);
        let p = softplus(y);
        let l = log(p);
        let r = sqrt(s);
        let g = gelu(x);
        let q = square(y);
        let d = div(l, r);
        let hi = max(d, g);
        let lo = min(q, x);
        sum(hi + lo)
    }
}

graph! {
    /// Every new op in method form.
    fn dsl_methods(x: [2, 3], y: [2, 3]) -> [] {
        let s = x.sigmoid();
        let p = y.softplus();
        let l = p.log();
        let r = s.sqrt();
        let g = x.gelu();
        let q = y.square();
        let d = l.div(r);
        let hi = d.max(g);
        let lo = q.min(x);
        sum(hi + lo)
    }
}

graph! {
    /// Ops that need no `Float`: this graph compiles for integer scalars.
    fn dsl_integer(a: [3], b: [3]) -> [3] {
        let hi = max(a, b);
        let lo = a.min(b);
        div(hi.square(), lo) - square(a)
    }
}

/// `describe()`, values and the results of the passes, as bits.
type Outcome = (String, Vec<Vec<Bits>>);

fn outcome<A: TestFloat, G, Ss, Br>(g: &GraphData<A, (), G, Ss, Br>, inputs: Pack<A, G>, salt: u64) -> Outcome {
    let saved = g.compile(inputs, ()).unwrap();
    let raw = saved.raw();
    let dims = g.raw().dims().to_vec();
    let seeds: Vec<RawTensor<A>> = (0..dims.len()).map(|p| seed_at(&dims, p, salt + MODES * 100)).collect();
    let mut sparse = RawSeeds::zeros(&dims);
    sparse.set(raw.graph().position(dims.len() - 1).unwrap(), seeds[dims.len() - 1].clone()).unwrap();
    let mut results = vec![all_bits(raw.values())];
    let dense = raw.backprop_all_dense(seeds.clone()).unwrap();
    assert_eq!(all_bits(&raw.backprop_all_array(seeds.clone()).unwrap()), all_bits(&dense), "array == dense");
    assert_eq!(all_bits(&raw.backprop_all_stored(seeds.clone()).unwrap()), all_bits(&dense), "stored == dense");
    let inputs = raw.backprop_inputs_dense(seeds.clone()).unwrap();
    assert_eq!(all_bits(&raw.backprop_inputs_array(seeds).unwrap()), all_bits(&inputs), "inputs array == dense");
    assert_eq!(
        all_bits(&raw.backprop_all_array(sparse.clone()).unwrap()),
        all_bits(&raw.backprop_all_dense(sparse).unwrap())
    );
    results.extend([all_bits(&dense), all_bits(&inputs)]);
    for p in 0..dims.len() {
        let from = raw.backprop_from(raw.graph().position(p).unwrap(), seed_at(&dims, p, salt + MODES * 200)).unwrap();
        let from_dense =
            raw.backprop_from_dense(raw.graph().position(p).unwrap(), seed_at(&dims, p, salt + MODES * 200)).unwrap();
        assert_eq!(all_bits(&from), all_bits(&from_dense), "backprop_from({p}) == dense");
        results.push(all_bits(&from));
    }
    (g.describe(), results)
}

/// A seed for position `p` with the mix of `salt` (so ordinary inputs get ordinary seeds).
fn seed_at<A: TestFloat>(dims: &[Dims], p: usize, salt: u64) -> RawTensor<A> {
    adversarial(dims[p], salt + MODES * (p as u64 + 1))
}

/// The graph of `dsl_functions`, pushed by hand with the typed constructors.
fn hand_built<A: TestFloat>(x: Tensor<A, (U2, U3)>, y: Tensor<A, (U2, U3)>, salt: u64) -> Outcome {
    let g = GraphData::<A, ()>::new();
    let (g, xp) = g.input::<(U2, U3)>();
    let (g, yp) = g.input::<(U2, U3)>();
    let (g, s) = g.push(ops::sigmoid(xp));
    let (g, p) = g.push(ops::softplus(yp));
    let (g, l) = g.push(ops::log(p));
    let (g, r) = g.push(ops::sqrt(s));
    let (g, ge) = g.push(ops::gelu(xp));
    let (g, q) = g.push(ops::square(yp));
    let (g, d) = g.push(ops::div(l, r));
    let (g, hi) = g.push(ops::max(d, ge));
    let (g, lo) = g.push(ops::min(q, xp));
    let (g, z) = g.push(ops::add(hi, lo));
    let (g, _) = g.push(ops::sum(z));
    outcome(&g, Pack::new().push(x).push(y), salt)
}

#[test]
fn both_forms_match_the_hand_built_graph() {
    fn check<A: TestFloat>() {
        // Every mix of `adversarial` twice: ordinary values only, mixed, adversarial values only.
        for salt in 0..2 * MODES {
            let (x, y): (Tensor<A, (U2, U3)>, _) = (adv(salt, 0), adv(salt, 1));
            let h = hand_built(x.clone(), y.clone(), salt);
            let (fg, fh) = dsl_functions::<A>();
            let f = outcome(&fg, fh.inputs(x.clone(), y.clone()), salt);
            let (mg, mh) = dsl_methods::<A>();
            let m = outcome(&mg, mh.inputs(x, y), salt);
            assert_eq!(f.0, h.0, "describe() of the function form");
            assert_eq!(m.0, h.0, "describe() of the method form");
            assert_eq!(f.1, h.1, "function form (salt {salt})");
            assert_eq!(m.1, h.1, "method form (salt {salt})");
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn describe_names_the_new_ops() {
    let (g, _) = dsl_functions::<f64>();
    let listing = g.describe();
    for name in ["sigmoid(", "softplus(", "log(", "sqrt(", "gelu(", "square(", "div(", "max(", "min("] {
        assert!(listing.contains(name), "{name} missing from\n{listing}");
    }
}

#[test]
fn gradient_of_the_macro_graph_matches_finite_differences() {
    let (g, h) = dsl_methods::<f64>();
    // Salt 0: ordinary values in `[-3, 3)` only.
    let x: Tensor<f64, (U2, U3)> = adv(0, 3);
    let y: Tensor<f64, (U2, U3)> = adv(0, 4);
    let f = |x: &Tensor<f64, (U2, U3)>, y: &Tensor<f64, (U2, U3)>| {
        let saved = g.compile(h.inputs(x.clone(), y.clone()), ()).unwrap();
        saved.value(h.output).unwrap().data()[0]
    };
    let saved = g.compile(h.inputs(x.clone(), y.clone()), ()).unwrap();
    let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
    let (gx, gy) = (grads.get(h.x).unwrap().data().to_vec(), grads.get(h.y).unwrap().data().to_vec());
    let eps = 1e-6;
    for i in 0..6 {
        let bump =
            |t: &Tensor<f64, (U2, U3)>, d: f64| Tensor::from_fn(|j| t.raw().data()[j] + if j == i { d } else { 0.0 });
        let nx = (f(&bump(&x, eps), &y) - f(&bump(&x, -eps), &y)) / (2.0 * eps);
        let ny = (f(&x, &bump(&y, eps)) - f(&x, &bump(&y, -eps))) / (2.0 * eps);
        assert!((nx - gx[i]).abs() <= 1e-6 * nx.abs().max(1.0), "x[{i}]: numeric {nx} vs {}", gx[i]);
        assert!((ny - gy[i]).abs() <= 1e-6 * ny.abs().max(1.0), "y[{i}]: numeric {ny} vs {}", gy[i]);
    }
}

#[test]
fn integer_graph_of_square_div_max_min() {
    let (g, h) = dsl_integer::<i64>();
    let a = Tensor::from_fn(|i| [2i64, -3, 4][i]);
    let b = Tensor::from_fn(|i| [1i64, 5, 4][i]);
    let saved = g.compile(h.inputs(a, b), ()).unwrap();
    // hi = [2, 5, 4], lo = [1, -3, 4]: hi² / lo - a² = [4 - 4, -8 - 9, 4 - 16].
    assert_eq!(saved.value(h.output).unwrap().data(), &[0, -17, -12]);
    let grads = saved.backprop_from(h.output, Tensor::full(12)).unwrap();
    // δ = 12 at the output. `- square(a)`: a gets (-12·a) + (-12·a) = [-48, 72, -96].
    // div(hi², lo): hi² gets 12 / lo = [12, -4, 3]; lo gets 0 - (12·y) / lo = [-48, -32, -12].
    // square(hi): hi gets 2·(δ·hi) = [48, -40, 24]. max chooses [a, b, a] (tie → a); min chooses
    // [b, a, a]: a gets [48 - 48, 72 - 32, -96 + 24 - 12], b gets [-48, -40, 0].
    assert_eq!(grads.get(h.a).unwrap().data(), &[0, 40, -84]);
    assert_eq!(grads.get(h.b).unwrap().data(), &[-48, -40, 0]);
}
