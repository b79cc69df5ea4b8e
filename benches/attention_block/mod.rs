//! The attention block of the benchmarks (issue 10's definition), written two ways that must be
//! the same model bit for bit (`tests/attention_heads.rs`):
//!
//! * [`attention`]: the 4 heads written out, each on slices of q, k and v, joined by one n-ary
//!   `concat`;
//! * [`attention_batched`]: the heads as the batch axis of batched products
//!   (`[32, 64] → [32, 4, 16] → [4, 32, 16]` by `reshape` and `permute`), no per-head code.
//!
//! `x [32, 64]` is data; pre-LN (gain and bias, eps 1e-5); one fused `W_qkv [64, 192]` + `b_qkv`,
//! split into q, k, v; `softmax(q·kᵀ/4)·v` per head of 16 (`/ 4` written `* 0.25`, the same
//! rounding); `x1 = x + o·W_o + b_o`; `out = x1 + gelu_tanh(LN2(x1)·W_1 + b_1)·W_2 + b_2`, MLP
//! 64→256→64; loss `mean(out²)`.
#![allow(dead_code)] // each user (a bench, a test) takes the variants it needs

use exactgrad::graph;

graph! {
    /// The attention block with its heads written out.
    pub fn attention(ln1_g: [64], ln1_b: [64], w_qkv: [64, 192], b_qkv: [192], w_o: [64, 64], b_o: [64],
                 ln2_g: [64], ln2_b: [64], w_1: [64, 256], b_1: [256], w_2: [256, 64], b_2: [64];
                 x: [32, 64]) -> [] {
        let h = layer_norm(x, ln1_g, ln1_b);
        let qkv = h.matmul(w_qkv) + b_qkv;
        let (q, k, v) = split(qkv, 1, 3);
        let a0 = softmax(slice(q, 1, 0, 16).matmul(slice(k, 1, 0, 16).t()) * 0.25).matmul(slice(v, 1, 0, 16));
        let a1 = softmax(slice(q, 1, 16, 16).matmul(slice(k, 1, 16, 16).t()) * 0.25).matmul(slice(v, 1, 16, 16));
        let a2 = softmax(slice(q, 1, 32, 16).matmul(slice(k, 1, 32, 16).t()) * 0.25).matmul(slice(v, 1, 32, 16));
        let a3 = softmax(slice(q, 1, 48, 16).matmul(slice(k, 1, 48, 16).t()) * 0.25).matmul(slice(v, 1, 48, 16));
        let o = concat([a0, a1, a2, a3], 1);
        let x1 = x + o.matmul(w_o) + b_o;
        let m = gelu(layer_norm(x1, ln2_g, ln2_b).matmul(w_1) + b_1).matmul(w_2) + b_2;
        let out = x1 + m;
        mean(square(out))
    }
}

graph! {
    /// Heads.
    const HEADS: usize = 4;
    /// Width of one head.
    const D: usize = 16;
    /// `1 / √D`.
    const SCALE: f64 = 1.0 / (D as f64).sqrt();

    /// The attention block with the heads as the batch axis of batched products.
    pub fn attention_batched(ln1_g: [64], ln1_b: [64], w_qkv: [64, 192], b_qkv: [192], w_o: [64, 64], b_o: [64],
                 ln2_g: [64], ln2_b: [64], w_1: [64, 256], b_1: [256], w_2: [256, 64], b_2: [64];
                 x: [32, 64]) -> [] {
        let h = layer_norm(x, ln1_g, ln1_b);
        let qkv = h.matmul(w_qkv) + b_qkv;
        let (q, k, v) = split(qkv, 1, 3);
        let q4: [32, HEADS, D] = reshape(q);
        let k4: [32, HEADS, D] = reshape(k);
        let v4: [32, HEADS, D] = reshape(v);
        // [heads, 32, D] · [heads, D, 32]: one product per head.
        let scores = permute(q4, [1, 0, 2]).matmul(permute(k4, [1, 2, 0])) * SCALE;
        let a = softmax(scores).matmul(permute(v4, [1, 0, 2]));
        let o: [32, 64] = reshape(permute(a, [1, 0, 2]));
        let x1 = x + o.matmul(w_o) + b_o;
        let m = gelu(layer_norm(x1, ln2_g, ln2_b).matmul(w_1) + b_1).matmul(w_2) + b_2;
        let out = x1 + m;
        mean(square(out))
    }
}
