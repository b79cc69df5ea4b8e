//! Compact contributions: the description of one node's whole dense VJP (SEMANTICS §4).
//!
//! A node's VJP result is a pack over every earlier position. Most of it is one repeated scalar,
//! the *uniform*; only the positions in the *support* may differ. A description is built from three
//! constructors whose dense form defines them:
//!
//! * [`fill(v)`](Contributions::fill): every position `full(v)`; uniform `v`; support empty;
//! * [`single(p, t)`](Contributions::single): `t` at `p`, zeros elsewhere; uniform `0`; support `[p]`;
//! * [`add(l, r)`](Contributions::add): the dense pack sum `l + r` (left first); uniform
//!   `l.uniform + r.uniform`; support `l.support ++ r.support`, **duplicates kept**.
//!
//! The reader at `q` evaluates the `add` tree at `q`, reading `full(uniform)` for a side whose
//! support lacks `q`. The dense form ([`Contributions::dense`]) is derived from the same
//! description and the same kernels, so compact and dense cannot disagree.
//!
//! The builder is an arena reused from node to node: building a description allocates nothing once
//! the arena has grown, and tensors made with [`Contributions::tensor`] reuse recycled buffers.
//!
//! ```
//! use exactgrad_runtime::{Contributions, Dims, RawTensor};
//! let mut c = Contributions::<f64>::new();
//! // f(a, b) with a == b == position 0: the two parent terms are added first (left first).
//! let ga = c.tensor(Dims::vector(1), |_| 1.0);
//! let gb = c.tensor(Dims::vector(1), |_| 2.0);
//! let (l, r) = (c.single(0, ga), c.single(0, gb));
//! let both = c.add(l, r);
//! let g = RawTensor::from_vec(Dims::scalar(), vec![0.0]).unwrap();
//! assert_eq!(c.support(both), vec![0, 0]);
//! assert_eq!(c.read(both, 0, &g).unwrap().data(), &[3.0]);
//! assert_eq!(c.uniform(both).to_bits(), 0.0f64.to_bits());
//! ```

use crate::scalar::Scalar;
use crate::shape::Dims;
use crate::tensor::RawTensor;

/// At most this many spare buffers are kept.
const POOL_LIMIT: usize = 64;

/// Handle to one description in a [`Contributions`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contrib(usize);

/// Where a [`Contributions::single`] tensor lives.
#[derive(Clone, Copy, Debug)]
enum Leaf {
    /// The node's cotangent itself.
    Cotangent,
    /// A tensor owned by the arena.
    Owned(usize),
}

#[derive(Clone, Debug)]
enum Description<A> {
    Fill(A),
    Single { position: usize, leaf: Leaf },
    Add { left: usize, right: usize, uniform: A },
}

/// An operand of the reader's kernels: a uniform scalar or a slice of elements.
enum Operand<'x, A> {
    Uniform(&'x A),
    Slice(&'x [A]),
}

/// The value of a sub-description at the position being read.
#[derive(Clone, Copy, Debug)]
enum Read {
    /// The position is outside this sub-description's support: it reads `full(uniform)`.
    Outside,
    Leaf(Leaf),
    Scratch(usize),
}

/// Where the reader writes: a new buffer, `target[i] = target[i] + read[i]` (fused accumulation),
/// or `stored + read[i]` for a position whose stored value is the uniform `stored`.
pub(crate) enum Sink<'t, A> {
    New(&'t mut Vec<A>),
    Accumulate(&'t mut [A]),
    /// `out[i] = stored + read[i]`, `out` empty on entry. When the read is one tensor the arena
    /// owns (a `single` leaf, possibly beside a side that is uniform at this position), that
    /// tensor's buffer is updated in place and swapped into `out` (the leaf is read only once, at
    /// its own position): no buffer is filled with `stored` first, none is allocated.
    OntoUniform(&'t A, &'t mut Vec<A>),
    /// `out[i] = stored + read[i]` written into `out` (its capacity reused), never adopting the
    /// arena's tensors: for a caller that keeps one buffer per position (a generated program),
    /// so buffers do not migrate between positions and a run after the first allocates nothing.
    OntoUniformInto(&'t A, &'t mut Vec<A>),
}

/// The message for a handle that does not name a description of the arena.
fn not_a_handle(c: Contrib) -> String {
    format!("{c:?} is not a handle of this arena (made by another one, or before its last clear)")
}

/// An arena of contribution descriptions; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Contributions<A> {
    descriptions: Vec<Description<A>>,
    owned: Vec<RawTensor<A>>,
    pool: Vec<Vec<A>>,
    reads: Vec<Read>,
    scratch: Vec<Vec<A>>,
    stack: Vec<usize>,
    zero: A,
}

impl<A: Scalar> Default for Contributions<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Scalar> Contributions<A> {
    /// An empty arena.
    pub fn new() -> Self {
        Contributions {
            descriptions: Vec::new(),
            owned: Vec::new(),
            pool: Vec::new(),
            reads: Vec::new(),
            scratch: Vec::new(),
            stack: Vec::new(),
            zero: A::zero(),
        }
    }

    /// Forgets every description, recycling the buffers of owned tensors.
    pub fn clear(&mut self) {
        self.descriptions.clear();
        let mut owned = core::mem::take(&mut self.owned);
        for t in owned.drain(..) {
            // A tensor adopted by a gradient (its buffer moved there) leaves an empty one.
            self.recycle(t.into_vec());
        }
        self.owned = owned;
    }

    /// `fill(v)`: every position `full(v)`; uniform `v`; empty support.
    pub fn fill(&mut self, v: A) -> Contrib {
        self.push(Description::Fill(v))
    }

    /// `zero()` = `fill(0)`.
    pub fn zero(&mut self) -> Contrib {
        self.fill(A::zero())
    }

    /// `single(p, t)`: `t` at position `p`, zeros elsewhere; uniform `0`; support `[p]`.
    pub fn single(&mut self, position: usize, t: RawTensor<A>) -> Contrib {
        self.owned.push(t);
        let leaf = Leaf::Owned(self.owned.len() - 1);
        self.push(Description::Single { position, leaf })
    }

    /// `single(p, δ)` where `δ` is the node's own cotangent (no copy is made).
    pub fn single_cotangent(&mut self, position: usize) -> Contrib {
        self.push(Description::Single { position, leaf: Leaf::Cotangent })
    }

    /// `add(l, r)`: the dense sum of both (`l` left); duplicates in the support are kept.
    pub fn add(&mut self, left: Contrib, right: Contrib) -> Contrib {
        let uniform = A::pinned_add(self.uniform(left), self.uniform(right));
        self.push(Description::Add { left: left.0, right: right.0, uniform })
    }

    /// A tensor whose element `i` is `f(i)`, built in a recycled buffer.
    pub fn tensor(&mut self, dims: Dims, f: impl FnMut(usize) -> A) -> RawTensor<A> {
        let mut v = self.buffer_for(dims.numel());
        v.extend((0..dims.numel()).map(f));
        RawTensor::from_parts(dims, v)
    }

    /// An empty recycled buffer for `n` elements: the smallest spare one that holds them (so a
    /// program that runs again finds every buffer it needs and allocates nothing), else the
    /// largest, grown. Wrap it with [`RawTensor::from_vec`], or give it back with
    /// [`recycle`](Self::recycle) when it was scratch.
    pub fn buffer_for(&mut self, n: usize) -> Vec<A> {
        let fit = (0..self.pool.len())
            .filter(|&i| self.pool[i].capacity() >= n)
            .min_by_key(|&i| self.pool[i].capacity())
            .or_else(|| (0..self.pool.len()).max_by_key(|&i| self.pool[i].capacity()));
        let mut v = match fit {
            Some(i) => self.pool.swap_remove(i),
            None => Vec::new(),
        };
        v.clear();
        v.reserve(n);
        v
    }

    /// Gives back a buffer for reuse (a scratch buffer taken with [`buffer_for`](Self::buffer_for),
    /// or any spare one). Empty ones and those beyond the pool's bound are dropped.
    pub fn recycle(&mut self, mut v: Vec<A>) {
        if v.capacity() > 0 && self.pool.len() < POOL_LIMIT {
            v.clear();
            self.pool.push(v);
        }
    }

    /// An empty buffer with recycled capacity, for kernels that fill a tensor themselves; wrap it
    /// with [`RawTensor::from_vec`].
    pub fn buffer(&mut self) -> Vec<A> {
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Whether `c` names a description of this arena. A handle is valid in the arena that made it
    /// until the next [`clear`](Self::clear); one made by another arena, or before the last
    /// `clear`, is refused when its index is past this arena's descriptions (an index still in
    /// range names whatever this arena holds there: keep handles with their arena). The engine
    /// checks the root a [`CompactOp::contributions`](crate::CompactOp::contributions) returns with
    /// it ([`Error::Vjp`](crate::Error::Vjp) otherwise).
    ///
    /// ```
    /// use exactgrad_runtime::Contributions;
    /// let mut c = Contributions::<f64>::new();
    /// let z = c.zero();
    /// assert!(c.is_handle(z));
    /// c.clear();
    /// assert!(!c.is_handle(z));
    /// ```
    pub fn is_handle(&self, c: Contrib) -> bool {
        c.0 < self.descriptions.len()
    }

    fn push(&mut self, d: Description<A>) -> Contrib {
        self.descriptions.push(d);
        Contrib(self.descriptions.len() - 1)
    }

    /// The scalar that fills every position outside the support.
    ///
    /// # Panics
    /// When `c` is not a handle of this arena ([`is_handle`](Self::is_handle) is `false`), as an
    /// index past the end of a slice.
    pub fn uniform(&self, c: Contrib) -> A {
        match &self.descriptions[c.0] {
            Description::Fill(v) => v.clone(),
            Description::Single { .. } => A::zero(),
            Description::Add { uniform, .. } => uniform.clone(),
        }
    }

    /// The support, left before right, duplicates kept.
    ///
    /// # Panics
    /// When `c` is not a handle of this arena, as [`uniform`](Self::uniform).
    pub fn support(&mut self, c: Contrib) -> Vec<usize> {
        let mut out = Vec::new();
        self.support_into(c, &mut out);
        out
    }

    /// Appends the support of `c` to `out` (left before right, duplicates kept). Iterative.
    pub(crate) fn support_into(&mut self, c: Contrib, out: &mut Vec<usize>) {
        self.stack.clear();
        self.stack.push(c.0);
        while let Some(k) = self.stack.pop() {
            match &self.descriptions[k] {
                Description::Fill(_) => {}
                Description::Single { position, .. } => out.push(*position),
                Description::Add { left, right, .. } => {
                    self.stack.push(*right);
                    self.stack.push(*left);
                }
            }
        }
    }

    /// The reader: the contribution tensor at position `q` (which must be in the support of `c`,
    /// else it is `full(uniform)` and this returns `None`). `cotangent` is the node's cotangent,
    /// used by [`single_cotangent`](Self::single_cotangent) leaves.
    ///
    /// # Errors
    /// When `c` is not a handle of this arena ([`is_handle`](Self::is_handle)), or two tensors
    /// added at `q` have different lengths.
    pub fn read(&mut self, c: Contrib, q: usize, cotangent: &RawTensor<A>) -> Result<RawTensor<A>, String> {
        if !self.is_handle(c) {
            return Err(not_a_handle(c));
        }
        let Some(dims) = self.dims_at(c, q, cotangent) else {
            return Err(format!("position {q} is not in the support"));
        };
        let mut v = Vec::with_capacity(dims.numel());
        self.read_into(c, q, cotangent, Sink::New(&mut v))?;
        RawTensor::from_vec(dims, v).map_err(|e| e.to_string())
    }

    /// The dense form over a prefix of the given shapes: the reader at support positions,
    /// `full(uniform)` elsewhere.
    ///
    /// # Errors
    /// When `c` is not a handle of this arena ([`is_handle`](Self::is_handle)), a support position
    /// is outside the prefix or a tensor has the wrong shape.
    pub fn dense(
        &mut self,
        c: Contrib,
        prefix: &[Dims],
        cotangent: &RawTensor<A>,
    ) -> Result<Vec<RawTensor<A>>, String> {
        if !self.is_handle(c) {
            return Err(not_a_handle(c));
        }
        let support = self.support(c);
        if let Some(&q) = support.iter().find(|&&q| q >= prefix.len()) {
            return Err(format!("contributes to position {q}, outside its prefix of {}", prefix.len()));
        }
        let uniform = self.uniform(c);
        let mut out = Vec::with_capacity(prefix.len());
        for (q, &dims) in prefix.iter().enumerate() {
            if support.contains(&q) {
                let t = self.read(c, q, cotangent)?;
                if t.dims() != dims {
                    return Err(format!(
                        "contribution to position {q} has shape {}, the position has shape {dims}",
                        t.dims()
                    ));
                }
                out.push(t);
            } else {
                out.push(RawTensor::full(dims, uniform.clone()));
            }
        }
        Ok(out)
    }

    /// Dims of the first leaf of `c` at `q` (all leaves added at `q` must agree).
    fn dims_at(&self, c: Contrib, q: usize, cotangent: &RawTensor<A>) -> Option<Dims> {
        self.descriptions[..=c.0].iter().find_map(|d| match d {
            Description::Single { position, leaf } if *position == q => Some(match leaf {
                Leaf::Cotangent => cotangent.dims(),
                Leaf::Owned(i) => self.owned[*i].dims(),
            }),
            _ => None,
        })
    }

    /// Dims of the reader's tensor at `q`, checked against `expected`.
    pub(crate) fn check_dims(
        &self,
        c: Contrib,
        q: usize,
        cotangent: &RawTensor<A>,
        expected: Dims,
    ) -> Result<(), String> {
        match self.dims_at(c, q, cotangent) {
            Some(d) if d == expected => Ok(()),
            Some(d) => Err(format!("contribution to position {q} has shape {d}, the position has shape {expected}")),
            None => Err(format!("position {q} is not in the support")),
        }
    }

    /// Evaluates the reader of `c` at `q` into `sink`: one sweep over the arena in creation order
    /// (children are always created before their parent), no recursion. The top-level `add` is
    /// fused with the sink, so `target + (l + r)` is one pass and `l + 0` never gets a buffer.
    pub(crate) fn read_into(
        &mut self,
        c: Contrib,
        q: usize,
        cotangent: &RawTensor<A>,
        mut sink: Sink<'_, A>,
    ) -> Result<(), String> {
        let n = match &sink {
            Sink::New(_) | Sink::OntoUniform(..) | Sink::OntoUniformInto(..) => {
                self.dims_at(c, q, cotangent).map_or(0, |d| d.numel())
            }
            Sink::Accumulate(t) => t.len(),
        };
        self.reads.clear();
        let mut used_scratch = 0;
        for k in 0..c.0 {
            let read = match &self.descriptions[k] {
                Description::Fill(_) => Read::Outside,
                Description::Single { position, leaf } => {
                    if *position == q {
                        Read::Leaf(*leaf)
                    } else {
                        Read::Outside
                    }
                }
                Description::Add { left, right, .. } => {
                    let (l, r) = (self.reads[*left], self.reads[*right]);
                    if matches!((l, r), (Read::Outside, Read::Outside)) {
                        Read::Outside
                    } else {
                        if self.scratch.len() == used_scratch {
                            self.scratch.push(Vec::new());
                        }
                        let mut buf = core::mem::take(&mut self.scratch[used_scratch]);
                        buf.clear();
                        let lo = self.operand(*left, l, cotangent);
                        let ro = self.operand(*right, r, cotangent);
                        emit_add(Sink::New(&mut buf), n, lo, ro)?;
                        self.scratch[used_scratch] = buf;
                        used_scratch += 1;
                        Read::Scratch(used_scratch - 1)
                    }
                }
            };
            self.reads.push(read);
        }
        match &self.descriptions[c.0] {
            Description::Fill(_) => Err(format!("position {q} is not in the support")),
            Description::Single { position, leaf } => {
                if *position != q {
                    return Err(format!("position {q} is not in the support"));
                }
                let leaf = *leaf;
                if let (Sink::OntoUniform(stored, out), Leaf::Owned(i)) = (&mut sink, leaf) {
                    let mut buf = self.adopt(i, n)?;
                    let stored: A = (**stored).clone();
                    for x in buf.iter_mut() {
                        *x = A::pinned_add(stored.clone(), x.clone());
                    }
                    core::mem::swap(&mut **out, &mut buf);
                    self.pool.push(buf);
                    return Ok(());
                }
                emit_copy(sink, n, self.leaf(leaf, cotangent))
            }
            Description::Add { left, right, .. } => {
                let (l, r) = (self.reads[*left], self.reads[*right]);
                if matches!((l, r), (Read::Outside, Read::Outside)) {
                    return Err(format!("position {q} is not in the support"));
                }
                let (left, right) = (*left, *right);
                if let Sink::OntoUniform(stored, out) = &mut sink {
                    // `stored + (u + t[i])` or `stored + (t[i] + u)` in `t`'s own buffer.
                    let adoptable = match (l, r) {
                        (Read::Outside, Read::Leaf(Leaf::Owned(i))) => Some((i, self.uniform(Contrib(left)), true)),
                        (Read::Leaf(Leaf::Owned(i)), Read::Outside) => Some((i, self.uniform(Contrib(right)), false)),
                        _ => None,
                    };
                    if let Some((i, u, uniform_left)) = adoptable {
                        let mut buf = self.adopt(i, n)?;
                        let stored: A = (**stored).clone();
                        if uniform_left {
                            for x in buf.iter_mut() {
                                *x = A::pinned_add(stored.clone(), A::pinned_add(u.clone(), x.clone()));
                            }
                        } else {
                            for x in buf.iter_mut() {
                                *x = A::pinned_add(stored.clone(), A::pinned_add(x.clone(), u.clone()));
                            }
                        }
                        core::mem::swap(&mut **out, &mut buf);
                        self.pool.push(buf);
                        return Ok(());
                    }
                }
                let lo = self.operand(left, l, cotangent);
                let ro = self.operand(right, r, cotangent);
                emit_add(sink, n, lo, ro)
            }
        }
    }

    /// Takes the buffer of owned tensor `i` (`n` elements) for an in-place update. The tensor is
    /// left with an empty buffer: a `single` leaf is read only at its own position, once per
    /// `add_contributions`, and a second read would fail the length check instead of reading
    /// stale values.
    fn adopt(&mut self, i: usize, n: usize) -> Result<Vec<A>, String> {
        let t = &mut self.owned[i];
        check_len(n, t.data())?;
        Ok(t.take_data())
    }

    fn leaf<'x>(&'x self, leaf: Leaf, cotangent: &'x RawTensor<A>) -> &'x [A] {
        match leaf {
            Leaf::Cotangent => cotangent.data(),
            Leaf::Owned(i) => self.owned[i].data(),
        }
    }

    fn operand<'x>(&'x self, k: usize, read: Read, cotangent: &'x RawTensor<A>) -> Operand<'x, A> {
        match read {
            Read::Outside => match &self.descriptions[k] {
                Description::Fill(v) => Operand::Uniform(v),
                Description::Single { .. } => Operand::Uniform(&self.zero),
                Description::Add { uniform, .. } => Operand::Uniform(uniform),
            },
            Read::Leaf(leaf) => Operand::Slice(self.leaf(leaf, cotangent)),
            Read::Scratch(i) => Operand::Slice(&self.scratch[i]),
        }
    }
}

fn check_len<A>(n: usize, s: &[A]) -> Result<(), String> {
    if s.len() == n {
        Ok(())
    } else {
        Err(format!("tensors of {} and {n} elements added at one position", s.len()))
    }
}

/// Writes `values` (exactly `n` of them) into `sink`. The values come as an iterator over slices,
/// not an index closure, so the loops vectorise (no bounds check per element).
/// The loop runs in the widest build the CPU has (`ops::elementwise`: the same operations).
#[inline]
fn emit<A: Scalar>(sink: Sink<'_, A>, values: impl Iterator<Item = A>) {
    crate::ops::elementwise(Emit { sink, values });
}

/// [`emit`]'s loop, a `WideLoop` so that it is compiled inside the wide build (as a closure it
/// stayed out of line).
struct Emit<'s, A, I> {
    sink: Sink<'s, A>,
    values: I,
}

impl<A: Scalar, I: Iterator<Item = A>> crate::ops::WideLoop for Emit<'_, A, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        emit_here(self.sink, self.values);
    }
}

#[inline(always)]
fn emit_here<A: Scalar>(sink: Sink<'_, A>, values: impl Iterator<Item = A>) {
    match sink {
        Sink::New(v) => v.extend(values),
        Sink::Accumulate(t) => {
            for (x, y) in t.iter_mut().zip(values) {
                *x = A::pinned_add(x.clone(), y);
            }
        }
        Sink::OntoUniform(stored, v) | Sink::OntoUniformInto(stored, v) => {
            v.extend(values.map(|y| A::pinned_add(stored.clone(), y)));
        }
    }
}

fn emit_copy<A: Scalar>(sink: Sink<'_, A>, n: usize, t: &[A]) -> Result<(), String> {
    check_len(n, t)?;
    crate::ops::elementwise(Emit { sink, values: t.iter().cloned() });
    Ok(())
}

fn emit_add<A: Scalar>(sink: Sink<'_, A>, n: usize, l: Operand<'_, A>, r: Operand<'_, A>) -> Result<(), String> {
    match (l, r) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            check_len(n, a)?;
            check_len(n, b)?;
            emit(sink, a.iter().zip(b).map(|(x, y)| A::pinned_add(x.clone(), y.clone())));
        }
        (Operand::Slice(a), Operand::Uniform(u)) => {
            check_len(n, a)?;
            emit(sink, a.iter().map(|x| A::pinned_add(x.clone(), u.clone())));
        }
        (Operand::Uniform(u), Operand::Slice(b)) => {
            check_len(n, b)?;
            emit(sink, b.iter().map(|y| A::pinned_add(u.clone(), y.clone())));
        }
        (Operand::Uniform(u), Operand::Uniform(w)) => {
            emit(sink, core::iter::repeat_n(A::pinned_add(u.clone(), w.clone()), n));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A contribution description as data, for the definitional dense form.
    #[derive(Clone, Debug)]
    enum Tree {
        Fill(f64),
        Single(usize, Vec<f64>),
        Cotangent(usize),
        Add(Box<Tree>, Box<Tree>),
    }

    const PREFIX: usize = 3;
    const WIDTH: usize = 2;

    fn special() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(-2.5),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::from_bits(0x7ff8_0000_0000_0001)),
            Just(f64::from_bits(0xfff8_0000_0000_0002)),
            Just(f64::from_bits(1)),
            Just(1e300),
        ]
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            special().prop_map(Tree::Fill),
            (0..PREFIX, prop::collection::vec(special(), WIDTH)).prop_map(|(p, v)| Tree::Single(p, v)),
            (0..PREFIX).prop_map(Tree::Cotangent),
        ];
        leaf.prop_recursive(4, 16, 2, |inner| {
            (inner.clone(), inner).prop_map(|(l, r)| Tree::Add(Box::new(l), Box::new(r)))
        })
    }

    /// The definition of §4: dense(fill v) = full(v); dense(single(p, t)) = t at p, zeros elsewhere;
    /// dense(add(l, r)) = pack_add(dense(l), dense(r)).
    fn definition(t: &Tree, g: &[f64]) -> Vec<Vec<f64>> {
        match t {
            Tree::Fill(v) => vec![vec![*v; WIDTH]; PREFIX],
            Tree::Single(p, v) => (0..PREFIX).map(|q| if q == *p { v.clone() } else { vec![0.0; WIDTH] }).collect(),
            Tree::Cotangent(p) => (0..PREFIX).map(|q| if q == *p { g.to_vec() } else { vec![0.0; WIDTH] }).collect(),
            Tree::Add(l, r) => definition(l, g)
                .into_iter()
                .zip(definition(r, g))
                .map(|(a, b)| a.iter().zip(&b).map(|(x, y)| x + y).collect())
                .collect(),
        }
    }

    fn build(t: &Tree, c: &mut Contributions<f64>) -> Contrib {
        match t {
            Tree::Fill(v) => c.fill(*v),
            Tree::Single(p, v) => {
                let t = c.tensor(Dims::vector(WIDTH), |i| v[i]);
                c.single(*p, t)
            }
            Tree::Cotangent(p) => c.single_cotangent(*p),
            Tree::Add(l, r) => {
                let l = build(l, c);
                let r = build(r, c);
                c.add(l, r)
            }
        }
    }

    fn support_of(t: &Tree) -> Vec<usize> {
        match t {
            Tree::Fill(_) => vec![],
            Tree::Single(p, _) | Tree::Cotangent(p) => vec![*p],
            Tree::Add(l, r) => [support_of(l), support_of(r)].concat(),
        }
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// compact == dense by construction: the dense form, every read, and accumulation into a
        /// target agree bit for bit with the definition.
        #[test]
        fn dense_form_matches_the_definition(t in tree(), g in prop::collection::vec(special(), WIDTH),
                                             acc in prop::collection::vec(special(), WIDTH)) {
            let mut c = Contributions::new();
            c.fill(7.0); // unrelated description first: roots need not be the first entry
            let root = build(&t, &mut c);
            let cot = RawTensor::from_vec(Dims::vector(WIDTH), g.clone()).unwrap();
            let want = definition(&t, &g);
            prop_assert_eq!(c.support(root), support_of(&t));
            let dense = c.dense(root, &[Dims::vector(WIDTH); PREFIX], &cot).unwrap();
            for q in 0..PREFIX {
                prop_assert_eq!(bits(dense[q].data()), bits(&want[q]), "position {}", q);
                if support_of(&t).contains(&q) {
                    let mut target = acc.clone();
                    c.read_into(root, q, &cot, Sink::Accumulate(&mut target)).unwrap();
                    let expect: Vec<f64> = acc.iter().zip(&want[q]).map(|(a, b)| a + b).collect();
                    prop_assert_eq!(bits(&target), bits(&expect));
                } else {
                    let u = c.uniform(root);
                    prop_assert!(want[q].iter().all(|x| x.to_bits() == u.to_bits()));
                }
            }
        }
    }

    #[test]
    fn reading_outside_the_support_is_an_error() {
        let mut c = Contributions::<f32>::new();
        let root = c.fill(1.0);
        let g = RawTensor::zeros(Dims::scalar());
        assert!(c.read(root, 0, &g).is_err());
        let z = c.zero();
        assert_eq!(c.uniform(z).to_bits(), 0);
    }

    #[test]
    fn clear_recycles_buffers() {
        let mut c = Contributions::<f32>::new();
        let t = c.tensor(Dims::vector(64), |_| 1.0);
        let _ = c.single(0, t);
        c.clear();
        assert!(c.buffer().capacity() >= 64);
    }
}
