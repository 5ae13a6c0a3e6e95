//! `operation_facts`: the facts an operation's policy needs, each read from the one place the
//! spec says it, for the [`operation_table`](super::operation_table).
//!
//! | fact | where the spec says it |
//! |---|---|
//! | area | the operation's tag; the tags (in `tags:` order) become the `Area` enum |
//! | limit class | `x-pubapi-limit-class: general \| ai` on the tag object |
//! | error format | `x-pubapi-error-format: ai \| webhooks \| general` on the error schema the operation's 4xx/5xx responses reference; an operation whose error bodies are not shown says it on itself |
//! | idempotency | the method (GET, PUT, DELETE, HEAD), or `x-pubapi-idempotent: true` on a POST that is a read or an idempotent set |
//!
//! A fact that is missing or ambiguous is refused with [`CodegenError::Unsupported`] naming the
//! operation (or tag) and the problem, so a new operation cannot silently fall into a default.
//!
//! [`areas`] reads the tags once; `of` then reads one operation's facts, one step each: its
//! area from its tag, its error format (the formats of the error schemas it references, or its
//! own), and its idempotency.

use crate::CodegenError;
use crate::walk::{OperationRef, resolve_response, schema_ref_name, status_class};
use openapiv3::{OpenAPI, ReferenceOr};
use std::collections::BTreeSet;

/// The extension on tag objects naming the budget of the tag's operations.
pub const LIMIT_CLASS: &str = "x-pubapi-limit-class";
/// The extension on error schemas (or on an operation without one) naming the error format.
pub const ERROR_FORMAT: &str = "x-pubapi-error-format";
/// The extension marking a POST as safe to retry.
pub const IDEMPOTENT: &str = "x-pubapi-idempotent";

/// The limit classes the SDK knows budgets for.
pub const LIMIT_CLASSES: [&str; 2] = ["general", "ai"];
/// The error body formats the SDK knows how to decode.
pub const ERROR_FORMATS: [&str; 3] = ["ai", "webhooks", "general"];

/// One declared tag: an area of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AreaFact {
    /// The tag name, e.g. `knowledge-bases`.
    pub tag: String,
    /// The Rust variant name, e.g. `KnowledgeBases`.
    pub variant: String,
    /// The tag's description, for the variant's doc.
    pub description: Option<String>,
    /// The tag's limit class (one of [`LIMIT_CLASSES`]).
    pub limit_class: &'static str,
}

/// The facts of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationFacts {
    /// Index into the areas returned by [`areas`].
    pub area: usize,
    /// One of [`ERROR_FORMATS`].
    pub error_format: &'static str,
    /// Whether retrying is safe.
    pub idempotent: bool,
}

fn refused(subject: &str, problem: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported {
        operation: subject.to_string(),
        problem: problem.into(),
    }
}

/// The spec's tags as areas, in declaration order.
///
/// # Errors
/// A tag without `x-pubapi-limit-class` or with a value outside [`LIMIT_CLASSES`], or two tags
/// whose names give the same variant.
pub fn areas(spec: &OpenAPI) -> Result<Vec<AreaFact>, CodegenError> {
    let mut out: Vec<AreaFact> = Vec::new();
    for tag in &spec.tags {
        let subject = format!("tag {}", tag.name);
        let value = tag
            .extensions
            .get(LIMIT_CLASS)
            .ok_or_else(|| refused(&subject, format!("no {LIMIT_CLASS}")))?;
        let limit_class = value
            .as_str()
            .and_then(|v| LIMIT_CLASSES.into_iter().find(|known| *known == v))
            .ok_or_else(|| {
                refused(
                    &subject,
                    format!("{LIMIT_CLASS} is {value}, not one of {LIMIT_CLASSES:?}"),
                )
            })?;
        let variant = heck::ToUpperCamelCase::to_upper_camel_case(tag.name.as_str());
        if let Some(other) = out.iter().find(|a| a.variant == variant) {
            return Err(refused(
                &subject,
                format!(
                    "its variant {variant} is also the variant of tag {}",
                    other.tag
                ),
            ));
        }
        out.push(AreaFact {
            tag: tag.name.clone(),
            variant,
            description: tag.description.clone(),
            limit_class,
        });
    }
    Ok(out)
}

/// The facts of one operation, given the spec's [`areas`].
///
/// # Errors
/// The operation's tag is not declared, its error responses reference schemas of different
/// formats (or an error schema without [`ERROR_FORMAT`]), no format is said at all, or
/// [`IDEMPOTENT`] is not a boolean.
pub(crate) fn of(
    spec: &OpenAPI,
    areas: &[AreaFact],
    op: &OperationRef<'_>,
    name: &str,
) -> Result<OperationFacts, CodegenError> {
    Ok(OperationFacts {
        area: area_of(areas, op, name)?,
        error_format: error_format_of(spec, op, name)?,
        idempotent: idempotent_of(op, name)?,
    })
}

/// The index of the operation's one tag among the declared areas.
fn area_of(areas: &[AreaFact], op: &OperationRef<'_>, name: &str) -> Result<usize, CodegenError> {
    let [tag] = op.operation.tags.as_slice() else {
        return Err(refused(name, "needs exactly one tag"));
    };
    areas
        .iter()
        .position(|a| &a.tag == tag)
        .ok_or_else(|| refused(name, format!("its tag {tag} is not declared in `tags`")))
}

/// The one error format of the operation: the one its error schemas say, or, where its error
/// bodies are not shown, the one it says itself; never both, never two.
fn error_format_of(
    spec: &OpenAPI,
    op: &OperationRef<'_>,
    name: &str,
) -> Result<&'static str, CodegenError> {
    let formats = schema_error_formats(spec, op, name)?;
    let own = match op.operation.extensions.get(ERROR_FORMAT) {
        None => None,
        Some(value) => Some(known_error_format(value).ok_or_else(|| {
            refused(
                name,
                format!("{ERROR_FORMAT} is {value}, not one of {ERROR_FORMATS:?}"),
            )
        })?),
    };
    match (formats.len(), own) {
        (0, Some(own)) => Ok(own),
        (0, None) => Err(refused(
            name,
            format!(
                "no error format: no error response references a schema marked \
                 {ERROR_FORMAT}, and the operation does not say {ERROR_FORMAT} itself"
            ),
        )),
        (1, None) => Ok(formats.into_iter().next().unwrap_or("general")),
        (1, Some(_)) => Err(refused(
            name,
            format!(
                "{ERROR_FORMAT} on the operation repeats what its error schemas say; \
                 say it once"
            ),
        )),
        _ => Err(refused(
            name,
            format!("ambiguous error format: its error responses use {formats:?}"),
        )),
    }
}

/// The formats of the component schemas the operation's 4xx/5xx (and default) responses
/// reference; each such schema must say its format.
fn schema_error_formats(
    spec: &OpenAPI,
    op: &OperationRef<'_>,
    name: &str,
) -> Result<BTreeSet<&'static str>, CodegenError> {
    let mut formats = BTreeSet::new();
    let error_responses = op
        .operation
        .responses
        .responses
        .iter()
        .filter(|(code, _)| status_class(code) >= 4)
        .map(|(_, r)| r)
        .chain(op.operation.responses.default.as_ref());
    let referenced = error_responses
        .filter_map(|response| resolve_response(spec, response))
        .flat_map(|response| response.content.values())
        .filter_map(|media| match &media.schema {
            Some(ReferenceOr::Reference { reference }) => schema_ref_name(reference),
            _ => None,
        });
    for schema_name in referenced {
        let schema = spec
            .components
            .as_ref()
            .and_then(|c| c.schemas.get(schema_name))
            .and_then(ReferenceOr::as_item);
        let format = schema
            .and_then(|s| s.schema_data.extensions.get(ERROR_FORMAT))
            .and_then(known_error_format)
            .ok_or_else(|| {
                refused(
                    name,
                    format!(
                        "error schema {schema_name} has no {ERROR_FORMAT} of {ERROR_FORMATS:?}"
                    ),
                )
            })?;
        formats.insert(format);
    }
    Ok(formats)
}

/// The value as one of [`ERROR_FORMATS`], if it is one.
fn known_error_format(value: &serde_json::Value) -> Option<&'static str> {
    let value = value.as_str()?;
    ERROR_FORMATS.into_iter().find(|known| *known == value)
}

/// Whether retrying is safe: by the method, unless the operation says [`IDEMPOTENT`].
fn idempotent_of(op: &OperationRef<'_>, name: &str) -> Result<bool, CodegenError> {
    match op.operation.extensions.get(IDEMPOTENT) {
        None => Ok(matches!(op.method, "get" | "put" | "delete" | "head")),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(other) => Err(refused(
            name,
            format!("{IDEMPOTENT} is {other}, not true or false"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{spec, unsupported};
    use crate::transforms::operation_table;
    use crate::walk::{operation_name, operations};
    use quote::ToTokens;

    /// Two tags, three error schemas, one POST read marked idempotent, a GET without error
    /// bodies that says its format itself.
    const SPEC: &str = "tags:
  - {name: knowledge-bases, description: KBs., x-pubapi-limit-class: ai}
  - {name: events, x-pubapi-limit-class: general}
paths:
  /kb:
    post:
      operationId: listKnowledgeBases
      tags: [knowledge-bases]
      x-pubapi-idempotent: true
      responses:
        '200': {description: ok}
        '400': {$ref: '#/components/responses/AiBad'}
        '500': {description: boom, content: {application/json: {schema: {$ref: '#/components/schemas/AiError'}}}}
  /kb/ask:
    post:
      operationId: askKnowledgeBase
      tags: [knowledge-bases]
      responses:
        '200': {description: ok}
        '400': {$ref: '#/components/responses/AiBad'}
  /cursor:
    get:
      operationId: getEventsCursor
      tags: [events]
      x-pubapi-error-format: general
      responses:
        '200': {description: ok}
        '401': {description: not shown}
  /events:
    get:
      operationId: listEvents
      tags: [events]
      responses:
        '200': {description: ok}
        '400': {description: bad, content: {application/json: {schema: {$ref: '#/components/schemas/GeneralError'}}}}
components:
  responses:
    AiBad: {description: bad, content: {application/json: {schema: {$ref: '#/components/schemas/AiError'}}}}
  schemas:
    AiError: {type: object, x-pubapi-error-format: ai}
    GeneralError: {type: object, x-pubapi-error-format: general}
    WebhookError: {type: object, x-pubapi-error-format: webhooks}
";

    fn facts_of(text: &str) -> Result<Vec<(String, OperationFacts)>, CodegenError> {
        let s = spec(text);
        let areas = areas(&s)?;
        operations(&s)
            .iter()
            .map(|op| {
                let name = operation_name(op.path, op.method, op.operation);
                of(&s, &areas, op, &name).map(|f| (name, f))
            })
            .collect()
    }

    /// The refusal of the fixture with `from` replaced by `to`.
    fn refusal(from: &str, to: &str) -> String {
        assert!(SPEC.contains(from), "{from:?} is not in the fixture");
        unsupported(facts_of(&SPEC.replace(from, to)))
    }

    #[test]
    fn area_and_limit_class_come_from_the_tag() {
        let s = spec(SPEC);
        let areas = areas(&s).unwrap();
        assert_eq!(areas[0].variant, "KnowledgeBases");
        assert_eq!(areas[0].limit_class, "ai");
        assert_eq!(areas[1].variant, "Events");
        assert_eq!(areas[1].limit_class, "general");
        let out = operation_table::item(&s, &[])
            .unwrap()
            .into_token_stream()
            .to_string();
        assert!(
            out.contains("area : Area :: KnowledgeBases , limit_class : LimitClass :: Ai"),
            "{out}"
        );
        assert!(
            out.contains("Area :: KnowledgeBases => \"knowledge-bases\""),
            "{out}"
        );
    }

    #[test]
    fn error_format_comes_from_error_schema() {
        let facts = facts_of(SPEC).unwrap();
        let format = |id: &str| facts.iter().find(|(n, _)| n == id).unwrap().1.error_format;
        assert_eq!(format("listKnowledgeBases"), "ai");
        assert_eq!(format("askKnowledgeBase"), "ai");
        assert_eq!(format("listEvents"), "general");
        assert_eq!(format("getEventsCursor"), "general");
    }

    #[test]
    fn idempotent_comes_from_method_or_extension() {
        let facts = facts_of(SPEC).unwrap();
        let idempotent = |id: &str| facts.iter().find(|(n, _)| n == id).unwrap().1.idempotent;
        assert!(idempotent("listKnowledgeBases"));
        assert!(!idempotent("askKnowledgeBase"));
        assert!(idempotent("listEvents"));
    }

    #[test]
    fn tag_without_limit_class_is_refused() {
        assert_eq!(
            refusal(
                "{name: events, x-pubapi-limit-class: general}",
                "{name: events}"
            ),
            "tag events: no x-pubapi-limit-class"
        );
    }

    #[test]
    fn unknown_limit_class_is_refused() {
        assert!(
            refusal(
                "x-pubapi-limit-class: general",
                "x-pubapi-limit-class: gold"
            )
            .contains("not one of")
        );
    }

    #[test]
    fn undeclared_tag_is_refused() {
        assert_eq!(
            refusal(
                "tags: [events]\n      responses:\n        '200': {description: ok}\n        '400'",
                "tags: [evts]\n      responses:\n        '200': {description: ok}\n        '400'"
            ),
            "listEvents: its tag evts is not declared in `tags`"
        );
    }

    #[test]
    fn two_error_formats_in_one_operation_are_refused() {
        let ai = "'500': {description: boom, content: {application/json: {schema: {$ref: '#/components/schemas/AiError'}}}}";
        let refused = refusal(ai, &ai.replace("AiError", "WebhookError"));
        assert!(refused.starts_with("listKnowledgeBases: ambiguous error format"));
    }

    #[test]
    fn operation_without_any_error_format_is_refused() {
        assert!(
            refusal("      x-pubapi-error-format: general\n", "")
                .starts_with("getEventsCursor: no error format")
        );
    }

    #[test]
    fn error_schema_without_the_marker_is_refused() {
        assert!(
            refusal(
                "GeneralError: {type: object, x-pubapi-error-format: general}",
                "GeneralError: {type: object}"
            )
            .contains("error schema GeneralError has no x-pubapi-error-format")
        );
    }

    #[test]
    fn format_said_twice_is_refused() {
        assert!(
            refusal(
                "operationId: askKnowledgeBase\n",
                "operationId: askKnowledgeBase\n      x-pubapi-error-format: ai\n"
            )
            .contains("say it once")
        );
    }

    #[test]
    fn non_boolean_idempotent_is_refused() {
        assert!(
            refusal(
                "x-pubapi-idempotent: true",
                "x-pubapi-idempotent: yes please"
            )
            .contains("not true or false")
        );
    }

    #[test]
    fn colliding_area_variants_are_refused() {
        assert!(
            refusal("{name: events,", "{name: knowledge_bases,")
                .contains("also the variant of tag knowledge-bases")
        );
    }
}
