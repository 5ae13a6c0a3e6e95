//! The SDK's errors as MCP tool errors: a result with `isError`, a line a model can act on,
//! and a structured error object in the result's `_meta` under [`ERROR_META`] (its kind, the
//! field at fault, whether anything was sent, when a used-up budget resets). Not as
//! `structuredContent`: clients check that against the tool's output schema, errors too. Errors come from the SDK's `Display`, which never shows the
//! token; nothing here adds request headers.

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::error::InputError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// The `_meta` key of a tool error's structured form.
pub(super) const ERROR_META: &str = "pubapi/error";

/// A tool call that did not produce its result (boxed: results pass through every call).
#[derive(Debug)]
pub(super) struct Refusal(Box<Details>);

/// What a refusal says.
#[derive(Debug)]
struct Details {
    /// `invalid_input`, `writes_not_allowed`, `quota_exhausted`, `throttled`, `not_found`, …
    kind: &'static str,
    /// The input field at fault, when one is.
    field: Option<String>,
    /// What went wrong, for a person or a model.
    message: String,
    /// Whether a request reached the platform.
    sent: bool,
    /// For a used-up budget: which class, and how long until it frees up.
    resets_in: Option<Duration>,
    class: Option<&'static str>,
    request_id: Option<String>,
}

impl Refusal {
    /// Input refused before anything was sent: `field` and what is wrong with it.
    pub(super) fn input(field: impl Into<String>, problem: impl std::fmt::Display) -> Refusal {
        let field = field.into();
        Refusal(Box::new(Details {
            kind: "invalid_input",
            message: format!("invalid `{field}`: {problem} (nothing was sent)"),
            field: Some(field),
            sent: false,
            resets_in: None,
            class: None,
            request_id: None,
        }))
    }

    /// A tool that changes or deletes something, on a server started without
    /// `--allow-writes`.
    pub(super) fn writes_not_allowed(tool: &str) -> Refusal {
        Refusal(Box::new(Details {
            kind: "writes_not_allowed",
            field: None,
            message: format!(
                "`{tool}` changes or deletes something on the platform, and this server was \
                 started read-only: restart it with `pubapi mcp --allow-writes` to use it \
                 (nothing was sent)"
            ),
            sent: false,
            resets_in: None,
            class: None,
            request_id: None,
        }))
    }

    /// An unknown tool name.
    pub(super) fn unknown_tool(tool: &str) -> Refusal {
        Refusal(Box::new(Details {
            kind: "unknown_tool",
            field: Some("name".into()),
            message: format!("no tool `{tool}`: list the tools to see their names"),
            sent: false,
            resets_in: None,
            class: None,
            request_id: None,
        }))
    }

    /// The result a client sees: `isError`, the message, and the structured error.
    pub(super) fn into_result(self, now: SystemTime) -> CallToolResult {
        let Refusal(details) = self;
        let details = *details;
        let resets_at = details
            .resets_in
            .and_then(|wait| now.checked_add(wait))
            .and_then(|at| pubapi_sdk_ext::jiff::Timestamp::try_from(at).ok())
            .map(|at| {
                at.round(pubapi_sdk_ext::jiff::Unit::Second)
                    .unwrap_or(at)
                    .to_string()
            });
        let mut message = details.message;
        if let Some(at) = &resets_at {
            message.push_str(&format!(" (resets at {at})"));
        }
        let structured = json!({
            "kind": details.kind,
            "field": details.field,
            "message": message,
            "sent": details.sent,
            "class": details.class,
            "resets_in_seconds": details.resets_in.map(|wait| wait.as_secs_f64().ceil()),
            "resets_at": resets_at,
            "request_id": details.request_id,
        });
        let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
        result.meta = Some(rmcp::model::MetaObject(serde_json::Map::from_iter([(
            ERROR_META.to_string(),
            structured,
        )])));
        result
    }
}

/// The field an input error names.
fn field_of(error: &InputError) -> String {
    match error {
        InputError::Invalid { field, .. } => (*field).to_string(),
        InputError::PathValue { parameter, .. } => (*parameter).to_string(),
        InputError::Impersonation(_) => "act_as".into(),
        InputError::Path(_) => "path".into(),
        InputError::Endpoint(_) => "url".into(),
        _ => "input".into(),
    }
}

/// The error and its sources, one sentence each.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Refusal {
        let request_id = error.request_id().map(|id| id.to_string());
        let message = chain(&error);
        let (kind, field, sent, resets_in, class) = match &error {
            Error::InvalidInput(input) => {
                ("invalid_input", Some(field_of(input)), false, None, None)
            }
            Error::QuotaExhausted {
                class,
                resets_in,
                error: response,
                request_id: retried,
            } => (
                "quota_exhausted",
                None,
                response.is_some() || retried.is_some(),
                *resets_in,
                class.map(|class| match class {
                    pubapi_sdk_ext::LimitClass::Ai => "ai",
                    _ => "general",
                }),
            ),
            Error::Throttled { retry_after, .. } => ("throttled", None, true, *retry_after, None),
            Error::Unauthorized(_) => ("unauthorized", None, true, None, None),
            Error::Forbidden { .. } => ("forbidden", None, true, None, None),
            Error::NotFound(_) => ("not_found", None, true, None, None),
            Error::Conflict(_) => ("conflict", None, true, None, None),
            Error::InvalidRequest(_) => ("invalid_request", None, true, None, None),
            Error::Removed { .. } => ("removed", None, false, None, None),
            Error::Timeout { .. } => ("timeout", None, request_id.is_some(), None, None),
            Error::Transport(_) => ("unreachable", None, true, None, None),
            _ => ("failed", None, true, None, None),
        };
        let message = if sent || message.contains("nothing was sent") {
            message
        } else {
            format!("{message} (nothing was sent)")
        };
        Refusal(Box::new(Details {
            kind,
            field,
            message,
            sent,
            resets_in,
            class,
            request_id,
        }))
    }
}

/// A JSON value's text for a message: strings without their quotes.
pub(super) fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
