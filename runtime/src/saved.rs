//! Saved forward executions and every reverse pass (SEMANTICS §3, §6, §7).
//!
//! [`RawSavedGraph`] is the untyped core: the values of one forward run, computed once by checked
//! lowering ([`RawSavedGraph::compile`]) and never re-evaluated. [`SavedGraph`] is its typed face,
//! made by [`GraphData::compile`]. Every pass is a loop from the last node to the first; none
//! recurses, so graphs of any length run.
//!
//! | pass | seeds | result | needs storage equality |
//! |---|---|---|---|
//! | `backprop_all_dense` | pack over Γ ++ ss | pack over Γ ++ ss | no (the reference) |
//! | `backprop_all_array` | pack over Γ ++ ss | pack over Γ ++ ss | yes |
//! | `backprop_all_stored` | pack over Γ ++ ss | pack over Γ ++ ss | array if it has it, else dense |
//! | `backprop_inputs_*` | pack over Γ ++ ss | pack over Γ | as above; intermediate gradients freed at once |
//! | `backprop_from` / `backprop_from_dense` | one output and its seed | pack over Γ ++ ss | dense all-seeds without it |

use crate::contributions::Contributions;
use crate::error::Error;
use crate::gradients::{GradientContext, Slot};
use crate::graph::{GraphData, NodeData, Program, RawGraph, SavedValues};
use crate::pack::{ContextPack, Gradients, Pack, RawSeeds, Seeds};
use crate::scalar::Scalar;
use crate::shape::{Dims, Position, Shape};
use crate::tensor::{RawTensor, Tensor};

/// One node of a saved graph, together with the saved context prefix it reads and the data:
/// everything its VJP needs, with no re-evaluation.
pub struct PreparedNode<'s, A, D> {
    index: usize,
    node: &'s NodeData<A, D>,
    saved: SavedValues<'s, A, D>,
    /// Dims of the prefix.
    dims: &'s [Dims],
}

impl<'s, A: Scalar, D: 'static> PreparedNode<'s, A, D> {
    /// Index of the node (0 = first node).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its position in the context (`|Γ| + index`).
    pub fn position(&self) -> usize {
        self.saved.prefix.len()
    }

    /// The node.
    pub fn node(&self) -> &'s NodeData<A, D> {
        self.node
    }

    fn vjp_error(&self, message: String) -> Error {
        Error::Vjp { node: self.index, op: self.node.name().to_owned(), message }
    }

    /// The dense VJP at cotangent `g`: one tensor per earlier position. For a compact node this is
    /// the dense form of its contributions (built in `c`).
    ///
    /// # Errors
    /// [`Error::Vjp`] when the result does not fit the prefix.
    pub fn vjp_dense(&self, g: &RawTensor<A>, c: &mut Contributions<A>) -> Result<Vec<RawTensor<A>>, Error> {
        self.vjp_dense_with_support(g, c, None)
    }

    /// [`vjp_dense`](Self::vjp_dense), also appending a compact node's support to `support`.
    fn vjp_dense_with_support(
        &self,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
        support: Option<&mut Vec<usize>>,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        let prefix = self.saved.prefix;
        match self.node.program() {
            Program::Compact(op) => {
                c.clear();
                let root = op.contributions(&self.saved, g, c);
                if let Some(s) = support {
                    c.support_into(root, s);
                }
                c.dense(root, self.dims, g).map_err(|m| self.vjp_error(m))
            }
            Program::Opaque { vjp, .. } => {
                let out = vjp(self.saved.prefix, self.saved.data, g);
                if out.len() != prefix.len() {
                    return Err(self.vjp_error(format!(
                        "returned {} tensors for a prefix of {}",
                        out.len(),
                        prefix.len()
                    )));
                }
                if let Some((q, t)) = out.iter().enumerate().find(|(q, t)| t.dims() != prefix[*q].dims()) {
                    return Err(self.vjp_error(format!(
                        "returned shape {} at position {q}, which has shape {}",
                        t.dims(),
                        prefix[q].dims()
                    )));
                }
                Ok(out)
            }
        }
    }

    /// `accumulate(node, g)` of SEMANTICS §6: compact program → `add_contributions`, opaque →
    /// `add_dense(vjp(g))`. Calls `reach` with each support position (compact) or returns `true`
    /// when the whole prefix was touched (opaque).
    fn accumulate(
        &self,
        ctx: &mut GradientContext<A>,
        g: &RawTensor<A>,
        c: &mut Contributions<A>,
    ) -> Result<bool, Error> {
        match self.node.program() {
            Program::Compact(op) => {
                c.clear();
                let root = op.contributions(&self.saved, g, c);
                ctx.add_contributions(c, root, g).map_err(|m| self.vjp_error(m))?;
                Ok(false)
            }
            Program::Opaque { vjp, .. } => {
                let out = vjp(self.saved.prefix, self.saved.data, g);
                ctx.add_dense(&out).map_err(|m| self.vjp_error(m))?;
                Ok(true)
            }
        }
    }
}

/// The values of one forward execution of a [`RawGraph`], with its data.
pub struct RawSavedGraph<'g, A, D> {
    graph: &'g RawGraph<A, D>,
    values: Vec<RawTensor<A>>,
    data: D,
}

pub(crate) fn node_error<A: 'static, D: 'static>(graph: &RawGraph<A, D>, k: usize, message: String) -> Error {
    match graph.nodes().get(k) {
        Some(node) => Error::Node {
            node: k,
            op: node.name().to_owned(),
            parent_shapes: node.parents().iter().filter_map(|&q| graph.dims().get(q).copied()).collect(),
            message,
        },
        None => Error::Node { node: k, op: "graph".to_owned(), parent_shapes: Vec::new(), message },
    }
}

impl<'g, A: Scalar, D: 'static> RawSavedGraph<'g, A, D> {
    /// Checked lowering: for each node in order, validate it against the values so far (the first
    /// failure aborts with the node index, op, parent shapes and message), then compute its value.
    ///
    /// # Errors
    /// [`Error::PackShapes`] for inputs of the wrong number or shapes, [`Error::Node`] for a node
    /// that fails validation or returns a value of the wrong shape.
    pub fn compile(graph: &'g RawGraph<A, D>, inputs: Vec<RawTensor<A>>, data: D) -> Result<Self, Error> {
        let expected = &graph.dims()[..graph.num_inputs()];
        if inputs.len() != expected.len() || inputs.iter().zip(expected).any(|(t, d)| t.dims() != *d) {
            return Err(Error::PackShapes {
                what: "graph inputs",
                expected: expected.to_vec(),
                actual: inputs.iter().map(RawTensor::dims).collect(),
            });
        }
        let mut values = inputs;
        values.reserve(graph.nodes().len());
        for (k, node) in graph.nodes().iter().enumerate() {
            let value = match node.program() {
                Program::Compact(op) => {
                    // The values so far have exactly these dims: the inputs were checked above and
                    // every node's value is checked below.
                    match op.output_dims(&graph.dims()[..values.len()]) {
                        Ok(d) if d == node.dims() => {}
                        Ok(d) => {
                            return Err(node_error(
                                graph,
                                k,
                                format!("shape rule gives {d}, node declares {}", node.dims()),
                            ))
                        }
                        Err(m) => return Err(node_error(graph, k, m)),
                    }
                    op.validate(&values, &data).map_err(|m| node_error(graph, k, m))?;
                    op.forward(&values, &data)
                }
                Program::Opaque { forward, .. } => forward(&values, &data),
            };
            if value.dims() != node.dims() {
                return Err(node_error(
                    graph,
                    k,
                    format!("forward returned shape {}, the node's shape is {}", value.dims(), node.dims()),
                ));
            }
            values.push(value);
        }
        Ok(RawSavedGraph { graph, values, data })
    }

    /// The graph.
    pub fn graph(&self) -> &'g RawGraph<A, D> {
        self.graph
    }

    /// All-zero seeds for this graph (positions left unset cost no buffer).
    pub fn zero_seeds(&self) -> RawSeeds<A> {
        RawSeeds::zeros(self.graph.dims())
    }

    /// Every saved value (Γ ++ ss).
    pub fn values(&self) -> &[RawTensor<A>] {
        &self.values
    }

    /// The data (Δ).
    pub fn data(&self) -> &D {
        &self.data
    }

    /// The values, consuming the saved graph.
    pub fn into_values(self) -> Vec<RawTensor<A>> {
        self.values
    }

    /// The inputs and the data, consuming the saved graph (node values are dropped): a training
    /// loop hands them to the next `compile` without copying them.
    pub fn into_inputs_and_data(mut self) -> (Vec<RawTensor<A>>, D) {
        self.values.truncate(self.graph.num_inputs());
        (self.values, self.data)
    }

    /// The prepared nodes, first to last.
    pub fn prepared_nodes(&self) -> impl DoubleEndedIterator<Item = PreparedNode<'_, A, D>> + '_ {
        self.graph.nodes().iter().enumerate().map(|(k, node)| self.prepared(k, node))
    }

    fn prepared<'s>(&'s self, k: usize, node: &'s NodeData<A, D>) -> PreparedNode<'s, A, D> {
        let p = self.graph.num_inputs() + k;
        PreparedNode {
            index: k,
            node,
            saved: SavedValues { prefix: &self.values[..p], output: &self.values[p], data: &self.data },
            dims: &self.graph.dims()[..p],
        }
    }

    fn check_seeds(&self, seeds: &[Slot<A>]) -> Result<(), Error> {
        let dims = self.graph.dims();
        if seeds.len() != dims.len() || seeds.iter().zip(dims).any(|(s, d)| s.dims() != *d) {
            return Err(Error::PackShapes {
                what: "seeds",
                expected: dims.to_vec(),
                actual: seeds.iter().map(Slot::dims).collect(),
            });
        }
        Ok(())
    }

    fn storage_check() -> Result<(), Error> {
        if A::HAS_STORAGE_EQUALITY {
            Ok(())
        } else {
            Err(Error::NoStorageEquality { scalar: core::any::type_name::<A>() })
        }
    }

    /// The dense reference loop (SEMANTICS §3). With `reached`, nodes outside it are skipped and
    /// reachability grows as in §7 (`backprop_from_dense`). `keep` says whether node gradients are
    /// returned.
    fn dense_loop(
        &self,
        seeds: Vec<Slot<A>>,
        mut reached: Option<Reached>,
        keep: bool,
    ) -> Result<Vec<RawTensor<A>>, Error> {
        self.check_seeds(&seeds)?;
        let mut acc: Vec<RawTensor<A>> = seeds.into_iter().map(Slot::into_tensor).collect();
        let mut node_grads = Vec::with_capacity(if keep { self.graph.nodes().len() } else { 0 });
        let mut c = Contributions::new();
        let mut support = Vec::new();
        for (k, node) in self.graph.nodes().iter().enumerate().rev() {
            let prepared = self.prepared(k, node);
            let p = prepared.position();
            let Some(g) = acc.pop() else { unreachable!("acc holds every position") };
            if reached.as_ref().is_none_or(|r| r.contains(p)) {
                support.clear();
                let vjp = prepared.vjp_dense_with_support(&g, &mut c, reached.is_some().then_some(&mut support))?;
                for (a, v) in acc.iter_mut().zip(&vjp) {
                    a.add_assign(v);
                }
                if let Some(r) = reached.as_mut() {
                    r.record(p, if node.is_opaque() { Touched::WholePrefix } else { Touched::Support(&support) });
                }
            }
            if keep {
                node_grads.push(g);
            }
        }
        node_grads.reverse();
        acc.extend(node_grads);
        Ok(acc)
    }

    /// The indexed loop (SEMANTICS §6–7) on a [`GradientContext`]. A position nobody wrote
    /// element by element stays a uniform in the result ([`Gradients`]); a node whose VJP runs
    /// gets its gradient built first.
    fn array_loop(&self, seeds: Vec<Slot<A>>, mut reached: Option<Reached>, keep: bool) -> Result<Gradients<A>, Error> {
        Self::storage_check()?;
        self.check_seeds(&seeds)?;
        let mut ctx = GradientContext::of_slots(seeds);
        let mut node_grads = Vec::with_capacity(if keep { self.graph.nodes().len() } else { 0 });
        let mut c = Contributions::new();
        for (k, node) in self.graph.nodes().iter().enumerate().rev() {
            let prepared = self.prepared(k, node);
            let p = prepared.position();
            let slot = ctx.pop_slot();
            let slot = if reached.as_ref().is_none_or(|r| r.contains(p)) {
                let g = ctx.build(slot);
                let whole_prefix = prepared.accumulate(&mut ctx, &g, &mut c)?;
                if let Some(r) = reached.as_mut() {
                    // The support positions `add_contributions` just wrote (duplicates removed:
                    // the reached set is a set).
                    let touched =
                        if whole_prefix { Touched::WholePrefix } else { Touched::Support(ctx.last_support()) };
                    r.record(p, touched);
                }
                Slot::Dense(g)
            } else {
                slot
            };
            if keep {
                node_grads.push(slot);
            } else if let Slot::Dense(g) = slot {
                ctx.recycle(g);
            }
        }
        let mut out = ctx.into_slots();
        node_grads.reverse();
        out.extend(node_grads);
        Ok(Gradients::from_slots(out))
    }

    /// §3 `backprop_all_dense`: the reference. `seeds` has one tensor per position (Γ ++ ss).
    ///
    /// # Errors
    /// [`Error::PackShapes`] for seeds that do not fit, [`Error::Vjp`] for a malformed VJP.
    pub fn backprop_all_dense(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        self.dense_loop(seeds.into().into_slots(), None, true)
    }

    /// §3 `backprop_inputs_dense`: the reference loop returning only the input gradients.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_dense(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        self.dense_loop(seeds.into().into_slots(), None, false)
    }

    /// §6 `backprop_array`: indexed gradients with deferred uniform updates.
    ///
    /// # Errors
    /// [`Error::NoStorageEquality`] for a scalar without storage equality, else as the dense pass.
    pub fn backprop_all_array(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        Ok(self.array_loop(seeds.into().into_slots(), None, true)?.into_vec())
    }

    /// §6 `backprop_inputs_array`: as the array pass, freeing each intermediate gradient as soon
    /// as its node has run.
    ///
    /// # Errors
    /// As [`backprop_all_array`](Self::backprop_all_array).
    pub fn backprop_inputs_array(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        Ok(self.array_loop(seeds.into().into_slots(), None, false)?.into_vec())
    }

    /// §6 `backprop_stored`: the array pass when the scalar has storage equality, else the dense one.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_all_stored(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        Ok(self.all_stored(seeds.into().into_slots(), true)?.into_vec())
    }

    /// §6 `backprop_inputs_stored`.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_stored(&self, seeds: impl Into<RawSeeds<A>>) -> Result<Vec<RawTensor<A>>, Error> {
        Ok(self.all_stored(seeds.into().into_slots(), false)?.into_vec())
    }

    fn all_stored(&self, seeds: Vec<Slot<A>>, keep: bool) -> Result<Gradients<A>, Error> {
        if A::HAS_STORAGE_EQUALITY {
            self.array_loop(seeds, None, keep)
        } else {
            Ok(Gradients::from_tensors(self.dense_loop(seeds, None, keep)?))
        }
    }

    fn single_seed(&self, output: usize, seed: RawTensor<A>) -> Result<Vec<Slot<A>>, Error> {
        let dims = self.graph.dims();
        if output >= dims.len() {
            return Err(Error::ForeignPosition { index: output, len: dims.len() });
        }
        if seed.dims() != dims[output] {
            return Err(Error::ShapeMismatch { expected: dims[output], actual: seed.dims() });
        }
        let mut slots: Vec<Slot<A>> = dims.iter().map(|&d| Slot::Full(A::zero(), d)).collect();
        slots[output] = Slot::Dense(seed);
        Ok(slots)
    }

    /// §7 `backprop_from(output, seed)`: visits only what `output` depends on (an opaque node
    /// makes its whole prefix reachable). Without storage equality it is the dense all-seeds pass.
    ///
    /// The positions it never writes (skipped nodes, inputs no reached node contributes to) are
    /// returned as uniforms, built only when read ([`Gradients`]).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] / [`Error::ShapeMismatch`] for a bad output or seed.
    pub fn backprop_from(&self, output: usize, seed: RawTensor<A>) -> Result<Gradients<A>, Error> {
        let slots = self.single_seed(output, seed)?;
        if A::HAS_STORAGE_EQUALITY {
            self.array_loop(slots, Some(Reached::new(self.graph.dims().len(), output)), true)
        } else {
            Ok(Gradients::from_tensors(self.dense_loop(slots, None, true)?))
        }
    }

    /// §7 `backprop_from_dense`: the reference of [`backprop_from`](Self::backprop_from) — the same
    /// reachability, with dense pack additions.
    ///
    /// # Errors
    /// As [`backprop_from`](Self::backprop_from).
    pub fn backprop_from_dense(&self, output: usize, seed: RawTensor<A>) -> Result<Gradients<A>, Error> {
        let slots = self.single_seed(output, seed)?;
        Ok(Gradients::from_tensors(self.dense_loop(
            slots,
            Some(Reached::new(self.graph.dims().len(), output)),
            true,
        )?))
    }

    /// Which positions [`backprop_from(output, …)`](Self::backprop_from) reaches: one flag per
    /// position (Γ ++ ss). Node `k` is visited — its VJP runs — exactly when the flag of its
    /// position `|Γ| + k` is set; every other node is skipped entirely. A reached input is one
    /// that may receive a contribution.
    ///
    /// The rule is the pass's own (§7, the same code): walking from the last node down, a reached
    /// compact node reaches its support, a reached opaque node its whole prefix. Node supports are
    /// read from their declarations ([`NodeData::support`]) since no VJP runs here; for every
    /// built-in op that is exactly the support of the contributions the pass builds, so the two
    /// agree. (A custom [`CompactOp`](crate::CompactOp) whose contributions leave its declared
    /// support makes the pass differ from this prediction.) Without storage equality
    /// `backprop_from` runs the dense all-seeds pass, which visits every node: every flag is set.
    /// [`backprop_from_dense`](Self::backprop_from_dense) visits the nodes flagged here on every
    /// scalar.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for an `output` outside the graph.
    pub fn reached_from(&self, output: usize) -> Result<Vec<bool>, Error> {
        let len = self.graph.dims().len();
        if output >= len {
            return Err(Error::ForeignPosition { index: output, len });
        }
        if !A::HAS_STORAGE_EQUALITY {
            return Ok(vec![true; len]);
        }
        Ok(reachability(self.graph, output))
    }
}

/// The reached set of `backprop_from(output)` on a scalar with storage equality, by the pass's
/// rule with declared supports (see [`RawSavedGraph::reached_from`]).
fn reachability<A: 'static, D: 'static>(graph: &RawGraph<A, D>, output: usize) -> Vec<bool> {
    let mut reached = Reached::new(graph.dims().len(), output);
    for (k, node) in graph.nodes().iter().enumerate().rev() {
        let p = graph.num_inputs() + k;
        if reached.contains(p) {
            reached.record(p, Touched::declared(node));
        }
    }
    reached.into_flags()
}

/// What a visited node's VJP touched, as far as reachability (§7) is concerned.
enum Touched<'a> {
    /// A compact node: the support of its contributions.
    Support(&'a [usize]),
    /// An opaque node: every position below it.
    WholePrefix,
}

impl<'a> Touched<'a> {
    /// What a node touches according to its declaration: its static support when compact, the
    /// whole prefix when opaque.
    fn declared<A: 'static, D: 'static>(node: &'a NodeData<A, D>) -> Self {
        match node.support() {
            Some(s) => Touched::Support(s),
            None => Touched::WholePrefix,
        }
    }
}

/// The reached set of §7: explicit marks plus "every position below `below`" (set by opaque nodes).
///
/// The one place the reachability rule lives: the single-output passes and
/// [`RawSavedGraph::reached_from`] all go through [`contains`](Self::contains) (does the node at
/// `p` run?) and [`record`](Self::record) (what did it reach?).
struct Reached {
    marks: Vec<bool>,
    below: usize,
}

impl Reached {
    fn new(len: usize, output: usize) -> Self {
        let mut marks = vec![false; len];
        marks[output] = true;
        Reached { marks, below: 0 }
    }

    fn contains(&self, p: usize) -> bool {
        p < self.below || self.marks[p]
    }

    /// `reached ∪= c.support` for a compact node, `reached ∪= all positions < p` for an opaque one.
    fn record(&mut self, p: usize, touched: Touched<'_>) {
        match touched {
            Touched::Support(support) => {
                for &q in support {
                    self.marks[q] = true;
                }
            }
            Touched::WholePrefix => self.below = self.below.max(p),
        }
    }

    /// One flag per position.
    fn into_flags(self) -> Vec<bool> {
        let below = self.below;
        self.marks.into_iter().enumerate().map(|(p, m)| m || p < below).collect()
    }
}

/// A pack that fits a graph whose input list is `G`: exactly `Pack<A, G>`. (A trait rather than
/// the type itself, so a pack of the wrong shapes gets an error that says so in words.)
#[diagnostic::on_unimplemented(
    message = "the input pack does not fit this graph's inputs",
    label = "a pack with other shapes (or in another order) than the graph's inputs",
    note = "build the pack with the graph's handles, `handles.inputs(…)`, or push tensors in the order and shapes the inputs were declared"
)]
pub trait InputPack<A, G> {
    /// The pack.
    fn into_pack(self) -> Pack<A, G>;
}

#[diagnostic::do_not_recommend]
impl<A, G> InputPack<A, G> for Pack<A, G> {
    fn into_pack(self) -> Pack<A, G> {
        self
    }
}

/// A forward execution of a typed [`GraphData`], made by [`GraphData::compile`].
pub struct SavedGraph<'g, A, D, G, Ss, Br = ()> {
    raw: RawSavedGraph<'g, A, D>,
    graph: &'g GraphData<A, D, G, Ss, Br>,
}

impl<A: Scalar, D: 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// Checked lowering of this graph on `inputs` and `data` (SEMANTICS §6 `compile`).
    ///
    /// # Errors
    /// [`Error::Node`] for the first node that was built wrongly or fails validation.
    pub fn compile(&self, inputs: impl InputPack<A, G>, data: D) -> Result<SavedGraph<'_, A, D, G, Ss, Br>, Error> {
        if let Some((k, message)) = self.build_errors().first() {
            return Err(node_error(self.raw(), *k, message.clone()));
        }
        let raw = RawSavedGraph::compile(self.raw(), inputs.into_pack().into_vec(), data)?;
        Ok(SavedGraph { raw, graph: self })
    }

    /// `eval`: every value of the context (inputs, then nodes), by checked lowering.
    ///
    /// # Errors
    /// As [`compile`](Self::compile).
    pub fn eval(&self, inputs: impl InputPack<A, G>, data: D) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        let saved = self.compile(inputs, data)?;
        Ok(ContextPack::from_gradients(self.raw().id(), Gradients::from_tensors(saved.raw.into_values())))
    }
}

impl<'g, A: Scalar, D: 'static, G, Ss, Br> SavedGraph<'g, A, D, G, Ss, Br> {
    /// The untyped saved graph.
    pub fn raw(&self) -> &RawSavedGraph<'g, A, D> {
        &self.raw
    }

    /// The input pack and the data, consuming the saved graph: a training loop moves them into the
    /// next step's `compile` instead of cloning the parameters every step.
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, Pack, Seeds, Sgd, Optimizer, Tensor, typenum::U2};
    /// let g = GraphData::<f64, ()>::new();
    /// let (g, w) = g.input::<(U2,)>();
    /// let (g, sq) = g.push(ops::mul(w, w));
    /// let (g, loss) = g.push(ops::sum(sq));
    /// let mut params = Pack::new().push(Tensor::from_vec(vec![1.0, -2.0]).unwrap());
    /// let mut sgd = Sgd::new(0.25, 0.0).unwrap();
    /// for _ in 0..3 {
    ///     let saved = g.compile(params, ()).unwrap();
    ///     let grads = saved.backprop_inputs_array(Seeds::single(&g, loss, Tensor::full(1.0)).unwrap()).unwrap();
    ///     (params, ()) = saved.into_inputs_and_data();
    ///     sgd.step(&mut params, &grads).unwrap();
    /// }
    /// assert_eq!(params.get(w).unwrap().data(), &[0.125, -0.25]); // w ← w/2 each step
    /// ```
    pub fn into_inputs_and_data(self) -> (Pack<A, G>, D) {
        let id = self.graph.raw().id();
        let (inputs, data) = self.raw.into_inputs_and_data();
        (Pack::from_raw(Some(id), inputs), data)
    }

    /// The saved value at `pos`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn value<S: Shape>(&self, pos: Position<S, Br>) -> Result<&RawTensor<A>, Error> {
        if pos.graph_id() != self.graph.raw().id() {
            return Err(Error::ForeignPosition { index: pos.index(), len: self.raw.values.len() });
        }
        Ok(&self.raw.values[pos.index()])
    }

    fn seeds(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Vec<Slot<A>>, Error> {
        if seeds.graph() != self.graph.raw().id() {
            return Err(Error::ForeignPosition { index: 0, len: self.raw.values.len() });
        }
        Ok(seeds.into_slots())
    }

    fn all(&self, v: Gradients<A>) -> ContextPack<A, G, Ss, Br> {
        ContextPack::from_gradients(self.graph.raw().id(), v)
    }

    fn inputs(&self, v: Vec<RawTensor<A>>) -> Pack<A, G> {
        Pack::from_raw(Some(self.graph.raw().id()), v)
    }

    /// §3 dense reference, all seeds.
    ///
    /// # Errors
    /// [`Error::Vjp`] for a malformed opaque VJP; [`Error::ForeignPosition`] for seeds of another graph.
    pub fn backprop_all_dense(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        Ok(self.all(Gradients::from_tensors(self.raw.dense_loop(self.seeds(seeds)?, None, true)?)))
    }

    /// §6 array pass, all seeds.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense), and [`Error::NoStorageEquality`].
    pub fn backprop_all_array(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        Ok(self.all(self.raw.array_loop(self.seeds(seeds)?, None, true)?))
    }

    /// §6 stored pass (array when the scalar has storage equality, else dense), all seeds.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_all_stored(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        Ok(self.all(self.raw.all_stored(self.seeds(seeds)?, true)?))
    }

    /// §3 dense reference, input gradients only.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_dense(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        Ok(self.inputs(self.raw.dense_loop(self.seeds(seeds)?, None, false)?))
    }

    /// §6 array pass, input gradients only; each intermediate gradient is freed once its node ran.
    ///
    /// # Errors
    /// As [`backprop_all_array`](Self::backprop_all_array).
    pub fn backprop_inputs_array(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        Ok(self.inputs(self.raw.array_loop(self.seeds(seeds)?, None, false)?.into_vec()))
    }

    /// §6 stored pass, input gradients only.
    ///
    /// # Errors
    /// As [`backprop_all_dense`](Self::backprop_all_dense).
    pub fn backprop_inputs_stored(&self, seeds: Seeds<A, G, Ss, Br>) -> Result<Pack<A, G>, Error> {
        Ok(self.inputs(self.raw.all_stored(self.seeds(seeds)?, false)?.into_vec()))
    }

    /// §7 single-output pass from `output` with cotangent `seed`.
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn backprop_from<S: Shape>(
        &self,
        output: Position<S, Br>,
        seed: Tensor<A, S>,
    ) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        self.check_handle(output)?;
        Ok(self.all(self.raw.backprop_from(output.index(), seed.into_raw())?))
    }

    /// §7 reference of [`backprop_from`](Self::backprop_from).
    ///
    /// # Errors
    /// As [`backprop_from`](Self::backprop_from).
    pub fn backprop_from_dense<S: Shape>(
        &self,
        output: Position<S, Br>,
        seed: Tensor<A, S>,
    ) -> Result<ContextPack<A, G, Ss, Br>, Error> {
        self.check_handle(output)?;
        Ok(self.all(self.raw.backprop_from_dense(output.index(), seed.into_raw())?))
    }

    /// Which positions [`backprop_from(output, …)`](Self::backprop_from) reaches, one flag per
    /// position (see [`RawSavedGraph::reached_from`]).
    ///
    /// # Errors
    /// [`Error::ForeignPosition`] for a handle of another graph.
    pub fn reached_from<S>(&self, output: Position<S, Br>) -> Result<Vec<bool>, Error> {
        self.check_handle(output)?;
        self.raw.reached_from(output.index())
    }

    /// The indices (0 = first node) of the nodes whose VJP
    /// [`backprop_from(output, …)`](Self::backprop_from) runs, ascending; every other node is
    /// skipped. Same rule as [`reached_from`](Self::reached_from).
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, Pack, Tensor, typenum::U2};
    /// let g = GraphData::<f64, ()>::new();
    /// let (g, x) = g.input::<(U2,)>();
    /// let (g, y) = g.push(ops::mul(x, x)); // node 0
    /// let (g, s) = g.push(ops::sum(y)); // node 1
    /// let (g, _t) = g.push(ops::sum(x)); // node 2: another head
    /// let saved = g.compile(Pack::new().push(Tensor::full(1.0)), ()).unwrap();
    /// assert_eq!(saved.visited_from(s).unwrap(), vec![0, 1]);
    /// ```
    ///
    /// # Errors
    /// As [`reached_from`](Self::reached_from).
    pub fn visited_from<S>(&self, output: Position<S, Br>) -> Result<Vec<usize>, Error> {
        let inputs = self.graph.raw().num_inputs();
        let reached = self.reached_from(output)?;
        Ok(reached[inputs..].iter().enumerate().filter(|(_, &r)| r).map(|(k, _)| k).collect())
    }

    fn check_handle<S>(&self, pos: Position<S, Br>) -> Result<(), Error> {
        if pos.graph_id() != self.graph.raw().id() {
            return Err(Error::ForeignPosition { index: pos.index(), len: self.raw.values.len() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::contributions::Contrib;
    use crate::graph::{CompactOp, Node};
    use crate::ops;
    use crate::typenum::U2;

    type Log = Rc<RefCell<Vec<&'static str>>>;

    /// The identity, logging its name each time its VJP runs.
    struct Tap {
        name: &'static str,
        parents: [usize; 1],
        log: Log,
    }

    impl CompactOp<f64, ()> for Tap {
        fn name(&self) -> &str {
            self.name
        }
        fn parents(&self) -> &[usize] {
            &self.parents
        }
        fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
            Ok(prefix[self.parents[0]])
        }
        fn forward(&self, ctx: &[RawTensor<f64>], _: &()) -> RawTensor<f64> {
            ctx[self.parents[0]].clone()
        }
        fn contributions(
            &self,
            _: &SavedValues<'_, f64, ()>,
            _: &RawTensor<f64>,
            c: &mut Contributions<f64>,
        ) -> Contrib {
            self.log.borrow_mut().push(self.name);
            c.single_cotangent(self.parents[0])
        }
    }

    fn tap<S: Shape, Br>(name: &'static str, of: Position<S, Br>, log: &Log) -> Node<f64, (), S> {
        Node::compact(Tap { name, parents: [of.index()], log: log.clone() }, &[&of])
    }

    fn sorted(log: &Log) -> Vec<&'static str> {
        let mut v = log.borrow_mut().split_off(0);
        v.sort_unstable();
        v
    }

    #[test]
    fn an_unrelated_head_is_not_visited() {
        let log = Log::default();
        let g = GraphData::<f64, ()>::new();
        let (g, x) = g.input::<(U2,)>(); // 0
        let (g, z) = g.input::<(U2,)>(); // 1
        let (g, a) = g.push(tap("a", x, &log)); // 2, node 0
        let (g, b) = g.push(tap("b", z, &log)); // 3, node 1
        let (g, head_a) = g.push(tap("head_a", a, &log)); // 4, node 2
        let (g, head_b) = g.push(tap("head_b", b, &log)); // 5, node 3
        let saved = g.compile(Pack::new().push(Tensor::full(1.0)).push(Tensor::full(2.0)), ()).unwrap();

        assert_eq!(saved.reached_from(head_a).unwrap(), [true, false, true, false, true, false]);
        assert_eq!(saved.visited_from(head_a).unwrap(), [0, 2]);
        assert_eq!(saved.visited_from(head_b).unwrap(), [1, 3]);
        assert_eq!(saved.visited_from(a).unwrap(), [0]);
        assert_eq!(saved.visited_from(x).unwrap(), Vec::<usize>::new());

        saved.backprop_from(head_a, Tensor::full(1.0)).unwrap();
        assert_eq!(sorted(&log), ["a", "head_a"]);
        saved.backprop_from_dense(head_a, Tensor::full(1.0)).unwrap();
        assert_eq!(sorted(&log), ["a", "head_a"]);
        saved.backprop_from(head_b, Tensor::full(1.0)).unwrap();
        assert_eq!(sorted(&log), ["b", "head_b"]);
        // The all-seeds pass runs every node.
        saved.backprop_all_array(Seeds::zeros(&g)).unwrap();
        assert_eq!(sorted(&log), ["a", "b", "head_a", "head_b"]);
    }

    #[test]
    fn an_opaque_node_reaches_its_whole_prefix() {
        let log = Log::default();
        let runs = Rc::new(RefCell::new(0usize));
        let g = GraphData::<f64, ()>::new();
        let (g, x) = g.input::<(U2,)>(); // 0
        let (g, z) = g.input::<(U2,)>(); // 1
        let (g, a) = g.push(tap("a", x, &log)); // 2, node 0
        let (g, b) = g.push(tap("b", z, &log)); // 3, node 1
        let counter = runs.clone();
        let pa = a.index();
        // Declares that it reads only `a`, yet reachability takes its whole prefix.
        let (g, o) = g.push(ops::opaque::<f64, (), (U2,)>(
            "twice",
            &[&a],
            move |ctx, _| ctx[pa].map(|v| 2.0 * v),
            move |ctx, _, g| {
                *counter.borrow_mut() += 1;
                let mut out: Vec<RawTensor<f64>> = ctx.iter().map(|t| RawTensor::zeros(t.dims())).collect();
                out[pa] = g.map(|d| 2.0 * d);
                out
            },
        )); // 4, node 2
        let (g, head) = g.push(tap("head", o, &log)); // 5, node 3
        let (g, _late) = g.push(tap("late", z, &log)); // 6, node 4: after the opaque node
        let _ = b;
        let saved = g.compile(Pack::new().push(Tensor::full(1.0)).push(Tensor::full(2.0)), ()).unwrap();

        assert_eq!(saved.reached_from(head).unwrap(), [true, true, true, true, true, true, false]);
        assert_eq!(saved.visited_from(head).unwrap(), [0, 1, 2, 3]);
        saved.backprop_from(head, Tensor::full(1.0)).unwrap();
        assert_eq!(sorted(&log), ["a", "b", "head"]);
        assert_eq!(*runs.borrow(), 1);
        saved.backprop_from_dense(head, Tensor::full(1.0)).unwrap();
        assert_eq!(sorted(&log), ["a", "b", "head"]);
        assert_eq!(*runs.borrow(), 2);
    }

    #[test]
    fn reached_from_checks_the_output() {
        let g = GraphData::<f64, ()>::new();
        let (g, x) = g.input::<(U2,)>();
        let (g, _y) = g.push(ops::mul(x, x));
        let saved = g.compile(Pack::new().push(Tensor::full(1.0)), ()).unwrap();
        assert!(matches!(saved.raw().reached_from(2), Err(Error::ForeignPosition { index: 2, len: 2 })));
        assert_eq!(saved.raw().reached_from(1).unwrap(), [true, true]);
        let (other, ox) = GraphData::<f64, ()>::new().input::<(U2,)>();
        let _ = other;
        assert!(saved.reached_from(ox).is_err());
    }
}
