//! Emission: the IR to tokens. Everything is named through `::exactgrad::__private`; user spans go
//! on every emitted item that can fail to type-check, so the compiler points at the user's code.

mod builder;
mod constants;
mod items;
mod program;
mod run;
mod tables;

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use crate::parse::{GraphDef, ShapeDecl};
use items::{common, data_tensor_decls, decl_tokens, scalar_ident, used_decl_dims, user_bounds, Common, DimUse, Names};

fn private() -> TokenStream {
    quote!(::exactgrad::__private)
}

/// Expands a definition: the full graph, or a well-typed stub plus every error.
pub(crate) fn expand(def: &GraphDef) -> TokenStream {
    let names = Names::new(&def.name);
    let module = syn::ext::IdentExt::unraw(&def.name).to_string();
    let vis = &def.vis;
    crate::typenum::begin(quote::format_ident!("__exactgrad_sizes_{}", module.trim_start_matches('_')), quote!(#vis));
    let items = match crate::lower::lower(def) {
        Ok(graph) => builder::full(def, &graph, &names),
        Err(e) => {
            let stub = stub(def, &names);
            let e = e.to_compile_error();
            quote!(#stub #e)
        }
    };
    let sizes = crate::typenum::sizes_module();
    quote!(#items #sizes)
}

/// On error: the items with the declared input and output shapes and an empty node list, so the
/// user's other code still type-checks and sees only the real errors.
fn stub(def: &GraphDef, names: &Names) -> TokenStream {
    let p = private();
    let s = scalar_ident(def);
    let user = user_bounds(def);
    // Keep the first of duplicate inputs, drop inputs named like output handles, and keep only the
    // dims the inputs use, so the stub itself type-checks.
    let lengths = crate::lower::array_lengths(def);
    let mut inputs: Vec<(&crate::parse::InputDecl, Option<usize>)> = Vec::new();
    for (i, n) in def.inputs.iter().zip(lengths) {
        let reserved = i.name.to_string().starts_with("output");
        if !reserved && !inputs.iter().any(|(j, _)| j.name == i.name) {
            inputs.push((i, n));
        }
    }
    let input_decls: Vec<&ShapeDecl> = inputs.iter().map(|(i, _)| &i.shape).collect();
    let data_decls = data_tensor_decls(def);
    let dims: Vec<Ident> =
        used_decl_dims(&def.dims, &[&input_decls[..], &data_decls[..]].concat()).into_iter().cloned().collect();
    let sizes = crate::lower::const_sizes(def);
    let decls: Vec<(Ident, Option<usize>, TokenStream)> =
        inputs.iter().map(|(i, n)| (i.name.clone(), *n, decl_tokens(&i.shape, &dims, &sizes, &def.run_time))).collect();
    let outputs: Vec<TokenStream> = def.outputs.iter().map(|o| decl_tokens(o, &dims, &sizes, &def.run_time)).collect();
    let output_decls: Vec<&ShapeDecl> = def.outputs.iter().collect();
    let used = DimUse {
        inputs: used_decl_dims(&dims, &input_decls),
        handles: used_decl_dims(&dims, &[&input_decls[..], &output_decls[..]].concat()),
        data: used_decl_dims(&dims, &data_decls),
        nodes: Vec::new(),
    };
    let input_dims = used.inputs.clone();
    let Common { items, generics, dim_bounds, handle_generics, data_ty } =
        common(def, &dims, &used, names, &decls, &outputs, quote!(#p::Nil));
    let Names { alias, handles, model, inputs: inputs_alias, brand, .. } = names;
    let seeds_ty = match &outputs[..] {
        [one] => quote!(#p::Tensor<#s, #one>),
        many => quote!((#(#p::Tensor<#s, #many>,)*)),
    };
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

        /// The model (not generated: `graph!` reported errors for this graph).
        #[derive(Clone, Copy, Debug)]
        #vis struct #model;

        #[allow(unreachable_code, clippy::diverging_sub_expression)]
        impl #model {
            /// Not generated: `graph!` reported errors for this graph.
            pub fn support() -> ::std::vec::Vec<::std::vec::Vec<usize>> {
                ::std::vec::Vec::new()
            }
            /// Not generated: `graph!` reported errors for this graph.
            pub fn reads() -> ::std::vec::Vec<::std::vec::Vec<usize>> {
                ::std::vec::Vec::new()
            }
            /// Not generated: `graph!` reported errors for this graph.
            pub const NODES: usize = 0;
            /// Not generated: `graph!` reported errors for this graph.
            pub fn plan() -> &'static #p::Plan {
                ::core::unreachable!("graph! reported errors for this graph")
            }
            /// Not generated: `graph!` reported errors for this graph.
            pub fn describe_backward() -> ::std::string::String {
                ::std::string::String::new()
            }
            /// Not generated: `graph!` reported errors for this graph.
            pub fn program<#s, #generics>() -> #p::Program<#s, #data_ty, #inputs_alias<#(#input_dims),*>, #seeds_ty, #brand>
            where
                #s: #p::Scalar #user,
                #dim_bounds
            {
                ::core::unreachable!("graph! reported errors for this graph")
            }
        }
    }
}
