//! The GEMMs one 784-256-128-10 MLP training step needs (batch 64; the images are data, so no
//! gradient of them): 3 forward products and 5 VJP products (`xᵀ·δ1`, `r1ᵀ·δ2`, `δ2·w2ᵀ`, `r2ᵀ·δ3`,
//! `δ3·w3ᵀ`), with the kernel, views and operand order of the passes, on same-sized buffers — the
//! floor a step is compared against.

use exactgrad::ops::{gemm, MatrixView};

const BATCH: usize = 64;
const IN: usize = 784;
const H1: usize = 256;
const H2: usize = 128;
const OUT: usize = 10;

/// Operands and output buffers of the eight products.
pub(crate) struct MlpGemms {
    x: Vec<f32>,
    w: [Vec<f32>; 3],
    r: [Vec<f32>; 2],
    d: [Vec<f32>; 3],
    outs: Vec<Vec<f32>>,
}

impl MlpGemms {
    /// The products on the image batch `x` (64 × 784) and deterministic other operands.
    pub(crate) fn new(x: &[f32]) -> Self {
        let v = |n: usize, k: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
        };
        MlpGemms {
            x: x.to_vec(),
            w: [v(IN * H1, 11), v(H1 * H2, 12), v(H2 * OUT, 13)],
            r: [v(BATCH * H1, 14), v(BATCH * H2, 15)],
            d: [v(BATCH * H1, 16), v(BATCH * H2, 17), v(BATCH * OUT, 18)],
            outs: vec![Vec::new(); 8],
        }
    }

    /// Runs the eight products.
    pub(crate) fn run(&mut self) {
        for o in &mut self.outs {
            o.clear();
        }
        let (rm, tr) = (MatrixView::row_major, MatrixView::transposed);
        let MlpGemms { x, w, r, d, outs } = self;
        let [f1, f2, f3, gw3, gr2, gw2, gr1, gw1] = &mut outs[..] else { unreachable!("8 buffers") };
        // Forward: x·w1, r1·w2, r2·w3.
        gemm::<f32, false>(BATCH, IN, H1, rm(x, IN), rm(&w[0], H1), f1);
        gemm::<f32, false>(BATCH, H1, H2, rm(&r[0], H1), rm(&w[1], H2), f2);
        gemm::<f32, false>(BATCH, H2, OUT, rm(&r[1], H2), rm(&w[2], OUT), f3);
        // Layer 3: r2ᵀ·δ3 and δ3·w3ᵀ.
        gemm::<f32, true>(H2, BATCH, OUT, tr(&r[1], H2), rm(&d[2], OUT), gw3);
        gemm::<f32, false>(BATCH, OUT, H2, rm(&d[2], OUT), tr(&w[2], OUT), gr2);
        // Layer 2: r1ᵀ·δ2 and δ2·w2ᵀ.
        gemm::<f32, true>(H1, BATCH, H2, tr(&r[0], H1), rm(&d[1], H2), gw2);
        gemm::<f32, false>(BATCH, H2, H1, rm(&d[1], H2), tr(&w[1], H2), gr1);
        // Layer 1 (x is data): xᵀ·δ1 only.
        gemm::<f32, true>(IN, BATCH, H1, tr(x, IN), rm(&d[0], H1), gw1);
    }
}
