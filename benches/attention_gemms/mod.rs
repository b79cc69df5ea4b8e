//! The GEMMs one step of the issue-10 attention block needs (sequence 32, model 64, 4 heads of
//! 16, MLP 64→256→64; `x` is data, so no gradient of it is formed by a product), run by
//! [`ProductFloor`]: per `matmul` node its forward product and its two VJP products — the floor a
//! step is compared against.

use crate::product_floor::ProductFloor;

/// `(items, m, k, n)` of every forward product: `h·W_qkv`, per head `q_h·k_hᵀ` and `p_h·v_h`,
/// `o·W_o`, `LN2(x1)·W_1`, `gelu(…)·W_2` (each head's products are nodes of their own: one item).
const PRODUCTS: [(usize, usize, usize, usize); 12] = [
    (1, 32, 64, 192),
    (1, 32, 16, 32),
    (1, 32, 32, 16),
    (1, 32, 16, 32),
    (1, 32, 32, 16),
    (1, 32, 16, 32),
    (1, 32, 32, 16),
    (1, 32, 16, 32),
    (1, 32, 32, 16),
    (1, 32, 64, 64),
    (1, 32, 64, 256),
    (1, 32, 256, 64),
];

/// The attention block's 36 products, ready to run.
pub(crate) fn attention_gemms() -> ProductFloor {
    ProductFloor::new(&PRODUCTS)
}
