//! Run-time dims of a [`RawGraph`]: their declaration, and the binding `compile` makes from the
//! inputs and data before it recomputes every node's dims for the sizes it found (see
//! [`crate::shape::Binding`]).

use std::borrow::Cow;

use super::{Program, RawGraph};
use crate::error::Error;
use crate::scalar::Scalar;
use crate::shape::{named_dims, run_time_index, Binding, Dims, MAX_RUN_TIME_DIMS};
use crate::tensor::RawTensor;

/// Where a run-time dim got its size, for messages.
struct Source {
    size: usize,
    what: String,
}

impl<A: Scalar, D: 'static> RawGraph<A, D> {
    /// Declares the graph's run-time dims by name: the `k`-th is the axis size
    /// [`run_time_stand_in(k)`](crate::shape::run_time_stand_in) in the graph's dims, and takes
    /// its size from the inputs (and sized data) at every `compile`.
    ///
    /// ```
    /// use exactgrad_runtime::{ops::Sum, shape::run_time_stand_in, Dims, RawGraph, RawNode, RawSavedGraph, RawTensor};
    /// let batch = run_time_stand_in(0);
    /// let mut g = RawGraph::<f64, ()>::new(vec![Dims::matrix(batch, 2)]);
    /// g.set_run_time_dims(vec!["batch".into()]).unwrap();
    /// g.push(RawNode::compact(Sum::new(0))).unwrap();
    /// for b in [3, 1, 3] {
    ///     let x = RawTensor::from_vec(Dims::matrix(b, 2), vec![1.0; 2 * b]).unwrap();
    ///     let saved = RawSavedGraph::compile(&g, vec![x], ()).unwrap();
    ///     assert_eq!(saved.values()[1].data(), &[2.0 * b as f64]);
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::RunTimeDim`] for more than [`MAX_RUN_TIME_DIMS`] names.
    pub fn set_run_time_dims(&mut self, names: Vec<String>) -> Result<(), Error> {
        if names.len() > MAX_RUN_TIME_DIMS {
            return Err(Error::RunTimeDim {
                dim: names[MAX_RUN_TIME_DIMS].clone(),
                message: format!("a graph may declare at most {MAX_RUN_TIME_DIMS} run-time dims, got {}", names.len()),
            });
        }
        self.run_time = names;
        Ok(())
    }

    /// Names the inputs (in order), for the messages of [`Error::RunTimeDim`].
    pub fn set_input_names(&mut self, names: Vec<String>) {
        self.input_names = names;
    }
}

impl<A: 'static, D: 'static> RawGraph<A, D> {
    /// The names of the run-time dims (empty for a graph without any).
    #[must_use]
    pub fn run_time_dims(&self) -> &[String] {
        &self.run_time
    }

    /// The declared `dims` with run-time axes printed by name (`[batch, 3]`).
    #[must_use]
    pub fn named(&self, dims: Dims) -> String {
        named_dims(dims, &self.run_time)
    }

    /// The dims of every position for these inputs and data: the declared ones for a graph
    /// without run-time dims (after checking the inputs' shapes), else the dims recomputed for the
    /// sizes the inputs and data give the run-time dims (each node's shape rule on the dims before
    /// it, in order; no recursion).
    ///
    /// The work is [`Declared::bind`], which sees the nodes through [`NodeShapes`], without the
    /// scalar or the data's type: it is compiled once, here, and a model's crate compiles only
    /// this call and the small [`WithData`] forwarding to its nodes' ops.
    ///
    /// # Errors
    /// [`Error::PackShapes`] for inputs of the wrong number or (static) shapes; [`Error::RunTimeDim`]
    /// when two inputs, or an input and the data, give a run-time dim different sizes, or a size
    /// 0; [`Error::Node`] for a node whose shape rule refuses the recomputed dims.
    pub(crate) fn bound_dims(&self, inputs: &[RawTensor<A>], data: &D) -> Result<Cow<'_, [Dims]>, Error> {
        let declared = Declared {
            dims: &self.dims,
            inputs: self.inputs,
            run_time: &self.run_time,
            input_names: &self.input_names,
        };
        let actual = |i: usize| inputs[i].dims();
        match declared.bind(inputs.len(), &actual, &WithData { graph: self, data })? {
            None => Ok(Cow::Borrowed(&self.dims)),
            Some(dims) => Ok(Cow::Owned(dims)),
        }
    }
}

/// A graph's nodes as binding reads them, by node index, without the scalar or the data's type.
trait NodeShapes {
    /// Number of nodes.
    fn count(&self) -> usize;
    /// Node `k`'s op name and parents (`None`: no such node), for messages.
    fn describe(&self, k: usize) -> Option<(&str, &[usize])>;
    /// Node `k`'s dims on `prefix` (the dims of the positions before it): a compact op's shape
    /// rule (`Err`: its message, or its panic's), an opaque node's declared dims.
    fn dims_on(&self, k: usize, prefix: &[Dims]) -> Result<Dims, String>;
    /// The declared and actual dims of the data node `k` reads (`None`: it reads none).
    fn data_dims(&self, k: usize) -> Result<Option<(Dims, Dims)>, String>;
}

/// A graph with one run's data, as [`NodeShapes`].
struct WithData<'a, A: 'static, D: 'static> {
    graph: &'a RawGraph<A, D>,
    data: &'a D,
}

impl<A: 'static, D: 'static> NodeShapes for WithData<'_, A, D> {
    fn count(&self) -> usize {
        self.graph.nodes.len()
    }
    fn describe(&self, k: usize) -> Option<(&str, &[usize])> {
        self.graph.nodes.get(k).map(|node| (node.name(), node.parents()))
    }
    fn dims_on(&self, k: usize, prefix: &[Dims]) -> Result<Dims, String> {
        match self.graph.nodes.get(k).map(|node| (&node.program, node.dims)) {
            Some((Program::Compact(op), _)) => {
                crate::guard::guarded("its shape rule", || op.output_dims(prefix)).and_then(|rule| rule)
            }
            Some((Program::Opaque { .. }, dims)) => Ok(dims),
            None => Err(format!("no node {k}")),
        }
    }
    fn data_dims(&self, k: usize) -> Result<Option<(Dims, Dims)>, String> {
        match self.graph.nodes.get(k).map(|node| &node.program) {
            Some(Program::Compact(op)) => {
                crate::guard::guarded("its data", || op.data_dims(self.data)).and_then(|found| found)
            }
            _ => Ok(None),
        }
    }
}

/// A graph's declared dims and the names its messages use.
struct Declared<'a> {
    /// Every position's declared dims (run-time dims at their stand-ins).
    dims: &'a [Dims],
    /// Number of inputs.
    inputs: usize,
    /// The run-time dims' names.
    run_time: &'a [String],
    /// The inputs' names (empty: `input {i}`).
    input_names: &'a [String],
}

impl Declared<'_> {
    fn input_name(&self, i: usize) -> String {
        match self.input_names.get(i) {
            Some(n) => format!("input `{n}`"),
            None => format!("input {i}"),
        }
    }

    /// [`RawGraph::bound_dims`] for `count` inputs of dims `actual(i)`: `None` for the declared
    /// dims (a graph without run-time dims), else every position's dims for the binding found.
    fn bind(
        &self,
        count: usize,
        actual: &dyn Fn(usize) -> Dims,
        nodes: &dyn NodeShapes,
    ) -> Result<Option<Vec<Dims>>, Error> {
        let expected = &self.dims[..self.inputs];
        let fits = count == expected.len()
            && expected.iter().enumerate().all(|(i, &d)| crate::shape::fits_declared(d, actual(i)));
        let wrong_shapes = || Error::PackShapes {
            what: "graph inputs",
            expected: expected.to_vec(),
            actual: (0..count).map(actual).collect(),
        };
        if self.run_time.is_empty() {
            if !fits || expected.iter().enumerate().any(|(i, &d)| actual(i) != d) {
                return Err(wrong_shapes());
            }
            return Ok(None);
        }
        if !fits {
            if count != expected.len() {
                return Err(wrong_shapes());
            }
            let found = expected.iter().enumerate().find(|&(i, &d)| !crate::shape::fits_declared(d, actual(i)));
            let Some((i, &d)) = found else { return Err(wrong_shapes()) };
            return Err(Error::RunTimeDim {
                dim: String::new(),
                message: format!(
                    "{} has shape {}, but it was declared {}",
                    self.input_name(i),
                    actual(i),
                    named_dims(d, self.run_time)
                ),
            });
        }
        let mut binding = Binding::new(self.run_time.len());
        let mut sources: Vec<Option<Source>> = (0..self.run_time.len()).map(|_| None).collect();
        for (i, &d) in expected.iter().enumerate() {
            self.bind_axes(&mut binding, &mut sources, d, actual(i), &|| self.input_name(i))?;
        }
        for k in 0..nodes.count() {
            let found =
                nodes.data_dims(k).map_err(|m| crate::saved::node_error_of(nodes.describe(k), self.dims, k, m))?;
            if let Some((declared, actual)) = found {
                if declared.rank() == actual.rank() {
                    let name = nodes.describe(k).map_or("graph", |(name, _)| name);
                    let what = || format!("the data of node {k} ({name})");
                    self.bind_axes(&mut binding, &mut sources, declared, actual, &what)?;
                }
            }
        }
        if let Some(k) = (0..self.run_time.len()).find(|&k| binding.size(k).is_none()) {
            return Err(Error::RunTimeDim {
                dim: self.run_time[k].clone(),
                message: format!("run-time dim `{}` is not the size of an axis of any input or data", self.run_time[k]),
            });
        }
        self.recompute(&binding, nodes).map(Some)
    }

    fn bind_axes(
        &self,
        binding: &mut Binding,
        sources: &mut [Option<Source>],
        declared: Dims,
        actual: Dims,
        what: &dyn Fn() -> String,
    ) -> Result<(), Error> {
        for (&d, &a) in declared.as_slice().iter().zip(actual.as_slice()) {
            let Some(k) = run_time_index(d).filter(|&k| k < self.run_time.len()) else { continue };
            let name = &self.run_time[k];
            if a == 0 {
                return Err(Error::RunTimeDim {
                    dim: name.clone(),
                    message: format!("run-time dim `{name}` is 0 in {}; a run-time dim is at least 1", what()),
                });
            }
            match binding.bind(k, a) {
                None => sources[k] = Some(Source { size: a, what: what() }),
                Some(old) if old == a => {}
                Some(_) => {
                    let first = sources[k].as_ref().map_or_else(String::new, |s| format!("{} in {}", s.size, s.what));
                    return Err(Error::RunTimeDim {
                        dim: name.clone(),
                        message: format!("run-time dim `{name}` is {first} but {a} in {}", what()),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every position's dims for `binding`: the inputs' declared dims resolved, then each node's
    /// shape rule on the dims before it (an opaque node's declared dims resolved).
    fn recompute(&self, binding: &Binding, nodes: &dyn NodeShapes) -> Result<Vec<Dims>, Error> {
        let mut dims: Vec<Dims> = self.dims[..self.inputs].iter().map(|&d| binding.resolve(d)).collect();
        dims.reserve(nodes.count());
        for k in 0..nodes.count() {
            let fail = |m: String, dims: &[Dims]| crate::saved::node_error_of(nodes.describe(k), dims, k, m);
            let d = binding.resolve(nodes.dims_on(k, &dims).map_err(|m| fail(m, &dims))?);
            if d.checked_numel().is_none() {
                return Err(fail(format!("its shape {d} has more elements than fit in usize"), &dims));
            }
            dims.push(d);
        }
        Ok(dims)
    }
}

#[cfg(test)]
mod tests;
