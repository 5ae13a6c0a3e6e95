//! `mark_deprecated` (code → code): adds `#[deprecated]` to the methods of operations marked
//! `deprecated: true`.
//!
//! Progenitor 0.15 never reads the flag. The attribute goes on the method declarations of the
//! per-tag extension traits (and on inherent `impl Client` methods, should the interface style
//! change), never on trait impls, where `#[deprecated]` is useless and rejected by the
//! `useless_deprecated` lint. The note comes from the operation's `x-deprecated-note`, or a
//! generic one.

use crate::walk::operations;
use heck::ToSnakeCase;
use openapiv3::OpenAPI;
use std::collections::BTreeMap;
use syn::visit_mut::VisitMut;

/// Adds the attributes to `file` for every deprecated operation of `spec`.
pub fn apply(file: &mut syn::File, spec: &OpenAPI) {
    let notes: BTreeMap<String, String> = operations(spec)
        .into_iter()
        .filter(|op| op.operation.deprecated)
        .filter_map(|op| {
            let id = op.operation.operation_id.as_ref()?;
            let note = op
                .operation
                .extensions
                .get("x-deprecated-note")
                .and_then(|v| v.as_str())
                .unwrap_or("deprecated by the Content Platform Public API")
                .to_string();
            Some((id.to_snake_case(), note))
        })
        .collect();
    Marker { notes: &notes }.visit_file_mut(file);
}

struct Marker<'a> {
    notes: &'a BTreeMap<String, String>,
}

impl Marker<'_> {
    fn attribute(&self, name: &syn::Ident) -> Option<syn::Attribute> {
        let note = self.notes.get(&name.to_string())?;
        Some(syn::parse_quote!(#[deprecated(note = #note)]))
    }
}

impl VisitMut for Marker<'_> {
    fn visit_item_trait_mut(&mut self, item: &mut syn::ItemTrait) {
        for trait_item in &mut item.items {
            if let syn::TraitItem::Fn(f) = trait_item
                && let Some(attr) = self.attribute(&f.sig.ident)
            {
                f.attrs.push(attr);
            }
        }
    }

    fn visit_item_impl_mut(&mut self, item: &mut syn::ItemImpl) {
        if item.trait_.is_some() {
            return;
        }
        for impl_item in &mut item.items {
            if let syn::ImplItem::Fn(f) = impl_item
                && let Some(attr) = self.attribute(&f.sig.ident)
            {
                f.attrs.push(attr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;
    use quote::ToTokens;

    const SPEC: &str = "paths:
  /old:
    post:
      operationId: askCopilot
      deprecated: true
      x-deprecated-note: use ask_assistant
      responses: {'200': {description: ok}}
  /new:
    post:
      operationId: askAssistant
      responses: {'200': {description: ok}}
";

    fn marked(code: syn::File) -> String {
        let mut file = code;
        apply(&mut file, &spec(SPEC));
        file.into_token_stream().to_string()
    }

    #[test]
    fn trait_declaration_of_a_deprecated_operation_is_marked() {
        let out = marked(syn::parse_quote! {
            pub trait ClientCopilotExt { fn ask_copilot(&self) -> u8; }
            pub trait ClientAssistantExt { fn ask_assistant(&self) -> u8; }
        });
        assert_eq!(out.matches("deprecated").count(), 1);
        assert!(out.contains("# [deprecated (note = \"use ask_assistant\")] fn ask_copilot"));
    }

    #[test]
    fn inherent_method_is_marked_but_trait_impl_is_not() {
        let out = marked(syn::parse_quote! {
            impl Client { pub fn ask_copilot(&self) -> u8 { 1 } }
            impl ClientCopilotExt for Client { fn ask_copilot(&self) -> u8 { 1 } }
        });
        assert_eq!(out.matches("deprecated").count(), 1);
        assert!(out.starts_with("impl Client { # [deprecated"));
    }
}
