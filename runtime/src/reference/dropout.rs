//! The reference's `dropout` (SEMANTICS §8.3), by its own code: the mask drawn by running the
//! SplitMix64 generator forwards from the seed, one output per element in row-major order, and
//! the factor computed from `p` in `f64`.

use super::tensor::RefTensor;

/// The SplitMix64 generator (Steele, Lea and Flood, 2014) as published: a state advanced by the
/// golden gamma, each output the state after the step, mixed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `m[i]` for `n` elements: `factor` where the draw `u_i = (z_i >> 11) / 2⁵³` is at least `p`,
/// `zero` elsewhere.
fn mask<A: Clone>(n: usize, p: f64, seed: u64, factor: &A, zero: &A) -> Vec<A> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            let u = (rng.next() >> 11) as f64 / 9_007_199_254_740_992.0; // 2^53
            if u < p {
                zero.clone()
            } else {
                factor.clone()
            }
        })
        .collect()
}

/// The factor `1 / (1 − p)` in the scalar type, or why there is none.
fn factor<A>(p: f64, from_f64: fn(f64) -> Option<A>) -> Result<A, String> {
    if !(0.0..1.0).contains(&p) {
        return Err(format!("dropout probability {p} is outside [0, 1)"));
    }
    from_f64(1.0 / (1.0 - p)).ok_or_else(|| format!("dropout factor for p = {p} does not fit the scalar"))
}

/// `y[i] = x[i] * m[i]`.
pub(super) fn forward<A: Clone>(
    x: &RefTensor<A>,
    p: f64,
    seed: u64,
    from_f64: fn(f64) -> Option<A>,
    zero: A,
    mul: fn(A, A) -> A,
) -> Result<RefTensor<A>, String> {
    let m = mask(x.data.len(), p, seed, &factor(p, from_f64)?, &zero);
    Ok(RefTensor { dims: x.dims.clone(), data: x.data.iter().zip(m).map(|(v, k)| mul(v.clone(), k)).collect() })
}

/// `t[i] = δ[i] * m[i]`.
pub(super) fn vjp<A: Clone>(
    g: &RefTensor<A>,
    p: f64,
    seed: u64,
    from_f64: fn(f64) -> Option<A>,
    zero: A,
    mul: fn(A, A) -> A,
) -> Result<RefTensor<A>, String> {
    forward(g, p, seed, from_f64, zero, mul)
}
