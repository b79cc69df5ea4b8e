//! A model's generated `run`: the program's control flow, written out. The forward's stretches
//! in order, then per pass its sweep's stretches and its end — a stretch of written rows is one
//! call, a repeat (a rolled loop's iterations) a Rust `for` loop over its iterations — each call
//! running a table's rows through the runtime's `ProgramState::forward_rows` / `sweep_rows`
//! (compiled once, in the runtime, for `f32` and `f64`). Passes with the same sweep share one arm;
//! a pass the runtime's own loop runs (a model with user compact ops) returns its output.

use proc_macro2::TokenStream;
use quote::quote;

use super::program::lit;
use super::tables::Segment;

/// How a pass runs: its sweep (the static's name, for sharing arms, and its stretches), or the
/// runtime's single-output loop from this output position.
#[derive(Clone)]
pub(super) enum PassRun {
    Planned(String, Vec<Segment>),
    Runtime(usize),
}

/// The stretches of a plan's forward, and each pass's run (the all-inputs pass, then each
/// output's single-output pass).
pub(super) struct RunShape {
    pub(super) forward: Vec<Segment>,
    pub(super) passes: Vec<PassRun>,
}

/// One call per stretch: `call(rows)` for written rows, in a `for` loop for a repeat.
fn calls(segments: &[Segment], call: impl Fn(TokenStream) -> TokenStream) -> TokenStream {
    segments
        .iter()
        .map(|segment| match *segment {
            Segment::Written(a, b) => {
                let (a, b) = (lit(a), lit(b));
                call(quote!(Written(#a, #b)))
            }
            Segment::Repeat(r, count) => {
                let (r, count) = (lit(r), lit(count));
                let body = call(quote!(Iteration(#r, k)));
                quote!(for k in 0..#count { #body })
            }
        })
        .collect()
}

/// The `run` associated function of a model.
pub(super) fn run_fn(p: &TokenStream, shape: &RunShape) -> TokenStream {
    let forward = calls(&shape.forward, |rows| quote!(s.forward_rows(plan, g, #rows);));
    let mut arms = TokenStream::new();
    let mut done: Vec<&str> = Vec::new();
    for (index, run) in shape.passes.iter().enumerate() {
        let pattern = |i: usize| {
            if i == 0 {
                quote!(#p::Pass::All)
            } else {
                let j = lit(i - 1);
                quote!(#p::Pass::From(#j))
            }
        };
        match run {
            PassRun::Planned(name, segments) => {
                if done.contains(&name.as_str()) {
                    continue;
                }
                done.push(name);
                let patterns = shape.passes.iter().enumerate().filter_map(|(i, other)| match other {
                    PassRun::Planned(n, _) if n == name => Some(pattern(i)),
                    _ => None,
                });
                let i = lit(index);
                let body = calls(segments, |rows| quote!(s.sweep_rows(sweep, g, #rows)?;));
                arms.extend(quote! {
                    #(#patterns)|* => {
                        let sweep = plan.sweep(#i).ok_or_else(|| #p::ProgramState::<S>::no_sweep(pass))?;
                        #body
                        Ok(s.sweep_inputs(sweep))
                    }
                });
            }
            PassRun::Runtime(output) => {
                let (pat, output) = (pattern(index), lit(*output));
                arms.extend(quote!(#pat => Ok(#p::Ran::Runtime(#output)),));
            }
        }
    }
    quote! {
        /// The generated program's run (`Program` calls it): the forward's levels, then the
        /// chosen pass's sweep, each a call per stretch of the plan's tables
        /// ([`Self::plan`]) and a Rust loop per rolled loop of the model.
        #[doc(hidden)]
        pub fn run<S: #p::Scalar>(
            s: &mut #p::ProgramState<S>,
            g: &(dyn #p::BoundGraph<S> + ::core::marker::Sync),
            pass: #p::Pass,
        ) -> ::core::result::Result<#p::Ran, #p::Error> {
            #[allow(unused_imports)]
            use #p::plan::Rows::{Iteration, Written};
            let plan = Self::plan();
            #forward
            s.forward_result()?;
            match pass {
                #arms
                #[allow(unreachable_patterns)]
                _ => Err(#p::ProgramState::<S>::no_sweep(pass)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spaced(t: &TokenStream) -> String {
        t.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn repeats_are_loops_and_passes_with_one_sweep_share_an_arm() {
        let shape = RunShape {
            forward: vec![Segment::Written(0, 2), Segment::Repeat(0, 2000), Segment::Written(4, 5)],
            passes: vec![
                PassRun::Planned("__SWEEP0".into(), vec![Segment::Repeat(1, 7)]),
                PassRun::Planned("__SWEEP0".into(), vec![Segment::Repeat(1, 7)]),
                PassRun::Runtime(9),
            ],
        };
        let t = spaced(&run_fn(&quote!(p), &shape));
        assert!(t.contains("s . forward_rows (plan , g , Written (0 , 2)) ;"), "{t}");
        assert!(t.contains("for k in 0 .. 2000 { s . forward_rows (plan , g , Iteration (0 , k)) ; }"), "{t}");
        assert!(t.contains("s . forward_rows (plan , g , Written (4 , 5)) ; s . forward_result () ?"), "{t}");
        assert!(t.contains("p :: Pass :: All | p :: Pass :: From (0) =>"), "{t}");
        assert!(t.contains("for k in 0 .. 7 { s . sweep_rows (sweep , g , Iteration (1 , k)) ? ; }"), "{t}");
        assert_eq!(t.matches("plan . sweep (").count(), 1, "{t}");
        assert!(t.contains("p :: Pass :: From (1) => Ok (p :: Ran :: Runtime (9))"), "{t}");
    }

    #[test]
    fn a_rolled_loop_of_a_model_is_a_loop_of_its_run() {
        let src = "fn chain(x: [3], a: [[3]; 600], b: [[3]; 600]) -> [] {
            let mut h = x;
            for i in 0..600 { h = tanh(h * a[i] + b[i]); }
            sum(h)
        }";
        let t = spaced(&crate::check::expand(src.parse().expect("lexes")));
        // The forward's and the sweep's iterations, each a loop (one iteration of the sweep, the
        // one that writes onto `x`, differs from the others and is written out); no call per node.
        assert!(t.contains("for k in 0 .. 600 { s . forward_rows (plan , g , Iteration ("), "{t}");
        assert!(t.contains("for k in 0 .. 599 { s . sweep_rows (sweep , g , Iteration ("), "{t}");
        assert!(t.matches("forward_rows (plan").count() < 6, "{t}");
    }
}
