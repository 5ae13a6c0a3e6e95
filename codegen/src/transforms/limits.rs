//! `limits` (code → code): appends `pub mod limits`, one constant per bound the spec writes on a
//! named value, so handwritten code checks a request against the spec's number instead of a
//! copy of it.
//!
//! Progenitor checks `maxLength` only where typify makes a constrained newtype, and keeps no
//! record of `maximum` or `maxItems` at all; `pubapi-sdk-ext` checks them before sending (its
//! request policy, its builders) and reads the numbers from here.
//!
//! What gets a constant, named `<OWNER>_<PROPERTY>_<KEYWORD>` in upper snake case:
//! - every property of a component schema (`AgentAskRequest.question` `maxLength` is
//!   `AGENT_ASK_REQUEST_QUESTION_MAX_LENGTH`), and a component schema that is itself a string,
//!   integer or array (`<SCHEMA>_<KEYWORD>`);
//! - every component parameter, named after the component (`EventsCount` `maximum` is
//!   `EVENTS_COUNT_MAXIMUM`);
//! - every parameter written inline in an operation, named after the operationId and the
//!   parameter (`getAuditReport` `offset` `maximum` is `GET_AUDIT_REPORT_OFFSET_MAXIMUM`).
//!
//! Keywords: `minLength`/`maxLength` and `minItems`/`maxItems` as `usize`, an integer's
//! `minimum`/`maximum` as `i64`, a number's as `f64`, `x-pubapi-max-items` (the most
//! comma-separated items of a list the reference writes as one string, such as a webhook's
//! `path`) as `usize`, and `x-pubapi-min-chars`/`x-pubapi-max-chars` (a string's length in
//! characters that only the platform's clients show, checked before sending rather than by
//! the generated type, such as a hybrid search's `query`) as `usize`.

use crate::CodegenError;
use openapiv3::{
    OpenAPI, Parameter, ParameterSchemaOrContent, ReferenceOr, Schema, SchemaKind, Type,
};
use quote::quote;

/// The extensions whose value is a count: the items of a comma-separated list written as one
/// string, and a string's length in characters checked before sending.
const COUNT_EXTENSIONS: [&str; 3] = [
    "x-pubapi-max-items",
    "x-pubapi-min-chars",
    "x-pubapi-max-chars",
];

/// One bound of the spec.
#[derive(Debug, Clone, PartialEq)]
struct Limit {
    /// The constant's name.
    name: String,
    /// Where the spec writes it, as the doc says it: `` `AgentAskRequest.question` ``.
    subject: String,
    /// The keyword: `maxLength`.
    keyword: &'static str,
    /// The value and its Rust type.
    value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Count(usize),
    Integer(i64),
    Number(f64),
}

/// Builds the `limits` module.
///
/// # Errors
/// [`CodegenError::Unsupported`] when two bounds would get the same constant name, or a count
/// extension (`x-pubapi-max-items`, `x-pubapi-min-chars`, `x-pubapi-max-chars`) is not a
/// non-negative integer.
pub fn item(spec: &OpenAPI) -> Result<syn::Item, CodegenError> {
    let limits = collect(spec)?;
    let constants = limits.iter().map(|limit| {
        let name = syn::Ident::new(&limit.name, proc_macro2::Span::call_site());
        let doc = format!(
            "`{}` of {} in `spec/openapi.yaml`.",
            limit.keyword, limit.subject
        );
        match limit.value {
            Value::Count(n) => quote! { #[doc = #doc] pub const #name: usize = #n; },
            Value::Integer(n) => quote! { #[doc = #doc] pub const #name: i64 = #n; },
            Value::Number(n) => quote! { #[doc = #doc] pub const #name: f64 = #n; },
        }
    });
    let tokens = quote! {
        /// Every length, item-count, integer and number bound `spec/openapi.yaml` writes on a named value
        /// (a component schema's property, a parameter), as a constant named after the owner, the
        /// property and the keyword: the SDK's own checks read them, so the spec says each limit
        /// once.
        pub mod limits {
            #(#constants)*
        }
    };
    syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))
}

/// Every bound, in spec order: component schemas, component parameters, inline parameters.
fn collect(spec: &OpenAPI) -> Result<Vec<Limit>, CodegenError> {
    let mut out = Vec::new();
    if let Some(components) = &spec.components {
        for (name, schema) in &components.schemas {
            let ReferenceOr::Item(schema) = schema else {
                continue;
            };
            bounds(&[name], &format!("`{name}`"), schema, &mut out)?;
            if let SchemaKind::Type(Type::Object(object)) = &schema.schema_kind {
                for (property, schema) in &object.properties {
                    if let ReferenceOr::Item(schema) = schema {
                        let subject = format!("`{name}.{property}`");
                        bounds(&[name, property], &subject, schema, &mut out)?;
                    }
                }
            }
        }
        for (name, parameter) in &components.parameters {
            if let ReferenceOr::Item(parameter) = parameter {
                let subject = format!(
                    "the `{}` parameter (`{name}`)",
                    parameter.parameter_data_ref().name
                );
                if let Some(schema) = parameter_schema(parameter) {
                    bounds(&[name], &subject, schema, &mut out)?;
                }
            }
        }
    }
    for op in crate::walk::operations(spec) {
        let Some(id) = op.operation.operation_id.as_deref() else {
            continue;
        };
        for parameter in &op.operation.parameters {
            if let ReferenceOr::Item(parameter) = parameter {
                let name = &parameter.parameter_data_ref().name;
                if let Some(schema) = parameter_schema(parameter) {
                    let subject = format!("the `{name}` parameter of `{id}`");
                    bounds(&[id, name], &subject, schema, &mut out)?;
                }
            }
        }
    }
    let mut names: Vec<&str> = out.iter().map(|l| l.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(CodegenError::Unsupported {
            operation: "components".into(),
            problem: format!("two limits would both be named {}", pair[0]),
        });
    }
    Ok(out)
}

fn parameter_schema(parameter: &Parameter) -> Option<&Schema> {
    match &parameter.parameter_data_ref().format {
        ParameterSchemaOrContent::Schema(ReferenceOr::Item(schema)) => Some(schema),
        _ => None,
    }
}

/// The bounds `schema` itself writes, owned by `owner` (the name's parts).
fn bounds(
    owner: &[&str],
    subject: &str,
    schema: &Schema,
    out: &mut Vec<Limit>,
) -> Result<(), CodegenError> {
    let mut found: Vec<(&'static str, Value)> = Vec::new();
    match &schema.schema_kind {
        SchemaKind::Type(Type::String(string)) => {
            found.extend(string.min_length.map(|n| ("minLength", Value::Count(n))));
            found.extend(string.max_length.map(|n| ("maxLength", Value::Count(n))));
        }
        SchemaKind::Type(Type::Integer(integer)) => {
            found.extend(integer.minimum.map(|n| ("minimum", Value::Integer(n))));
            found.extend(integer.maximum.map(|n| ("maximum", Value::Integer(n))));
        }
        SchemaKind::Type(Type::Number(number)) => {
            found.extend(number.minimum.map(|n| ("minimum", Value::Number(n))));
            found.extend(number.maximum.map(|n| ("maximum", Value::Number(n))));
        }
        SchemaKind::Type(Type::Array(array)) => {
            found.extend(array.min_items.map(|n| ("minItems", Value::Count(n))));
            found.extend(array.max_items.map(|n| ("maxItems", Value::Count(n))));
        }
        _ => {}
    }
    for extension in COUNT_EXTENSIONS {
        let Some(value) = schema.schema_data.extensions.get(extension) else {
            continue;
        };
        let n = value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| CodegenError::Unsupported {
                operation: subject.to_string(),
                problem: format!("{extension} is not a count"),
            })?;
        found.push((extension, Value::Count(n)));
    }
    let owner: Vec<String> = owner.iter().map(|part| shouty(part)).collect();
    for (keyword, value) in found {
        // The extension's constant is named after what it means, like `maxItems`.
        let suffix = shouty(keyword.trim_start_matches("x-pubapi-"));
        out.push(Limit {
            name: format!("{}_{suffix}", owner.join("_")),
            subject: subject.to_string(),
            keyword,
            value,
        });
    }
    Ok(())
}

fn shouty(name: &str) -> String {
    heck::ToShoutySnakeCase::to_shouty_snake_case(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{spec, unsupported};
    use quote::ToTokens;

    /// One bound per place the spec writes one: a schema's property, a component parameter,
    /// an operation's inline parameter, the comma-separated list extension.
    #[test]
    fn each_bound_is_a_constant_named_after_its_owner_property_and_keyword() {
        let cases: &[(&str, &[&str])] = &[
            (
                "paths: {}\ncomponents:\n  schemas:\n    AgentAskRequest:\n      type: object\n      properties:\n        question: {type: string, minLength: 1, maxLength: 35000}\n",
                &[
                    "pub const AGENT_ASK_REQUEST_QUESTION_MAX_LENGTH : usize = 35000usize",
                    "pub const AGENT_ASK_REQUEST_QUESTION_MIN_LENGTH : usize = 1usize",
                ],
            ),
            (
                "paths:\n  /r:\n    get:\n      operationId: getAuditReport\n      parameters:\n        - $ref: '#/components/parameters/EventsCount'\n        - {name: offset, in: query, schema: {type: integer, minimum: 0, maximum: 9223372036854775807}}\n      responses: {'200': {description: ok}}\ncomponents:\n  parameters:\n    EventsCount: {name: count, in: query, schema: {type: integer, minimum: 1, maximum: 100}}\n",
                &[
                    "pub const EVENTS_COUNT_MAXIMUM : i64 = 100i64",
                    "pub const EVENTS_COUNT_MINIMUM : i64 = 1i64",
                    "pub const GET_AUDIT_REPORT_OFFSET_MAXIMUM : i64 = 9223372036854775807i64",
                ],
            ),
            (
                "paths: {}\ncomponents:\n  schemas:\n    WebhookCreateRequest:\n      type: object\n      properties:\n        path: {type: string, x-pubapi-max-items: 100}\n",
                &["pub const WEBHOOK_CREATE_REQUEST_PATH_MAX_ITEMS : usize = 100usize"],
            ),
            (
                "paths: {}\ncomponents:\n  schemas:\n    HybridSearchRequest:\n      type: object\n      properties:\n        query: {type: string, x-pubapi-min-chars: 3, x-pubapi-max-chars: 250}\n        semanticWeight: {type: number, minimum: 0, maximum: 1}\n",
                &[
                    "pub const HYBRID_SEARCH_REQUEST_QUERY_MIN_CHARS : usize = 3usize",
                    "pub const HYBRID_SEARCH_REQUEST_QUERY_MAX_CHARS : usize = 250usize",
                    "pub const HYBRID_SEARCH_REQUEST_SEMANTIC_WEIGHT_MINIMUM : f64 = 0f64",
                    "pub const HYBRID_SEARCH_REQUEST_SEMANTIC_WEIGHT_MAXIMUM : f64 = 1f64",
                ],
            ),
        ];
        for (yaml, constants) in cases {
            let out = item(&spec(yaml)).unwrap().into_token_stream().to_string();
            for constant in *constants {
                assert!(out.contains(constant), "{constant}\n{out}");
            }
        }
    }

    #[test]
    fn a_max_items_that_is_not_a_count_or_two_limits_with_one_name_are_refused() {
        let not_a_count = "paths: {}\ncomponents:\n  schemas:\n    W:\n      type: object\n      properties:\n        path: {type: string, x-pubapi-max-items: many}\n";
        // `AB.c` and `Ab.c` both read AB_C_MAX_LENGTH.
        let one_name = "paths: {}\ncomponents:\n  schemas:\n    AB:\n      type: object\n      properties:\n        c: {type: string, maxLength: 1}\n    Ab:\n      type: object\n      properties:\n        c: {type: string, maxLength: 2}\n";
        for yaml in [not_a_count, one_name] {
            unsupported(item(&spec(yaml)));
        }
    }
}
