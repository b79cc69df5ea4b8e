//! Fuzzing the macro (issue 11, item 3): random token soups, mutated valid sources and random
//! sources from the grammar go through the whole pipeline ([`crate::check::check_source`]: lex,
//! parse, lower, infer, plan, emit). The property: the call returns `Ok` or spanned errors —
//! never a panic (caught, and the input reported) and never a hang (inputs are bounded; a call
//! slower than [`SLOW`] fails).
//!
//! Case counts come from `EXACTGRAD_FUZZ_CASES` (per test; CI's default is small). The soak:
//! `EXACTGRAD_FUZZ_CASES=50000 cargo test --release -p exactgrad-macros fuzz`.

mod grammar;
mod mutate;
mod regressions;
mod sources;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::check::check_source;

/// Cases per fuzz test when `EXACTGRAD_FUZZ_CASES` is unset.
const DEFAULT_CASES: u32 = 300;

/// A call this slow counts as a hang.
const SLOW: Duration = Duration::from_secs(10);

/// The proptest configuration: `EXACTGRAD_FUZZ_CASES` cases, no regression files (a failure is
/// turned into a named regression test in `regressions.rs` instead).
pub(crate) fn config() -> ProptestConfig {
    let cases = std::env::var("EXACTGRAD_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_CASES);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// `SplitMix64`: every input of a case comes from one proptest-drawn seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Runs the pipeline on `src`: `Ok` when it returned (a summary or errors, every error with a
/// message), a failure naming the input when it panicked or hung.
pub(crate) fn no_panic(src: &str) -> Result<(), TestCaseError> {
    let start = Instant::now();
    let out = catch_unwind(AssertUnwindSafe(|| check_source(src)));
    let took = start.elapsed();
    match out {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            for e in e {
                prop_assert!(!e.to_string().is_empty(), "an error without a message on {src:?}");
            }
        }
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()));
            return Err(TestCaseError::fail(format!("the macro panicked ({msg:?}) on:\n{src}")));
        }
    }
    prop_assert!(took < SLOW, "the macro took {took:?} on:\n{src}");
    Ok(())
}

#[test]
fn every_seed_source_checks() {
    for src in sources::all() {
        assert!(check_source(&src).is_ok(), "{src}\n{:?}", check_source(&src).err().map(|e| e.to_string()));
    }
    // The tokenizer round-trips: a seed joined from its tokens still checks.
    for src in sources::all() {
        let joined = mutate::tokens(&src).join(" ");
        assert!(check_source(&joined).is_ok(), "{joined}");
    }
}

proptest! {
    #![proptest_config(config())]

    /// Valid sources with 0 to 6 token mutations.
    #[test]
    fn fuzz_mutated_sources(seed: u64, pick: usize, count in 0usize..7) {
        let seeds = sources::all();
        let mut rng = Rng::new(seed);
        no_panic(&mutate::mutate(&seeds[pick % seeds.len()], &mut rng, count))?;
    }

    /// Random token sequences of up to 80 tokens, bare or inside a valid header.
    #[test]
    fn fuzz_token_soups(seed: u64, len in 0usize..80) {
        no_panic(&mutate::soup(&mut Rng::new(seed), len))?;
    }

    /// Random sources from the grammar, and the same with a few token mutations.
    #[test]
    fn fuzz_grammar_sources(seed: u64, count in 0usize..4) {
        let mut rng = Rng::new(seed);
        let src = grammar::source(&mut rng);
        no_panic(&src)?;
        if count > 0 {
            no_panic(&mutate::mutate(&src, &mut rng, count))?;
        }
    }
}
