//! The character-level GPT of `examples/gpt_char.rs` and `benches/gpt_step.rs` (issue 25): a
//! decoder-only transformer written once with `graph!`, its blocks a `for` loop over parameter
//! arrays, its attention and MLP two helpers. The vocabulary `V` is a generic dim: the example
//! instantiates it with the text's alphabet (58 characters), the bench with 65.
//!
//! * Context `T = 64`, batch `B = 8` windows, width `D = 128`, `L = 2` blocks, `H = 4` heads of
//!   `HD = 32`. The activations are `[B · T, D]` (one row per token), so `layer_norm` (which
//!   takes matrices) applies to them directly.
//! * Token embedding `[V, D]` (`embedding` of the ids) plus the position embedding `[T, D]`,
//!   broadcast over the windows: the tokens as `[B, T · D]` plus the positions as one row of
//!   `T · D` (`add_row`).
//! * Per block, pre-LayerNorm (gain and bias, eps 1e-5): `h = h + attn(LN1(h))`,
//!   `h = h + MLP(LN2(h))`. The attention projects with one fused `W_qkv [D, 3D]` + `b_qkv`,
//!   splits q, k and v, lays the heads out as the batch axis of batched products
//!   (`[B · T, D] → [B, T, H, HD] → [B · H, T, HD]`), takes the causal softmax of `q·kᵀ / √HD`,
//!   and projects back with `W_o [D, D]` + `b_o`; the MLP is `D → 4D → D` with GELU (tanh form).
//! * A final LayerNorm and `W_head [D, V]` (no bias) give the logits; the loss is the mean
//!   cross-entropy over all `B · T` next-character targets.
//!
//! 29 parameter tensors: the two embeddings, 12 per block (as 12 parameter arrays of `L`), the
//! final gain and bias, and `W_head`.
// Each user (the example, the bench, the examples' test) takes the items it needs.
#![allow(dead_code)]

use exactgrad::typenum::Unsigned;
use exactgrad::{graph, Init, InvalidHyperparameter, Pack, Shape, Tensor};

graph! {
    /// Context length (tokens per window).
    const T: usize = 64;
    /// Windows per batch.
    const B: usize = 8;
    /// Model width.
    const D: usize = 128;
    /// Blocks.
    const L: usize = 2;
    /// Heads.
    const H: usize = 4;
    /// Width of one head.
    const HD: usize = 32;
    /// `√HD`, the divisor of the attention scores.
    const SQRT_HD: f64 = (HD as f64).sqrt();

    /// Causal multi-head self-attention of the `[B · T, D]` rows `x`, the heads the batch axis of
    /// the batched products.
    fn attention(x, w_qkv, b_qkv, w_o, b_o) {
        let qkv = x.matmul(w_qkv) + b_qkv;
        let (q, k, v) = split(qkv, 1, 3);
        let q4: [B, T, H, HD] = reshape(q);
        let k4: [B, T, H, HD] = reshape(k);
        let v4: [B, T, H, HD] = reshape(v);
        // [B · H, T, HD] · [B · H, HD, T]: one product per window and head.
        let qh: [B * H, T, HD] = reshape(permute(q4, [0, 2, 1, 3]));
        let kt: [B * H, HD, T] = reshape(permute(k4, [0, 2, 3, 1]));
        let vh: [B * H, T, HD] = reshape(permute(v4, [0, 2, 1, 3]));
        let scores = causal_mask(qh.matmul(kt) / SQRT_HD, f64::NEG_INFINITY);
        let heads: [B, H, T, HD] = reshape(softmax(scores).matmul(vh));
        let o: [B * T, D] = reshape(permute(heads, [0, 2, 1, 3]));
        o.matmul(w_o) + b_o
    }

    /// The position-wise MLP, `D → 4D → D`.
    fn mlp(x, w_1, b_1, w_2, b_2) {
        gelu(x.matmul(w_1) + b_1).matmul(w_2) + b_2
    }

    /// The model on `B` windows of `T` characters: the mean cross-entropy of the next character
    /// over all `B · T` positions, and the logits. `ids` are the input characters and `targets`
    /// the next ones, both window-major (position `t` of window `b` at `b · T + t`).
    pub(crate) fn gpt<V>(
        tok_emb: [V, D], pos_emb: [T, D],
        ln1_g: [[D]; L], ln1_b: [[D]; L], w_qkv: [[D, 3 * D]; L], b_qkv: [[3 * D]; L],
        w_o: [[D, D]; L], b_o: [[D]; L], ln2_g: [[D]; L], ln2_b: [[D]; L],
        w_1: [[D, 4 * D]; L], b_1: [[4 * D]; L], w_2: [[4 * D, D]; L], b_2: [[D]; L],
        lnf_g: [D], lnf_b: [D], w_head: [D, V];
        ids: Vec<usize>, targets: Vec<usize>
    ) -> ([], [B * T, V]) {
        let tokens: [B, T, D] = embedding(tok_emb, ids);
        let rows: [B, T * D] = reshape(tokens);
        let positions: [T * D] = reshape(pos_emb);
        let mut h: [B * T, D] = reshape(rows + positions);
        for l in 0..L {
            h = h + attention(layer_norm(h, ln1_g[l], ln1_b[l]), w_qkv[l], b_qkv[l], w_o[l], b_o[l]);
            h = h + mlp(layer_norm(h, ln2_g[l], ln2_b[l]), w_1[l], b_1[l], w_2[l], b_2[l]);
        }
        let logits = layer_norm(h, lnf_g, lnf_b).matmul(w_head);
        (cross_entropy(logits, targets), logits)
    }
}

/// Context length (the graph's `T`).
pub(crate) const CONTEXT: usize = 64;
/// Windows per batch (the graph's `B`).
pub(crate) const BATCH: usize = 8;
/// Parameter tensors: the embeddings, 12 per block, the final gain and bias, `W_head`.
pub(crate) const PARAMETERS: usize = 29;

/// The model's parameters for a vocabulary of `V` characters (the inputs of `gpt`).
pub(crate) type Params<V> = Pack<f32, GptInputs<V>>;

/// Fresh parameters drawn from `seed`: matrices and embeddings from N(0, 0.02²), biases 0, gains
/// 1. The draws are made in the order of the inputs.
///
/// # Errors
/// Never for these constants (`Init::normal` checks its standard deviation).
pub(crate) fn init<V: Unsigned + 'static>(seed: u64) -> Result<Params<V>, InvalidHyperparameter> {
    let (_, h) = gpt::<f32, V>();
    let mut init = Init::seeded(seed);
    fn ones<S: Shape>() -> [Tensor<f32, S>; 2] {
        [Tensor::full(1.0), Tensor::full(1.0)]
    }
    fn zeros<S: Shape>() -> [Tensor<f32, S>; 2] {
        [Tensor::zeros(), Tensor::zeros()]
    }
    let tok_emb = init.normal(0.0, 0.02)?;
    let pos_emb = init.normal(0.0, 0.02)?;
    let w_qkv = [init.normal(0.0, 0.02)?, init.normal(0.0, 0.02)?];
    let w_o = [init.normal(0.0, 0.02)?, init.normal(0.0, 0.02)?];
    let w_1 = [init.normal(0.0, 0.02)?, init.normal(0.0, 0.02)?];
    let w_2 = [init.normal(0.0, 0.02)?, init.normal(0.0, 0.02)?];
    let w_head = init.normal(0.0, 0.02)?;
    Ok(h.inputs(
        tok_emb,
        pos_emb,
        ones(),
        zeros(),
        w_qkv,
        zeros(),
        w_o,
        zeros(),
        ones(),
        zeros(),
        w_1,
        zeros(),
        w_2,
        zeros(),
        Tensor::full(1.0),
        Tensor::zeros(),
        w_head,
    ))
}
