//! `schemars_derive` (code → code): every type of the generated `types` module implements
//! `schemars::JsonSchema` behind the `schemars` feature of `pubapi-sdk`, so services that embed
//! these types in their own APIs or tool definitions can publish their schemas.
//!
//! A type whose `Deserialize` is derived gets
//! `#[cfg_attr(feature = "schemars", derive(::schemars::JsonSchema))]` (schemars reads the same
//! serde attributes, so names, defaults and required fields match the wire). A type whose
//! `Deserialize` is written by hand or reads another type (`#[serde(from = "String")]`: the
//! open enums, and typify's checked strings) gets a hand impl describing a string: the schema of what is on the wire,
//! without the check.

use proc_macro2::TokenStream;
use quote::quote;
use std::collections::BTreeSet;

/// Adds the derive or the impl to each type; returns how many types got one.
pub fn apply(file: &mut syn::File) -> usize {
    let Some(types) = crate::code::module_mut(&mut file.items, "types") else {
        return 0;
    };
    let hand_deserialized: BTreeSet<String> = types
        .iter()
        .filter_map(|item| match item {
            syn::Item::Impl(block) => {
                let (_, trait_path, _) = block.trait_.as_ref()?;
                let last = trait_path.segments.last()?;
                (last.ident == "Deserialize").then(|| crate::code::self_name(&block.self_ty))?
            }
            _ => None,
        })
        .collect();
    let mut count = 0;
    let mut impls = Vec::new();
    for item in types.iter_mut() {
        let (attrs, name) = match item {
            syn::Item::Struct(s) => (&mut s.attrs, s.ident.to_string()),
            syn::Item::Enum(e) => (&mut e.attrs, e.ident.to_string()),
            _ => continue,
        };
        if derives_deserialize(attrs) && !read_through_another_type(attrs) {
            attrs.push(syn::parse_quote!(
                #[cfg_attr(feature = "schemars", derive(::schemars::JsonSchema))]
            ));
            count += 1;
        } else if hand_deserialized.contains(&name) || read_through_another_type(attrs) {
            impls.push(string_schema(&name));
            count += 1;
        }
    }
    for tokens in impls {
        if let Ok(item) = syn::parse2::<syn::Item>(tokens) {
            types.push(item);
        }
    }
    count
}

fn derives_deserialize(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("derive")
            && attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|paths| {
                    paths
                        .iter()
                        .any(|p| p.segments.last().is_some_and(|s| s.ident == "Deserialize"))
                })
    })
}

/// `#[serde(from = ..)]` or `#[serde(try_from = ..)]`: serde reads another type (a string for
/// the open enums), which schemars does not follow.
fn read_through_another_type(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("serde") && {
            let text = quote!(#attr).to_string();
            text.contains("from =") || text.contains("try_from =")
        }
    })
}

fn string_schema(name: &str) -> TokenStream {
    let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
    quote! {
        /// On the wire a string (the open enum's or the checked string's text).
        #[cfg(feature = "schemars")]
        impl ::schemars::JsonSchema for #ident {
            fn schema_name() -> ::std::string::String {
                #name.to_string()
            }

            fn json_schema(
                generator: &mut ::schemars::r#gen::SchemaGenerator,
            ) -> ::schemars::schema::Schema {
                <::std::string::String as ::schemars::JsonSchema>::json_schema(generator)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_types_get_the_derive_and_hand_deserialized_ones_a_string_schema() {
        let mut file: syn::File = syn::parse_quote! {
            pub mod types {
                #[derive(::serde::Deserialize, ::serde::Serialize)]
                pub struct Derived { pub a: String }
                pub enum Open { Known, Unknown(String) }
                #[derive(::serde::Deserialize)]
                #[serde(from = "String")]
                pub enum Through { Known, Unknown(String) }
                impl<'de> ::serde::Deserialize<'de> for Open {
                    fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        todo!()
                    }
                }
                pub struct Neither;
            }
        };
        assert_eq!(apply(&mut file), 3);
        let code = quote!(#file).to_string();
        assert!(
            code.contains("cfg_attr (feature = \"schemars\" , derive (:: schemars :: JsonSchema))"),
            "{code}"
        );
        assert!(
            code.contains("impl :: schemars :: JsonSchema for Open"),
            "{code}"
        );
        assert!(
            code.contains("impl :: schemars :: JsonSchema for Through"),
            "{code}"
        );
        assert!(!code.contains("JsonSchema for Neither"), "{code}");
    }
}
