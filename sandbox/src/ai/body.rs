//! Reading an AI request body: the `question` every AI question carries (with the fields
//! the spec declares beside it), the markers a question can hold, `selectedItems`, and the
//! paging and filter fields the knowledge-base list and hybrid search share.

use crate::Shared;
use crate::dates::parse_request_date;
use crate::http::{ApiRequest, Reply, error};
use pubapi_sdk::operations::id;
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// A question containing this (any letter case) makes an agent request or an assistant
/// execution end `FAILED`.
pub const FAIL_MARKER: &str = "[fail]";

/// A question containing this (any letter case, and not [`FAIL_MARKER`]) makes an
/// assistant execution end `AWAITING_USER_CONFIRMATION` with a pending action.
pub const CONFIRM_MARKER: &str = "[confirm]";

/// Whether `text` is not blank as the spec says it: `pattern: '\S'` on every AI question and
/// the hybrid-search `query`, an ECMA-262 expression (read with `regress`, as the generated
/// types read it). ECMA-262's white space is not Rust's `char::is_whitespace`: U+0085 is a
/// character there, U+FEFF is white space.
pub(super) fn not_blank(text: &str) -> bool {
    static NOT_BLANK: LazyLock<Option<regress::Regex>> =
        LazyLock::new(|| regress::Regex::new(r"\S").ok());
    NOT_BLANK
        .as_ref()
        .map_or_else(|| !text.trim().is_empty(), |r| r.find(text).is_some())
}

/// The markers found in a question, and the question without them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Markers {
    pub(super) fail: bool,
    pub(super) confirm: bool,
    pub(super) question: String,
}

pub(super) fn markers(question: &str) -> Markers {
    let mut text = question.to_string();
    let mut strip = |marker: &str| -> bool {
        let mut found = false;
        // ASCII lower-casing keeps byte offsets, so positions in `lower` are valid in `text`.
        while let Some(at) = text.to_ascii_lowercase().find(marker) {
            text.replace_range(at..at + marker.len(), "");
            found = true;
        }
        found
    };
    let fail = strip(FAIL_MARKER);
    let confirm = strip(CONFIRM_MARKER);
    Markers {
        fail,
        confirm,
        question: text,
    }
}

/// The `question` of an AI request body, or the documented 400.
pub(super) fn question(
    req: &ApiRequest,
    max: Option<usize>,
) -> Result<(String, Map<String, Value>), Reply> {
    let body = object_body(req, "the body must be a JSON object")?;
    let question = match body.get("question") {
        Some(Value::String(q)) if not_blank(q) => q.clone(),
        Some(Value::String(_)) | None => {
            return Err(error(
                req.op,
                400,
                "QUESTION_MANDATORY",
                "question is mandatory",
            ));
        }
        Some(_) => {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                "question must be a string",
            ));
        }
    };
    if let Some(max) = max
        && question.chars().count() > max
    {
        return Err(error(
            req.op,
            400,
            "QUESTION_TOO_LONG",
            &format!("the question is longer than {max} characters"),
        ));
    }
    // The reference shows `chatHistory` and `includeCitations` for documents, the assistant
    // and knowledge bases; an agent question's other fields are "not shown": the sandbox
    // checks the ones the spec declares (those the platform's clients send) and takes any
    // other as it comes.
    if req.op.id == id::ASK_AGENT {
        check_agent_fields(req, &body)?;
    } else {
        check_common(req, &body)?;
    }
    check_declared_types(req, &body)?;
    Ok((question, body))
}

/// The request body as a JSON object, or the 400 saying why not (`not_an_object` when it is
/// absent or another JSON value, the parser's message when it is not JSON).
pub(super) fn object_body(
    req: &ApiRequest,
    not_an_object: &str,
) -> Result<Map<String, Value>, Reply> {
    match req.json() {
        Ok(Some(Value::Object(map))) => Ok(map),
        Ok(_) => Err(error(req.op, 400, "INVALID_REQUEST", not_an_object)),
        Err(message) => Err(error(req.op, 400, "INVALID_REQUEST", &message)),
    }
}

/// The 400 for the first of `names` present in `body` whose value `is_kind` refuses: it
/// must be `kind` (`a string`, `an object`).
fn refuse_mistyped(
    req: &ApiRequest,
    body: &Map<String, Value>,
    names: &[&str],
    is_kind: fn(&Value) -> bool,
    kind: &str,
) -> Result<(), Reply> {
    match names
        .iter()
        .find(|name| body.get(**name).is_some_and(|v| !is_kind(v)))
    {
        Some(name) => Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            &format!("{name} must be {kind}"),
        )),
        None => Ok(()),
    }
}

/// The optional request fields the spec types, by operation: each must have its type when
/// present (`selectedItems` is checked where it is read, `chatHistory` by [`check_common`]).
fn check_declared_types(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    let (strings, objects): (&[&str], &[&str]) = match req.op.id {
        id::ASK_AGENT => (&["instructions", "conversationId"], &[]),
        id::ASK_ASSISTANT => (&["conversationId", "mcpSelectionId"], &["modelDetails"]),
        _ => (&[], &[]),
    };
    refuse_mistyped(req, body, strings, Value::is_string, "a string")?;
    refuse_mistyped(req, body, objects, Value::is_object, "an object")?;
    // `modelDetails` (`ModelDetails`): its shape is not in the reference; the spec declares
    // the `name` and `version` strings the platform's clients send, and leaves it open.
    if req.op.id == id::ASK_ASSISTANT
        && let Some(details) = body.get("modelDetails")
        && !strings_where_present(details, &["name", "version"])
    {
        return Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            "modelDetails.name and modelDetails.version must be strings",
        ));
    }
    Ok(())
}

/// Whether each of `names` present in the object `value` is a string (other fields are open).
fn strings_where_present(value: &Value, names: &[&str]) -> bool {
    names
        .iter()
        .all(|name| value.get(*name).is_none_or(Value::is_string))
}

/// An agent question's `entryIds` (strings) and `selectedItems` (the shape of reference 2.4),
/// when present.
fn check_agent_fields(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    let entry_ids_ok = body
        .get("entryIds")
        .is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)));
    if !entry_ids_ok {
        return Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            "entryIds must be an array of strings",
        ));
    }
    selected_ids(body)
        .map(|_| ())
        .map_err(|message| error(req.op, 400, "INVALID_REQUEST", &message))
}

/// `chatHistory` and `includeCitations`, when present, must have their documented shapes.
/// The reference leaves the shape of a message open; the spec's `ChatMessage` declares the
/// `role` and `content` strings the platform's clients send and stays open: a message that
/// is not an object, or whose `role` or `content` is not a string, is refused; its other
/// fields are not checked.
pub(super) fn check_common(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    if let Some(history) = body.get("chatHistory") {
        let ok = history.as_object().is_some_and(|h| {
            h.get("messages").is_none_or(|m| {
                m.as_array().is_some_and(|a| {
                    a.iter()
                        .all(|m| m.is_object() && strings_where_present(m, &["role", "content"]))
                })
            })
        });
        if !ok {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                "chatHistory must be an object with a `messages` array of objects \
                 (`role` and `content` strings)",
            ));
        }
    }
    if body
        .get("includeCitations")
        .is_some_and(|v| !v.is_boolean())
    {
        return Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            "includeCitations must be a boolean",
        ));
    }
    Ok(())
}

pub(super) fn include_citations(body: &Map<String, Value>) -> bool {
    body.get("includeCitations")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// File entry ids and folder ids.
pub(super) type SelectedIds = (Vec<String>, Vec<String>);

/// The file entry ids and folder ids of `selectedItems` (reference 2.4: `folders` of
/// `{id string}`, `files` of `{entryId string}`, and the `filePath` string the platform's
/// clients send beside `entryId`, which the spec declares), `None` when absent.
pub(super) fn selected_ids(body: &Map<String, Value>) -> Result<Option<SelectedIds>, String> {
    let Some(selected) = body.get("selectedItems") else {
        return Ok(None);
    };
    let ids = |name: &str, key: &str| -> Result<Vec<String>, String> {
        match selected.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.get(key)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| format!("selectedItems.{name}[] needs a string `{key}`"))
                })
                .collect(),
            Some(_) => Err(format!("selectedItems.{name} must be an array")),
        }
    };
    if !selected.is_object() {
        return Err("selectedItems must be an object".into());
    }
    let paths_ok = selected
        .get("files")
        .and_then(Value::as_array)
        .is_none_or(|files| {
            files
                .iter()
                .all(|f| strings_where_present(f, &["filePath"]))
        });
    if !paths_ok {
        return Err("selectedItems.files[].filePath must be a string".into());
    }
    Ok(Some((ids("files", "entryId")?, ids("folders", "id")?)))
}

/// A non-negative integer field of at least `min`, `default` when absent.
pub(super) fn count_field(
    body: &Map<String, Value>,
    name: &str,
    default: usize,
    min: u64,
) -> Result<usize, String> {
    match body.get(name) {
        None => Ok(default),
        // The spec bounds the paging integers by 2^63-1 (64-bit).
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= min && i64::try_from(*n).is_ok())
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| format!("{name} must be an integer from {min} to 9223372036854775807")),
    }
}

/// A time filter (`createdAfter`, `createdBefore`) as epoch milliseconds.
///
/// - Knowledge-base list (`nullable == false`): the spec types the filter `string` and its
///   format is not shown, so any string is taken; a string of digits (epoch milliseconds)
///   or a request date (`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ`) filters, other text filters
///   nothing. The platform's clients send a JSON integer, which is read too (a client
///   tolerance of the conformance check).
/// - Hybrid search (`nullable == true`): the spec types the filter as an int64 integer;
///   `null` is no filter (the platform's clients send it for "no filter").
///
/// Any other JSON type is refused, never ignored.
pub(super) fn epoch_filter(
    body: &Map<String, Value>,
    name: &str,
    nullable: bool,
) -> Result<Option<i64>, String> {
    let refused = || {
        if nullable {
            format!("{name} must be epoch milliseconds (an integer)")
        } else {
            format!("{name} must be a string (epoch milliseconds or a date YYYY-MM-DD)")
        }
    };
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) if nullable => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(refused),
        Some(Value::String(s)) if !nullable => Ok(if s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            parse_request_date(s).map(|d| d.ms)
        }),
        Some(_) => Err(refused()),
    }
}

/// A `createdBy` filter, as the platform's clients send it: an integer user id (most
/// clients), a username (the LangChain connector's `"admin"`) or a user id as a string
/// (`null` is no filter when `nullable`). `Ok(None)`: no filter; `Ok(Some(None))`: a username
/// no user has, which matches nothing.
pub(super) fn creator_filter(
    shared: &Shared,
    body: &Map<String, Value>,
    nullable: bool,
) -> Result<Option<Option<i64>>, String> {
    const REFUSED: &str = "createdBy must be an integer user id or a username";
    match body.get("createdBy") {
        None => Ok(None),
        Some(Value::Null) if nullable => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(|id| Some(Some(id)))
            .ok_or_else(|| REFUSED.into()),
        Some(Value::String(name)) if name.is_empty() => {
            Err("createdBy must be an integer user id or a username, not empty".into())
        }
        Some(Value::String(name)) => Ok(Some(
            shared
                .world()
                .users
                .by_username(name)
                .map(|u| u.id)
                .or_else(|| name.parse().ok()),
        )),
        Some(_) => Err(REFUSED.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_in_any_case_and_left_out_of_the_question() {
        assert_eq!(
            markers("[FAIL] hotel [Confirm]costs"),
            Markers {
                fail: true,
                confirm: true,
                question: " hotel costs".into()
            }
        );
        assert_eq!(
            markers("plain [fail [confirm"),
            Markers {
                fail: false,
                confirm: false,
                question: "plain [fail [confirm".into()
            }
        );
        assert_eq!(markers("é[fail]é[fail]").question, "éé");
    }

    #[test]
    fn blank_is_ecma_262_white_space_as_in_the_spec_pattern() {
        for blank in ["", " \t\n\r", "\u{A0}\u{2028}\u{3000}", "\u{FEFF}"] {
            assert!(!not_blank(blank), "{blank:?}");
        }
        // U+0085 (NEXT LINE) is white space to Rust but a character to ECMA-262's `\S`.
        for text in ["\u{85}\u{85}\u{85}", " x ", "\u{200B}"] {
            assert!(not_blank(text), "{text:?}");
        }
    }
}
