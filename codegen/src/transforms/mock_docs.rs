//! `mock_docs` (code → code, typed mocks): every public item of the mocks says what it is for,
//! in the spec's words.
//!
//! Progenitor's `httpmock` generator writes no doc comments on the wrappers, their methods or
//! the `MockServerExt` methods, and `pubapi-httpmock` is a published crate whose items are
//! documented like the rest. This transform documents each `When`/`Then` wrapper and
//! `MockServerExt` method with the operation's method, path and summary, each `When` method
//! with its parameter's description (or the request body's), and each `Then` method progenitor
//! wrote with its response's description. Items `mock_removed_responses` added carry their docs
//! already. An item it cannot place in the spec is an error, so nothing ships undocumented.

use crate::CodegenError;
use crate::transforms::mock_shape::{status_method, then_type, when_type};
use crate::walk::{operation_name, operations, resolve, resolve_response};
use heck::ToSnakeCase;
use openapiv3::{OpenAPI, Operation, StatusCode};
use std::collections::BTreeMap;
use syn::visit_mut::VisitMut;

/// What one wrapper type documents: its own doc and one per method name.
#[derive(Default)]
struct TypeDocs {
    own: String,
    methods: BTreeMap<String, String>,
}

/// Documents `file` from `spec` and returns how many items it documented.
///
/// # Errors
/// [`CodegenError::Unparseable`] naming a public item of the mocks that has no doc and that the
/// spec does not describe.
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<usize, CodegenError> {
    let mut types: BTreeMap<String, TypeDocs> = BTreeMap::new();
    let mut trait_methods: BTreeMap<String, String> = BTreeMap::new();
    for op in operations(spec) {
        let id = operation_name(op.path, op.method, op.operation);
        let method = op.method.to_uppercase();
        let path = op.path;
        let summary = one_line(op.operation.summary.as_deref().unwrap_or(""));
        let method_name = id.to_snake_case();
        trait_methods.insert(
            method_name.clone(),
            format!(
                "Mocks `{id}` (`{method} {path}`): {summary}. The closure narrows the request \
                 with the typed `When` and answers with the typed `Then`."
            ),
        );
        let when = TypeDocs {
            own: format!(
                "The request of `{id}` (`{method} {path}`: {summary}), matched by method and \
                 path; each method narrows it further."
            ),
            methods: when_methods(spec, op.operation),
        };
        let then = TypeDocs {
            own: format!(
                "The answer to `{id}` (`{method} {path}`): one method per documented response, \
                 typed by its body."
            ),
            methods: then_methods(spec, op.operation),
        };
        types.insert(when_type(&id), when);
        types.insert(then_type(&id), then);
    }
    let mut documenter = Documenter {
        types: &types,
        trait_methods: &trait_methods,
        documented: 0,
        missing: Vec::new(),
    };
    documenter.visit_file_mut(file);
    if !documenter.missing.is_empty() {
        return Err(CodegenError::Unparseable(format!(
            "mock_docs has no doc for {}",
            documenter.missing.join(", ")
        )));
    }
    Ok(documenter.documented)
}

fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .to_string()
}

fn when_methods(spec: &OpenAPI, operation: &Operation) -> BTreeMap<String, String> {
    let mut docs = BTreeMap::from([
        (
            "new".to_string(),
            "Wraps httpmock's `When`, matching the operation's method and path.".to_string(),
        ),
        (
            "into_inner".to_string(),
            "The wrapped `httpmock::When`, to match what the typed methods do not spell."
                .to_string(),
        ),
    ]);
    for parameter in &operation.parameters {
        let Some(parameter) = resolve(spec, parameter) else {
            continue;
        };
        let data = parameter.parameter_data_ref();
        let place = match parameter {
            openapiv3::Parameter::Query { .. } => "query parameter",
            openapiv3::Parameter::Header { .. } => "header",
            openapiv3::Parameter::Path { .. } => {
                "path parameter (matched as the client encodes it)"
            }
            openapiv3::Parameter::Cookie { .. } => "cookie",
        };
        let absent = if data.required {
            ""
        } else {
            " `None` matches a request without it."
        };
        docs.insert(
            rust_name(&data.name),
            format!(
                "Matches the `{}` {place}: {}.{absent}",
                data.name,
                one_line(data.description.as_deref().unwrap_or("")),
            ),
        );
    }
    if operation.request_body.is_some() {
        docs.insert(
            "body".to_string(),
            "Matches the JSON request body: exactly this value, as the client serializes it."
                .to_string(),
        );
    }
    docs
}

/// The method name progenitor gives a parameter: snake case, with `_` after a keyword
/// (`type` → `type_`).
fn rust_name(parameter: &str) -> String {
    let name = parameter.to_snake_case();
    if syn::parse_str::<syn::Ident>(&name).is_ok() {
        name
    } else {
        format!("{name}_")
    }
}

fn then_methods(spec: &OpenAPI, operation: &Operation) -> BTreeMap<String, String> {
    let mut docs = BTreeMap::from([
        ("new".to_string(), "Wraps httpmock's `Then`.".to_string()),
        (
            "into_inner".to_string(),
            "The wrapped `httpmock::Then`, to answer what the typed methods do not spell (a \
             status or a body the platform does not document)."
                .to_string(),
        ),
    ]);
    for (code, response) in &operation.responses.responses {
        let (StatusCode::Code(status), Some(response)) = (code, resolve_response(spec, response))
        else {
            continue;
        };
        if let Some(method) = status_method(*status) {
            docs.insert(
                method,
                format!("Answers `{status}`: {}.", one_line(&response.description)),
            );
        }
    }
    docs
}

struct Documenter<'a> {
    types: &'a BTreeMap<String, TypeDocs>,
    trait_methods: &'a BTreeMap<String, String>,
    documented: usize,
    missing: Vec<String>,
}

fn has_doc(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("doc"))
}

impl Documenter<'_> {
    fn document(&mut self, attrs: &mut Vec<syn::Attribute>, doc: Option<&String>, what: String) {
        if has_doc(attrs) {
            return;
        }
        match doc {
            Some(doc) => {
                attrs.insert(0, syn::parse_quote!(#[doc = #doc]));
                self.documented += 1;
            }
            None => self.missing.push(what),
        }
    }
}

impl VisitMut for Documenter<'_> {
    fn visit_item_struct_mut(&mut self, item: &mut syn::ItemStruct) {
        let name = item.ident.to_string();
        let doc = self.types.get(&name).map(|t| &t.own);
        self.document(&mut item.attrs, doc, name);
    }

    fn visit_item_impl_mut(&mut self, item: &mut syn::ItemImpl) {
        if item.trait_.is_some() {
            return;
        }
        let syn::Type::Path(ty) = &*item.self_ty else {
            return;
        };
        let Some(name) = ty.path.get_ident().map(ToString::to_string) else {
            return;
        };
        let types = self.types;
        for impl_item in &mut item.items {
            if let syn::ImplItem::Fn(f) = impl_item {
                let method = f.sig.ident.to_string();
                let doc = types.get(&name).and_then(|t| t.methods.get(&method));
                self.document(&mut f.attrs, doc, format!("{name}::{method}"));
            }
        }
    }

    fn visit_item_trait_mut(&mut self, item: &mut syn::ItemTrait) {
        let trait_methods = self.trait_methods;
        for trait_item in &mut item.items {
            if let syn::TraitItem::Fn(f) = trait_item {
                let method = f.sig.ident.to_string();
                let doc = trait_methods.get(&method);
                self.document(&mut f.attrs, doc, format!("{}::{method}", item.ident));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::mock_shape::fixture::delete_webhook;
    use quote::ToTokens;

    #[test]
    fn wrappers_methods_and_trait_methods_get_the_specs_words() {
        let mut file: syn::File = syn::parse_quote! {
            pub mod operations {
                pub struct DeleteWebhookWhen(::httpmock::When);
                impl DeleteWebhookWhen {
                    pub fn id(self, value: &str) -> Self { self }
                    pub fn x_service_act_as<'a, T>(self, value: T) -> Self { self }
                }
                pub struct DeleteWebhookThen(::httpmock::Then);
                impl DeleteWebhookThen {
                    pub fn no_content(self) -> Self { self }
                    /// Kept.
                    pub fn not_found(self) -> Self { self }
                }
            }
            pub trait MockServerExt { fn delete_webhook<F>(&self, config_fn: F); }
        };
        assert_eq!(apply(&mut file, &delete_webhook()).unwrap(), 6);
        let out = file.into_token_stream().to_string();
        for expected in [
            "The request of `deleteWebhook` (`DELETE /hooks/{id}`: Delete a webhook)",
            "Matches the `id` path parameter (matched as the client encodes it): The webhook id.",
            "Matches the `X-Service-Act-As` header: Acts as this user. `None` matches a request without it.",
            "Answers `204`: The webhook was deleted.",
            "Mocks `deleteWebhook` (`DELETE /hooks/{id}`): Delete a webhook.",
            "Kept.",
        ] {
            assert!(out.contains(expected), "{expected} in {out}");
        }
    }

    #[test]
    fn a_keyword_parameter_is_named_like_progenitor_names_it() {
        assert_eq!(rust_name("type"), "type_");
        assert_eq!(rust_name("X-Service-Act-As"), "x_service_act_as");
    }

    #[test]
    fn an_item_the_spec_does_not_describe_is_an_error() {
        let mut file: syn::File = syn::parse_quote! {
            impl DeleteWebhookThen { pub fn im_a_teapot(self) -> Self { self } }
        };
        let err = apply(&mut file, &delete_webhook()).unwrap_err();
        assert!(
            err.to_string().contains("DeleteWebhookThen::im_a_teapot"),
            "{err}"
        );
    }
}
