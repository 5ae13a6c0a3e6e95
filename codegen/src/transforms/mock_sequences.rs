//! `mock_sequences` (code → code, typed mocks): each operation's mock can also answer in
//! sequence, `server.<operation>_sequence(|when| ..)`, the way aws-smithy-mocks'
//! `.sequence().times(n)` does: a service's retry test scripts `503, 503, then 200` at the
//! typed level and counts the answers.
//!
//! Progenitor's `httpmock` generator gives `MockServerExt` one method per operation that
//! answers every matching request the same way. This transform adds, next to each, a method
//! returning the handwritten `crate::Sequence` for the operation's typed `When`/`Then` pair:
//! the `When` closure narrows every step's request, and each step answers with the typed
//! `Then` (or a bare status) a number of times.

use crate::CodegenError;
use crate::transforms::mock_shape::{then_type, when_type};
use crate::walk::{operation_name, operations};
use heck::ToSnakeCase;
use openapiv3::OpenAPI;

/// The name of the sequence method of the operation whose mock method is `method`.
pub(crate) fn sequence_method(method: &str) -> String {
    format!("{method}_sequence")
}

/// Adds a sequence method per operation of `spec` to `MockServerExt` and its impl for
/// `httpmock::MockServer`; returns how many operations got one.
///
/// # Errors
/// [`CodegenError::Unparseable`] when the trait or its impl is missing, or an operation has no
/// mock method to stand beside: progenitor's output changed shape.
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<usize, CodegenError> {
    let changed = || {
        CodegenError::Unparseable(
            "mock_sequences found no MockServerExt trait and impl: progenitor's output changed"
                .into(),
        )
    };
    let mut declarations: Vec<syn::TraitItem> = Vec::new();
    let mut definitions: Vec<syn::ImplItem> = Vec::new();
    let existing = trait_methods(file).ok_or_else(changed)?;
    for op in operations(spec) {
        let id = operation_name(op.path, op.method, op.operation);
        let method = id.to_snake_case();
        if !existing.contains(&method) {
            return Err(CodegenError::Unparseable(format!(
                "mock_sequences: MockServerExt has no {method} for {id}"
            )));
        }
        let name = syn::Ident::new(&sequence_method(&method), proc_macro2::Span::call_site());
        let when = syn::Ident::new(&when_type(&id), proc_macro2::Span::call_site());
        let then = syn::Ident::new(&then_type(&id), proc_macro2::Span::call_site());
        let doc = format!(
            "Mocks `{id}` (`{} {}`) with answers in sequence: `when_fn` narrows the request \
             of every step with the typed `When`; add the steps in order (`then`, `status`, \
             each `times(n)`, the last maybe `repeatedly()`) and `build()` them. See \
             [`crate::Sequence`].",
            op.method.to_uppercase(),
            op.path
        );
        declarations.push(syn::parse_quote! {
            #[doc = #doc]
            fn #name<'a, W>(&'a self, when_fn: W) -> crate::Sequence<'a, operations::#when, operations::#then>
            where
                W: Fn(operations::#when) + 'a;
        });
        definitions.push(syn::parse_quote! {
            fn #name<'a, W>(&'a self, when_fn: W) -> crate::Sequence<'a, operations::#when, operations::#then>
            where
                W: Fn(operations::#when) + 'a,
            {
                crate::Sequence::new(self, when_fn, operations::#when::new, operations::#then::new)
            }
        });
    }
    let added = declarations.len();
    let mut trait_found = false;
    let mut impl_found = false;
    for item in &mut file.items {
        match item {
            syn::Item::Trait(t) if t.ident == "MockServerExt" => {
                t.items.append(&mut declarations);
                trait_found = true;
            }
            syn::Item::Impl(i)
                if i.trait_
                    .as_ref()
                    .is_some_and(|(_, path, _)| path.is_ident("MockServerExt")) =>
            {
                i.items.append(&mut definitions);
                impl_found = true;
            }
            _ => {}
        }
    }
    if !(trait_found && impl_found) {
        return Err(changed());
    }
    Ok(added)
}

/// The methods `MockServerExt` declares; `None` without the trait.
fn trait_methods(file: &syn::File) -> Option<Vec<String>> {
    file.items.iter().find_map(|item| match item {
        syn::Item::Trait(t) if t.ident == "MockServerExt" => Some(
            t.items
                .iter()
                .filter_map(|item| match item {
                    syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;
    use crate::transforms::mock_shape::fixture::delete_webhook;
    use quote::ToTokens;

    fn mocks() -> syn::File {
        syn::parse_quote! {
            pub trait MockServerExt {
                fn delete_webhook<F>(&self, config_fn: F) -> ::httpmock::Mock<'_>
                where
                    F: FnOnce(operations::DeleteWebhookWhen, operations::DeleteWebhookThen);
            }
            impl MockServerExt for ::httpmock::MockServer {
                fn delete_webhook<F>(&self, config_fn: F) -> ::httpmock::Mock<'_>
                where
                    F: FnOnce(operations::DeleteWebhookWhen, operations::DeleteWebhookThen),
                {
                    self.mock(|when, then| config_fn(operations::DeleteWebhookWhen::new(when), operations::DeleteWebhookThen::new(then)))
                }
            }
        }
    }

    /// The trait declares, and the server's impl defines, one sequence per operation over
    /// the operation's own typed pair.
    #[test]
    fn each_operation_gets_a_sequence_of_its_typed_pair() {
        let mut file = mocks();
        assert_eq!(apply(&mut file, &delete_webhook()).unwrap(), 1);
        let out = file.into_token_stream().to_string();
        assert_eq!(
            out.matches("fn delete_webhook_sequence < 'a , W >").count(),
            2,
            "{out}"
        );
        assert!(
            out.contains("crate :: Sequence < 'a , operations :: DeleteWebhookWhen , operations :: DeleteWebhookThen >"),
            "{out}"
        );
        assert!(
            out.contains("crate :: Sequence :: new (self , when_fn , operations :: DeleteWebhookWhen :: new , operations :: DeleteWebhookThen :: new)"),
            "{out}"
        );
        assert!(
            out.contains("Mocks `deleteWebhook` (`DELETE /hooks/{id}`) with answers in sequence"),
            "{out}"
        );
    }

    /// Without the trait, or without an operation's mock method, the transform says so.
    #[test]
    fn progenitors_output_of_another_shape_is_an_error() {
        let mut empty: syn::File = syn::parse_quote! { pub mod operations {} };
        assert!(matches!(
            apply(&mut empty, &delete_webhook()),
            Err(CodegenError::Unparseable(_))
        ));
        let other = "paths:
  /x:
    get:
      operationId: listThings
      responses: {'200': {description: ok}}
";
        let err = apply(&mut mocks(), &spec(other)).unwrap_err();
        assert!(err.to_string().contains("list_things"), "{err}");
    }
}
