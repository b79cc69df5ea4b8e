//! Graphviz rendering of graphs: [`RawGraph::to_dot`] writes a DOT document (render it with
//! `dot -Tsvg graph.dot -o graph.svg`).
//!
//! * one node per input (an ellipse) and per graph node (a box), labelled with the position, the
//!   op's name and the output shape;
//! * one edge from each position a node reads to the node (a position read twice gets one edge
//!   labelled `×2`);
//! * when a compact node's static support differs from the positions it reads, a read position
//!   outside the support gets a grey dashed edge labelled `read`, and a support position it does
//!   not read gets a dotted edge labelled `support`;
//! * an opaque node is a dashed box whose label says `opaque`: its VJP may reach its whole
//!   prefix, and its edges are the positions it declared.

use core::fmt::Write as _;

use crate::graph::{GraphData, RawGraph};
use crate::scalar::Scalar;

/// `s` as the inside of a DOT double-quoted string: `"` and `\` escaped, line breaks written as
/// DOT's centred line break `\n`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Distinct positions of `list`, in first-occurrence order, with their multiplicity.
fn counted(list: &[usize]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(list.len());
    for &q in list {
        match out.iter_mut().find(|(p, _)| *p == q) {
            Some((_, n)) => *n += 1,
            None => out.push((q, 1)),
        }
    }
    out
}

impl<A: 'static, D: 'static> RawGraph<A, D> {
    /// The graph as a Graphviz DOT document (see the [module docs](crate::graphviz) for the drawing
    /// conventions). Node ids are `p<position>`.
    ///
    /// ```
    /// use exactgrad_runtime::{ops, GraphData, typenum::U2};
    /// let (g, x) = GraphData::<f64, ()>::new().input::<(U2,)>();
    /// let (g, y) = g.push(ops::mul(x, x));
    /// let (g, _s) = g.push(ops::sum(y));
    /// let dot = g.to_dot();
    /// assert!(dot.starts_with("digraph exactgrad {"));
    /// assert!(dot.contains("p0 -> p1 [label=\"×2\"];"));
    /// assert!(dot.contains("p1 -> p2;"));
    /// ```
    #[must_use]
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        // Writing to a `String` cannot fail.
        let _ = self.write_dot(&mut out);
        out
    }

    fn write_dot(&self, out: &mut String) -> core::fmt::Result {
        writeln!(out, "digraph exactgrad {{")?;
        writeln!(out, "  rankdir=TB;")?;
        writeln!(out, "  node [shape=box, fontname=\"monospace\"];")?;
        writeln!(out, "  edge [fontname=\"monospace\", fontsize=10];")?;
        let dims = self.dims();
        for (p, d) in dims[..self.num_inputs()].iter().enumerate() {
            let label = escape(&format!("%{p} input\n{}", self.named(*d)));
            writeln!(out, "  p{p} [label=\"{label}\", shape=ellipse];")?;
        }
        for (k, node) in self.nodes().iter().enumerate() {
            let p = self.num_inputs() + k;
            if node.is_opaque() {
                let label = escape(&format!("%{p} {} (opaque)\n{}", node.name(), self.named(node.dims())));
                writeln!(out, "  p{p} [label=\"{label}\", style=dashed];")?;
            } else {
                let label = escape(&format!("%{p} {}\n{}", node.name(), self.named(node.dims())));
                writeln!(out, "  p{p} [label=\"{label}\"];")?;
            }
        }
        for (k, node) in self.nodes().iter().enumerate() {
            let p = self.num_inputs() + k;
            let support = node.support();
            let in_support = |q: usize| support.is_none_or(|s| s.contains(&q));
            for (q, n) in counted(node.parents()) {
                let mut attrs = Vec::new();
                if !in_support(q) {
                    attrs.push("style=dashed, color=gray".to_owned());
                }
                match (n, in_support(q)) {
                    (1, true) => {}
                    (1, false) => attrs.push("label=\"read\"".to_owned()),
                    (n, true) => attrs.push(format!("label=\"×{n}\"")),
                    (n, false) => attrs.push(format!("label=\"read ×{n}\"")),
                }
                if attrs.is_empty() {
                    writeln!(out, "  p{q} -> p{p};")?;
                } else {
                    writeln!(out, "  p{q} -> p{p} [{}];", attrs.join(", "))?;
                }
            }
            for (q, _) in counted(support.unwrap_or(&[])) {
                if !node.parents().contains(&q) {
                    writeln!(out, "  p{q} -> p{p} [style=dotted, label=\"support\"];")?;
                }
            }
        }
        writeln!(out, "}}")
    }
}

impl<A: Scalar, D: 'static, G, Ss, Br> GraphData<A, D, G, Ss, Br> {
    /// The graph as a Graphviz DOT document (see [`RawGraph::to_dot`]).
    #[must_use]
    pub fn to_dot(&self) -> String {
        self.raw().to_dot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contributions::{Contrib, Contributions};
    use crate::graph::{CompactOp, Node, SavedValues};
    use crate::ops;
    use crate::shape::Dims;
    use crate::tensor::RawTensor;
    use crate::typenum::{U2, U3};

    /// Reads `parents[0]` and `parents[1]`, contributes to `support` only.
    struct Odd {
        parents: [usize; 2],
        support: [usize; 2],
    }

    impl CompactOp<f64, ()> for Odd {
        fn name(&self) -> &'static str {
            "odd"
        }
        fn parents(&self) -> &[usize] {
            &self.parents
        }
        fn support(&self) -> &[usize] {
            &self.support
        }
        fn output_dims(&self, prefix: &[Dims]) -> Result<Dims, String> {
            Ok(prefix[self.parents[0]])
        }
        fn forward(&self, ctx: &[RawTensor<f64>], (): &()) -> RawTensor<f64> {
            ctx[self.parents[0]].clone()
        }
        fn contributions(
            &self,
            _: &SavedValues<'_, f64, ()>,
            _: &RawTensor<f64>,
            c: &mut Contributions<f64>,
        ) -> Contrib {
            c.single_cotangent(self.support[0])
        }
    }

    /// Checks the document is well formed as far as these tests need: balanced braces and
    /// brackets outside strings, every string closed, every statement line ending in `;` or a
    /// brace. Returns the statement lines.
    fn statements(dot: &str) -> Vec<&str> {
        let (mut depth, mut brackets, mut in_string, mut escaped) = (0i32, 0i32, false, false);
        for ch in dot.chars() {
            if in_string {
                match (escaped, ch) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match ch {
                '"' => in_string = true,
                '{' => depth += 1,
                '}' => depth -= 1,
                '[' => brackets += 1,
                ']' => brackets -= 1,
                _ => {}
            }
            assert!(depth >= 0 && brackets >= 0, "unbalanced in {dot}");
        }
        assert!(!in_string && depth == 0 && brackets == 0, "malformed: {dot}");
        let lines: Vec<&str> = dot.lines().map(str::trim).collect();
        assert_eq!(lines.first(), Some(&"digraph exactgrad {"));
        assert_eq!(lines.last(), Some(&"}"));
        let body = &lines[1..lines.len() - 1];
        assert!(body.iter().all(|l| l.ends_with(';')), "{dot}");
        body.to_vec()
    }

    fn nodes<'a>(stmts: &[&'a str]) -> Vec<&'a str> {
        stmts.iter().copied().filter(|l| l.starts_with('p') && !l.contains("->")).collect()
    }

    fn edges<'a>(stmts: &[&'a str]) -> Vec<&'a str> {
        stmts.iter().copied().filter(|l| l.contains("->")).collect()
    }

    #[test]
    fn one_node_per_position_and_one_edge_per_distinct_parent() {
        let g = GraphData::<f64, ()>::new();
        let (g, x) = g.input::<(U2, U3)>();
        let (g, w) = g.input::<(U3,)>();
        let (g, h) = g.push(ops::add_row(x, w));
        let (g, y) = g.push(ops::mul(h, h));
        let (g, _s) = g.push(ops::sum(y));
        let dot = g.to_dot();
        let stmts = statements(&dot);
        let nodes = nodes(&stmts);
        assert_eq!(nodes.len(), 5, "{dot}");
        assert_eq!(nodes[0], "p0 [label=\"%0 input\\n[2, 3]\", shape=ellipse];");
        assert_eq!(nodes[2], "p2 [label=\"%2 add_row\\n[2, 3]\"];");
        assert_eq!(nodes[4], "p4 [label=\"%4 sum\\n[]\"];");
        assert_eq!(edges(&stmts), ["p0 -> p2;", "p1 -> p2;", "p2 -> p3 [label=\"×2\"];", "p3 -> p4;"]);
        assert!(!dot.contains("opaque"));
    }

    #[test]
    fn opaque_nodes_are_dashed_and_names_are_escaped() {
        let g = GraphData::<f64, ()>::new();
        let (g, x) = g.input::<(U2,)>();
        let (g, o) = g.push(ops::opaque::<f64, (), (U2,)>(
            "say \"hi\" \\ back\nslash",
            &[&x],
            |ctx, ()| ctx[0].clone(),
            |_, (), g| vec![g.clone()],
        ));
        let (g, _s) = g.push(ops::sum(o));
        let dot = g.to_dot();
        let stmts = statements(&dot);
        assert_eq!(nodes(&stmts).len(), 3);
        assert_eq!(nodes(&stmts)[1], r#"p1 [label="%1 say \"hi\" \\ back\nslash (opaque)\n[2]", style=dashed];"#);
        assert_eq!(edges(&stmts), ["p0 -> p1;", "p1 -> p2;"]);
        assert_eq!(dot.matches("opaque").count(), 1);
    }

    #[test]
    fn support_edges_differ_from_read_edges() {
        let g = GraphData::<f64, ()>::new();
        let (g, a) = g.input::<(U2,)>();
        let (g, b) = g.input::<(U2,)>();
        let (g, c) = g.input::<(U2,)>();
        // Reads a and b, contributes to a and c.
        let odd = Odd { parents: [a.index(), b.index()], support: [a.index(), c.index()] };
        let (g, _y) = g.push(Node::<f64, (), (U2,)>::compact(odd, &[&a, &b, &c]));
        let dot = g.to_dot();
        let stmts = statements(&dot);
        assert_eq!(nodes(&stmts).len(), 4);
        assert_eq!(
            edges(&stmts),
            [
                "p0 -> p3;",
                "p1 -> p3 [style=dashed, color=gray, label=\"read\"];",
                "p2 -> p3 [style=dotted, label=\"support\"];",
            ]
        );
    }

    #[test]
    fn escape_handles_quotes_backslashes_and_newlines() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("x\r\ny"), "x\\ny");
    }
}
