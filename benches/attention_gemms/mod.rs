//! The GEMMs one step of the issue-10 attention block needs (sequence 32, model 64, 4 heads of
//! 16, MLP 64→256→64; `x` is data, so no gradient of it is formed by a product): per `matmul`
//! node its forward product and its two VJP products (`δ·bᵀ` and `aᵀ·δ`), with the kernel and the
//! operand views of the passes, on same-sized buffers — the floor a step is compared against.

use exactgrad::ops::{gemm, MatrixView};

/// `(m, k, n)` of every forward product: `h·W_qkv`, per head `q_h·k_hᵀ` and `p_h·v_h`, `o·W_o`,
/// `LN2(x1)·W_1`, `gelu(…)·W_2`.
const PRODUCTS: [(usize, usize, usize); 12] = [
    (32, 64, 192),
    (32, 16, 32),
    (32, 32, 16),
    (32, 16, 32),
    (32, 32, 16),
    (32, 16, 32),
    (32, 32, 16),
    (32, 16, 32),
    (32, 32, 16),
    (32, 64, 64),
    (32, 64, 256),
    (32, 256, 64),
];

/// Operands and output buffers of the 36 products.
pub(crate) struct AttentionGemms {
    a: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    d: Vec<Vec<f32>>,
    outs: Vec<Vec<f32>>,
}

impl AttentionGemms {
    /// Deterministic operands of the right sizes.
    pub(crate) fn new() -> Self {
        let v = |n: usize, k: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
        };
        AttentionGemms {
            a: PRODUCTS.iter().enumerate().map(|(i, &(m, k, _))| v(m * k, 3 * i)).collect(),
            b: PRODUCTS.iter().enumerate().map(|(i, &(_, k, n))| v(k * n, 3 * i + 1)).collect(),
            d: PRODUCTS.iter().enumerate().map(|(i, &(m, _, n))| v(m * n, 3 * i + 2)).collect(),
            outs: vec![Vec::new(); 3 * PRODUCTS.len()],
        }
    }

    /// Runs the 36 products: per node `a·b`, `δ·bᵀ` and `aᵀ·δ`.
    pub(crate) fn run(&mut self) {
        let (rm, tr) = (MatrixView::row_major, MatrixView::transposed);
        for (i, &(m, k, n)) in PRODUCTS.iter().enumerate() {
            let (a, b, d) = (&self.a[i], &self.b[i], &self.d[i]);
            let [f, ga, gb] = &mut self.outs[3 * i..3 * i + 3] else { unreachable!("3 buffers per node") };
            for o in [&mut *f, &mut *ga, &mut *gb] {
                o.clear();
            }
            gemm::<f32, false>(m, k, n, rm(a, k), rm(b, n), f);
            gemm::<f32, false>(m, n, k, rm(d, n), tr(b, n), ga);
            gemm::<f32, true>(k, m, n, tr(a, k), rm(d, n), gb);
        }
    }
}
