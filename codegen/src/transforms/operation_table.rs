//! `operation_table` (code → code): appends `pub mod operations`, a table of every operation of
//! the full spec (before the spec transforms): operationId, method, path, tag, deprecation, and
//! each documented response with its media types and whether the generated method decodes it.
//!
//! Progenitor keeps none of this. `pubapi-sdk-ext` reads it to pick an operation's limit class,
//! error format and idempotency; tests read it to prove every operation is covered.

use super::Removal;
use crate::CodegenError;
use crate::walk::{operation_name, operations, resolve_parameter, resolve_response, status_label};
use openapiv3::{OpenAPI, Parameter};
use quote::quote;

/// Builds the `operations` module.
///
/// # Errors
/// [`CodegenError::Unsupported`] when an operation has no operationId or no single tag.
pub fn item(spec: &OpenAPI, removals: &[Removal]) -> Result<syn::Item, CodegenError> {
    let mut rows = Vec::new();
    for op in operations(spec) {
        let name = operation_name(op.path, op.method, op.operation);
        let unsupported = |problem: &str| CodegenError::Unsupported {
            operation: name.clone(),
            problem: problem.to_string(),
        };
        let id = op
            .operation
            .operation_id
            .as_deref()
            .ok_or_else(|| unsupported("no operationId"))?;
        let [tag] = op.operation.tags.as_slice() else {
            return Err(unsupported("needs exactly one tag"));
        };
        let method_name = heck::ToSnakeCase::to_snake_case(id);
        let method = op.method.to_uppercase();
        let path = op.path;
        let deprecated = op.operation.deprecated;
        let path_queries = path_queries(spec, op.operation);
        let extension = |name: &str| op.operation.extensions.get(name);
        let sunset = match extension("x-pubapi-sunset") {
            None => quote! { None },
            Some(value) => {
                let seconds = value
                    .as_u64()
                    .ok_or_else(|| unsupported("x-pubapi-sunset is not seconds since the epoch"))?;
                quote! { Some(#seconds) }
            }
        };
        let successor = match extension("x-pubapi-successor") {
            None => quote! { None },
            Some(value) => {
                let id = value
                    .as_str()
                    .ok_or_else(|| unsupported("x-pubapi-successor is not an operationId"))?;
                quote! { Some(#id) }
            }
        };
        let mut responses = Vec::new();
        for (code, response) in &op.operation.responses.responses {
            let status = status_label(code);
            let content: Vec<&str> = resolve_response(spec, response)
                .map(|r| r.content.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let generated = !removals.iter().any(|r| {
                r.subject == id && r.transform != "open_response_enums" && r.what == status
            });
            responses.push(quote! {
                Response { status: #status, content_types: &[#(#content),*], generated: #generated }
            });
        }
        rows.push(quote! {
            Operation {
                id: #id, method_name: #method_name, method: #method, path: #path, tag: #tag, deprecated: #deprecated,
                path_queries: &[#(#path_queries),*], sunset: #sunset, successor: #successor,
                responses: &[#(#responses),*],
            }
        });
    }
    let tokens = quote! {
        /// Every operation of `spec/openapi.yaml` as the spec documents it (before the codegen
        /// transforms), for policies and tests that need paths, tags and statuses.
        pub mod operations {
            /// One operation of the spec.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct Operation {
                /// The operationId, e.g. `listEventsV2`.
                pub id: &'static str,
                /// The generated method's name, e.g. `list_events_v2`; progenitor also reports
                /// it to the client hooks as the operation id.
                pub method_name: &'static str,
                /// The HTTP method, upper case.
                pub method: &'static str,
                /// The path template below the base URL, e.g. `/v1/webhooks/{webhookId}`.
                pub path: &'static str,
                /// The area tag, e.g. `webhooks`.
                pub tag: &'static str,
                /// Whether the spec marks the operation deprecated.
                pub deprecated: bool,
                /// The query parameters whose value is a file or folder path (marked
                /// `x-pubapi-encoding: path` in the spec): each element is percent-encoded and
                /// the separating slashes are kept, not form-encoded.
                pub path_queries: &'static [&'static str],
                /// When the reference removes the operation (`x-pubapi-sunset`), in seconds
                /// since the Unix epoch.
                pub sunset: Option<u64>,
                /// The operationId that replaces it (`x-pubapi-successor`).
                pub successor: Option<&'static str>,
                /// Every response the spec documents.
                pub responses: &'static [Response],
            }

            /// One documented response of an operation.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct Response {
                /// The status as written in the spec, e.g. `200`, `303`, `4XX`.
                pub status: &'static str,
                /// The media types of its body; empty when it has none.
                pub content_types: &'static [&'static str],
                /// Whether the generated method decodes it; `false` for what the codegen
                /// transforms leave to `pubapi-sdk-ext` (errors, 204 next to 200, 303).
                pub generated: bool,
            }

            impl Operation {
                /// Whether retrying the operation after a server error is safe (GET, PUT,
                /// DELETE are idempotent; POST is not).
                pub fn is_idempotent(&self) -> bool {
                    matches!(self.method, "GET" | "PUT" | "DELETE" | "HEAD")
                }
            }

            /// All operations, in spec order.
            pub const ALL: &[Operation] = &[#(#rows),*];

            /// The operation with this operationId (`listEventsV2`).
            pub fn find(id: &str) -> Option<&'static Operation> {
                ALL.iter().find(|op| op.id == id)
            }

            /// The operation whose generated method has this name (`list_events_v2`).
            pub fn by_method_name(name: &str) -> Option<&'static Operation> {
                ALL.iter().find(|op| op.method_name == name)
            }
        }
    };
    syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))
}

/// The names of the query parameters marked `x-pubapi-encoding: path`.
fn path_queries<'a>(spec: &'a OpenAPI, operation: &'a openapiv3::Operation) -> Vec<&'a str> {
    operation
        .parameters
        .iter()
        .filter_map(|parameter| resolve_parameter(spec, parameter))
        .filter_map(|parameter| match parameter {
            Parameter::Query { parameter_data, .. }
                if parameter_data.extensions.get(PATH_ENCODING)
                    == Some(&serde_json::Value::from("path")) =>
            {
                Some(parameter_data.name.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The extension that marks a query parameter holding a path.
const PATH_ENCODING: &str = "x-pubapi-encoding";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;
    use quote::ToTokens;

    #[test]
    fn removed_statuses_are_marked_not_generated() {
        let s = spec(
            "paths:\n  /e:\n    get:\n      operationId: listEvents\n      tags: [events]\n      responses:\n        '200': {description: page, content: {application/json: {schema: {type: object}}}}\n        '204': {description: none}\n",
        );
        let removals = vec![Removal {
            transform: "drop_bodiless_success",
            subject: "listEvents".into(),
            what: "204".into(),
        }];
        let out = item(&s, &removals).unwrap().into_token_stream().to_string();
        assert!(out.contains(
            "status : \"200\" , content_types : & [\"application/json\"] , generated : true"
        ));
        assert!(out.contains("status : \"204\" , content_types : & [] , generated : false"));
    }

    #[test]
    fn operation_without_a_tag_is_refused() {
        let s = spec(
            "paths:\n  /e:\n    get:\n      operationId: listEvents\n      responses: {'200': {description: ok}}\n",
        );
        assert!(matches!(
            item(&s, &[]),
            Err(CodegenError::Unsupported { .. })
        ));
    }

    #[test]
    fn query_parameters_marked_as_paths_are_listed() {
        let s = spec(
            "paths:\n  /e:\n    get:\n      operationId: listEvents\n      tags: [events]\n      parameters:\n        - $ref: '#/components/parameters/Folder'\n        - {name: id, in: query, schema: {type: integer}}\n      responses:\n        '200': {description: page}\ncomponents:\n  parameters:\n    Folder: {name: folder, in: query, x-pubapi-encoding: path, schema: {type: string}}\n",
        );
        let out = item(&s, &[]).unwrap().into_token_stream().to_string();
        assert!(out.contains("path_queries : & [\"folder\"]"), "{out}");
        assert!(out.contains("sunset : None , successor : None"), "{out}");
    }

    #[test]
    fn sunset_and_successor_extensions_are_carried() {
        let s = spec(
            "paths:\n  /c:\n    post:\n      operationId: askCopilot\n      tags: [copilot]\n      deprecated: true\n      x-pubapi-sunset: 1790726400\n      x-pubapi-successor: askAssistant\n      responses:\n        '200': {description: answer}\n",
        );
        let out = item(&s, &[]).unwrap().into_token_stream().to_string();
        assert!(
            out.contains("sunset : Some (1790726400u64) , successor : Some (\"askAssistant\")"),
            "{out}"
        );
    }
}
