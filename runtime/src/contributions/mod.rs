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

mod emit;
mod read;
#[cfg(test)]
mod tests;

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
    #[must_use]
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

    /// An empty arena whose buffer pool already has room for its bound, so that an arena kept
    /// from run to run (a generated program's) allocates nothing after its first run, whenever
    /// it is first given a buffer back.
    pub(crate) fn reusable() -> Self {
        let mut c = Self::new();
        c.pool.reserve_exact(POOL_LIMIT);
        c
    }

    /// Every buffer the arena holds (its spare ones and its tensors'), moved out: a pass gives
    /// them back to its graph when it ends.
    pub(crate) fn take_buffers(&mut self) -> Vec<Vec<A>> {
        self.clear();
        core::mem::take(&mut self.pool)
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

    /// A tensor of the elements `values` yields (as many as `dims` holds, or fewer: a reader
    /// refuses a tensor of the wrong length), built in a recycled buffer.
    pub fn tensor_from_iter(&mut self, dims: Dims, values: impl Iterator<Item = A>) -> RawTensor<A> {
        let mut v = self.buffer_for(dims.numel());
        v.extend(values.take(dims.numel()));
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
        let Some(i) = fit else { return Vec::with_capacity(n) };
        let mut v = self.pool.swap_remove(i);
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
}
