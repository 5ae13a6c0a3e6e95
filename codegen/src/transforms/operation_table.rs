//! `operation_table` (code → code): appends `pub mod operations`, a table of every operation of
//! the full spec (before the spec transforms): operationId, method, path, tag, deprecation, and
//! each documented response with its media types and whether the generated method decodes it.
//!
//! Progenitor keeps none of this. `pubapi-sdk-ext` reads it to pick an operation's limit class,
//! error format and idempotency; tests read it to prove every operation is covered.
//!
//! [`item`] walks the operations once: `entry` writes each one's row of `ALL` (its `lifecycle`
//! from the sunset extensions, its `responses` marked against the removals) and its constant in
//! `id`; around them stand the fixed `row_types` and `class_enums`, the `area_enum` written from
//! the spec's tags, and the lookups.

use super::Removal;
use super::operation_facts::{self, AreaFact};
use crate::CodegenError;
use crate::walk::{
    OperationRef, operation_name, operations, resolve, resolve_response, status_label,
};
use openapiv3::{OpenAPI, Parameter};
use proc_macro2::TokenStream;
use quote::quote;

/// Builds the `operations` module.
///
/// # Errors
/// [`CodegenError::Unsupported`] when an operation has no operationId or no single tag.
pub fn item(spec: &OpenAPI, removals: &[Removal]) -> Result<syn::Item, CodegenError> {
    let areas = operation_facts::areas(spec)?;
    let mut rows = Vec::new();
    let mut ids = Vec::new();
    for op in operations(spec) {
        let entry = entry(spec, &areas, removals, &op)?;
        rows.push(entry.row);
        ids.push(entry.constant);
    }
    let row_types = row_types();
    let area_enum = area_enum(&areas);
    let class_enums = class_enums();
    let tokens = quote! {
        /// Every operation of `spec/openapi.yaml` as the spec documents it (before the codegen
        /// transforms), for policies and tests that need paths, tags and statuses.
        pub mod operations {
            #row_types

            #area_enum

            #class_enums

            /// All operations, in spec order.
            pub const ALL: &[Operation] = &[#(#rows),*];

            /// Every operationId as a constant (`id::LIST_EVENTS_V2` is `listEventsV2`), for
            /// code that names an operation: a spec that renames one breaks the build instead
            /// of a string that no longer matches.
            pub mod id {
                #(#ids)*
            }

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

/// What one operation adds to the module.
struct Entry {
    /// Its `Operation { .. }` literal in `ALL`.
    row: TokenStream,
    /// Its `pub const` in `id`.
    constant: TokenStream,
}

/// The refusal of an operation the table cannot describe.
fn unsupported(operation: &str, problem: &str) -> CodegenError {
    CodegenError::Unsupported {
        operation: operation.to_string(),
        problem: problem.to_string(),
    }
}

/// One operation's row and constant: its identity, its facts (area, limit class, error format,
/// idempotency), its lifecycle and its documented responses.
fn entry(
    spec: &OpenAPI,
    areas: &[AreaFact],
    removals: &[Removal],
    op: &OperationRef<'_>,
) -> Result<Entry, CodegenError> {
    let name = operation_name(op.path, op.method, op.operation);
    let id = op
        .operation
        .operation_id
        .as_deref()
        .ok_or_else(|| unsupported(&name, "no operationId"))?;
    let [tag] = op.operation.tags.as_slice() else {
        return Err(unsupported(&name, "needs exactly one tag"));
    };
    let facts = operation_facts::of(spec, areas, op, &name)?;
    let area = ident(&areas[facts.area].variant);
    let limit_class = ident(&variant(areas[facts.area].limit_class));
    let error_format = ident(&variant(facts.error_format));
    let idempotent = facts.idempotent;
    let method_name = heck::ToSnakeCase::to_snake_case(id);
    let method = op.method.to_uppercase();
    let path = op.path;
    let deprecated = op.operation.deprecated;
    let path_queries = path_queries(spec, op.operation);
    let (sunset, successor) = lifecycle(op.operation, &name)?;
    let responses = responses(spec, removals, id, op.operation);
    let constant = ident(&heck::ToShoutySnakeCase::to_shouty_snake_case(id));
    let doc = format!("`{id}`.");
    Ok(Entry {
        row: quote! {
            Operation {
                id: #id, method_name: #method_name, method: #method, path: #path, tag: #tag,
                area: Area::#area, limit_class: LimitClass::#limit_class,
                error_format: ErrorFormat::#error_format, idempotent: #idempotent,
                deprecated: #deprecated,
                path_queries: &[#(#path_queries),*], sunset: #sunset, successor: #successor,
                responses: &[#(#responses),*],
            }
        },
        constant: quote! {
            #[doc = #doc]
            pub const #constant: &str = #id;
        },
    })
}

/// The operation's `sunset` and `successor` values, from `x-pubapi-sunset` (seconds since the
/// epoch) and `x-pubapi-successor` (an operationId); `None` where the spec says nothing.
fn lifecycle(
    operation: &openapiv3::Operation,
    name: &str,
) -> Result<(TokenStream, TokenStream), CodegenError> {
    let extension = |key: &str| operation.extensions.get(key);
    let sunset = match extension("x-pubapi-sunset") {
        None => quote! { None },
        Some(value) => {
            let seconds = value.as_u64().ok_or_else(|| {
                unsupported(name, "x-pubapi-sunset is not seconds since the epoch")
            })?;
            quote! { Some(#seconds) }
        }
    };
    let successor = match extension("x-pubapi-successor") {
        None => quote! { None },
        Some(value) => {
            let id = value
                .as_str()
                .ok_or_else(|| unsupported(name, "x-pubapi-successor is not an operationId"))?;
            quote! { Some(#id) }
        }
    };
    Ok((sunset, successor))
}

/// The `Response { .. }` literals of every documented status, each marked `generated` unless a
/// transform removed it for good.
fn responses(
    spec: &OpenAPI,
    removals: &[Removal],
    id: &str,
    operation: &openapiv3::Operation,
) -> Vec<TokenStream> {
    let mut out = Vec::new();
    for (code, response) in &operation.responses.responses {
        let status = status_label(code);
        let content: Vec<&str> = resolve_response(spec, response)
            .map(|r| r.content.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let generated = !removals
            .iter()
            .any(|r| r.subject == id && !r.given_back() && r.what == status);
        out.push(quote! {
            Response { status: #status, content_types: &[#(#content),*], generated: #generated }
        });
    }
    out
}

/// The fixed `Operation` and `Response` structs the rows are written in.
fn row_types() -> TokenStream {
    quote! {
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
            /// The area of the API, from the tag.
            pub area: Area,
            /// The budget the operation draws from (`x-pubapi-limit-class` on its tag).
            pub limit_class: LimitClass,
            /// The format of its error bodies (`x-pubapi-error-format` on the error schema
            /// its 4xx/5xx responses reference).
            pub error_format: ErrorFormat,
            /// Whether retrying it after a server error is safe: GET, PUT, DELETE and
            /// HEAD are; a POST is only when the spec marks it `x-pubapi-idempotent`
            /// (reads and idempotent sets such as `setWebhookStatus`).
            pub idempotent: bool,
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
            /// transforms leave to `pubapi-sdk-ext` (errors, 303, CSV).
            pub generated: bool,
        }

        impl Operation {
            /// Whether retrying the operation after a server error is safe (see
            /// [`Operation::idempotent`]).
            pub fn is_idempotent(&self) -> bool {
                self.idempotent
            }
        }
    }
}

/// The fixed `LimitClass` and `ErrorFormat` enums: exhaustive, since the codegen refuses any
/// other value.
fn class_enums() -> TokenStream {
    quote! {
        /// Which budget a request draws from (`x-pubapi-limit-class` on the spec's tags).
        ///
        /// Exhaustive on purpose: codegen refuses any other class, so a new one is a
        /// change every pacer must make, not a case to fall through.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum LimitClass {
            /// Everything that is not an AI endpoint: audit, webhooks, events, whoami.
            General,
            /// The AI endpoints.
            Ai,
        }

        impl LimitClass {
            /// The spec's name for it: `general` or `ai`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    LimitClass::General => "general",
                    LimitClass::Ai => "ai",
                }
            }
        }

        impl ::std::fmt::Display for LimitClass {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// The three error body formats of the reference (`x-pubapi-error-format` on the
        /// spec's error schemas). Exhaustive, like [`LimitClass`]: codegen refuses
        /// any other format.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorFormat {
            /// AI endpoints: `{errorMessage, errorCode}` (`AiError`).
            Ai,
            /// Webhooks and whoami: `{code, message, details}` (`WebhookError`).
            Webhooks,
            /// General API and audit: `{Errors: [{description, code}]}` (`GeneralError`).
            General,
        }

        impl ErrorFormat {
            /// The spec's name for it: `ai`, `webhooks` or `general`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    ErrorFormat::Ai => "ai",
                    ErrorFormat::Webhooks => "webhooks",
                    ErrorFormat::General => "general",
                }
            }
        }

        impl ::std::fmt::Display for ErrorFormat {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

    }
}

/// A Rust identifier.
fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, proc_macro2::Span::call_site())
}

/// The variant name of a spec value (`general` → `General`).
fn variant(value: &str) -> String {
    heck::ToUpperCamelCase::to_upper_camel_case(value)
}

/// `enum Area`, one variant per declared tag, with `as_str`, `limit_class`, `ALL` and `Display`.
fn area_enum(areas: &[AreaFact]) -> TokenStream {
    let variants = areas.iter().map(|a| {
        let v = ident(&a.variant);
        let doc = match &a.description {
            Some(d) => format!("`{}`: {d}", a.tag),
            None => format!("`{}`.", a.tag),
        };
        quote! { #[doc = #doc] #v }
    });
    let names = areas.iter().map(|a| {
        let (v, tag) = (ident(&a.variant), &a.tag);
        quote! { Area::#v => #tag }
    });
    let classes = areas.iter().map(|a| {
        let (v, class) = (ident(&a.variant), ident(&variant(a.limit_class)));
        quote! { Area::#v => LimitClass::#class }
    });
    let all = areas.iter().map(|a| {
        let v = ident(&a.variant);
        quote! { Area::#v }
    });
    quote! {
        /// The area of the API an operation belongs to: one variant per tag of the spec.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Area {
            #(#variants),*
        }

        impl Area {
            /// Every area, in the spec's tag order.
            pub const ALL: &'static [Area] = &[#(#all),*];

            /// The spec's tag, e.g. `knowledge-bases`.
            pub const fn as_str(self) -> &'static str {
                match self { #(#names),* }
            }

            /// The budget the area's operations draw from.
            pub const fn limit_class(self) -> LimitClass {
                match self { #(#classes),* }
            }
        }

        impl ::std::fmt::Display for Area {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}

/// The names of the query parameters marked `x-pubapi-encoding: path`.
fn path_queries<'a>(spec: &'a OpenAPI, operation: &'a openapiv3::Operation) -> Vec<&'a str> {
    operation
        .parameters
        .iter()
        .filter_map(|parameter| resolve(spec, parameter))
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
    use crate::transforms::fixture::{assert_holds, spec, unsupported};
    use quote::ToTokens;

    /// The tags the fixtures use, with their limit classes.
    const TAGS: &str = "tags:\n  - {name: events, x-pubapi-limit-class: general}\n  - {name: copilot, x-pubapi-limit-class: ai}\n";

    /// Asserts that the module written for the fixture's tags and `paths` (no removals)
    /// holds each of `needles`, as tokens.
    fn assert_written(paths: &str, needles: &[&str]) {
        let s = spec(&format!("{TAGS}{paths}"));
        assert_holds(
            &item(&s, &[]).unwrap().into_token_stream().to_string(),
            needles,
        );
    }

    #[test]
    fn removed_statuses_are_marked_not_generated_unless_given_back() {
        let s = spec(&format!(
            "{TAGS}paths:\n  /e:\n    get:\n      operationId: listEvents\n      tags: [events]\n      x-pubapi-error-format: general\n      responses:\n        '200': {{description: page, content: {{application/json: {{schema: {{type: object}}}}}}}}\n        '204': {{description: none}}\n        '303': {{description: ready}}\n",
        ));
        let removed = |transform, what: &str| Removal {
            transform,
            subject: "listEvents".into(),
            what: what.into(),
        };
        let removals = vec![
            removed("drop_bodiless_success", "204"),
            removed("drop_redirects", "303"),
        ];
        let out = item(&s, &removals).unwrap().into_token_stream().to_string();
        for (status, generated) in [("200", true), ("204", true), ("303", false)] {
            assert!(
                out.contains(&format!("status : \"{status}\" , content_types : & [")),
                "{status}"
            );
            let after = &out[out.find(&format!("status : \"{status}\"")).unwrap()..];
            let flag = &after[..after.find('}').unwrap()];
            assert!(
                flag.contains(&format!("generated : {generated}")),
                "{status}: {flag}"
            );
        }
    }

    #[test]
    fn every_operation_id_is_a_constant() {
        assert_written(
            "paths:\n  /e:\n    get:\n      operationId: listEventsV2\n      tags: [events]\n      x-pubapi-error-format: general\n      responses:\n        '200': {description: page}\n",
            &["pub const LIST_EVENTS_V2 : & str = \"listEventsV2\""],
        );
    }

    #[test]
    fn operation_without_a_tag_is_refused() {
        let s = spec(
            "paths:\n  /e:\n    get:\n      operationId: listEvents\n      responses: {'200': {description: ok}}\n",
        );
        unsupported(item(&s, &[]));
    }

    #[test]
    fn query_parameters_marked_as_paths_are_listed() {
        assert_written(
            "paths:\n  /e:\n    get:\n      operationId: listEvents\n      tags: [events]\n      x-pubapi-error-format: general\n      parameters:\n        - $ref: '#/components/parameters/Folder'\n        - {name: id, in: query, schema: {type: integer}}\n      responses:\n        '200': {description: page}\ncomponents:\n  parameters:\n    Folder: {name: folder, in: query, x-pubapi-encoding: path, schema: {type: string}}\n",
            &[
                "path_queries : & [\"folder\"]",
                "sunset : None , successor : None",
            ],
        );
    }

    #[test]
    fn sunset_and_successor_extensions_are_carried() {
        assert_written(
            "paths:\n  /c:\n    post:\n      operationId: askCopilot\n      tags: [copilot]\n      deprecated: true\n      x-pubapi-sunset: 1790726400\n      x-pubapi-successor: askAssistant\n      x-pubapi-error-format: ai\n      responses:\n        '200': {description: answer}\n",
            &["sunset : Some (1790726400u64) , successor : Some (\"askAssistant\")"],
        );
    }
}
