//! The products one step of the GPT of `examples/gpt_char.rs` needs (`benches/gpt_step.rs`:
//! V = 65, B = 8, T = 64, D = 128, 2 blocks of 4 heads of 32, MLP 128 → 512 → 128): per `matmul`
//! node its forward product and its two VJP products (`δ·bᵀ` and `aᵀ·δ`; every operand of every
//! product is a node or a parameter, so both gradients are formed), a batched product as one
//! GEMM per batch item in batch order, with the kernel and the operand views of the passes, on
//! same-sized buffers — the floor the step is compared against. The items of a batched product
//! run one after the other here, so on two threads this floor is pessimistic (the runtime splits
//! 32 items over the threads); it is the one-thread figure the step is held to.

use exactgrad::ops::{gemm, MatrixView};

/// Rows of every per-token product: B · T.
const ROWS: usize = 8 * 64;

/// `(items, m, k, n)` of every forward product of the step, in the model's order: per block
/// `LN1(h)·W_qkv`, per head `q·kᵀ` and `softmax(…)·v` (32 items: the batch times the heads),
/// `o·W_o`, `LN2(h)·W_1`, `gelu(…)·W_2`; then the head `LN_f(h)·W_head`.
const PRODUCTS: [(usize, usize, usize, usize); 13] = [
    (1, ROWS, 128, 384),
    (32, 64, 32, 64),
    (32, 64, 64, 32),
    (1, ROWS, 128, 128),
    (1, ROWS, 128, 512),
    (1, ROWS, 512, 128),
    (1, ROWS, 128, 384),
    (32, 64, 32, 64),
    (32, 64, 64, 32),
    (1, ROWS, 128, 128),
    (1, ROWS, 128, 512),
    (1, ROWS, 512, 128),
    (1, ROWS, 128, 65),
];

/// Operands and output buffers of the 39 products (each batched one 32 GEMMs).
pub(crate) struct GptGemms {
    a: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    d: Vec<Vec<f32>>,
    outs: Vec<Vec<f32>>,
}

impl GptGemms {
    /// Deterministic operands of the right sizes.
    pub(crate) fn new() -> Self {
        let v = |n: usize, k: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
        };
        let each = |f: &dyn Fn(usize, usize, usize, usize) -> usize, salt: usize| -> Vec<Vec<f32>> {
            PRODUCTS.iter().enumerate().map(|(i, &(t, m, k, n))| v(f(t, m, k, n), 3 * i + salt)).collect()
        };
        GptGemms {
            a: each(&|t, m, k, _| t * m * k, 0),
            b: each(&|t, _, k, n| t * k * n, 1),
            d: each(&|t, m, _, n| t * m * n, 2),
            outs: vec![Vec::new(); 3 * PRODUCTS.len()],
        }
    }

    /// Runs the products: per node and batch item `a·b`, `δ·bᵀ` and `aᵀ·δ`.
    pub(crate) fn run(&mut self) {
        let (rm, tr) = (MatrixView::row_major, MatrixView::transposed);
        for (i, &(items, m, k, n)) in PRODUCTS.iter().enumerate() {
            let [f, ga, gb] = &mut self.outs[3 * i..3 * i + 3] else { unreachable!("3 buffers per node") };
            for o in [&mut *f, &mut *ga, &mut *gb] {
                o.clear();
            }
            for p in 0..items {
                let a = &self.a[i][p * m * k..(p + 1) * m * k];
                let b = &self.b[i][p * k * n..(p + 1) * k * n];
                let d = &self.d[i][p * m * n..(p + 1) * m * n];
                gemm::<f32, false>(m, k, n, rm(a, k), rm(b, n), f);
                gemm::<f32, false>(m, n, k, rm(d, n), tr(b, n), ga);
                gemm::<f32, true>(k, m, n, tr(a, k), rm(d, n), gb);
            }
        }
    }
}
