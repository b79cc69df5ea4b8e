//! IR → tokens. Everything is named through `::exactgrad::__private`; user spans go on every
//! emitted item that can fail to type-check.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::{Ident, Path};

use crate::check;
use crate::ir::{Dim, ExtraArg, Graph, NodeKind, Shape};
use crate::ops::Bound;
use crate::parse::{DataType, DimDecl, GraphDef, ShapeDecl};
use crate::typenum::unsigned;

fn private() -> TokenStream {
    quote!(::exactgrad::__private)
}

/// Names of the generated items for a graph called `name`.
struct Names {
    alias: Ident,
    handles: Ident,
    data: Ident,
    brand: Ident,
    inputs: Ident,
    nodes: Ident,
}

impl Names {
    fn new(name: &Ident) -> Self {
        let camel: String = name
            .to_string()
            .split('_')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let mut c = s.chars();
                c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
            })
            .collect();
        let at = |suffix: &str| Ident::new(&format!("{camel}{suffix}"), name.span());
        Names {
            alias: at(""),
            handles: at("Handles"),
            data: at("Data"),
            brand: at("Brand"),
            inputs: at("Inputs"),
            nodes: at("Nodes"),
        }
    }
}

/// Expands a definition: the full graph, or a well-typed stub plus every error.
pub(crate) fn expand(def: GraphDef) -> TokenStream {
    let names = Names::new(&def.name);
    match check::lower(&def) {
        Ok(graph) => full(&def, &graph, &names),
        Err(e) => {
            let stub = stub(&def, &names);
            let e = e.to_compile_error();
            quote!(#stub #e)
        }
    }
}

fn dim_tokens(d: &Dim, span: Span) -> TokenStream {
    match d {
        Dim::Lit(n) => unsigned(*n, span),
        Dim::Sym(i) => i.to_token_stream(),
    }
}

fn shape_tokens(s: &Shape, span: Span) -> TokenStream {
    let dims = s.0.iter().map(|d| dim_tokens(d, span));
    quote!((#(#dims,)*))
}

/// A declared shape as tokens; undeclared dims become `UTerm` (their error is reported already).
fn decl_tokens(s: &ShapeDecl, dims: &[Ident]) -> TokenStream {
    let p = private();
    let ds = s.dims.iter().map(|d| match d {
        DimDecl::Lit(n, span) => unsigned(*n, *span),
        DimDecl::Sym(i) if dims.contains(i) => i.to_token_stream(),
        DimDecl::Sym(_) => quote!(#p::typenum::UTerm),
    });
    quote!((#(#ds,)*))
}

/// Lists this long or shorter are spelled as a plain snoc list of shapes.
const PLAIN_LIST: usize = 256;
/// Longer lists are a snoc list of tuples of this many shapes: rustc slows down sharply on types
/// nested more than a few hundred levels deep (a 1 000-node chain took a minute to build).
const CHUNK: usize = 64;

/// The shape list as a type: `Snoc<…Snoc<Nil, S0>…, Sn>`, or for long lists
/// `Snoc<…Snoc<Nil, (S0, …, S63)>…, (…, Sn)>`.
fn snoc(items: impl Iterator<Item = TokenStream>) -> TokenStream {
    let p = private();
    let items: Vec<TokenStream> = items.collect();
    if items.len() <= PLAIN_LIST {
        return items.into_iter().fold(quote!(#p::Nil), |acc, s| quote!(#p::Snoc<#acc, #s>));
    }
    items.chunks(CHUNK).fold(quote!(#p::Nil), |acc, chunk| quote!(#p::Snoc<#acc, (#(#chunk,)*)>))
}

/// The generic dims among `dims` that occur in `shapes`, in declaration order.
fn used_dims<'d>(dims: &'d [Ident], shapes: &[&Shape]) -> Vec<&'d Ident> {
    dims.iter().filter(|d| shapes.iter().any(|s| s.0.iter().any(|x| matches!(x, Dim::Sym(i) if i == *d)))).collect()
}

/// The generic dims among `dims` that occur in the declared `shapes`, in declaration order.
fn used_decl_dims<'d>(dims: &'d [Ident], shapes: &[&ShapeDecl]) -> Vec<&'d Ident> {
    dims.iter()
        .filter(|d| shapes.iter().any(|s| s.dims.iter().any(|x| matches!(x, DimDecl::Sym(i) if i == *d))))
        .collect()
}

/// The declared shapes of the data tensors.
fn data_tensor_decls(def: &GraphDef) -> Vec<&ShapeDecl> {
    def.data.iter().filter_map(|d| d.tensor_shape()).collect()
}

/// Which generic dims each generated item takes (all of them are among the graph's `dims`).
struct DimUse<'d> {
    /// Dims of the input shapes (the `…Inputs` alias).
    inputs: Vec<&'d Ident>,
    /// Dims of the input and output shapes (the `…Handles` struct).
    handles: Vec<&'d Ident>,
    /// Dims of the data tensors' shapes (the `…Data` struct, generic when it holds a tensor).
    data: Vec<&'d Ident>,
    /// Dims of the node shapes (the `…Nodes` alias).
    nodes: Vec<&'d Ident>,
}

fn bound_tokens(b: Bound, s: &Ident) -> TokenStream {
    let p = private();
    match b {
        Bound::Sub => quote!(::core::ops::Sub<Output = #s>),
        Bound::Mul => quote!(::core::ops::Mul<Output = #s>),
        Bound::Neg => quote!(::core::ops::Neg<Output = #s>),
        Bound::Div => quote!(::core::ops::Div<Output = #s>),
        Bound::FromPrimitive => quote!(#p::num_traits::FromPrimitive),
        Bound::Num => quote!(#p::num_traits::Num),
        Bound::PartialOrd => quote!(::core::cmp::PartialOrd),
        Bound::Float => quote!(#p::num_traits::Float),
    }
}

/// Items shared by the full expansion and the stub: data type, brand, handles struct, aliases.
struct Common {
    items: TokenStream,
    /// Every generic dim of the graph.
    generics: TokenStream,
    dim_bounds: TokenStream,
    /// The generic dims of the handles struct.
    handle_generics: TokenStream,
    /// The data type Δ as used in the graph's types (`NameData<S, B>` when it holds tensors).
    data_ty: TokenStream,
}

#[allow(clippy::too_many_arguments)]
fn common(
    def: &GraphDef,
    dims: &[Ident],
    used: &DimUse<'_>,
    names: &Names,
    input_names: &[&Ident],
    input_shapes: &[TokenStream],
    outputs: &[TokenStream],
    nodes: TokenStream,
) -> Common {
    let p = private();
    let vis = &def.vis;
    let Names { alias, handles, data, brand, inputs, nodes: nodes_alias } = names;
    let scalar = scalar_ident(def);
    let generics = quote!(#(#dims),*);
    let dim_bounds = quote!(#(#dims: #p::typenum::Unsigned + 'static),*);
    let (input_dims, handle_dims, data_dims, node_dims) = (&used.inputs, &used.handles, &used.data, &used.nodes);
    let handle_generics = quote!(#(#handle_dims),*);
    let handle_bounds = quote!(#(#handle_dims: #p::typenum::Unsigned + 'static),*);
    let has_tensors = def.data.iter().any(|d| d.tensor_shape().is_some());
    let data_ty = if has_tensors { quote!(#data<#scalar, #(#data_dims),*>) } else { quote!(#data) };
    let data_item = if def.data.is_empty() {
        quote!(
            /// The graph's non-differentiable data (Δ): this graph has none.
            #vis type #data = ();
        )
    } else {
        // The first of duplicate names only (a duplicate is reported; the stub must type-check).
        let unique = def.data.iter().enumerate().filter(|(i, d)| !def.data[..*i].iter().any(|e| e.name == d.name));
        let fields = unique.map(|(_, d)| {
            let n = &d.name;
            match &d.ty {
                DataType::Other(t) => {
                    let doc = format!("The data parameter `{n}`.");
                    quote!(#[doc = #doc] pub #n: #t)
                }
                DataType::Tensor(shape) => {
                    let doc = format!("The data tensor `{n}` (not differentiable).");
                    let shape = decl_tokens(shape, dims);
                    quote!(#[doc = #doc] pub #n: #p::Tensor<#scalar, #shape>)
                }
            }
        });
        if has_tensors {
            quote!(
                /// The graph's non-differentiable data (Δ), with its data tensors in the scalar type.
                #vis struct #data<#scalar, #(#data_dims),*> { #(#fields,)* }
            )
        } else {
            quote!(
                /// The graph's non-differentiable data (Δ).
                #vis struct #data { #(#fields,)* }
            )
        }
    };
    let output_names: Vec<Ident> = if outputs.len() == 1 {
        vec![format_ident!("output")]
    } else {
        (0..outputs.len()).map(|k| format_ident!("output{k}")).collect()
    };
    let input_list = snoc(input_shapes.iter().cloned());
    let items = quote! {
        #data_item

        /// The brand of this graph's handles: a handle of another graph does not type-check here.
        #[doc(hidden)]
        #vis enum #brand {}

        /// The input shapes (Γ) of this graph.
        #vis type #inputs<#(#input_dims),*> = #input_list;

        /// The node shapes (ss) of this graph.
        #vis type #nodes_alias<#(#node_dims),*> = #nodes;

        /// The typed graph.
        #vis type #alias<#scalar, #generics> = #p::GraphData<#scalar, #data_ty, #inputs<#(#input_dims),*>, #nodes_alias<#(#node_dims),*>, #brand>;

        /// Typed handles to the inputs and outputs of this graph.
        #[derive(Clone, Copy, Debug)]
        #vis struct #handles<#handle_bounds> {
            #(
                #[doc = "Handle to an input."]
                pub #input_names: #p::Position<#input_shapes, #brand>,
            )*
            #(
                #[doc = "Handle to an output."]
                pub #output_names: #p::Position<#outputs, #brand>,
            )*
        }

        impl<#handle_bounds> #handles<#handle_generics> {
            /// The input pack, in declaration order.
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn inputs<#scalar>(&self, #(#input_names: #p::Tensor<#scalar, #input_shapes>),*) -> #p::Pack<#scalar, #inputs<#(#input_dims),*>> {
                #p::Pack::new()#(.push(#input_names))*
            }
        }
    };
    Common { items, generics, dim_bounds, handle_generics, data_ty }
}

/// The scalar type parameter: the user's, or a hidden `__S`.
fn scalar_ident(def: &GraphDef) -> Ident {
    def.scalar.as_ref().map_or_else(|| format_ident!("__S"), |(i, _)| i.clone())
}

/// The user's bounds on the scalar parameter, as `+ bound` items.
fn user_bounds(def: &GraphDef) -> TokenStream {
    match &def.scalar {
        Some((_, bounds)) => {
            let b = bounds.iter();
            quote!(#(+ #b)*)
        }
        None => TokenStream::new(),
    }
}

fn full(def: &GraphDef, graph: &Graph, names: &Names) -> TokenStream {
    let p = private();
    let s = scalar_ident(def);
    let n_in = graph.inputs.len();
    let value = |v: usize| format_ident!("__v{}", v, span = Span::mixed_site());
    let input_shapes: Vec<TokenStream> = graph.inputs.iter().map(|(n, sh)| shape_tokens(sh, n.span())).collect();
    let node_shapes: Vec<TokenStream> = graph.nodes.iter().map(|n| shape_tokens(&n.shape, n.span)).collect();
    let outputs: Vec<TokenStream> =
        graph.outputs.iter().map(|&o| shape_tokens(graph.shape_of(o), Span::call_site())).collect();
    let input_shape_list: Vec<&Shape> = graph.inputs.iter().map(|(_, s)| s).collect();
    let mut handle_shapes = input_shape_list.clone();
    handle_shapes.extend(graph.outputs.iter().map(|&o| graph.shape_of(o)));
    let used = DimUse {
        inputs: used_dims(&def.dims, &input_shape_list),
        handles: used_dims(&def.dims, &handle_shapes),
        data: used_dims(&def.dims, &graph.data_tensors.iter().map(|(_, s)| s).collect::<Vec<_>>()),
        nodes: used_dims(&def.dims, &graph.nodes.iter().map(|n| &n.shape).collect::<Vec<_>>()),
    };
    let nodes_list = snoc(node_shapes.iter().cloned());
    let input_names: Vec<&Ident> = def.inputs.iter().map(|i| &i.name).collect();
    let Common { items, generics, dim_bounds, handle_generics, data_ty: data } =
        common(def, &def.dims, &used, names, &input_names, &input_shapes, &outputs, nodes_list);
    let Names { alias, handles, brand, .. } = names;

    let mut bounds: Vec<Bound> = Vec::new();
    let mut body = TokenStream::new();
    for check in &graph.checks {
        let f = Ident::new(check.rule.check_fn(), check.span);
        // Re-span generic dims at the user's expression, so the compiler points there.
        let respan = |d: &Dim| match d {
            Dim::Sym(i) => Ident::new(&i.to_string(), check.span).to_token_stream(),
            lit => dim_tokens(lit, check.span),
        };
        let (l, r) = (respan(&check.left), respan(&check.right));
        body.extend(quote_spanned!(check.span=> #p::rules::#f::<#l, #r>();));
    }
    body.extend(quote!(let mut __builder = #p::MacroBuilder::<#s, #data, #brand>::new();));
    for (k, shape) in input_shapes.iter().enumerate() {
        let v = value(k);
        body.extend(quote!(let #v = __builder.input::<#shape>();));
    }
    for (k, node) in graph.nodes.iter().enumerate() {
        let v = value(n_in + k);
        let shape = &node_shapes[k];
        let parents: Vec<Ident> = node.parents.iter().map(|&q| value(q)).collect();
        let span = node.span;
        let ty = quote!(#p::Node::<#s, #data, #shape>);
        let expr = match &node.kind {
            NodeKind::Builtin(op, extra) => {
                bounds.extend(op.bounds);
                let rt = Ident::new(op.runtime, span);
                match extra {
                    ExtraArg::None => {
                        quote_spanned!(span=> #ty::compact(#p::ops::#rt::new(#(#parents.index()),*), &[#(&#parents),*]))
                    }
                    ExtraArg::Axis(axis) => quote_spanned!(span=>
                        #ty::compact(#p::ops::#rt::new(#(#parents.index(),)* #axis), &[#(&#parents),*])
                    ),
                    ExtraArg::Labels(field) => quote_spanned!(span=>
                        #ty::compact(
                            #p::ops::#rt::new(#(#parents.index(),)* |__d: &#data| -> &[usize] { ::core::convert::AsRef::<[usize]>::as_ref(&__d.#field) }),
                            &[#(&#parents),*],
                        )
                    ),
                    ExtraArg::Slice(axis, start, len) => quote_spanned!(span=>
                        #ty::compact(#p::ops::#rt::new(#(#parents.index(),)* #axis, #start, #len), &[#(&#parents),*])
                    ),
                    ExtraArg::Perm(perm) => quote_spanned!(span=>
                        #ty::compact(#p::ops::#rt::new(#(#parents.index(),)* &[#(#perm),*]), &[#(&#parents),*])
                    ),
                    ExtraArg::Eps(c) => {
                        bounds.push(Bound::Num);
                        let c = constant_tokens(c, &s);
                        let name = op.name;
                        quote_spanned!(span=> match #c {
                            ::core::option::Option::Some(__eps) => #ty::compact(#p::ops::#rt::new(#(#parents.index(),)* __eps), &[#(&#parents),*]),
                            ::core::option::Option::None => #ty::failed(#name, &[#(&#parents),*], "the constant is not representable in the scalar type"),
                        })
                    }
                }
            }
            NodeKind::Scale(c) => {
                bounds.extend([Bound::Mul, Bound::Num]);
                let x = &parents[0];
                let c = constant_tokens(c, &s);
                quote_spanned!(span=> match #c {
                    ::core::option::Option::Some(__k) => #ty::compact(#p::ops::Scale::new(#x.index(), __k), &[&#x]),
                    ::core::option::Option::None => #ty::failed("scale", &[&#x], "the constant is not representable in the scalar type"),
                })
            }
            NodeKind::Opaque { name, forward, vjp, whole_prefix } => {
                bounds.push(Bound::Float);
                let idx: Vec<TokenStream> = (0..parents.len()).map(|i| quote!(__ctx[__reads[#i]])).collect();
                let count = parents.len();
                let tensor_refs: Vec<TokenStream> = (0..count).map(|_| quote!(&#p::RawTensor<#s>)).collect();
                let vjp_body = if *whole_prefix {
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
                        move |__ctx: &[#p::RawTensor<#s>], _: &#data| -> #p::RawTensor<#s> {
                            #[allow(clippy::type_complexity)]
                            let __forward: &dyn Fn(#(#tensor_refs),*) -> #p::RawTensor<#s> = &(#forward);
                            __forward(#(&#idx),*)
                        },
                        move |__ctx: &[#p::RawTensor<#s>], _: &#data, __g: &#p::RawTensor<#s>| -> #p::Vec<#p::RawTensor<#s>> {
                            #vjp_body
                        },
                    )
                })
            }
            NodeKind::Custom(path) => custom(path, &ty, &parents, span),
            NodeKind::Gather(field) => {
                let t = &parents[0];
                let rows = dim_tokens(&node.shape.0[0], span);
                quote_spanned!(span=> #ty::compact(
                    #p::ops::GatherRows::new(
                        #t.index(),
                        |__d: &#data| -> &[usize] { ::core::convert::AsRef::<[usize]>::as_ref(&__d.#field) },
                        <#rows as #p::typenum::Unsigned>::USIZE,
                    ),
                    &[&#t],
                ))
            }
            NodeKind::Reshape => {
                let x = &parents[0];
                quote_spanned!(span=> #ty::compact(#p::ops::Reshape::new(#x.index(), <#shape as #p::Shape>::dims()), &[&#x]))
            }
            NodeKind::DataTensor(field) => quote_spanned!(span=> #ty::compact(
                #p::ops::DataTensor::new(
                    |__d: &#data| -> &#p::RawTensor<#s> { #p::Tensor::raw(&__d.#field) },
                    <#shape as #p::Shape>::dims(),
                ),
                &[],
            )),
            NodeKind::MatMulData(field) => {
                bounds.push(Bound::Mul);
                let w = &parents[0];
                let rows = dim_tokens(&node.shape.0[0], span);
                quote_spanned!(span=> #ty::compact(
                    #p::ops::MatMulData::new(
                        |__d: &#data| -> &#p::RawTensor<#s> { #p::Tensor::raw(&__d.#field) },
                        <#rows as #p::typenum::Unsigned>::USIZE,
                        #w.index(),
                    ),
                    &[&#w],
                ))
            }
        };
        body.extend(quote!(let #v = __builder.push(#expr);));
    }
    bounds.sort();
    bounds.dedup();
    let scalar_bounds = bounds.iter().map(|&b| bound_tokens(b, &s));
    let user = user_bounds(def);
    let attrs = &def.attrs;
    let vis = &def.vis;
    let name = &def.name;
    let input_fields = def.inputs.iter().enumerate().map(|(k, i)| {
        let (n, v) = (&i.name, value(k));
        quote!(#n: #v)
    });
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
            #s: #p::Scalar #(+ #scalar_bounds)* #user,
            #dim_bounds
        {
            #body
            (__builder.finish(), #handles { #(#input_fields,)* #(#output_fields,)* })
        }
    }
}

/// The scalar constant for `c`: a (possibly negated) literal is parsed in the scalar type itself
/// (rounded once); any other constant expression is evaluated in `f64` first.
fn constant_tokens(c: &syn::Expr, s: &Ident) -> TokenStream {
    let p = private();
    if let Some(text) = literal_text(c) {
        return quote!(#p::constant::<#s>(#text));
    }
    let v = float_constant(c);
    quote!(#p::constant_f64::<#s>(#v))
}

/// The text of `lit` or `-lit` (suffix dropped), if `c` is one.
fn literal_text(c: &syn::Expr) -> Option<String> {
    match c {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => Some(i.base10_digits().to_owned()),
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => Some(f.base10_digits().to_owned()),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => {
            literal_text(expr).filter(|t| !t.starts_with('-')).map(|t| format!("-{t}"))
        }
        syn::Expr::Paren(p) => literal_text(&p.expr),
        _ => None,
    }
}

/// A constant expression with every literal written as an unsuffixed float literal, so it is an
/// `f64` expression.
fn float_constant(e: &syn::Expr) -> TokenStream {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
            syn::LitFloat::new(&format!("{}.0", i.base10_digits()), i.span()).to_token_stream()
        }
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => {
            syn::LitFloat::new(f.base10_digits(), f.span()).to_token_stream()
        }
        syn::Expr::Unary(u) => {
            let (op, inner) = (&u.op, float_constant(&u.expr));
            quote!(#op #inner)
        }
        syn::Expr::Paren(p) => float_constant(&p.expr),
        syn::Expr::Binary(b) => {
            let (l, op, r) = (float_constant(&b.left), &b.op, float_constant(&b.right));
            quote!((#l #op #r))
        }
        other => other.to_token_stream(),
    }
}

fn custom(path: &Path, ty: &TokenStream, parents: &[Ident], span: Span) -> TokenStream {
    let p = private();
    quote_spanned!(span=> #ty::compact(<#path as #p::FromParents>::from_parents(&[#(#parents.index()),*]), &[#(&#parents),*]))
}

/// On error: the items with the declared input and output shapes and an empty node list, so the
/// user's other code still type-checks and sees only the real errors.
fn stub(def: &GraphDef, names: &Names) -> TokenStream {
    let p = private();
    let s = scalar_ident(def);
    let user = user_bounds(def);
    // Keep the first of duplicate inputs, drop inputs named like output handles, and keep only the
    // dims the inputs use, so the stub itself type-checks.
    let mut inputs: Vec<&crate::parse::InputDecl> = Vec::new();
    for i in &def.inputs {
        let reserved = i.name.to_string().starts_with("output");
        if !reserved && !inputs.iter().any(|j| j.name == i.name) {
            inputs.push(i);
        }
    }
    let input_decls: Vec<&ShapeDecl> = inputs.iter().map(|i| &i.shape).collect();
    let data_decls = data_tensor_decls(def);
    let dims: Vec<Ident> =
        used_decl_dims(&def.dims, &[&input_decls[..], &data_decls[..]].concat()).into_iter().cloned().collect();
    let input_names: Vec<&Ident> = inputs.iter().map(|i| &i.name).collect();
    let input_shapes: Vec<TokenStream> = input_decls.iter().map(|s| decl_tokens(s, &dims)).collect();
    let outputs: Vec<TokenStream> = def.outputs.iter().map(|o| decl_tokens(o, &dims)).collect();
    let output_decls: Vec<&ShapeDecl> = def.outputs.iter().collect();
    let used = DimUse {
        inputs: used_decl_dims(&dims, &input_decls),
        handles: used_decl_dims(&dims, &[&input_decls[..], &output_decls[..]].concat()),
        data: used_decl_dims(&dims, &data_decls),
        nodes: Vec::new(),
    };
    let Common { items, generics, dim_bounds, handle_generics, .. } =
        common(def, &dims, &used, names, &input_names, &input_shapes, &outputs, quote!(#p::Nil));
    let Names { alias, handles, .. } = names;
    let (attrs, vis, name) = (&def.attrs, &def.vis, &def.name);
    quote! {
        #items

        #(#attrs)*
        #vis fn #name<#s, #generics>() -> (#alias<#s, #generics>, #handles<#handle_generics>)
        where
            #s: #p::Scalar #user,
            #dim_bounds
        {
            ::core::unreachable!("graph! reported errors for this graph")
        }
    }
}
