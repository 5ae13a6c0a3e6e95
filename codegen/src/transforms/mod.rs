//! The named transforms that adapt the spec for progenitor 0.15 (spec → spec) and its output for
//! pubapi (code → code).
//!
//! Spec transforms run in this order (see [`apply_spec_transforms`]):
//!
//! | transform | progenitor limit it works around | who handles what it removes |
//! |---|---|---|
//! | [`spelled_enums`] | a value matched in any letter case (`pattern`) would be a free string | the SDK sends the reference's spellings (`x-pubapi-spellings`) as an enum |
//! | [`free_form_any_of`] | typify merges an `anyOf` of payload shapes into one struct | `pubapi-sdk-ext` decodes the payload by its event type; the shapes stay generated components |
//! | [`required_alternatives`] | typify splits an object with an `anyOf` of `required` lists ("`folders` unless `file`") into an enum of structs, each without the other's fields | `pubapi-sdk-ext` checks the rule before sending; the sandbox refuses a body that breaks it |
//! | [`pipe_delimited_queries`] | `style: pipeDelimited` is ignored (each item would be its own pair) | `pubapi-sdk-ext` joins the events `type` names with `\|` |
//! | [`inline_response_refs`] | none: makes the next transforms see every response inline | nothing is removed |
//! | [`open_response_enums`] | typify's string enums reject unknown values | [`open_enums`] gives the values back as an open enum with an `Unknown(String)` case |
//! | [`drop_redirects`] | 3xx responses get no match arm and their headers are ignored | `pubapi-sdk-ext` reads the 303 + `Location` of the audit job |
//! | [`json_only_responses`] | `text/csv` next to JSON is dropped silently | `pubapi-sdk-ext` fetches CSV reports with `Accept: text/csv` |
//! | [`drop_bodiless_success`] | a 200 with a body next to a 204 without one panics | [`no_content_as_none`] gives the 204 back as `None` from `send()` |
//! | [`raw_error_responses`] | different error schemas per status (or a bodiless error next to a typed one) panic | `pubapi-sdk-ext` decodes the three error formats by status |
//!
//! Code transforms: [`open_enums`] (the newtypes `open_response_enums` leaves become
//! `enum X { Known.., Unknown(String) }`, serialised through `String`), [`no_content_as_none`]
//! (the status `drop_bodiless_success` removed is a success again: `send()` returns
//! `ResponseValue<Option<T>>`, `None` for the 204), [`request_constructors`]
//! (typify gives a request with required fields no constructor: `X::new(required..)` is built
//! from each request body schema's `required` list, fallible where typify checks a field),
//! [`open_object_extras`] (the `extra` map typify gives an object with
//! `additionalProperties: {}`, the platform's fields the reference does not name, starts
//! empty in its builder instead of being required there, and such a type without required
//! fields derives `Default` again),
//! [`alias_accessors`] (a value the platform sends under two names, `x-pubapi-alias-of`, gets
//! one accessor reading either; a serde alias would refuse a body carrying both),
//! [`schemars_derive`] (the types implement `schemars::JsonSchema` behind the `schemars`
//! feature of `pubapi-sdk`), [`area_features`] (the code of an area, its trait, builders and
//! the types only it reaches, compiles only with the area's feature: `ai`, `audit`, `events`,
//! `webhooks`), [`plain_patterns`] (typify checks a string's `pattern` with the `regress`
//! regex engine in every build: the spec's few patterns become plain generated checks of the
//! same meaning, and a pattern it does not know stops the generation),
//! [`mark_deprecated`] (progenitor ignores `deprecated: true`),
//! [`redact_secrets`] (derived `Debug` would print `format: password` fields such as the
//! webhook `authHeader`), [`strict_path_encoding`] (progenitor's `encode_path` lets `\` and dot
//! segments through, which URL parsing turns into other paths), [`operation_table`] (progenitor
//! keeps no record of paths, tags, statuses and what the spec transforms removed; the table keeps
//! them for `pubapi-sdk-ext` and the tests) and [`limits`] (progenitor keeps no record of
//! `maximum`, `maxItems` or most `maxLength`s: a constant per bound for `pubapi-sdk-ext`'s
//! checks before sending). The table's area, limit class, error format and idempotency come from [`operation_facts`], which reads
//! each from the one place the spec says it and refuses a spec where one is missing or
//! ambiguous.
//!
//! The typed mocks of `pubapi-httpmock` are progenitor's `httpmock` output for the same
//! adapted spec, then five code → code transforms: [`mock_removed_responses`] (every response
//! the spec transforms removed, the three error formats among them, gets its typed `Then`
//! method back, and each declared response header a typed setter), [`mock_path_values_encoded`]
//! (a path value is matched as the client percent-encodes it, regex-escaped),
//! [`mock_base_path`] (the path regexes sit below the server URL's path, `/pubapi`, written once
//! as `BASE_PATH`), [`mock_sequences`] (each operation's mock also answers in sequence, for
//! retry tests) and [`mock_docs`] (every wrapper and method documented from the spec).
//!
//! Limits that need no transform: security schemes are ignored (`pubapi-sdk-ext` adds the
//! bearer token in its request policy); `requestBody.required: false` is ignored (the builder
//! sends `{}` when no body is set, which the summary endpoint reads as "no chat history").

use crate::CodegenError;
use openapiv3::OpenAPI;

pub mod alias_accessors;
pub mod area_features;
pub mod audit_kinds;
pub mod drop_bodiless_success;
pub mod drop_redirects;
pub mod free_form_any_of;
pub mod inline_response_refs;
pub mod json_only_responses;
pub mod limits;
pub mod mark_deprecated;
pub mod mock_base_path;
pub mod mock_docs;
pub mod mock_path_values_encoded;
pub mod mock_removed_responses;
pub mod mock_sequences;
pub(crate) mod mock_shape;
pub mod no_content_as_none;
pub mod open_enums;
pub mod open_object_extras;
pub mod open_response_enums;
pub mod operation_facts;
pub mod operation_table;
pub mod pipe_delimited_queries;
pub mod plain_patterns;
pub mod raw_error_responses;
pub mod redact_secrets;
pub mod request_constructors;
pub mod required_alternatives;
pub mod schemars_derive;
pub mod spelled_enums;
pub mod strict_path_encoding;

/// Something a spec transform removed from what progenitor sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// The transform that removed it.
    pub transform: &'static str,
    /// The operationId (or schema name, for enums) concerned.
    pub subject: String,
    /// What was removed, e.g. `204`, `200 text/csv`, `enum [enabled, disabled]`.
    pub what: String,
}

impl Removal {
    /// Whether a code transform gives what was removed back to the generated client
    /// ([`open_enums`] the enum values, [`no_content_as_none`] the 204), so it is still part
    /// of the generated surface.
    pub fn given_back(&self) -> bool {
        matches!(
            self.transform,
            "open_response_enums" | "drop_bodiless_success"
        )
    }
}

/// Runs every spec transform in order and returns what they removed.
///
/// # Errors
/// [`CodegenError::Unsupported`] when the spec has a shape no transform can adapt.
pub fn apply_spec_transforms(spec: &mut OpenAPI) -> Result<Vec<Removal>, CodegenError> {
    spelled_enums::apply(spec);
    free_form_any_of::apply(spec);
    required_alternatives::apply(spec);
    pipe_delimited_queries::apply(spec);
    inline_response_refs::apply(spec)?;
    let mut removals = open_response_enums::apply(spec);
    removals.extend(drop_redirects::apply(spec));
    removals.extend(json_only_responses::apply(spec));
    removals.extend(drop_bodiless_success::apply(spec)?);
    removals.extend(raw_error_responses::apply(spec));
    Ok(removals)
}

#[cfg(test)]
pub(crate) mod fixture {
    use openapiv3::OpenAPI;

    /// Parses a YAML fragment of `paths` (and optional `components`) into a full document.
    pub(crate) fn spec(paths_and_components: &str) -> OpenAPI {
        let text =
            format!("openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\n{paths_and_components}");
        crate::spec::load(&text).expect("fixture spec parses")
    }

    /// The refusal `result` must be, as `operation: problem`: a transform that meets a shape
    /// it cannot adapt answers [`CodegenError::Unsupported`](crate::CodegenError::Unsupported).
    #[track_caller]
    pub(crate) fn unsupported<T>(result: Result<T, crate::CodegenError>) -> String {
        match result {
            Err(crate::CodegenError::Unsupported { operation, problem }) => {
                format!("{operation}: {problem}")
            }
            Err(other) => panic!("expected an Unsupported refusal, got {other:?}"),
            Ok(_) => panic!("expected an Unsupported refusal, got a result"),
        }
    }

    /// Asserts that `out` (a transform's output, as tokens) holds each of `needles`.
    pub(crate) fn assert_holds(out: &str, needles: &[&str]) {
        for needle in needles {
            assert!(out.contains(needle), "{needle} in {out}");
        }
    }
}
