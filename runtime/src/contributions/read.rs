//! The reader and the dense form of a description: evaluating its `add` tree at one position.

use super::emit::{check_len, emit_add, emit_copy};
use super::*;

impl<A: Scalar> Contributions<A> {
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
                    for x in &mut buf {
                        *x = A::pinned_add(stored.clone(), x.clone());
                    }
                    core::mem::swap(&mut **out, &mut buf);
                    self.recycle(buf);
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
                            for x in &mut buf {
                                *x = A::pinned_add(stored.clone(), A::pinned_add(u.clone(), x.clone()));
                            }
                        } else {
                            for x in &mut buf {
                                *x = A::pinned_add(stored.clone(), A::pinned_add(x.clone(), u.clone()));
                            }
                        }
                        core::mem::swap(&mut **out, &mut buf);
                        self.recycle(buf);
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
