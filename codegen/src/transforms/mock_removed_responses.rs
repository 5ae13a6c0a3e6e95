//! `mock_removed_responses` (code → code, typed mocks): every response of the spec gets its
//! `Then` method, and every declared response header a typed setter.
//!
//! Progenitor's `httpmock` generator writes one `Then` method per response it sees, and it sees
//! the adapted spec: the spec transforms took away the error responses (all three error
//! formats), the audit job's `303`, the events `204` next to a `200` and the report's
//! `text/csv`. A service's tests need exactly those (its error paths), so this transform adds,
//! from the spec as written, to the `Then` wrapper of each operation:
//!
//! - one method per removed status, named like progenitor's (`not_found`, `see_other`), taking
//!   the typed body of its JSON schema (`&types::WebhookError`, `&types::AiError`,
//!   `&types::GeneralError`, ...) or nothing when the response has no body;
//! - one `<status>_<subtype>(&str)` method per removed media type (`ok_csv`);
//! - one setter per header the operation's responses declare (`retry_after(u64)`,
//!   `x_gateway_error_code(types::GatewayErrorCode)`, `location(&str)`), which progenitor
//!   ignores.
//!
//! It refuses (rather than guesses) a status range, an inline JSON error schema, a header
//! schema it cannot type, and a name that would collide with a method progenitor wrote.
//!
//! [`apply`] compares, operation by operation, the spec as written with what progenitor saw
//! (`seen_by_progenitor`): `missing_methods` gathers each response's `response_methods` and
//! the header setters, and `add_to_then` adds them to the operation's `Then` wrapper.

use crate::CodegenError;
use crate::transforms::mock_shape::{impl_block_mut, method_names, status_method, then_type};
use crate::walk::{operation_name, operations};
use heck::{ToSnakeCase, ToUpperCamelCase};
use openapiv3::{
    Header, OpenAPI, ParameterSchemaOrContent, ReferenceOr, Response, SchemaKind, StatusCode, Type,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;

const JSON: &str = "application/json";

/// What progenitor saw of each operation: its statuses, each with its media types.
type Seen = BTreeMap<String, Vec<(StatusCode, Vec<String>)>>;

/// A method to add: its name (to refuse a second one) and its tokens.
type Method = (String, TokenStream);

/// Adds the methods to `file` and returns how many it added.
///
/// # Errors
/// [`CodegenError::Unsupported`] for a shape it cannot type (see the module docs), and
/// [`CodegenError::Unparseable`] when an operation has no `Then` wrapper in `file`.
pub fn apply(
    file: &mut syn::File,
    original: &OpenAPI,
    adapted: &OpenAPI,
) -> Result<usize, CodegenError> {
    let seen_by_progenitor = seen_by_progenitor(adapted);
    let mut added = 0;
    for op in operations(original) {
        let name = operation_name(op.path, op.method, op.operation);
        let seen = seen_by_progenitor
            .get(&name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let methods = missing_methods(original, op.operation, &name, seen)?;
        if !methods.is_empty() {
            added += add_to_then(file, &name, methods)?;
        }
    }
    Ok(added)
}

/// The refusal of an operation's shape.
fn unsupported(operation: &str, problem: String) -> CodegenError {
    CodegenError::Unsupported {
        operation: operation.to_string(),
        problem,
    }
}

/// The statuses and media types of every operation of the adapted spec, which is what
/// progenitor wrote `Then` methods for.
fn seen_by_progenitor(adapted: &OpenAPI) -> Seen {
    operations(adapted)
        .into_iter()
        .map(|op| {
            let name = operation_name(op.path, op.method, op.operation);
            let responses = op
                .operation
                .responses
                .responses
                .iter()
                .map(|(code, response)| {
                    let media = crate::walk::resolve_response(adapted, response)
                        .map(|r| r.content.keys().cloned().collect())
                        .unwrap_or_default();
                    (code.clone(), media)
                })
                .collect();
            (name, responses)
        })
        .collect()
}

/// The methods one operation's `Then` lacks: those of each response progenitor did not write
/// in full, then a setter per header its responses declare (the first declaration of a name).
fn missing_methods(
    original: &OpenAPI,
    operation: &openapiv3::Operation,
    name: &str,
    seen: &[(StatusCode, Vec<String>)],
) -> Result<Vec<Method>, CodegenError> {
    let mut methods: Vec<Method> = Vec::new();
    let mut headers: BTreeMap<String, TokenStream> = BTreeMap::new();
    for (code, response) in &operation.responses.responses {
        let response = crate::walk::resolve_response(original, response)
            .ok_or_else(|| unsupported(name, format!("response {code} does not resolve")))?;
        for (header, value) in &response.headers {
            if !headers.contains_key(header) {
                headers.insert(header.clone(), header_setter(original, header, value)?);
            }
        }
        let progenitor_media = seen.iter().find(|(c, _)| c == code).map(|(_, m)| m);
        methods.extend(response_methods(name, code, response, progenitor_media)?);
    }
    methods.extend(headers);
    Ok(methods)
}

/// The methods of one response: none when progenitor wrote all its media types; else a
/// bodiless method for a removed status without a body, a typed one for a removed JSON body,
/// and a text one per other removed media type (`ok_csv` beside a JSON `ok`).
fn response_methods(
    name: &str,
    code: &StatusCode,
    response: &Response,
    progenitor_media: Option<&Vec<String>>,
) -> Result<Vec<Method>, CodegenError> {
    let missing: Vec<&String> = match progenitor_media {
        None => response.content.keys().collect(),
        Some(media) => response
            .content
            .keys()
            .filter(|m| !media.contains(m))
            .collect(),
    };
    if progenitor_media.is_some() && missing.is_empty() {
        return Ok(Vec::new());
    }
    let StatusCode::Code(status) = code else {
        return Err(unsupported(
            name,
            format!("status range {code} in a removed response"),
        ));
    };
    let Some(method) = status_method(*status) else {
        return Err(unsupported(
            name,
            format!("status {status} has no canonical reason"),
        ));
    };
    let doc = response_doc(*status, response);
    let mut methods = Vec::new();
    if progenitor_media.is_none() && missing.is_empty() {
        methods.push((method.clone(), bodiless(&method, *status, &doc)));
    }
    for media in missing {
        if media == JSON {
            let ty = json_body_type(response)
                .ok_or_else(|| unsupported(name, format!("{status} JSON body is not a $ref")))?;
            methods.push((method.clone(), json(&method, *status, &ty, &doc)));
        } else {
            let subtype = media.rsplit('/').next().unwrap_or(media).to_snake_case();
            let name = if progenitor_media.is_none() && !response.content.contains_key(JSON) {
                method.clone()
            } else {
                format!("{method}_{subtype}")
            };
            methods.push((name.clone(), text(&name, *status, media, &doc)));
        }
    }
    Ok(methods)
}

/// Adds `methods` to the operation's `Then` wrapper, refusing a name it already has.
fn add_to_then(
    file: &mut syn::File,
    name: &str,
    methods: Vec<Method>,
) -> Result<usize, CodegenError> {
    let then = then_type(name);
    let block = impl_block_mut(file, &then).ok_or_else(|| {
        CodegenError::Unparseable(format!("no `impl {then}` in progenitor's httpmock output"))
    })?;
    let mut taken = method_names(block);
    let mut added = 0;
    for (method, tokens) in methods {
        if taken.contains(&method) {
            return Err(unsupported(
                name,
                format!("`{then}::{method}` would be written twice"),
            ));
        }
        taken.push(method);
        block
            .items
            .push(syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))?);
        added += 1;
    }
    Ok(added)
}

/// The doc comment of a status method: the status and the spec's description.
fn response_doc(status: u16, response: &Response) -> String {
    format!(
        "Answers `{status}`: {}",
        response
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// The generated type of a JSON body, from its `$ref` to a component schema.
fn json_body_type(response: &Response) -> Option<TokenStream> {
    let schema = response.content.get(JSON)?.schema.as_ref()?;
    let ReferenceOr::Reference { reference } = schema else {
        return None;
    };
    let name = crate::walk::schema_ref_name(reference)?;
    let ident = format_ident!("{}", name.to_upper_camel_case());
    Some(quote!(types::#ident))
}

fn bodiless(method: &str, status: u16, doc: &str) -> TokenStream {
    let method = format_ident!("{method}");
    quote! {
        #[doc = #doc]
        pub fn #method(self) -> Self {
            Self(self.0.status(#status))
        }
    }
}

fn json(method: &str, status: u16, ty: &TokenStream, doc: &str) -> TokenStream {
    let method = format_ident!("{method}");
    quote! {
        #[doc = #doc]
        pub fn #method(self, value: &#ty) -> Self {
            Self(self.0
                .status(#status)
                .header("content-type", "application/json")
                .json_body_obj(value))
        }
    }
}

fn text(method: &str, status: u16, media: &str, doc: &str) -> TokenStream {
    let method = format_ident!("{method}");
    let doc = format!("{doc} (as `{media}`)");
    quote! {
        #[doc = #doc]
        pub fn #method(self, value: &str) -> Self {
            Self(self.0
                .status(#status)
                .header("content-type", #media)
                .body(value))
        }
    }
}

/// A typed setter for response header `name`.
fn header_setter(
    spec: &OpenAPI,
    name: &str,
    header: &ReferenceOr<Header>,
) -> Result<TokenStream, CodegenError> {
    let unsupported = |problem: &str| CodegenError::Unsupported {
        operation: format!("response header {name}"),
        problem: problem.to_string(),
    };
    let header =
        crate::walk::resolve(spec, header).ok_or_else(|| unsupported("does not resolve"))?;
    let ParameterSchemaOrContent::Schema(schema) = &header.format else {
        return Err(unsupported("has content instead of a schema"));
    };
    let (ty, value) = match schema {
        ReferenceOr::Reference { reference } => {
            let ident = crate::walk::schema_ref_name(reference)
                .map(|n| format_ident!("{}", n.to_upper_camel_case()))
                .ok_or_else(|| unsupported("refers to something other than a schema"))?;
            (quote!(types::#ident), quote!(value.to_string()))
        }
        ReferenceOr::Item(schema) => match &schema.schema_kind {
            SchemaKind::Type(Type::Integer(_)) => (quote!(u64), quote!(value.to_string())),
            SchemaKind::Type(Type::String(_)) => (quote!(&str), quote!(value)),
            _ => return Err(unsupported("is neither an integer, a string nor a $ref")),
        },
    };
    let method = format_ident!("{}", name.to_snake_case());
    let description = header
        .description
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let doc = format!("Sets the `{name}` response header: {description}");
    Ok(quote! {
        #[doc = #doc]
        pub fn #method(self, value: #ty) -> Self {
            Self(self.0.header(#name, #value))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{assert_holds, spec};
    use crate::transforms::mock_shape::fixture::delete_webhook_and;
    use quote::ToTokens;

    /// The fixture with a report beside it, JSON or CSV.
    fn spec_text() -> String {
        delete_webhook_and(
            "  /report:
    get:
      operationId: getReport
      responses:
        '200':
          description: the report
          content:
            text/csv: {schema: {type: string}}
            application/json: {schema: {$ref: '#/components/schemas/Report'}}
",
        )
    }

    fn progenitor_output() -> syn::File {
        syn::parse_quote! {
            pub mod operations {
                pub struct DeleteWebhookThen(::httpmock::Then);
                impl DeleteWebhookThen {
                    pub fn no_content(self) -> Self { Self(self.0.status(204u16)) }
                }
                pub struct GetReportThen(::httpmock::Then);
                impl GetReportThen {
                    pub fn ok(self, value: &types::Report) -> Self { Self(self.0.status(200u16)) }
                }
            }
        }
    }

    /// The spec as progenitor sees it: errors and the CSV taken away.
    fn adapted() -> OpenAPI {
        let mut adapted = spec(&spec_text());
        crate::transforms::apply_spec_transforms(&mut adapted).expect("fixture adapts");
        adapted
    }

    #[test]
    fn removed_error_statuses_get_typed_and_bodiless_methods_and_headers_a_setter() {
        let mut file = progenitor_output();
        let added = apply(&mut file, &spec(&spec_text()), &adapted()).unwrap();
        assert_eq!(added, 4);
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "pub fn not_found (self , value : & types :: WebhookError) -> Self { Self (self . 0 . status (404u16) . header (\"content-type\" , \"application/json\") . json_body_obj (value)) }",
                "pub fn too_many_requests (self) -> Self { Self (self . 0 . status (429u16)) }",
                "pub fn retry_after (self , value : u64) -> Self { Self (self . 0 . header (\"Retry-After\" , value . to_string ())) }",
                "Answers `404`: unknown hook",
            ],
        );
    }

    #[test]
    fn a_media_type_removed_next_to_json_gets_a_method_of_its_own() {
        let mut file = progenitor_output();
        apply(&mut file, &spec(&spec_text()), &adapted()).unwrap();
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "pub fn ok_csv (self , value : & str) -> Self { Self (self . 0 . status (200u16) . header (\"content-type\" , \"text/csv\") . body (value)) }",
            ],
        );
    }

    #[test]
    fn an_inline_json_error_schema_is_refused() {
        let text = spec_text().replace(
            "{$ref: '#/components/schemas/WebhookError'}",
            "{type: object}",
        );
        let mut adapted = spec(&text);
        crate::transforms::apply_spec_transforms(&mut adapted).unwrap();
        let err = apply(&mut progenitor_output(), &spec(&text), &adapted).unwrap_err();
        assert!(
            matches!(err, CodegenError::Unsupported { ref problem, .. } if problem.contains("404 JSON body")),
            "{err}"
        );
    }

    #[test]
    fn a_name_progenitor_already_wrote_is_refused() {
        let mut file: syn::File = syn::parse_quote! {
            pub mod operations {
                impl DeleteWebhookThen {
                    pub fn not_found(self) -> Self { self }
                }
                impl GetReportThen {}
            }
        };
        let err = apply(&mut file, &spec(&spec_text()), &adapted()).unwrap_err();
        assert!(err.to_string().contains("written twice"), "{err}");
    }

    #[test]
    fn an_operation_without_its_then_wrapper_is_an_error() {
        let mut file: syn::File = syn::parse_quote! { pub mod operations {} };
        assert!(matches!(
            apply(&mut file, &spec(&spec_text()), &adapted()),
            Err(CodegenError::Unparseable(_))
        ));
    }
}
