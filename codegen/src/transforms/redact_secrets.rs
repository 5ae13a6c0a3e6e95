//! `redact_secrets` (code → code): keeps secrets out of `Debug`.
//!
//! Properties the spec marks `format: password` (the webhook `authHeader`, the shared secret
//! of deliveries) become plain `String` fields, and the derived `Debug` of every struct that
//! holds one would print it, in logs, panics and error reports. This transform removes
//! `Debug` from the derive of those structs (the types and their builders) and adds an impl
//! that prints `** redacted **` for the secret fields and every other field as derived.

use crate::walk::visit_spec_schemas;
use heck::ToSnakeCase;
use openapiv3::{OpenAPI, SchemaKind, StringFormat, Type, VariantOrUnknownOrEmpty};
use quote::quote;
use std::collections::BTreeSet;

/// The Rust field names of the spec's `format: password` properties.
pub fn secret_fields(spec: &OpenAPI) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    visit_spec_schemas(spec, &mut |schema| {
        let properties = match &schema.schema_kind {
            SchemaKind::Type(Type::Object(o)) => &o.properties,
            SchemaKind::Any(any) => &any.properties,
            _ => return,
        };
        for (name, property) in properties {
            if let openapiv3::ReferenceOr::Item(property) = property
                && let SchemaKind::Type(Type::String(s)) = &property.schema_kind
                && s.format == VariantOrUnknownOrEmpty::Item(StringFormat::Password)
            {
                fields.insert(name.to_snake_case());
            }
        }
    });
    fields
}

/// Rewrites `file` so no struct holding a secret field derives `Debug`.
pub fn apply(file: &mut syn::File, spec: &OpenAPI) {
    let secrets = secret_fields(spec);
    if !secrets.is_empty() {
        redact_items(&mut file.items, &secrets);
    }
}

fn redact_items(items: &mut Vec<syn::Item>, secrets: &BTreeSet<String>) {
    let mut added = Vec::new();
    for (index, item) in items.iter_mut().enumerate() {
        match item {
            syn::Item::Mod(module) => {
                if let Some((_, inner)) = &mut module.content {
                    redact_items(inner, secrets);
                }
            }
            syn::Item::Struct(item) => {
                let redacted = holds_secret(item, secrets) && remove_debug(item);
                if redacted {
                    added.push((index + 1, debug_impl(item, secrets)));
                }
            }
            _ => {}
        }
    }
    for (offset, (index, item)) in added.into_iter().enumerate() {
        items.insert(index + offset, item);
    }
}

fn holds_secret(item: &syn::ItemStruct, secrets: &BTreeSet<String>) -> bool {
    item.fields.iter().any(|f| {
        f.ident
            .as_ref()
            .is_some_and(|i| secrets.contains(&i.to_string()))
    })
}

/// Removes `Debug` from the struct's derives; `false` when it had none.
fn remove_debug(item: &mut syn::ItemStruct) -> bool {
    let mut removed = false;
    for attr in &mut item.attrs {
        if !attr.path().is_ident("derive") {
            continue;
        }
        let Ok(paths) = attr.parse_args_with(
            syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
        ) else {
            continue;
        };
        let kept: Vec<&syn::Path> = paths
            .iter()
            .filter(|p| p.segments.last().is_none_or(|s| s.ident != "Debug"))
            .collect();
        if kept.len() != paths.len() {
            removed = true;
            *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
        }
    }
    removed
}

fn debug_impl(item: &syn::ItemStruct, secrets: &BTreeSet<String>) -> syn::Item {
    let name = &item.ident;
    let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
    let label = name.to_string();
    let fields = item
        .fields
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .map(|ident| {
            let key = ident.to_string();
            if secrets.contains(&key) {
                quote!(.field(#key, &"** redacted **"))
            } else {
                quote!(.field(#key, &self.#ident))
            }
        });
    syn::parse_quote! {
        impl #impl_generics ::std::fmt::Debug for #name #type_generics #where_clause {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(#label) #(#fields)* .finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{assert_holds, spec};
    use quote::ToTokens;

    const SPEC: &str = "paths: {}
components:
  schemas:
    Hook:
      type: object
      properties:
        url: {type: string}
        authHeader: {type: string, format: password}
";

    #[test]
    fn password_properties_name_the_secret_fields() {
        let fields: Vec<String> = secret_fields(&spec(SPEC)).into_iter().collect();
        assert_eq!(fields, ["auth_header"]);
    }

    #[test]
    fn structs_with_a_secret_lose_derived_debug_and_get_a_redacting_one() {
        let mut file: syn::File = syn::parse_quote! {
            pub mod types {
                #[derive(Clone, Debug, PartialEq)]
                pub struct Hook { pub auth_header: Option<String>, pub url: String }
                #[derive(Clone, Debug)]
                pub struct Other { pub url: String }
            }
        };
        apply(&mut file, &spec(SPEC));
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "# [derive (Clone , PartialEq)] pub struct Hook",
                "# [derive (Clone , Debug)] pub struct Other",
                ". field (\"auth_header\" , & \"** redacted **\")",
                ". field (\"url\" , & self . url)",
            ],
        );
    }
}
