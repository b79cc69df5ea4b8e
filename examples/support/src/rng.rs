//! The examples' random numbers (`iris`, `digits_cnn`, `char_rnn`, `gpt_char`): `SplitMix64`, a small, fully
//! specified generator, so the same seed gives the same splits, batches and samples on every
//! platform and every version.

/// `SplitMix64` (Steele, Lea and Flood, 2014).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index in `0..n` (`n > 0`; Lemire's multiply-shift, bias below `n / 2^64`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A uniform number in `[0, 1)` with 24 random bits (every value exact in `f32`).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// An index drawn with probability proportional to `weights` (non-negative; the last index
    /// when rounding leaves the draw past their sum).
    pub fn pick(&mut self, weights: &[f64]) -> usize {
        let u = f64::from(self.unit()) * weights.iter().sum::<f64>();
        let mut acc = 0.0;
        for (i, &w) in weights.iter().enumerate() {
            acc += w;
            if u < acc {
                return i;
            }
        }
        weights.len().saturating_sub(1)
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}
