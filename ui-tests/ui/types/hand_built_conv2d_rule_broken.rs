//! Hand-written code pushes a conv2d whose 3 × 3 kernel does not fit the unpadded 2 × 2 input of
//! a generated graph: the rule trait rejects it, in words.
use exactgrad::typenum::{U0, U1, U2, U3};
use exactgrad::{graph, ops, MacroBuilder};

graph! {
    fn image(x: [1, 1, 2, 2]) -> [] {
        sum(x)
    }
}

fn main() {
    let b = MacroBuilder::<f32, (), ImageBrand>::new();
    let (b, x) = b.input::<(U1, U1, U2, U2)>();
    let (mut b, w) = b.input::<(U1, U1, U3, U3)>();
    let one = || (U1::new(), U1::new());
    let _ = b.push(ops::conv2d(x, w, one(), (U0::new(), U0::new()), one()));
}
