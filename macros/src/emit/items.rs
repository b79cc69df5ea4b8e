//! The items shared by the full expansion and the error stub: the data struct (Δ), the brand, the
//! shape-list aliases and the handles struct, plus the tokens of dims, shapes and lists.

use std::collections::HashMap;

use exactgrad_spec::{Bound, NODE_CHUNK};

use crate::plan::rolled::Segment;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::Ident;

use super::private;
use crate::ir::{Dim, Shape};
use crate::parse::{DataType, DimDecl, GraphDef, ShapeDecl};
use crate::typenum::unsigned;

/// Names of the generated items for a graph called `name`.
pub(super) struct Names {
    /// The model struct (`Mlp` for `fn mlp`).
    pub(super) model: Ident,
    /// The typed graph alias (`MlpGraph`).
    pub(super) alias: Ident,
    pub(super) handles: Ident,
    pub(super) data: Ident,
    pub(super) brand: Ident,
    pub(super) inputs: Ident,
    pub(super) nodes: Ident,
}

impl Names {
    /// The names for the graph `fn name`: its CamelCase form (a raw `r#match` gives `Match`), with
    /// a `G` in front when that form does not start with a letter (`_1` gives `G1`, `__` gives `G`).
    pub(super) fn new(name: &Ident) -> Self {
        let camel: String = syn::ext::IdentExt::unraw(name)
            .to_string()
            .split('_')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let mut c = s.chars();
                c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
            })
            .collect();
        let camel = if camel.starts_with(char::is_alphabetic) { camel } else { format!("G{camel}") };
        let at = |suffix: &str| Ident::new(&format!("{camel}{suffix}"), name.span());
        Names {
            model: at(""),
            alias: at("Graph"),
            handles: at("Handles"),
            data: at("Data"),
            brand: at("Brand"),
            inputs: at("Inputs"),
            nodes: at("Nodes"),
        }
    }
}

pub(super) fn dim_tokens(d: &Dim, span: Span) -> TokenStream {
    match d {
        Dim::Lit(n) => unsigned(*n, span),
        Dim::Sym(i) => i.to_token_stream(),
        Dim::Dyn(_, k) => stand_in(*k, span),
    }
}

/// The typenum stand-in of run-time dim `k` (`exactgrad_spec::RUN_TIME_BASE + k`).
pub(super) fn stand_in(k: usize, span: Span) -> TokenStream {
    unsigned((exactgrad_spec::RUN_TIME_BASE + k) as u64, span)
}

/// A declared shape as tokens: a run-time dim is its stand-in, a `const` dim (`sizes`, see
/// `lower::const_sizes`) its size, and an undeclared dim 0 (its error is reported already).
pub(super) fn decl_tokens(
    s: &ShapeDecl,
    dims: &[Ident],
    sizes: &HashMap<String, u64>,
    run_time: &[Ident],
) -> TokenStream {
    let ds = s.dims.iter().map(|d| match d {
        DimDecl::Lit(n, span) => unsigned(*n, *span),
        DimDecl::Sym(i) if dims.contains(i) => i.to_token_stream(),
        DimDecl::Sym(i) => match run_time.iter().position(|r| r == i) {
            Some(k) => stand_in(k, i.span()),
            None => unsigned(sizes.get(&i.to_string()).copied().unwrap_or(0), i.span()),
        },
        DimDecl::Expr(e) => unsigned(crate::lower::const_dim(sizes, e).unwrap_or(0), e.span()),
    });
    quote!((#(#ds,)*))
}

/// Whether a declared shape uses one of the run-time dims.
pub(super) fn has_run_time(s: &ShapeDecl, run_time: &[Ident]) -> bool {
    s.dims.iter().any(|d| matches!(d, DimDecl::Sym(i) if run_time.contains(i)))
}

/// The input list as a type: `Snoc<…Snoc<Nil, S0>…, Sn>` (the list input packs are built on).
pub(super) fn snoc(items: impl Iterator<Item = TokenStream>) -> TokenStream {
    let p = private();
    items.fold(quote!(#p::Nil), |acc, s| quote!(#p::Snoc<#acc, #s>))
}

/// The node list as a type, by the segments `MacroBuilder` builds it in: a chunk of at most
/// `NODE_CHUNK` shapes is a tuple, a rolled loop `Repeat<(its body's shapes), N>`:
/// `Snoc<…Snoc<Nil, (S0, …, S31)>…, Repeat<(S32, S33, S34), 2000>>`, or `Nil` without nodes.
pub(super) fn node_list(segments: &[Segment], shape: impl Fn(usize) -> TokenStream) -> TokenStream {
    let p = private();
    segments.iter().fold(quote!(#p::Nil), |acc, segment| match segment {
        Segment::Chunk(nodes) => {
            let chunk = nodes.clone().map(&shape);
            quote!(#p::Snoc<#acc, (#(#chunk,)*)>)
        }
        Segment::Rolled(r) => {
            let body: Vec<TokenStream> = (r.start..r.start + r.body).map(&shape).collect();
            let chunks = body.chunks(NODE_CHUNK).map(|c| quote!((#(#c,)*)));
            let count = r.count;
            quote!(#p::Snoc<#acc, #p::Repeat<(#(#chunks,)*), #count>>)
        }
    })
}

/// The generic dims among `dims` that occur in `shapes`, in declaration order.
pub(super) fn used_dims<'d>(dims: &'d [Ident], shapes: &[&Shape]) -> Vec<&'d Ident> {
    dims.iter().filter(|d| shapes.iter().any(|s| s.0.iter().any(|x| matches!(x, Dim::Sym(i) if i == *d)))).collect()
}

/// The generic dims among `dims` that occur in the declared `shapes`, in declaration order.
pub(super) fn used_decl_dims<'d>(dims: &'d [Ident], shapes: &[&ShapeDecl]) -> Vec<&'d Ident> {
    dims.iter()
        .filter(|d| shapes.iter().any(|s| s.dims.iter().any(|x| matches!(x, DimDecl::Sym(i) if i == *d))))
        .collect()
}

/// The declared shapes of the data tensors.
pub(super) fn data_tensor_decls(def: &GraphDef) -> Vec<&ShapeDecl> {
    def.data.iter().filter_map(|d| d.tensor_shape()).collect()
}

/// Which generic dims each generated item takes (all of them are among the graph's `dims`).
pub(super) struct DimUse<'d> {
    /// Dims of the input shapes (the `…Inputs` alias).
    pub(super) inputs: Vec<&'d Ident>,
    /// Dims of the input and output shapes (the `…Handles` struct).
    pub(super) handles: Vec<&'d Ident>,
    /// Dims of the data tensors' shapes (the `…Data` struct, generic when it holds a tensor).
    pub(super) data: Vec<&'d Ident>,
    /// Dims of the node shapes (the `…Nodes` alias).
    pub(super) nodes: Vec<&'d Ident>,
}

pub(super) fn bound_tokens(b: Bound, s: &Ident) -> TokenStream {
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
pub(super) struct Common {
    pub(super) items: TokenStream,
    /// Every generic dim of the graph.
    pub(super) generics: TokenStream,
    pub(super) dim_bounds: TokenStream,
    /// The generic dims of the handles struct.
    pub(super) handle_generics: TokenStream,
    /// The data type Δ as used in the graph's types (`NameData<S, B>` when it holds tensors).
    pub(super) data_ty: TokenStream,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn common(
    def: &GraphDef,
    dims: &[Ident],
    used: &DimUse<'_>,
    names: &Names,
    input_decls: &[(Ident, Option<usize>, TokenStream)],
    outputs: &[TokenStream],
    nodes: TokenStream,
) -> Common {
    let p = private();
    let vis = &def.vis;
    let Names { alias, handles, data, brand, inputs, nodes: nodes_alias, .. } = names;
    let scalar = scalar_ident(def);
    let generics = quote!(#(#dims),*);
    let dim_bounds = quote!(#(#dims: #p::typenum::Unsigned + 'static),*);
    let (input_dims, handle_dims, data_dims, node_dims) = (&used.inputs, &used.handles, &used.data, &used.nodes);
    let handle_generics = quote!(#(#handle_dims),*);
    let handle_bounds = quote!(#(#handle_dims: #p::typenum::Unsigned + 'static),*);
    let has_tensors = def.data.iter().any(|d| d.tensor_shape().is_some());
    let sizes = crate::lower::const_sizes(def);
    let data_ty = if has_tensors { quote!(#data<#scalar, #(#data_dims),*>) } else { quote!(#data) };
    let data_item = if def.data.is_empty() {
        quote!(
            /// The graph's non-differentiable data (Δ): this graph has none.
            #vis type #data = ();
        )
    } else {
        // The first of duplicate names only (a duplicate is reported; the stub must type-check).
        let unique: Vec<&crate::parse::DataDecl> = def
            .data
            .iter()
            .enumerate()
            .filter(|(i, d)| !def.data[..*i].iter().any(|e| e.name == d.name))
            .map(|(_, d)| d)
            .collect();
        let field_types: Vec<TokenStream> = unique
            .iter()
            .map(|d| match &d.ty {
                DataType::Other(t) => t.to_token_stream(),
                // A data tensor with run-time dims is untyped: its size along them is the batch's.
                DataType::Tensor(shape) if has_run_time(shape, &def.run_time) => quote!(#p::RawTensor<#scalar>),
                DataType::Tensor(shape) => {
                    let shape = decl_tokens(shape, dims, &sizes, &def.run_time);
                    quote!(#p::Tensor<#scalar, #shape>)
                }
            })
            .collect();
        let field_names: Vec<&Ident> = unique.iter().map(|d| &d.name).collect();
        let field_strs = field_names.iter().map(|n| syn::ext::IdentExt::unraw(*n).to_string());
        let fields = unique.iter().zip(&field_types).map(|(d, t)| {
            let n = &d.name;
            let doc = match d.ty {
                DataType::Other(_) => format!("The data parameter `{n}`."),
                DataType::Tensor(_) => format!("The data tensor `{n}` (not differentiable)."),
            };
            quote!(#[doc = #doc] pub #n: #t)
        });
        let (generics, ty) = if has_tensors {
            (quote!(<#scalar, #(#data_dims),*>), quote!(#data<#scalar, #(#data_dims),*>))
        } else {
            (TokenStream::new(), quote!(#data))
        };
        let doc = if has_tensors {
            "The graph's non-differentiable data (Δ), with its data tensors in the scalar type."
        } else {
            "The graph's non-differentiable data (Δ)."
        };
        // `Clone` and `Debug` whenever every field has them: each field's bound is written out,
        // behind a `for<'__x>` so that a field type without the trait (a user type) leaves the
        // impl out instead of failing to compile (a bound without generics is checked eagerly).
        let name = data.to_string();
        quote!(
            #[doc = #doc]
            #vis struct #data #generics { #(#fields,)* }

            #[allow(unused_lifetimes, single_use_lifetimes)]
            impl #generics ::core::clone::Clone for #ty
            where
                #(for<'__x> #field_types: ::core::clone::Clone,)*
            {
                fn clone(&self) -> Self {
                    #data { #(#field_names: ::core::clone::Clone::clone(&self.#field_names),)* }
                }
            }

            #[allow(unused_lifetimes, single_use_lifetimes)]
            impl #generics ::core::fmt::Debug for #ty
            where
                #(for<'__x> #field_types: ::core::fmt::Debug,)*
            {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(#name)#(.field(#field_strs, &self.#field_names))*.finish()
                }
            }
        )
    };
    let output_names: Vec<Ident> = if outputs.len() == 1 {
        vec![format_ident!("output")]
    } else {
        (0..outputs.len()).map(|k| format_ident!("output{k}")).collect()
    };
    // A parameter array is one entry, `Array<shape, n>`.
    let input_list = snoc(input_decls.iter().map(|(_, n, s)| match n {
        None => s.clone(),
        Some(n) => quote!(#p::Array<#s, #n>),
    }));
    let input_names: Vec<&Ident> = input_decls.iter().map(|(n, _, _)| n).collect();
    // An input with run-time dims is passed as a `RawTensor`, its dims checked by `compile`.
    let run_time_input = |name: &Ident| {
        def.inputs.iter().find(|i| i.name == *name).is_some_and(|i| has_run_time(&i.shape, &def.run_time))
    };
    let (handle_tys, tensor_tys): (Vec<TokenStream>, Vec<TokenStream>) = input_decls
        .iter()
        .map(|(name, n, shape)| {
            let tensor =
                if run_time_input(name) { quote!(#p::RawTensor<#scalar>) } else { quote!(#p::Tensor<#scalar, #shape>) };
            match n {
                None => (quote!(#p::Position<#shape, #brand>), tensor),
                Some(n) => (quote!([#p::Position<#shape, #brand>; #n]), quote!([#tensor; #n])),
            }
        })
        .collect();
    let pushes = input_decls.iter().map(|(name, n, shape)| {
        let push = match (n, run_time_input(name)) {
            (None, false) => quote!(push),
            (None, true) => quote!(push_run_time::<#shape>),
            (Some(_), false) => quote!(push_array),
            (Some(n), true) => quote!(push_run_time_array::<#shape, #n>),
        };
        quote!(let __pack = __pack.#push(#name);)
    });
    // One name per pack position: an array parameter `w: [[…]; n]` gives `w[0]` … `w[n - 1]`
    // (made at run time from one declaration, so the list does not grow with `n`).
    let input_name_decls = super::program::input_decl_tokens(&p, input_decls.iter().map(|(name, n, _)| (name, *n)));
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
                #[doc = "Handle to an input (one per element of a parameter array)."]
                pub #input_names: #handle_tys,
            )*
            #(
                #[doc = "Handle to an output."]
                pub #output_names: #p::Position<#outputs, #brand>,
            )*
        }

        impl<#handle_bounds> #handles<#handle_generics> {
            /// The names of the inputs, in declaration order (the order of the input pack): the
            /// names its tensors are saved and loaded under.
            #[must_use]
            #[allow(clippy::unused_self)]
            #vis fn input_names(&self) -> &'static [&'static str] {
                static NAMES: ::std::sync::OnceLock<::std::vec::Vec<&'static str>> = ::std::sync::OnceLock::new();
                NAMES.get_or_init(|| #p::plan::InputDecl::static_names(&[#(#input_name_decls),*]))
            }

            /// The input pack, in declaration order.
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn inputs<#scalar>(&self, #(#input_names: #tensor_tys),*) -> #p::Pack<#scalar, #inputs<#(#input_dims),*>> {
                let __pack = #p::Pack::new();
                #(#pushes)*
                __pack
            }
        }
    };
    Common { items, generics, dim_bounds, handle_generics, data_ty }
}

/// The scalar type parameter: the user's, or a hidden `__S`.
pub(super) fn scalar_ident(def: &GraphDef) -> Ident {
    def.scalar.as_ref().map_or_else(|| format_ident!("__S"), |(i, _)| i.clone())
}

/// The user's bounds on the scalar parameter, as `+ bound` items.
pub(super) fn user_bounds(def: &GraphDef) -> TokenStream {
    match &def.scalar {
        Some((_, bounds)) => {
            let b = bounds.iter();
            quote!(#(+ #b)*)
        }
        None => TokenStream::new(),
    }
}
