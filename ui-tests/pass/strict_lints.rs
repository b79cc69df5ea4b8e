//! Generated code is clean under strict lint settings.
#![deny(warnings, unused, nonstandard_style, rust_2018_idioms, unused_qualifications, trivial_casts)]

exactgrad::graph! {
    /// A graph with every kind of node.
    pub fn strict<B>(x: [B, 2], w: [2, 2]; scale: f64) -> ([B, 2], []) {
        let h = -(x.matmul(w) * 2);
        let o: [B, 2] = opaque(h, forward = |h| h.clone(), vjp = |_h, g| [g.clone()]);
        (o, mean(exp(o) - tanh(o)))
    }
}

fn main() {
    let (g, h) = strict::<f64, exactgrad::typenum::U3>();
    let data = StrictData { scale: 1.0 };
    let saved = g.compile(h.inputs(exactgrad::Tensor::full(0.5), exactgrad::Tensor::full(1.0)), data).unwrap();
    assert!(saved.backprop_from(h.output1, exactgrad::Tensor::full(1.0)).is_ok());
    let _ = data_scale(&StrictData { scale: 2.0 });
    check_whole_prefix();
    let _ = sized::<f32>();
    let _ = public::wide::<f64>();
}

exactgrad::graph! {
    const N: usize = 1500;

    fn block(x: [n, d], w: [d, d], c) {
        let y: [n, d] = tanh(x.matmul(w));
        y * c
    }

    /// Helpers, a loop and a size typenum does not predefine (its alias module), privately.
    fn sized(x: [2, N], w: [1500, 1500]) -> [] {
        let mut h = x;
        for i in 0..2 {
            h = block(h, w, 0.5) + x;
        }
        sum(h)
    }
}

/// A public graph with sizes typenum does not predefine.
pub mod public {
    exactgrad::graph! {
        /// Sizes 3072 and 1500.
        pub fn wide(x: [3072]; d: [1500]) -> [] {
            sum(x) + sum(d)
        }
    }
}

fn data_scale(d: &StrictData) -> f64 {
    d.scale
}

exactgrad::graph! {
    /// An opaque node whose VJP returns a tensor for every position of its prefix.
    pub fn whole_prefix(x: [2], y: [2]) -> [] {
        let z: [2] = opaque(x, y, forward = |x, y| x.add(y).expect("one shape"), vjp_all = |prefix, g| prefix.iter().map(|_| g.clone()).collect());
        sum(z)
    }
}

fn check_whole_prefix() {
    let (g, h) = whole_prefix::<f32>();
    let saved = g.compile(h.inputs(exactgrad::Tensor::full(1.0), exactgrad::Tensor::full(2.0)), ()).unwrap();
    let grads = saved.backprop_from(h.output, exactgrad::Tensor::full(1.0)).unwrap();
    assert_eq!(grads.get(h.y).unwrap().data(), &[1.0, 1.0]);
}
