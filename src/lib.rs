//! **exactgrad**: differentiable models written inline in Rust, with reverse-mode passes that are
//! fast *and* bit-for-bit equal to the dense reference on every scalar type.
//!
//! This facade re-exports the engine ([`exactgrad_runtime`]: tensors, typed shapes, graphs, every
//! reverse pass) and the [`graph!`] macro, which turns Rust-like forward code into a typed graph
//! whose shapes are checked by the compiler.
//!
//! # A first model
//!
//! ```
//! use exactgrad::typenum::U2;
//! use exactgrad::{graph, Tensor};
//!
//! graph! {
//!     /// A two-layer perceptron; `B` is the batch size.
//!     pub fn mlp<B>(x: [B, 3], w1: [3, 4], b1: [4], w2: [4, 2]) -> [] {
//!         let h = relu(x.matmul(w1) + b1);
//!         mean(tanh(h.matmul(w2)) * 0.5)
//!     }
//! }
//!
//! let (graph, h) = mlp::<f64, U2>();            // scalar type, then the generic dims
//! let inputs = h.inputs(
//!     Tensor::from_fn(|i| i as f64 / 6.0),        // x: [2, 3]
//!     Tensor::full(0.1),                          // w1
//!     Tensor::zeros(),                            // b1
//!     Tensor::full(-0.2),                         // w2
//! );
//! let saved = graph.compile(inputs, ()).unwrap();  // one saved forward
//! let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
//! assert_eq!(grads.get(h.w1).unwrap().dims().as_slice(), &[3, 4]);
//! ```
//!
//! # The `graph!` syntax
//!
//! ```text
//! graph! {
//!     /// docs and attributes pass through
//!     pub fn name<B, T>(input: [d0, d1], …; data: Type, x: [d0, …], …) -> [d0, …] {   // or -> ([…], […])
//!         let a = expression;
//!         let b: [d0, …] = expression;      // an annotation is checked (and required for opaque
//!         …                                 // nodes and user ops)
//!         result                            // or (result0, result1) for several outputs
//!     }
//! }
//! ```
//!
//! * **Dims** are integer literals of any size or generic dims declared in `<…>` (each must occur
//!   in some input or data tensor). Shapes have rank 0 to 4; `[]` is a scalar.
//! * **Inputs** before the `;` are differentiable tensors. **Data** parameters after it
//!   (labels, constants, batches) become the graph's non-differentiable data Δ: a generated struct
//!   `NameData { pub data: Type, … }` that [`GraphData::compile`] takes (`()` when there is none).
//! * **Data tensors** are data parameters declared with a shape (`x: [B, 784]`): tensors of the
//!   graph's scalar type that are data, not inputs — no gradient is computed for them (see
//!   [Data tensors](#data-tensors)). A data parameter of any other type (`labels: Vec<usize>`)
//!   only names labels or ids; using it as a tensor is an error, and so is naming a data tensor
//!   as labels or ids.
//! * **Expressions**: names of inputs and earlier bindings; `+`, `-`, `*`, `/` (elementwise:
//!   `add`, `sub`, `mul`, `div`) and unary `-`; `matrix + row_vector` broadcasts (`add_row`).
//!   With a constant: `x * c` or `c * x` scales (`scale`), `x + c` or `c + x` adds it per element
//!   (`offset`), `x - c` is `x + (-c)` (which IEEE subtraction is), and `x / c` divides every
//!   element by it (`div_const`: one division each, not the product with the rounded reciprocal
//!   `x * (1.0 / c)`, which can differ in the last bit). `c - x` and `c / x` are errors naming the
//!   rewrite meant. The constant is converted to the scalar type; one that does not fit is
//!   reported by `compile`, and so is `x / 0` over integers. Built-in ops in function or method
//!   form, nested freely:
//!
//!   every built-in op is listed in the table below (generated from `exactgrad_spec`, the one
//!   source of op facts, and checked against it by a test), with its shape rule, its compact VJP
//!   (whose `single`s are its static support) and the saved values that VJP reads.
//!
#![doc = include_str!("../docs/ops.md")]
//!
//! * **Loops and constants**: `const D: usize = 16;` (outside the `fn` or in the body; integer or
//!   `f64`/`f32`) names a constant; a const integer also serves as a dim (`x: [2, D]`). `for i in
//!   0..N { … }` with constant bounds (literals, `const`s, arithmetic on them — not a generic dim,
//!   whose size the macro does not know) runs when the macro expands, at most 100 000 nodes in
//!   all. A loop whose iterations have one structure — node for node the same ops, constants (a
//!   `slice`'s start aside: `slice(e, 0, t * B, B)` reads it from a table) and shapes, each reading a node of its own iteration, the previous iteration's (the first: a
//!   value from before the loop), one value from before the loop, or one that changes with the
//!   iteration such as `w[i]` — and whose later nodes read only its last iteration is **written as
//!   a loop**: one body (its typed constructors, so the compiler checks its shapes once) called per
//!   iteration, its part of the node list one `Repeat<body shapes, N>` entry, so a 2 000-iteration
//!   loop builds about as fast as a 2-iteration one (bodies of up to 256 nodes); other loops are
//!   unrolled (the graph is the same either way, node for node). Consecutive calls of one helper,
//!   each starting where the last one's nodes end (`let h = layer(x, w[0]); let h = layer(h,
//!   w[1]);`), are such a loop too. In its body `let mut h = …;` bindings from outside are reassigned (`h = h + a;`, the
//!   new value must have the binding's first shape; errors name the iteration, `in iteration i =
//!   3 of `for i in 0..4``), and the loop variable is a constant: `slice(z, 1, i * D, D)`,
//!   `w[i]`. Integer positions (bounds, axes, slice arguments, indices) use checked integer
//!   arithmetic; float positions (`x * (1.0 / (D as f64).sqrt())`, eps) are computed in `f64`
//!   as written. A **parameter array** `w: [[64, 64]; 4]` is 4 inputs `w[0]`…`w[3]` (one
//!   `Array<shape, 4>` entry of the input list): its handle field is `w: [Position<…>; 4]` and
//!   `inputs(…)` takes `[Tensor<…>; 4]`; `w[i]` out of range is an error. Nodes made in an iteration are labelled `h@i=3` in `describe_backward`.
//! * **Helpers**: `fn block(x, w) { … }` — a `fn` without `->`, before or after the graph's `fn`
//!   in the same `graph!` — is a sub-graph inlined at each call (`block(h, w[0])` or
//!   `h.block(w[0])`). Its parameters are bound to what the call passes: a graph value, a
//!   constant (`block(h, w, 0.5)`, a loop variable), or a whole parameter array (`ws`, then
//!   `ws[k]` inside). An annotation `x: [n, d]` is checked at each call; a dim in it that is not a
//!   literal, a `const` or a generic dim of the graph is bound there (`n`, `d`: every later use must
//!   agree) and may be used in the body's annotations. A helper sees its parameters, the `const`
//!   items outside every `fn` and the graph's data parameters — not the caller's bindings nor the
//!   graph's inputs (pass them). It ends with one result value. Helpers may call helpers (at most 32
//!   deep), contain loops and be called from loops; a helper that calls itself, directly or through
//!   others, is an error naming the chain. Nodes made in a call are labelled with the call path in
//!   `describe_backward`: `block#2/h` (the second call of `block` in the graph, binding `h`),
//!   `layer#1/attn#3/q@i=0`, and `block#2/result` for its result expression; an error inside a call
//!   names it, ``in call block#2 `block(h, w[1])`: …``, at the helper's token, and the call site gets
//!   one more error.
//! * **Constants from outside the macro**: a procedural macro sees only its own tokens, so a
//!   `const` declared outside `graph!` cannot be read (as a dim, a loop bound, an index or a factor).
//!   Declare it inside the macro (`const D: usize = 16;`, before or after the graph's `fn`); a dim
//!   that varies is a generic dim of the graph (`fn f<B>(x: [B, 4])`), sized when the graph is
//!   instantiated. Any constant expression may combine the macro's constants
//!   (`1.0 / (D as f64).sqrt()`); an integer `const`, or an integer expression of literals and
//!   `const`s (`[T * B, H]`, checked: no overflow, no negative size), is a dim anywhere a shape is
//!   declared — inputs, data tensors (`x: [N, 4]`), annotations, outputs. A computed dim may not
//!   use a generic or run-time dim (`[B * 2, 4]`), whose size the macro does not know. A float constant that does not fit the
//!   scalar type (`x * 1e39` in an `f32` graph) is reported by `compile` as a node error naming the
//!   node, its op and the constant (the macro does not know the scalar type; one that overflows `f64` is an error
//!   when the macro expands).
//! * **Convolutions and poolings** take their values, then their constants by name, each an
//!   integer literal (every spatial axis) or, for a two-dimensional op, a pair `(height, width)`:
//!   `conv2d(x, w, stride = 2, padding = (1, 0), dilation = 1)` (defaults 1, 0, 1),
//!   `max_pool2d(x, kernel = 2)`, `avg_pool2d(x, kernel = (2, 3), stride = 1, padding = 1)`
//!   (stride defaults to the kernel, padding to 0). Layouts are channels first: images
//!   `[n, c, h, w]`, sequences `[n, c, l]` (`conv1d`), filters `[c_out, c_in, kh, kw]`; the
//!   spatial sizes are literal, the batch and the channels may be generic dims. There is no bias
//!   operand: add one per channel with `add_row` on the channels-last form (`permute`, `reshape`).
//!   Padded taps are zeros in a convolution's products, skipped by max pooling, and not counted by
//!   average pooling; SEMANTICS §8.1 fixes the order of every sum and the ties and NaNs of the max.
//! * **Concatenation, split and dropout** (SEMANTICS §8.3): `concat([a, b, c], 1)` joins one or
//!   more parts in **one** node (a part may repeat; `concat(a, b, 1)` is the two-part form); the
//!   sizes along the axis are literal. `let (a, b, c) = split(x, 1, [2, 3, 4]);` binds one name
//!   per part (sizes that add up to the axis, or `split(x, 1, 3)` for three equal parts) and lowers
//!   to one `slice` per part. `dropout(x, 0.5, seed)` takes a constant probability in `[0, 1)` and
//!   a data parameter `seed: u64`: the mask is a pure function of the seed and the element index
//!   (SplitMix64), so every pass of one saved forward sees the same mask and each step can pass a
//!   new seed; kept elements are multiplied by `1 / (1 - p)` (converted by `from_f64`), dropped
//!   ones by `0`.
//! * **Opaque nodes** wrap user closures: `let y: [3] = opaque(a, b, forward = |a, b| …, vjp =
//!   |a, b, g| [da, db]);`. `forward` gets the read values (`&RawTensor`) and returns the output;
//!   `vjp` gets them and the cotangent and returns one gradient per read value (zeros elsewhere in
//!   the prefix; a value read twice gets the sum) — or, with `vjp_all = |prefix, g| pack`, one
//!   tensor per earlier position (the dense VJP over the whole prefix). An opaque node is marked opaque: the
//!   single-output pass treats it as depending on its whole prefix. Graphs with opaque nodes ask
//!   the scalar for `num_traits::Float`.
//! * **User compact ops**: a type implementing [`CompactOp`] and [`FromParents`] is called like a
//!   built-in with a CamelCase name and a declared shape: `let y: [3] = Axpy(a, x, y);`. It gets
//!   the same exact, compact treatment as the built-in ops.
//!
//! # What it generates
//!
//! For `fn name<B>(…)`: a function `name::<Scalar, B>()` returning `(NameGraph<Scalar, B>,
//! NameHandles<B>)`, where `NameGraph` is an alias of [`GraphData`] with both shape lists spelled
//! as typenum types (`NameInputs<B>`, `NameNodes<…>`) and a brand of its own, and `NameHandles`
//! holds a typed [`Position`] per input (named after it) and per output (`output`, or `output0`,
//! `output1`, …), plus `inputs(…)` to build the input pack in order and `input_names()`, the
//! inputs' names in that order (the names parameters are saved and loaded under). Each generated type takes
//! exactly the generic dims its shapes use: `NameInputs` those of the inputs, `NameHandles` those
//! of the inputs and outputs (so with `fn mlp<B>(w: [784, 10]; x: [B, 784]) -> []` it is plain
//! `MlpHandles`), `NameNodes` those of the nodes. The data struct is `NameData` (no generics)
//! unless it holds a data tensor; then it is `NameData<Scalar, …>`, generic over the scalar and the
//! dims its tensors use, with one typed field per data tensor (`pub x: Tensor<Scalar, (B, U784)>`),
//! and `NameGraph<Scalar, B>` names it so. It is `Clone` and `Debug` whenever every field is (a
//! field of a type without them leaves the impl out). Passing inputs of the wrong
//! shapes to `compile`, a seed of the wrong shape, or a handle of another graph is a compile
//! error at the call site. For every built-in op node the graph holds its compact VJP and static
//! support; `describe()` (or `Display`) lists nodes with op, parents, shape, support and opaque
//! markers.
//!
//! And the model type `Name` (see [Generated backward programs](#generated-backward-programs)):
//! `Name::support()` and `Name::reads()` (per node, its static support and the saved values its VJP
//! reads), `Name::describe_backward()` and `Name::program::<Scalar, B>()`.
//!
//! `graph! { pub fn affine(x: [2, 3], w: [3, 4]) -> [2, 4] { relu(x.matmul(w)) } }` expands to
//! (abridged; everything is named through `::exactgrad::__private`). Literal dims read
//! decimally: typenum's own alias (`U2`, `U784`) for the sizes typenum predefines (0 to 1024, the
//! powers of two and of ten, …), and for any other size an alias of the same form (`U3072`) in a
//! hidden module the expansion adds, `__exactgrad_sizes_affine`, so rustdoc and the generated
//! items never show the binary `UInt<UInt<UTerm, B1>, B0>`. (The compiler's own type-mismatch
//! notes resolve aliases and still print typenum numbers in binary; the messages of the shape
//! rules are phrased without numbers, and the macro reports literal shapes itself, in decimal.)
//!
//! ```text
//! pub type AffineData = ();
//! pub enum AffineBrand {}
//! pub type AffineInputs = Snoc<Snoc<Nil, (U2, U3)>, (U3, U4)>;
//! pub type AffineNodes = Snoc<Nil, ((U2, U4), (U2, U4))>;   // node shapes, in chunks of 32
//! pub type AffineGraph<S> = GraphData<S, AffineData, AffineInputs, AffineNodes, AffineBrand>;
//! pub struct AffineHandles {
//!     pub x: Position<(U2, U3), AffineBrand>,
//!     pub w: Position<(U3, U4), AffineBrand>,
//!     pub output: Position<(U2, U4), AffineBrand>,
//! }
//! impl AffineHandles {
//!     pub fn input_names(&self) -> &'static [&'static str] { &["x", "w"] }
//!     pub fn inputs<S>(&self, x: Tensor<S, (U2, U3)>, w: Tensor<S, (U3, U4)>) -> Pack<S, AffineInputs> { … }
//! }
//! pub fn affine<S>() -> (AffineGraph<S>, AffineHandles)
//! where S: Scalar + Mul<Output = S> + PartialOrd
//! {
//!     let b = MacroBuilder::<S, AffineData, AffineBrand>::new();
//!     let (b, v0) = b.input::<(U2, U3)>();
//!     let (b, v1) = b.input::<(U3, U4)>();
//!     // Every shape spelled out: `(U2, U3): MatMulShape<(U3, U4), Output = (U2, U4)>` must hold.
//!     let (b, v2) = b.push(ops::matmul::<S, AffineData, (U2, U3), (U3, U4), (U2, U4), AffineBrand>(v0, v1));
//!     let (b, v3) = b.push(ops::relu::<S, AffineData, (U2, U4), (U2, U4), AffineBrand>(v2));
//!     (b.finish(), AffineHandles { x: v0, w: v1, output: v3 })   // finish's type must be `AffineGraph<S>`
//! }
//! ```
//!
//! Each built-in node is its op's typed constructor with the operand and output shapes written
//! out, so the op's rule trait (`rules::MatMulShape`, …, one per shape rule) checks it — for
//! generic dims as for literal ones — and the builder's type records every shape pushed, so the
//! graph's type is checked against the `…Inputs` and `…Nodes` aliases: nothing is retyped
//! unchecked. The macro's own inference runs first, for literal dims, so its messages carry the
//! sizes in decimal and point at the expression.
//!
//! # Generated backward programs
//!
//! `graph!` also writes the backward program of each model. From the ops' support patterns
//! (`exactgrad_spec`) it plans, at expansion time, every reverse sweep — the all-inputs pass seeded
//! at the outputs, and the single-output pass of each declared output (which visits only what the
//! output reaches, SEMANTICS §7) — down to which uniforms are pending on each gradient position
//! when it is written, and writes it out as tables (`Name::plan()`, a [`Plan`](program::Plan)
//! of `static`s: one row per node, per forward level and per visit of each pass), and a short
//! `Name::run` that walks them — a call per stretch of rows, a Rust `for` loop per rolled loop —
//! through the runtime's routines: the model's generated code does not grow with its node count,
//! and the runtime's code is compiled once, in the runtime.
//! `Name::program::<Scalar, B>()` returns a [`Program`] that runs them on reused buffers:
//!
//! ```
//! use exactgrad::typenum::U2;
//! use exactgrad::{graph, Seeds, Tensor};
//!
//! graph! {
//!     fn mlp<B>(x: [B, 3], w1: [3, 4], w2: [4, 2]) -> [] {
//!         mean(tanh(relu(x.matmul(w1)).matmul(w2)))
//!     }
//! }
//!
//! let (g, h) = mlp::<f64, U2>();
//! let mut params = h.inputs(Tensor::full(0.5), Tensor::full(0.1), Tensor::full(-0.2));
//! let mut prog = Mlp::program::<f64, U2>();
//! let grads = prog.gradients(&mut params, &(), &Tensor::full(1.0)).unwrap();   // all inputs
//! let w1 = grads.get(h.w1).unwrap().clone();
//!
//! // Bit for bit the runtime's dense reference on the same graph:
//! let saved = g.compile(params.clone(), ()).unwrap();
//! let dense = saved.backprop_inputs_dense(Seeds::single(&g, h.output, Tensor::full(1.0)).unwrap()).unwrap();
//! assert!(w1.storage_eq(dense.get(h.w1).unwrap()));
//! println!("{}", Mlp::describe_backward());
//! ```
//!
//! Its tables read like the schedule they are; for `mlp` above (`cargo expand` shows them):
//!
//! ```text
//! static __SWEEP0: Sweep = Sweep {
//!     steps: &[
//!         Step::built(4, 0..0, &[(6, 0..0)]),   // visit 0: mean(%6), nothing pending on %6
//!         Step::built(3, 1..1, &[(5, 0..1)]),   // tanh(%5): %5 + the uniform of visit 0
//!         // x·w1·w2's second product: each gradient computed straight onto a position still
//!         // holding a uniform, the pending uniforms and the `+` fused into the GEMM's store
//!         Step::product(2, 2..2, &[(4, 0..2), (2, 0..2)]),
//!         Step::built(1, 3..3, &[(3, 0..3)]),   // relu(%3)
//!         Step::product(0, 4..4, &[(0, 0..4), (1, 0..4)]),
//!     ],
//!     inputs: Table::flat(&[5..5, 5..5, 3..5]),   // per input, the visits still pending at the end
//! };
//! static __PLAN: Plan = Plan {
//!     nodes: &[PlannedNode::builtin("matmul", &[0, 1], "[B, 4]", ""), /* … */],
//!     forward: &[Level { nodes: &[0], frees: &[] }, /* … */ Level { nodes: &[3], frees: &[5] }, /* … */],
//!     passes: &[PassPlan::Planned(&__SWEEP0), PassPlan::Planned(&__SWEEP0)],  // one table for both
//!     inputs: &[InputDecl::one("x"), InputDecl::one("w1"), InputDecl::one("w2")],
//!     memory: MemoryPlan { values: Table::flat(&[0, 1, 2, 3, 2]), /* … */ },
//!     /* … */
//! };
//! ```
//!
//! A loop's rows, and the runs of a per-node or per-input list that move by a constant step
//! (`0, 1, 2, …`, buffers alternating between iterations), are written once with a `Repeat`
//! giving that step, so no table grows with a loop's trip count; `Name::run` runs a loop's
//! iterations as a loop (for `for i in 0..2000 { h = tanh(h * a[i] + b[i]) }`:
//! `for k in 0..2000 { s.forward_rows(plan, g, Iteration(0, k)); }` in the forward and the same
//! over the sweep's repeat in each pass). `Name::describe_backward()` prints the same tables in
//! words.
//!
//! The forward runs by levels (a node one level above the nodes it reads; a level of several
//! built-in nodes is computed at the same time when the pool has threads to spare and the level
//! is large enough); a failing node is
//! recorded and the error reported is the first in node order, as `compile` reports it.
//!
//! Every result is the runtime pass's, bit for bit, on every scalar type (`tests/program_*.rs`
//! check it on every op, a corpus of random models, integers and a symbolic scalar): a pending
//! run of uniforms is applied as one addition for scalars where adding zero is idempotent
//! ([`Storage::ZERO_ADD_IDEMPOTENT`]) and addition by addition otherwise. The forward keeps only
//! the values a VJP reads and the outputs; value and gradient buffers are planned by liveness
//! when the macro expands (`describe_backward` lists them) and sized on the first run, so for a
//! model of built-in ops every later run on the same shapes makes no heap allocation
//! (`tests/program_allocations.rs` counts them); [`Program::planned_bytes`] tells what a program
//! holds between runs. Opaque nodes and user
//! compact ops run through the runtime's machinery and touch their whole prefix; in a model with
//! user compact ops, whose supports are declared only when the graph is built, each single-output
//! pass runs the runtime's own `backprop_from` loop over the program's values.
//!
//! # Data tensors
//!
//! A data parameter declared with a shape is a **data tensor**: a typed field of `NameData`
//! (`Tensor<Scalar, Shape>`, so its shape is checked by the compiler when the data is built, and
//! its literal dims take part in the macro's shape inference and error messages like an input's).
//! It is lowered by where it is used:
//!
//! * as the **left operand of `matmul`** (`x.matmul(w)` or `matmul(x, w)`): one
//!   [`ops::MatMulData`] node reading `x` from the data — only `w`'s gradient is computed, with the
//!   same kernel as `matmul`'s, so it has the same bits as when `x` is an input;
//! * **anywhere else** (`x * w`, `h + x`, `w.matmul(x)`, `x.t()`, a batch `x: [B, m, k]` on the
//!   left of `matmul`, …): one [`ops::DataTensor`] leaf,
//!   made at the first such use and shared by the later ones, whose value is a copy of the data's
//!   tensor and which has no parents (its VJP is `fill(0)`, like any node's zero contribution).
//!
//! A typed field (rather than an untyped [`RawTensor`] checked by `compile`) keeps shapes
//! compile-time checked end to end; `compile` still validates what it reads (an `Error::Node`
//! naming the op and the shapes in decimal), which only a hand-built graph can get wrong.
//!
//! ```
//! use exactgrad::typenum::U2;
//! use exactgrad::{graph, Tensor};
//!
//! graph! {
//!     /// A classifier whose batch `x` is data: the first layer computes no gradient for `x`.
//!     pub fn mlp<B>(w1: [3, 4], b1: [4], w2: [4, 2]; x: [B, 3], labels: Vec<usize>) -> [] {
//!         let h = relu(x.matmul(w1) + b1);
//!         cross_entropy(h.matmul(w2), labels)
//!     }
//! }
//!
//! let (graph, h) = mlp::<f64, U2>();                 // `h: MlpHandles` (`B` only in the data)
//! let data = MlpData {                                // `MlpData<f64, U2>`
//!     x: Tensor::from_fn(|i| i as f64 / 6.0),          // [2, 3]
//!     labels: vec![1, 0],
//! };
//! let inputs = h.inputs(Tensor::full(0.1), Tensor::zeros(), Tensor::full(-0.2));
//! let saved = graph.compile(inputs, data).unwrap();
//! let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
//! assert_eq!(grads.get(h.w1).unwrap().dims().as_slice(), &[3, 4]);
//! assert!(graph.describe().contains("matmul_data(%0)"));  // x · w1 reads x from the data
//! ```
//!
//! # Attention: batched products, embeddings, masks
//!
//! `matmul` takes batches of matrices, `[b, m, k] · [b, k, n]`, and a batch times one matrix
//! shared by every item, `[b, m, k] · [k, n]` (a projection); `embedding` (an alias of
//! `gather_rows`) looks up one row of a table per token id, the binding declaring the ids' layout
//! (`[b, t, d]` for ids of `b` sequences of `t` tokens, row-major); `causal_mask(scores, value)`
//! fills the columns past each row of `[…, t, t]` scores, and `masked_fill(x, mask, value)` the
//! elements a data parameter of `bool`s marks (covering `x`'s trailing axes, repeated over the
//! others). A fill value may be an infinity (`f64::NEG_INFINITY`); the gradient of a filled
//! element is `0`. SEMANTICS §8.2 fixes every sum.
//!
//! ```
//! use exactgrad::{graph, Tensor};
//!
//! graph! {
//!     /// One causal attention head over 2 sequences of 3 tokens, with a padding mask.
//!     pub fn head(table: [5, 4], wq: [4, 4], wk: [4, 4], wv: [4, 4]; ids: Vec<usize>, pad: Vec<bool>) -> [] {
//!         let x: [2, 3, 4] = embedding(table, ids);
//!         let q = x.matmul(wq);
//!         let k = x.matmul(wk);
//!         let scores = causal_mask(q.matmul(permute(k, [0, 2, 1])) * 0.5, f64::NEG_INFINITY);
//!         let attn = softmax(masked_fill(scores, pad, -1e9));
//!         sum(attn.matmul(x.matmul(wv)))
//!     }
//! }
//!
//! let (graph, h) = head::<f64>();
//! let data = HeadData { ids: vec![4, 0, 2, 2, 0, 3], pad: vec![false, false, false, true, false, false, false, false, false] };
//! let inputs = h.inputs(Tensor::full(0.5), Tensor::full(0.1), Tensor::full(0.2), Tensor::full(-0.3));
//! let saved = graph.compile(inputs, data).unwrap();
//! let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
//! assert_eq!(grads.get(h.table).unwrap().data()[4..8], [0.0; 4]); // no id 1: row 1 gets +0
//! assert_eq!(saved.value(h.output).unwrap().dims().as_slice(), &[] as &[usize]);
//! ```
//!
//! # Run-time dims
//!
//! A dim declared `name: dyn` among the generics is a **run-time dim**: its size is not part of
//! the type, but taken from the inputs (and the data tensors and ids) at every `compile`. One
//! graph and one generated program then serve every size — mini-batches of 64 and a partial last
//! batch of 39, or the whole test set in one call — while every other dim stays checked by the
//! compiler.
//!
//! ```
//! use exactgrad::{graph, Dims, RawTensor, Tensor};
//!
//! graph! {
//!     /// A classifier for any batch size.
//!     pub fn mlp<batch: dyn>(w1: [3, 4], b1: [4], w2: [4, 2]; x: [batch, 3], labels: Vec<usize>) -> [] {
//!         let h = relu(x.matmul(w1) + b1);
//!         cross_entropy(h.matmul(w2), labels)
//!     }
//! }
//!
//! let (graph, h) = mlp::<f64>();                        // no type for `batch`
//! let mut program = Mlp::program::<f64>();
//! for b in [64, 39, 64] {
//!     // A data tensor (or an input) with run-time dims is a `RawTensor`, checked by `compile`.
//!     let x = RawTensor::from_vec(Dims::matrix(b, 3), vec![0.5; 3 * b]).unwrap();
//!     let data = MlpData { x, labels: vec![1; b] };
//!     let inputs = || h.inputs(Tensor::full(0.1), Tensor::zeros(), Tensor::full(-0.2));
//!     let saved = graph.compile(inputs(), data.clone()).unwrap();
//!     assert_eq!(saved.raw().dims()[3], Dims::matrix(b, 4));  // x · w1 at the real batch
//!     let grads = saved.backprop_from(h.output, Tensor::full(1.0)).unwrap();
//!     let fast = program.gradients(&mut inputs(), &data, &Tensor::full(1.0)).unwrap();
//!     assert_eq!(grads.get(h.w1).unwrap().data(), fast.get(h.w1).unwrap().data());
//! }
//! assert!(graph.describe().contains("matmul_data(%0) : [batch, 4]"));  // shapes print `batch`
//! ```
//!
//! * **Semantics.** Compiled with `batch = b`, the model *is* the model written with the literal
//!   `b`: the same nodes, values and gradients, bit for bit, on every pass and every program
//!   (docs/SEMANTICS.md §2.1; `tests/run_time_dims.rs` checks it against the literal model).
//! * **Checking.** The macro treats a run-time dim as a symbol equal only to itself (never to a
//!   number or a generic dim), and shapes in its errors print its name. Ops that would need its
//!   size when the macro expands are errors naming it: a `slice` along it, a `reshape` that
//!   would split or merge it (`[batch, 4, 4]` → `[batch, 16]` keeps it and is fine), a `concat`
//!   along it, a convolution over it. A name that is neither a literal, a `const`, a generic nor
//!   a run-time dim is an error suggesting `fn name<batch: dyn>(…)`.
//! * **Types.** Inputs and data tensors whose shapes use a run-time dim are passed as
//!   [`RawTensor`]s (the other inputs stay `Tensor<A, S>`); a graph is instantiated without a type
//!   for the dim (`mlp::<f64>()`). Handles stay typed: at the type level a run-time dim is a
//!   reserved typenum number, its **stand-in** ([`exactgrad_runtime::shape::run_time_stand_in`]),
//!   and `Pack::get`, `ContextPack::get` and the passes accept any size along it. Gradients and
//!   values have the real dims.
//! * **Binding.** `compile` (and every program run) binds each run-time dim from the inputs, then
//!   from the data that `data_tensor`, `matmul_data` and `gather_rows` read, and recomputes every
//!   node's dims by its shape rule; sizes that disagree are an [`Error::RunTimeDim`] naming both
//!   (``run-time dim `batch` is 64 in input `x` but 39 in input `y` ``), a size of 0 is refused,
//!   and an input whose static axes differ is named with its declared shape (`[batch, 1, 8, 8]`).
//!   Labels that disagree with the batch are the op's own error (`cross_entropy`'s, at its node).
//!   A generated program keeps its buffers while the sizes stay the same and plans them anew
//!   when they change.
//!
//! # Shape errors
//!
//! With literal dims the macro infers every shape itself and reports each mismatch at the user's
//! expression, naming the op and the shapes in decimal — all independent errors of one graph at
//! once, and no cascade:
//!
//! ```compile_fail
//! exactgrad::graph! {
//!     fn model(x: [4, 3], w: [2, 5]) -> [4, 5] {
//!         x.matmul(w)   // matmul needs the left operand's columns (3) to equal the right operand's rows (2)
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! With generic dims the compiler checks the rule through trait bounds whose messages name the op
//! and the rule in words (`matmul needs the left operand's columns to equal the right operand's
//! rows`). `ui-tests/` pins every message.
//!
//! # Several outputs, data and user ops
//!
//! ```
//! use exactgrad::{graph, CompactOp, Contrib, Contributions, Dims, FromParents, RawTensor, SavedValues, Scalar, Tensor};
//!
//! /// `twice(x) = x + x`, written as a user compact op.
//! struct Twice([usize; 1]);
//! impl FromParents for Twice {
//!     fn from_parents(p: &[usize]) -> Self { Twice([p[0]]) }
//! }
//! impl<A: Scalar, D> CompactOp<A, D> for Twice {
//!     fn name(&self) -> &str { "twice" }
//!     fn parents(&self) -> &[usize] { &self.0 }
//!     fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> { Ok(prefix[self.0[0]]) }
//!     fn forward(&self, ctx: &[RawTensor<A>], _: &D) -> RawTensor<A> { ctx[self.0[0]].add(&ctx[self.0[0]]).expect("one shape") }
//!     fn contributions(&self, _: &SavedValues<'_, A, D>, _: &RawTensor<A>, c: &mut Contributions<A>) -> Contrib {
//!         let (l, r) = (c.single_cotangent(self.0[0]), c.single_cotangent(self.0[0]));
//!         c.add(l, r)
//!     }
//! }
//!
//! graph! {
//!     fn heads(x: [3]; temperature: f32) -> ([3], []) {
//!         let y: [3] = Twice(x);
//!         let s: [3] = opaque(y, forward = |y| y.map(|v| v.sin()), vjp = |y, g| [RawTensor::from_fn(g.dims(), |i| g.data()[i] * y.data()[i].cos())]);
//!         (y, sum(s))
//!     }
//! }
//!
//! let (g, h) = heads::<f32>();
//! let saved = g.compile(h.inputs(Tensor::from_vec(vec![0.0, 1.0, 2.0]).unwrap()), HeadsData { temperature: 1.0 }).unwrap();
//! assert_eq!(saved.value(h.output0).unwrap().data(), &[0.0, 2.0, 4.0]);
//! let grads = saved.backprop_from(h.output1, Tensor::full(1.0)).unwrap();
//! assert_eq!(grads.get(h.x).unwrap().dims().as_slice(), &[3]);
//! ```
//!
//! # Threads and data-parallel training
//!
//! Kernels run on the current rayon pool ([`parallel`]: `RAYON_NUM_THREADS`, or
//! `parallel::pool(n)?.install(|| …)`) and split only over independent outputs, so every result
//! is the same bits on any number of threads; after a split the pool's other threads keep looking
//! for work for `parallel::keep_awake()` rather than sleep (OpenMP's spin-wait; it uses their
//! cores meanwhile, and `parallel::set_keep_awake(Duration::ZERO)` turns it off). For data
//! parallelism, split a batch into micro-batches and let [`data_parallel::gradients`] compute
//! them on a set of workers (threads, or processes with the `mpi` feature) and add them in a
//! fixed tree over the micro-batch index:
//!
//! ```
//! use exactgrad::data_parallel::{self, Threads};
//! use exactgrad::{graph, Tensor};
//!
//! graph! {
//!     fn affine(w: [3, 2]; x: [4, 3]) -> [] {
//!         sum(x.matmul(w))
//!     }
//! }
//!
//! let (_, h) = affine::<f32>();
//! let params = h.inputs(Tensor::full(0.5));
//! let micro_batches: Vec<AffineData<f32>> =
//!     (0..4).map(|i| AffineData { x: Tensor::from_fn(|k| (i * 12 + k) as f32) }).collect();
//! // Each worker: its own generated program and parameter copy.
//! let one = |n: usize| {
//!     let workers = Threads::new(n).unwrap();
//!     let mut states: Vec<_> = (0..n).map(|_| (Affine::program::<f32>(), params.clone())).collect();
//!     data_parallel::gradients(&workers, &mut states, 4, |(program, copy), i| {
//!         program.gradients(copy, &micro_batches[i], &Tensor::full(1.0)).cloned()
//!     })
//!     .unwrap()
//! };
//! let (sum1, sum2) = (one(1), one(2));
//! assert!(sum1.as_slice()[0].storage_eq(&sum2.as_slice()[0])); // the same bits on 1 and 2
//! ```
//!
//! # Saving and loading parameters
//!
//! A parameter pack is saved by name in the safetensors format (the format PyTorch, JAX and
//! candle exchange weights in; [`io::safetensors`]) and loaded back by the graph, which checks
//! every tensor's shape and element type; a `graph!` model names its inputs with
//! `handles.input_names()`. The round trip is bit for bit, `-0.0` and NaN payloads included:
//!
//! ```
//! # #[cfg(feature = "safetensors")] {
//! use exactgrad::{graph, Error, Tensor};
//!
//! graph! {
//!     fn affine(w: [3, 2], b: [2]; x: [4, 3]) -> [] {
//!         sum(x.matmul(w) + b)
//!     }
//! }
//!
//! let (g, h) = affine::<f32>();
//! let params = h.inputs(Tensor::from_fn(|i| i as f32 * 0.5 - 1.0), Tensor::full(-0.0));
//! let bytes = params.save_safetensors(h.input_names()).unwrap(); // or save_safetensors_file
//! let loaded = g.load_safetensors(h.input_names(), &bytes).unwrap(); // or load_safetensors_file
//! assert!(loaded.as_slice().iter().zip(params.as_slice()).all(|(a, b)| a.storage_eq(b)));
//! // A file of another model is a typed error, never a panic:
//! assert!(matches!(g.load_safetensors(&["w", "bias"], &bytes), Err(Error::MissingTensor { .. })));
//! # }
//! ```
//!
//! # Cargo features
//!
//! `safetensors` is on by default, the others are off; `.ci/test` (the test command of the README
//! and CI: `cargo test --workspace --all-features`, then the MPI test on two processes) builds and
//! tests them all.
//!
//! * `safetensors` — parameter packs saved and loaded by name in the safetensors format
//!   ([`io::safetensors`]): `Pack::save_safetensors`, `GraphData::load_safetensors` and their
//!   `_file` forms, for `f32`, `f64`, the integers and (with `half`) `f16` and `bf16`.
//! * `ndarray` — conversions between tensors and `ndarray` arrays ([`io::ndarray`]):
//!   `RawTensor` ⇄ `ArrayD`, `Tensor<A, S>` ⇄ the array of its rank (`Array2` for a matrix).
//! * `half` — `half::f16` and `half::bf16` as scalars: [`Storage`] with bit-level storage
//!   equality and the NaN-pinned addition of `f32`/`f64`, so every pass, fast or dense, runs on
//!   them. The `tanh`/`exp` of their ops is `num_traits::Float`'s, not this
//!   crate's deterministic `f32`/`f64` kernels ([`math`]).
//! * `mpi` — data-parallel workers on separate processes through MPI
//!   (`data_parallel::mpi`): each process computes a block of micro-batches, every process
//!   gathers all of them and adds them in the fixed tree, so the sum is the one-process bits.
//!   Needs an MPI library (Open MPI) and libclang at build time (`.ci/install-mpi`).
//! * `rational` — [`Storage`] for `num_rational::Ratio<T>`: exact rational scalars, for which
//!   every gradient of the ops that stay rational (`matmul`, `+`, `-`, `*`, `relu`, `sum`, …) is
//!   exact (`examples/exact.rs`).
//!
// A feature's module exists only with the feature: without it, its links go to this list.
#![cfg_attr(not(feature = "safetensors"), doc = "[`io::safetensors`]: #cargo-features")]
#![cfg_attr(not(feature = "ndarray"), doc = "[`io::ndarray`]: #cargo-features")]
#![forbid(unsafe_code)]

pub use exactgrad_macros::graph;
pub use exactgrad_runtime::*;
/// The op table: per built-in op its name, arity, shape rule and messages, support pattern and saved
/// reads (the facts the macro, the runtime and these docs share).
pub use exactgrad_spec as spec;

/// Items the code generated by [`graph!`] names by absolute path. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use ::core::option::Option;
    pub use ::std::vec::Vec;
    pub use exactgrad_runtime::dsl::{constant, constant_f64, infinity, opaque_pack};
    pub use exactgrad_runtime::macro_builder::{Nodes, Repeat};
    pub use exactgrad_runtime::program::{
        bound::BoundGraph, plan, state::Ran, MemoryPlan, Pass, Plan, Program, ProgramState,
    };
    pub use exactgrad_runtime::shape::Array;
    pub use exactgrad_runtime::{
        num_traits, ops, rules, typenum, CompactOp, Error, FromParents, GraphData, IntoNode, MacroBuilder, Nil, Node,
        Pack, Position, RawGraph, RawTensor, Scalar, Shape, Snoc, Tensor,
    };
}

/// The README's Rust blocks, compiled and run as doc tests (so its quick start cannot go stale).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
