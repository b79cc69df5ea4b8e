//! The graph function: a typed `MacroBuilder` fed every input and node. Each built-in node is its
//! runtime op's typed constructor called with every shape type spelled out (operands and output),
//! so the op's rule trait (`shape::rules`) checks the node — for generic dims too — and reports a
//! broken rule at the user's expression; the builder's type records each shape, so the finished
//! graph's lists are checked against the `…Inputs` and `…Nodes` aliases by the compiler.

use exactgrad_spec::{Args, Bound, OpSpec, TypeRule, NODE_CHUNK};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::{Ident, Path};

use super::constants::constant_tokens;
use super::items::{
    bound_tokens, common, dim_tokens, node_list, scalar_ident, used_dims, user_bounds, Common, DimUse, Names,
};
use super::private;
use crate::ir::{Dim, ExtraArg, Fill, Graph, Node, NodeKind, Shape};
use crate::parse::GraphDef;
use crate::plan::rolled::{segments, Parent, Rolled, Segment};
use crate::typenum::unsigned;

/// The name of value `v` in the generated function.
pub(super) fn value(v: usize) -> Ident {
    format_ident!("__v{}", v, span = Span::mixed_site())
}

/// Per input position (`0..n_in`), whether `tokens` name its value (`value(q)`) or it is an
/// output: the array elements that need a name of their own. The token trees are walked with a
/// stack, not by recursion.
fn used_values(tokens: &TokenStream, n_in: usize, outputs: &[usize]) -> Vec<bool> {
    let mut used = vec![false; n_in];
    for &o in outputs {
        if let Some(u) = used.get_mut(o) {
            *u = true;
        }
    }
    let mut stack = vec![tokens.clone()];
    while let Some(ts) = stack.pop() {
        for tree in ts {
            match tree {
                proc_macro2::TokenTree::Group(g) => stack.push(g.stream()),
                proc_macro2::TokenTree::Ident(i) => {
                    let name = i.to_string();
                    if let Some(q) = name.strip_prefix("__v").and_then(|n| n.parse::<usize>().ok()) {
                        if let Some(u) = used.get_mut(q) {
                            *u = true;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    used
}

/// The name of the array of positions of parameter array `d` (its index among the declared
/// inputs) in the generated function.
pub(super) fn array(d: usize) -> Ident {
    format_ident!("__a{}", d, span = Span::mixed_site())
}

/// A shape as a type, every token at `span` (generic dims re-spanned there, so the compiler
/// points at the user's expression).
pub(super) fn shape_at(s: &Shape, span: Span) -> TokenStream {
    let dims = s.0.iter().map(|d| match d {
        Dim::Sym(i) => {
            // Re-spanned, not rebuilt from its text (a raw `r#B` is no valid `Ident::new` text).
            let mut i = i.clone();
            i.set_span(span);
            i.to_token_stream()
        }
        lit => dim_tokens(lit, span),
    });
    quote_spanned!(span=> (#(#dims,)*))
}

pub(super) fn full(def: &GraphDef, graph: &Graph, names: &Names) -> TokenStream {
    let p = private();
    let s = scalar_ident(def);
    let outputs: Vec<TokenStream> =
        graph.outputs.iter().map(|&o| shape_at(graph.shape_of(o), Span::call_site())).collect();
    let input_shape_list: Vec<&Shape> = graph.inputs.iter().map(|(_, s)| s).collect();
    let mut handle_shapes = input_shape_list.clone();
    handle_shapes.extend(graph.outputs.iter().map(|&o| graph.shape_of(o)));
    let used = DimUse {
        inputs: used_dims(&def.dims, &input_shape_list),
        handles: used_dims(&def.dims, &handle_shapes),
        data: used_dims(&def.dims, &graph.data_tensors.iter().map(|(_, s)| s).collect::<Vec<_>>()),
        nodes: used_dims(&def.dims, &graph.nodes.iter().map(|n| &n.shape).collect::<Vec<_>>()),
    };
    let mut input_decls = Vec::new();
    let mut input_fields = Vec::new();
    for (d, (name, n, shape)) in graph.input_decls.iter().enumerate() {
        let shape = shape_at(shape, name.span());
        input_decls.push((name.clone(), *n, shape));
        let first = graph.input_decls[..d].iter().map(|(_, n, _)| n.unwrap_or(1)).sum::<usize>();
        input_fields.push(match n {
            None => {
                let v = value(first);
                quote!(#name: #v)
            }
            Some(_) => {
                let a = array(d);
                quote!(#name: #a)
            }
        });
    }
    let Common { items, generics, dim_bounds, handle_generics, data_ty: data } = common(
        def,
        &def.dims,
        &used,
        names,
        &input_decls,
        &outputs,
        node_list(&segments(graph), |k| shape_at(&graph.nodes[k].shape, Span::call_site())),
    );
    let Names { alias, handles, brand, model, inputs: inputs_alias, .. } = names;

    let mut bounds: Vec<Bound> = Vec::new();
    let cx = Cx { p: &p, s: &s, data: &data, brand, graph, run_time: &def.run_time };
    let body = cx.builder(&mut bounds);
    bounds.sort();
    bounds.dedup();
    let scalar_bounds: Vec<TokenStream> = bounds.iter().map(|&b| bound_tokens(b, &s)).collect();
    let user = user_bounds(def);
    let all_bounds = quote!(#(+ #scalar_bounds)* #user);
    let input_dims = &used.inputs;
    let seeds_ty = match &outputs[..] {
        [one] => quote!(#p::Tensor<#s, #one>),
        many => quote!((#(#p::Tensor<#s, #many>,)*)),
    };
    let model_items = super::program::model(&super::program::ModelParts {
        cx: Cx { p: &p, s: &s, data: &data, brand, graph, run_time: &def.run_time },
        model,
        graph_fn: &def.name,
        generics: &generics,
        dim_bounds: &dim_bounds,
        scalar_bounds: &all_bounds,
        inputs_ty: quote!(#inputs_alias<#(#input_dims),*>),
        seeds_ty,
        vis: &def.vis,
    });
    let (attrs, vis, name) = (&def.attrs, &def.vis, &def.name);
    let output_fields = graph.outputs.iter().enumerate().map(|(k, &o)| {
        let field = if graph.outputs.len() == 1 { format_ident!("output") } else { format_ident!("output{k}") };
        let v = value(o);
        quote!(#field: #v)
    });
    quote! {
        #items

        #(#attrs)*
        #vis fn #name<#s, #generics>() -> (#alias<#s, #generics>, #handles<#handle_generics>)
        where
            #s: #p::Scalar #all_bounds,
            #dim_bounds
        {
            #body
            (__b.finish(), #handles { #(#input_fields,)* #(#output_fields,)* })
        }

        #model_items
    }
}

/// What every node's tokens need.
pub(super) struct Cx<'a> {
    pub(super) p: &'a TokenStream,
    pub(super) s: &'a Ident,
    pub(super) data: &'a TokenStream,
    pub(super) brand: &'a Ident,
    pub(super) graph: &'a Graph,
    /// The run-time dims (`batch: dyn`), in declaration order.
    pub(super) run_time: &'a [Ident],
}

impl Cx<'_> {
    /// The builder statements: every input, the declared-shape checks, every node pushed (closing
    /// a chunk every `NODE_CHUNK` nodes, a rolled loop as a loop: [`segments`]).
    pub(super) fn builder(&self, bounds: &mut Vec<Bound>) -> TokenStream {
        let Cx { p, s, data, brand, graph, .. } = self;
        let n_in = graph.inputs.len();
        let mut body = quote!(let __b = #p::MacroBuilder::<#s, #data, #brand>::new(););
        if !self.run_time.is_empty() {
            let dims = self.run_time.iter().map(|d| syn::ext::IdentExt::unraw(d).to_string());
            let inputs = graph.inputs.iter().map(|(n, _)| syn::ext::IdentExt::unraw(n).to_string());
            body.extend(quote!(let __b = __b.run_time_dims(&[#(#dims),*], &[#(#inputs),*]);));
        }
        // The nodes first: an array's elements are named only where they are used one by one
        // (a rolled loop reads `__a1[__i]`), so a 2 000-element array is not 2 000 locals.
        let nodes = self.nodes(bounds);
        let arrays = graph.input_decls.iter().any(|(_, n, _)| n.is_some());
        let used = if arrays { used_values(&nodes, n_in, &graph.outputs) } else { Vec::new() };
        let mut k = 0;
        for (d, (_, n, _)) in graph.input_decls.iter().enumerate() {
            let shape = shape_at(&graph.inputs[k].1, graph.inputs[k].0.span());
            match n {
                None => {
                    let v = value(k);
                    body.extend(quote!(let (__b, #v) = __b.input::<#shape>();));
                }
                Some(n) => {
                    // One list entry for the array; the elements used alone named as the other values.
                    let a = array(d);
                    body.extend(quote!(let (__b, #a) = __b.input_array::<#shape, #n>();));
                    if used[k..k + n].iter().any(|&u| u) {
                        let vs = (k..k + n).map(|q| if used[q] { value(q).into_token_stream() } else { quote!(_) });
                        body.extend(quote!(let [#(#vs),*] = #a;));
                    }
                }
            }
            k += n.unwrap_or(1);
        }
        body.extend(nodes);
        body
    }

    /// The builder's statements after the inputs: the declared-shape checks and every node.
    fn nodes(&self, bounds: &mut Vec<Bound>) -> TokenStream {
        let Cx { p, graph, .. } = self;
        let n_in = graph.inputs.len();
        let mut body = quote!(#[allow(unused_mut)] let mut __b = __b;);
        for check in &graph.checks {
            let span = check.site.span;
            let (l, r) = (shape_at(&check.declared, span), shape_at(&check.actual, span));
            body.extend(quote_spanned!(span=> #p::rules::declared::<#l, #r>();));
        }
        let segments = segments(graph);
        for (index, segment) in segments.iter().enumerate() {
            // The last statement binds `__b` without `mut` (nothing pushes after it).
            let binding = if index + 1 == segments.len() { quote!(__b) } else { quote!(mut __b) };
            match segment {
                Segment::Chunk(nodes) => {
                    for k in nodes.clone() {
                        let node = &graph.nodes[k];
                        let parents: Vec<TokenStream> =
                            node.parents.iter().map(|&q| value(q).into_token_stream()).collect();
                        let (v, expr) = (value(n_in + k), self.node(node, &parents, bounds));
                        body.extend(quote!(let #v = __b.push(#expr);));
                    }
                    // The chunk's positions: their types are the shapes the typed constructors computed.
                    let chunk = nodes.clone().map(|j| value(n_in + j));
                    body.extend(quote!(let #binding = __b.chunk((#(#chunk,)*));));
                }
                Segment::Rolled(r) => {
                    body.extend(self.rolled(r, bounds));
                    let last: Vec<Ident> = (r.end() - r.body..r.end()).map(|j| value(n_in + j)).collect();
                    let chunks = last.chunks(NODE_CHUNK).map(|c| quote!((#(#c,)*)));
                    let count = r.count;
                    body.extend(quote!(let #binding = __b.repeat::<#count, _>((#(#chunks,)*));));
                }
            }
        }
        body
    }

    /// A rolled loop ([`Rolled`]): its tables, its body once (a closure pushing one iteration's
    /// nodes through `MacroBuilder::nodes`, its typed constructors checked once), called for
    /// every iteration, then the last iteration's positions under their names.
    fn rolled(&self, r: &Rolled, bounds: &mut Vec<Bound>) -> TokenStream {
        let Cx { p, s, data, brand, graph, .. } = self;
        let n_in = graph.inputs.len();
        let mut out = TokenStream::new();
        // The carried values, each once: (init, body node).
        let mut carried: Vec<(usize, usize)> = Vec::new();
        for slots in &r.parents {
            for parent in slots {
                if let Parent::Carried { init, from } = parent {
                    if !carried.contains(&(*init, *from)) {
                        carried.push((*init, *from));
                    }
                }
            }
        }
        let local = |j: usize| format_ident!("__l{}", j, span = Span::mixed_site());
        let carried_name = |c: usize| format_ident!("__c{}", c, span = Span::mixed_site());
        let i = Ident::new("__i", Span::mixed_site());
        let count = r.count;
        let mut pushes = TokenStream::new();
        let mut tables = 0usize;
        for (j, slots) in r.parents.iter().enumerate() {
            // A slice's start that changes with the iteration: read from its table.
            let start = r.slice_starts[j].as_ref().map(|starts| {
                let t = format_ident!("__s{}", j, span = Span::mixed_site());
                out.extend(quote!(let #t: [usize; #count] = [#(#starts),*];));
                quote!(#t[#i])
            });
            let node = &graph.nodes[r.start + j];
            let parents: Vec<TokenStream> = slots
                .iter()
                .map(|parent| match parent {
                    Parent::Local(l) => local(*l).into_token_stream(),
                    Parent::Carried { init, from } => {
                        let c = carried.iter().position(|&x| x == (*init, *from)).unwrap_or(0);
                        carried_name(c).into_token_stream()
                    }
                    Parent::Fixed(v) => value(*v).into_token_stream(),
                    Parent::Table(vs) => {
                        // A whole parameter array, in order, is its array of positions.
                        let mut first = 0;
                        let whole = graph.input_decls.iter().enumerate().find_map(|(d, (_, n, _))| {
                            let here = first;
                            first += n.unwrap_or(1);
                            (n.is_some() && vs.iter().copied().eq(here..here + n.unwrap_or(1))).then(|| array(d))
                        });
                        if let Some(a) = whole {
                            quote!(#a[#i])
                        } else {
                            let t = format_ident!("__t{}", tables, span = Span::mixed_site());
                            tables += 1;
                            let vs = vs.iter().map(|&v| value(v));
                            out.extend(quote!(let #t = [#(#vs),*];));
                            quote!(#t[#i])
                        }
                    }
                })
                .collect();
            let (l, expr) = (local(j), self.node_at(node, &parents, start.as_ref(), bounds));
            pushes.extend(quote!(let #l = __n.push(#expr);));
        }
        let locals: Vec<Ident> = (0..r.body).map(local).collect();
        let params: Vec<Ident> = (0..carried.len()).map(carried_name).collect();
        let inits = carried.iter().map(|&(init, _)| value(init));
        let nexts = carried.iter().map(|&(_, from)| {
            let from = syn::Index::from(from);
            quote!(__r.#from)
        });
        let last: Vec<Ident> = (r.end() - r.body..r.end()).map(|j| value(n_in + j)).collect();
        out.extend(quote! {
            let __body = |__n: &mut #p::Nodes<'_, #s, #data, #brand>, #i: usize, (#(#params,)*)| {
                #pushes
                (#(#locals,)*)
            };
            let mut __r = __body(&mut __b.nodes(), 0, (#(#inits,)*));
            for #i in 1..#count {
                __r = __body(&mut __b.nodes(), #i, (#(#nexts,)*));
            }
            let (#(#last,)*) = __r;
        });
        out
    }

    /// The typed node for `node` reading `parents` (expressions of its parents' positions),
    /// adding the scalar bounds it needs to `bounds`.
    fn node(&self, node: &Node, parents: &[TokenStream], bounds: &mut Vec<Bound>) -> TokenStream {
        self.node_at(node, parents, None, bounds)
    }

    /// [`Self::node`], with a `slice`'s start given as an expression (a rolled loop's table entry,
    /// `__s3[__i]`) instead of its constant.
    fn node_at(
        &self,
        node: &Node,
        parents: &[TokenStream],
        slice_start: Option<&TokenStream>,
        bounds: &mut Vec<Bound>,
    ) -> TokenStream {
        let span = node.site.span;
        match &node.kind {
            NodeKind::Builtin(op, extra) => {
                bounds.extend(op.bounds);
                self.builtin(op, extra, node, parents, slice_start)
            }
            NodeKind::Opaque { name, forward, vjp, whole_prefix } => {
                bounds.push(Bound::Float);
                self.opaque(name, forward, vjp, *whole_prefix, parents, &self.node_type(node), span)
            }
            NodeKind::Custom(path) => custom(path, &self.node_type(node), parents, span),
        }
    }

    /// The typed node's type, `Node::<S, D, output shape>`.
    fn node_type(&self, node: &Node) -> TokenStream {
        let Cx { p, s, data, .. } = self;
        let span = node.site.span;
        let out = shape_at(&node.shape, span);
        quote_spanned!(span=> #p::Node::<#s, #data, #out>)
    }

    /// `ops::name::<S, D, operand shapes…, extra types…, output, Brand>(values…, extras…)`.
    fn builtin(
        &self,
        op: &OpSpec,
        extra: &ExtraArg,
        node: &Node,
        parents: &[TokenStream],
        slice_start: Option<&TokenStream>,
    ) -> TokenStream {
        let Cx { p, s, data, brand, graph, .. } = self;
        let span = node.site.span;
        let (out, ty) = (&shape_at(&node.shape, span), &self.node_type(node));
        let f = Ident::new(op.name, span);
        let ps: Vec<TokenStream> = node.parents.iter().map(|&q| shape_at(graph.shape_of(q), span)).collect();
        let default = quote_spanned!(span=> ::core::default::Default::default());
        let typenum = |n: usize| unsigned(n as u64, span);
        let accessor = |field: &Ident| {
            if let ExtraArg::Labels(_) = extra {
                quote_spanned!(span=>
        |__d: &#data| -> &[usize] { ::core::convert::AsRef::<[usize]>::as_ref(&__d.#field) })
            } else if graph.data_shape(field).is_some_and(|sh| sh.0.iter().any(|d| matches!(d, Dim::Dyn(..)))) {
                // A data tensor with run-time dims is a `RawTensor` field.
                quote_spanned!(span=> |__d: &#data| -> &#p::RawTensor<#s> { &__d.#field })
            } else {
                quote_spanned!(span=> |__d: &#data| -> &#p::RawTensor<#s> { #p::Tensor::raw(&__d.#field) })
            }
        };
        let mut values: Vec<TokenStream> = parents.iter().map(ToTokens::to_token_stream).collect();
        let types: Vec<TokenStream> = match (op.type_rule, extra) {
            (TypeRule::MatMul, ExtraArg::Data(x)) => {
                let xs = shape_at(graph.data_shape(x).unwrap_or(&node.shape), span);
                values.insert(0, accessor(x));
                vec![xs, ps[0].clone(), out.clone()]
            }
            (TypeRule::Leaf, ExtraArg::Data(x)) => {
                let x = accessor(x);
                return quote_spanned!(span=> #p::ops::#f::<#s, #data, #out>(#x));
            }
            (TypeRule::Reshape, _) => {
                let x = &parents[0];
                return quote_spanned!(span=> #p::ops::#f::<#out, #s, #data, #(#ps,)* #brand>(#x));
            }
            (TypeRule::Concat, ExtraArg::Axis(axis)) if parents.len() != 2 => {
                // One node of every part, each part checked against the parts before it by the
                // rule trait (`then::<part, joined so far>`).
                let ax = typenum(*axis);
                let (first, p0) = (&parents[0], &ps[0]);
                let mut chain = quote_spanned!(span=> #p::ops::concat_parts::<#p0, #ax, #brand>(#first, #default));
                let mut joined = graph.shape_of(node.parents[0]).clone();
                for (k, &q) in node.parents.iter().enumerate().skip(1) {
                    let before = shape_at(&joined, span);
                    joined = exactgrad_spec::rules::concat(&joined.0, &graph.shape_of(q).0, *axis)
                        .map_or_else(|_| node.shape.clone(), |s| Shape(s.dims().to_vec()));
                    let (pk, v, j) = (&ps[k], &parents[k], shape_at(&joined, span));
                    // A path call with every type spelled out (not a method call), so a broken
                    // rule is reported at the user's `concat`, as for two parts.
                    chain = quote_spanned!(span=>
                        #p::ops::concat_then::<#before, #pk, #ax, #j, #brand>(#chain, #v));
                }
                return quote_spanned!(span=> #chain.node::<#s, #data>());
            }
            (TypeRule::AxisReduce | TypeRule::Concat, ExtraArg::Axis(axis)) => {
                values.push(default.clone());
                let mut t = ps.clone();
                t.extend([typenum(*axis), out.clone()]);
                t
            }
            (TypeRule::Slice, ExtraArg::Slice(axis, start, len)) => {
                let start = slice_start.cloned().unwrap_or_else(|| quote_spanned!(span=> #start));
                values.extend([default.clone(), start, default.clone()]);
                vec![ps[0].clone(), typenum(*axis), typenum(*len), out.clone()]
            }
            (TypeRule::Permute, ExtraArg::Perm(perm)) => {
                let axes = perm.iter().map(|&a| typenum(a));
                values.push(default.clone());
                vec![ps[0].clone(), quote_spanned!(span=> (#(#axes,)*)), out.clone()]
            }
            (TypeRule::Conv1d | TypeRule::Conv2d | TypeRule::Pool2d, ExtraArg::Window(w)) => {
                // Each constant is a value of its type argument: a typenum number for one spatial
                // axis, a pair of them for two.
                let lists: [&[usize]; 3] = if op.type_rule == TypeRule::Pool2d {
                    [&w.kernel, &w.stride, &w.padding]
                } else {
                    [&w.stride, &w.padding, &w.dilation]
                };
                let mut t = ps.clone();
                for list in lists {
                    values.push(default.clone());
                    t.push(match list {
                        [n] => typenum(*n),
                        _ => {
                            let ns = list.iter().map(|&n| typenum(n));
                            quote_spanned!(span=> (#(#ns,)*))
                        }
                    });
                }
                t.push(out.clone());
                t
            }
            (TypeRule::GatherRows, ExtraArg::Labels(ids)) => {
                values.push(accessor(ids));
                let lead = &node.shape.0[..node.shape.0.len().saturating_sub(1)];
                let lead = lead.iter().map(|d| dim_tokens(d, span));
                vec![ps[0].clone(), quote_spanned!(span=> (#(#lead,)*)), out.clone()]
            }
            (_, ExtraArg::Mask(mask, _)) => {
                values.push(quote_spanned!(span=>
        |__d: &#data| -> &[bool] { ::core::convert::AsRef::<[bool]>::as_ref(&__d.#mask) }));
                let mut t = ps.clone();
                t.push(out.clone());
                t
            }
            (_, ExtraArg::Dropout(prob, seed)) => {
                let prob = proc_macro2::Literal::f64_suffixed(*prob);
                values.push(quote_spanned!(span=> #prob));
                values.push(quote_spanned!(span=> |__d: &#data| -> u64 { __d.#seed }));
                let mut t = ps.clone();
                t.push(out.clone());
                t
            }
            (_, ExtraArg::Labels(labels)) => {
                values.push(accessor(labels));
                let mut t = ps.clone();
                t.push(out.clone());
                t
            }
            _ => {
                let mut t = ps.clone();
                t.push(out.clone());
                t
            }
        };
        // Each constant with its message, which names the constant as written (names replaced by
        // their values).
        let written = |c: &syn::Expr| {
            format!(
                "the constant `{}` is not representable in the scalar type",
                c.to_token_stream().to_string().replace(' ', "")
            )
        };
        let fill = |f: &Fill| match f {
            Fill::Const(c) => (constant_tokens(c, s), written(c)),
            Fill::Infinity(negative) => (
                quote!(#p::infinity::<#s>(#negative)),
                "the infinity is not representable in the scalar type".to_owned(),
            ),
        };
        let constant = match (op.args, extra) {
            (Args::Factor, ExtraArg::Factor(c)) | (Args::Eps(_), ExtraArg::Eps(c)) => {
                Some((constant_tokens(c, s), written(c)))
            }
            (Args::Mask, ExtraArg::Mask(_, f)) | (Args::Fill, ExtraArg::Fill(f)) => Some(fill(f)),
            _ => None,
        };
        if constant.is_some() {
            values.push(quote_spanned!(span=> __k));
        }
        let call = quote_spanned!(span=> #p::ops::#f::<#s, #data, #(#types,)* #brand>(#(#values),*));
        match constant {
            None => call,
            Some((c, message)) => {
                let name = op.name;
                quote_spanned!(span=> match #c {
                    ::core::option::Option::Some(__k) => ::core::result::Result::Ok(#call),
                    ::core::option::Option::None => ::core::result::Result::Err(#ty::failed(#name, &[#(&#parents),*], #message)),
                })
            }
        }
    }

    /// An opaque node: the user's closures behind the runtime's dense-VJP interface.
    #[allow(clippy::too_many_arguments)]
    fn opaque(
        &self,
        name: &str,
        forward: &syn::ExprClosure,
        vjp: &syn::ExprClosure,
        whole_prefix: bool,
        parents: &[TokenStream],
        ty: &TokenStream,
        span: Span,
    ) -> TokenStream {
        let Cx { p, s, data, .. } = self;
        let idx: Vec<TokenStream> = (0..parents.len()).map(|i| quote!(__ctx[__reads[#i]])).collect();
        let count = parents.len();
        let tensor_refs: Vec<TokenStream> = (0..count).map(|_| quote!(&#p::RawTensor<#s>)).collect();
        let vjp_body = if whole_prefix {
            quote_spanned!(span=>
                #[allow(clippy::type_complexity)]
                let __vjp: &dyn Fn(&[#p::RawTensor<#s>], &#p::RawTensor<#s>) -> #p::Vec<#p::RawTensor<#s>> = &(#vjp);
                __vjp(__ctx, __g)
            )
        } else {
            quote_spanned!(span=>
                #[allow(clippy::type_complexity)]
                let __vjp: &dyn Fn(#(#tensor_refs,)* &#p::RawTensor<#s>) -> [#p::RawTensor<#s>; #count] = &(#vjp);
                #p::opaque_pack(__ctx, &__reads, __vjp(#(&#idx,)* __g))
            )
        };
        quote_spanned!(span=> {
            let __reads: [usize; #count] = [#(#parents.index()),*];
            #ty::opaque(
                #name,
                &[#(&#parents),*],
                move |__ctx: &[#p::RawTensor<#s>], __data: &#data| -> #p::RawTensor<#s> {
                    #[allow(clippy::type_complexity)]
                    let __forward: &dyn Fn(#(#tensor_refs),*) -> #p::RawTensor<#s> = &(#forward);
                    __forward(#(&#idx),*)
                },
                move |__ctx: &[#p::RawTensor<#s>], __data: &#data, __g: &#p::RawTensor<#s>| -> #p::Vec<#p::RawTensor<#s>> {
                    #vjp_body
                },
            )
        })
    }
}

/// A user compact op built from its parents.
fn custom(path: &Path, ty: &TokenStream, parents: &[TokenStream], span: Span) -> TokenStream {
    let p = private();
    quote_spanned!(span=> #ty::compact(<#path as #p::FromParents>::from_parents(&[#(#parents.index()),*]), &[#(&#parents),*]))
}
