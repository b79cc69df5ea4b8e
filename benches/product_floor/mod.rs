//! The products of a model's step alone, the floor a step is compared against: per `matmul` node
//! its forward product `a·b` and its two VJP products (`δ·bᵀ` and `aᵀ·δ`), with the kernel and the
//! operand views of the passes, a batched node as one GEMM per batch item in batch order, on
//! same-sized buffers of deterministic operands.

use exactgrad::ops::{gemm, MatrixView};

/// Operands and output buffers of a list of `matmul` nodes, each `(items, m, k, n)`.
pub(crate) struct ProductFloor {
    products: &'static [(usize, usize, usize, usize)],
    a: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    d: Vec<Vec<f32>>,
    outs: Vec<Vec<f32>>,
}

impl ProductFloor {
    /// Deterministic operands of the sizes of `products`.
    pub(crate) fn new(products: &'static [(usize, usize, usize, usize)]) -> Self {
        let v = |n: usize, k: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
        };
        let each = |len: fn(usize, usize, usize, usize) -> usize, salt: usize| -> Vec<Vec<f32>> {
            products.iter().enumerate().map(|(i, &(t, m, k, n))| v(len(t, m, k, n), 3 * i + salt)).collect()
        };
        ProductFloor {
            products,
            a: each(|t, m, k, _| t * m * k, 0),
            b: each(|t, _, k, n| t * k * n, 1),
            d: each(|t, m, _, n| t * m * n, 2),
            outs: vec![Vec::new(); 3 * products.len()],
        }
    }

    /// Runs the products: per node and batch item `a·b`, `δ·bᵀ` and `aᵀ·δ`.
    pub(crate) fn run(&mut self) {
        let (rm, tr) = (MatrixView::row_major, MatrixView::transposed);
        for (i, &(items, m, k, n)) in self.products.iter().enumerate() {
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
