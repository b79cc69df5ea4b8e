//! The products one step of the GPT of `examples/gpt_char.rs` needs (`benches/gpt_step.rs`:
//! V = 65, B = 8, T = 64, D = 128, 2 blocks of 4 heads of 32, MLP 128 → 512 → 128), run by
//! [`ProductFloor`]: every operand of every product is a node or a parameter, so both VJP
//! products of each node are formed (39 products, 1.33 GFLOP). The 32 items of a batched product
//! run one after the other here, so on two threads this floor is pessimistic (the runtime splits
//! them over the threads); it is the one-thread figure the step is held to.

use crate::product_floor::ProductFloor;

/// Rows of every per-token product: B · T.
const ROWS: usize = 8 * 64;

/// `(items, m, k, n)` of one block's products, in the model's order: `LN1(h)·W_qkv`, per head
/// `q·kᵀ` and `softmax(…)·v` (32 items: the batch times the heads), `o·W_o`, `LN2(h)·W_1`,
/// `gelu(…)·W_2`.
const BLOCK: [(usize, usize, usize, usize); 6] = [
    (1, ROWS, 128, 384),
    (32, 64, 32, 64),
    (32, 64, 64, 32),
    (1, ROWS, 128, 128),
    (1, ROWS, 128, 512),
    (1, ROWS, 512, 128),
];

/// The two blocks' products, then the head `LN_f(h)·W_head`.
const PRODUCTS: [(usize, usize, usize, usize); 13] = {
    let mut all = [(1, ROWS, 128, 65); 13];
    let mut i = 0;
    while i < 12 {
        all[i] = BLOCK[i % 6];
        i += 1;
    }
    all
};

/// The GPT step's products, ready to run.
pub(crate) fn gpt_gemms() -> ProductFloor {
    ProductFloor::new(&PRODUCTS)
}
