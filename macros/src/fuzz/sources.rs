//! Valid `graph!` sources the fuzzers start from: a built-in list covering every syntax form (generic
//! dims, a bounded scalar, data tensors and labels, declared ops, opaque nodes, user ops, constants,
//! several outputs, loops, `const`s, parameter arrays and helpers) and the random corpus of `tests/corpus/models.rs`.

/// Sources covering the syntax forms the corpus does not use.
pub(super) const BUILT_IN: &[&str] = &[
    "fn f(x: [2, 3], w: [3, 4]) -> [] { let h = relu(x.matmul(w)); sum(h) }",
    "pub fn mlp<B>(w1: [4, 3], b1: [3], w2: [3, 2]; x: [B, 4], m: [B, 3], labels: Vec<usize>) -> [] {
        let h = relu(x.matmul(w1) + b1) * m;
        cross_entropy(h.matmul(w2), labels)
    }",
    "fn masked(w: [2]; mask: [2], note: [u8; 2]) -> [2] { w * mask }",
    "/// docs
     pub fn f<T: num_traits::Float, B>(x: [B, 3], w: [3, 4]; labels: Vec<usize>, m: [B, 4]) -> ([], [B, 4]) {
         let h: [B, 4] = x.matmul(w);
         (sum(h), h)
     }",
    "fn heads(a: [3], x: [3]) -> ([], [], [3]) {
        let y: [3] = Axpy(a, x, x);
        let side = a * a;
        let s: [3] = opaque(y, forward = |y| y.map(|v| v.exp().ln_1p()), vjp = |y, g| [softplus_vjp(y, g)]);
        let loss = sum(s);
        (loss, sum(side), y)
    }",
    "fn emb(table: [10, 4], w: [4, 2]; ids: Vec<usize>) -> [3, 2] {
        let e: [3, 4] = gather_rows(table, ids);
        e.matmul(w)
    }",
    "fn attend(table: [10, 4], wq: [4, 4], wo: [4, 2]; ids: Vec<usize>, pad: Vec<bool>) -> [2, 3, 2] {
        let e: [2, 3, 4] = embedding(table, ids);
        let q = e.matmul(wq);
        let s = causal_mask(q.matmul(permute(e, [0, 2, 1])), f64::NEG_INFINITY);
        softmax(masked_fill(s, pad, -1e9)).matmul(e).matmul(wo)
    }",
    "fn shapes(x: [2, 3, 4], y: [2, 3, 1]) -> [3, 2] {
        let c = concat(x, y, 2);
        let s = slice(c, 2, 1, 3);
        let p = permute(s, [2, 1, 0]);
        let r: [9] = reshape(sum_axis(p, 2));
        let q = mean_axis(p, 1);
        let t: [6] = reshape(q);
        let u: [3, 2] = reshape(t);
        u * 0.5 - u * 2 + -u
    }",
    "fn cnn<B>(x: [B, 2, 6, 6], k: [3, 2, 3, 3], s: [B, 2, 5], q: [4, 2, 2]) -> ([B, 3, 3, 3], [B, 4, 2]) {
        let h = relu(conv2d(x, k, padding = 1, stride = (1, 1), dilation = 1));
        let p = max_pool2d(h, kernel = 2);
        let a = avg_pool2d(h, kernel = (3, 2), stride = 2, padding = (1, 0));
        (p + a, conv1d(s, q, stride = 2))
    }",
    "fn norm(x: [4, 3], g: [3], b: [3]) -> ([4, 3], [4, 3]) {
        let y = layer_norm(x, g, b);
        (softmax(y), log_softmax(y * 1e-3))
    }",
    "fn ew(a: [2, 2], b: [2, 2]) -> [] {
        let c = div(a, b) + max(a, b) - min(a, b);
        let d = tanh(c) * sigmoid(c) + softplus(c) + gelu(c) + exp(c) + log(c) + sqrt(c) + square(c);
        mse(d, a) + mean(d) + sum(a.t())
    }",
    "const D: usize = 3;
     fn dense(x: [n, d], w: [d, e]) { let z: [n, e] = x.matmul(w); tanh(z) }
     fn stack<B>(x: [B, D], w: [[3, 3]; 2], b: [[3]; 2]) -> [B, 3] {
         let mut h = x;
         for i in 0..2 {
             h = residual(h, w, b, i, 1.0 / (D as f64).sqrt());
         }
         h
     }
     fn residual(h, ws, bs, k, c) { h + dense(h, ws[k]) * c + bs[k] * 0.0 }",
    "fn nested(x: [2, 4]; m: [2, 4]) -> [] {
         const K: usize = 2;
         let mut s = sum(x);
         for i in 0..K { for j in i..K { s = s * 0.5 + sum(slice(x * m, 1, i + j, 1)); } }
         s
     }",
];

/// The sources of `tests/corpus/models.rs`: the text inside each `graph! { … }`.
pub(super) fn corpus() -> Vec<String> {
    const CORPUS: &str = include_str!("../../../tests/corpus/models.rs");
    CORPUS.split("graph! {").skip(1).filter_map(|block| block.split("\n}\n").next().map(str::to_owned)).collect()
}

/// Every seed source: the built-in list, then the corpus.
pub(super) fn all() -> Vec<String> {
    BUILT_IN.iter().map(|s| (*s).to_owned()).chain(corpus()).collect()
}
