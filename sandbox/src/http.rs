//! The request and reply types of the sandbox's handlers, and the three error formats of the
//! API (reference 7), chosen per operation so every error body is one the spec documents.

use super::dates::http_date;
use axum::http::HeaderMap;
use pubapi_sdk::operations::{ALL, Operation};
use serde_json::{Value, json};

/// The error code of an operation answered after its removal (410 Gone).
pub const REMOVED_CODE: &str = "ENDPOINT_REMOVED";

/// One request, matched to its operation.
#[derive(Debug)]
pub struct ApiRequest {
    /// The operation of the spec the request was matched to.
    pub op: &'static Operation,
    /// The HTTP method.
    pub method: String,
    /// The path below `/pubapi`.
    pub path: String,
    /// Path parameters, percent-decoded, by their name in the spec.
    pub params: Vec<(String, String)>,
    /// Query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Request headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl ApiRequest {
    /// A path parameter ("" when absent, which the router never allows).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The first query parameter called `name`.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header as text (`None` when absent or not visible ASCII).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON; `Ok(None)` for an empty body.
    pub fn json(&self) -> Result<Option<Value>, String> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(&self.body)
            .map(Some)
            .map_err(|e| format!("the body is not valid JSON: {e}"))
    }
}

/// How a fault makes the answer go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFault {
    /// The connection closes before the first byte.
    DropConnection,
    /// The body trickles at this many bytes per second.
    Slow {
        /// Bytes per second, at least 1.
        bytes_per_second: u32,
    },
    /// The whole length is announced, then the connection breaks after this many bytes.
    Cut {
        /// Body bytes sent.
        after_bytes: usize,
    },
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Headers besides `Content-Type`.
    pub headers: Vec<(String, String)>,
    /// `Content-Type`, when there is a body.
    pub content_type: Option<String>,
    /// The body.
    pub body: Vec<u8>,
    /// Set by fault injection: how the answer goes out (dropped, slow or cut).
    pub body_fault: Option<BodyFault>,
    /// Set by fault injection: the reply is deliberately outside the spec.
    pub injected: bool,
    /// A fault injection answered (or delayed, slowed or cut) the request, whether or not
    /// the reply is one the spec documents (a 429, a 500): the test's doing, not the
    /// platform's rules.
    pub fault: bool,
}

impl Reply {
    /// A reply without a body.
    pub fn empty(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            content_type: None,
            body: Vec::new(),
            body_fault: None,
            injected: false,
            fault: false,
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, value: &Value) -> Self {
        Reply {
            content_type: Some("application/json".to_string()),
            body: serde_json::to_vec(value).unwrap_or_default(),
            ..Reply::empty(status)
        }
    }

    /// A CSV reply.
    pub fn csv(status: u16, text: String) -> Self {
        Reply {
            content_type: Some("text/csv".to_string()),
            body: text.into_bytes(),
            ..Reply::empty(status)
        }
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    /// The body parsed as JSON.
    #[cfg(test)]
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// The error body format of an area (reference 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorFormat {
    /// `{errorMessage, errorCode}`.
    Ai,
    /// `{code, message, details?}` (webhooks and whoami).
    Webhook,
    /// `{Errors: [{description, code}]}` (general API: audit and events).
    General,
}

/// Whether the operation is an AI one (AI limits, 429 throttles): its limit class in the
/// spec (`x-pubapi-limit-class`).
pub fn is_ai(op: &Operation) -> bool {
    op.limit_class == pubapi_sdk::operations::LimitClass::Ai
}

/// The error format of the operation, as the spec says (`x-pubapi-error-format`).
pub fn error_format(op: &Operation) -> ErrorFormat {
    match op.error_format {
        pubapi_sdk::operations::ErrorFormat::Ai => ErrorFormat::Ai,
        pubapi_sdk::operations::ErrorFormat::Webhooks => ErrorFormat::Webhook,
        pubapi_sdk::operations::ErrorFormat::General => ErrorFormat::General,
    }
}

/// Whether the spec documents `status` for `op`.
pub fn documents(op: &Operation, status: u16) -> bool {
    let text = status.to_string();
    op.responses.iter().any(|r| r.status == text)
}

fn documented_body(op: &Operation, status: u16) -> bool {
    let text = status.to_string();
    op.responses
        .iter()
        .find(|r| r.status == text)
        .is_some_and(|r| !r.content_types.is_empty())
}

/// An error reply of `op` in its area's format. `status` falls back to the first of
/// 400, 401, 500 the operation documents when it does not document `status` itself, and
/// the body is left out where the spec documents none.
pub fn error(op: &Operation, status: u16, code: &str, message: &str) -> Reply {
    let status = [status, 400, 401, 500]
        .into_iter()
        .find(|s| documents(op, *s))
        .unwrap_or(status);
    if !documented_body(op, status) {
        return Reply::empty(status);
    }
    let body = match error_format(op) {
        ErrorFormat::Ai => json!({ "errorMessage": message, "errorCode": code }),
        ErrorFormat::Webhook => json!({ "code": code, "message": message }),
        ErrorFormat::General => {
            json!({ "Errors": [{ "description": message, "code": code }] })
        }
    };
    Reply::json(status, &body)
}

/// A request the server could not read whole (413 too large, 408 too slow): `status` as it
/// is, whether the spec documents it or not, with the area's error body.
pub fn unreadable(op: &Operation, status: u16, code: &str, message: &str) -> Reply {
    let body = match error_format(op) {
        ErrorFormat::Ai => json!({ "errorMessage": message, "errorCode": code }),
        ErrorFormat::Webhook => json!({ "code": code, "message": message }),
        ErrorFormat::General => {
            json!({ "Errors": [{ "description": message, "code": code }] })
        }
    };
    Reply::json(status, &body).header("Connection", "close")
}

/// When the spec says the operation is removed (`x-pubapi-sunset`), epoch milliseconds.
pub fn sunset_ms(op: &Operation) -> Option<i64> {
    op.sunset
        .and_then(|seconds| i64::try_from(seconds).ok())
        .map(|seconds| seconds.saturating_mul(1000))
}

/// `METHOD /path` of the operation that replaces `op` (`x-pubapi-successor`).
fn successor(op: &Operation) -> Option<&'static Operation> {
    let id = op.successor?;
    ALL.iter().find(|o| o.id == id)
}

/// The same reply with the headers of a deprecated operation with a removal date:
/// `Deprecation: true`, `Sunset` (the HTTP date of the removal) and `Link` (the successor's
/// path with relation `successor-version`), each where the spec gives what it says.
pub fn deprecation_headers(op: &Operation, mut reply: Reply) -> Reply {
    if op.deprecated {
        reply = reply.header("Deprecation", "true");
    }
    if let Some(sunset) = sunset_ms(op) {
        reply = reply.header("Sunset", http_date(sunset));
    }
    if let Some(next) = successor(op) {
        reply = reply.header(
            "Link",
            format!("<{}>; rel=\"successor-version\"", next.path),
        );
    }
    reply
}

/// The answer of an operation the spec removes on a date, once `now_ms` is at or past it:
/// 410 Gone in the area's error format (code [`REMOVED_CODE`]) naming the successor, with
/// the deprecation headers. `None` while the operation is served. The spec documents the 410
/// on the operation (`askCopilot`).
pub fn removed(op: &Operation, now_ms: i64) -> Option<Reply> {
    let sunset = sunset_ms(op)?;
    if now_ms < sunset {
        return None;
    }
    let mut message = format!(
        "{} {} was removed on {}",
        op.method,
        op.path,
        http_date(sunset)
    );
    if let Some(next) = successor(op) {
        message.push_str(&format!("; use {} {}", next.method, next.path));
    }
    message.push('.');
    let body = match error_format(op) {
        ErrorFormat::Ai => json!({ "errorMessage": message, "errorCode": REMOVED_CODE }),
        ErrorFormat::Webhook => {
            json!({ "code": REMOVED_CODE.to_ascii_lowercase(), "message": message })
        }
        ErrorFormat::General => {
            json!({ "Errors": [{ "description": message, "code": REMOVED_CODE }] })
        }
    };
    Some(deprecation_headers(op, Reply::json(410, &body)))
}

/// An error of the general format with one entry per problem (audit and events validation).
pub fn general_errors(status: u16, problems: &[(String, String)]) -> Reply {
    let errors: Vec<Value> = problems
        .iter()
        .map(|(code, description)| json!({ "description": description, "code": code }))
        .collect();
    Reply::json(status, &json!({ "Errors": errors }))
}

/// The code of a 405 (a method the path does not have).
pub const METHOD_NOT_ALLOWED_CODE: &str = "METHOD_NOT_ALLOWED";

/// 405 for `method` on a path of the spec that has only the `allow` methods: `Allow` lists
/// them and the body is in the general format (no operation, so no area's format applies).
pub fn method_not_allowed(method: &str, path: &str, allow: &[&str]) -> Reply {
    let allow = allow.join(", ");
    let description = format!("{method} is not a method of {path}; it has {allow}");
    general_errors(405, &[(METHOD_NOT_ALLOWED_CODE.to_string(), description)])
        .header("Allow", allow)
}

/// The value of the first of `headers` called `name` (case-insensitive), for the header lists
/// kept as pairs: a raw reply and a recorded exchange.
pub fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Splits a query string into decoded pairs (`+` is a space, `%XX` a byte).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            (decode(k, true), decode(v, true))
        })
        .collect()
}

/// Percent-decodes `text` (and `+` as a space when `plus_is_space`); invalid escapes are
/// kept as they are, invalid UTF-8 is replaced.
pub fn decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The operation `id` of the spec, for the tests of this crate.
    pub(crate) fn op(id: &str) -> &'static Operation {
        ALL.iter().find(|o| o.id == id).unwrap()
    }

    #[test]
    fn query_is_decoded() {
        assert_eq!(
            parse_query("folder=%2FShared%20Docs&type=file_system%7Cnote&q=a+b&flag"),
            vec![
                ("folder".into(), "/Shared Docs".into()),
                ("type".into(), "file_system|note".into()),
                ("q".into(), "a b".into()),
                ("flag".into(), "".into()),
            ]
        );
        assert_eq!(decode("100%", false), "100%");
        assert_eq!(decode("%zz", false), "%zz");
    }

    #[test]
    fn errors_take_the_area_format() {
        let ai = error(op("listAgents"), 403, "AGENTS_DISABLED", "off").body_json();
        assert_eq!(ai.unwrap()["errorCode"], "AGENTS_DISABLED");
        let hook = error(op("listWebhooks"), 403, "missing_scope_error", "x").body_json();
        assert_eq!(hook.unwrap()["code"], "missing_scope_error");
        let audit = error(op("getAuditJob"), 404, "NOT_FOUND", "gone").body_json();
        assert_eq!(audit.unwrap()["Errors"][0]["code"], "NOT_FOUND");
        // Events: the lists' 400 is in the general format, the 401 has no body.
        let events = error(op("listEventsV2"), 400, "INVALID_VALUE", "bad").body_json();
        assert_eq!(
            events.unwrap(),
            json!({"Errors": [{"description": "bad", "code": "INVALID_VALUE"}]})
        );
        assert!(error(op("listEventsV2"), 401, "x", "y").body.is_empty());
        // whoami's 403 is the throttle response without a body.
        assert!(error(op("whoami"), 403, "x", "y").body.is_empty());
        // document AI's 500 has no body.
        assert!(error(op("askDocument"), 500, "x", "y").body.is_empty());
    }

    #[test]
    fn the_copilot_is_removed_at_its_sunset_and_names_the_assistant() {
        let copilot = op("askCopilot");
        let sunset = sunset_ms(copilot).unwrap();
        assert_eq!(sunset, 1_790_726_400_000);
        assert_eq!(removed(copilot, sunset - 1), None);
        let gone = removed(copilot, sunset).unwrap();
        assert_eq!(gone.status, 410);
        assert_eq!(
            gone.body_json().unwrap(),
            json!({
                "errorMessage": "POST /v1/ai/copilot/ask was removed on Wed, 30 Sep 2026 00:00:00 GMT; use POST /v1/ai/assistant/ask.",
                "errorCode": "ENDPOINT_REMOVED",
            })
        );
        assert_eq!(
            gone.headers,
            deprecation_headers(copilot, Reply::empty(200)).headers
        );
        // Operations without a removal date are never removed.
        assert_eq!(removed(op("askAssistant"), i64::MAX), None);
    }

    #[test]
    fn deprecation_headers_come_from_the_operation_table() {
        let headers = deprecation_headers(op("askCopilot"), Reply::empty(200)).headers;
        assert_eq!(
            headers,
            [
                ("Deprecation".to_string(), "true".to_string()),
                (
                    "Sunset".to_string(),
                    "Wed, 30 Sep 2026 00:00:00 GMT".to_string()
                ),
                (
                    "Link".to_string(),
                    "</v1/ai/assistant/ask>; rel=\"successor-version\"".to_string()
                ),
            ]
        );
        assert!(
            deprecation_headers(op("whoami"), Reply::empty(200))
                .headers
                .is_empty()
        );
    }

    #[test]
    fn method_not_allowed_lists_the_paths_methods_in_allow_and_a_general_body() {
        let reply = method_not_allowed("DELETE", "/v1/audit/jobs/j1", &["GET"]);
        assert_eq!(reply.status, 405);
        assert_eq!(reply.headers, [("Allow".to_string(), "GET".to_string())]);
        assert_eq!(
            reply.body_json().unwrap(),
            json!({"Errors": [{
                "description": "DELETE is not a method of /v1/audit/jobs/j1; it has GET",
                "code": "METHOD_NOT_ALLOWED",
            }]})
        );
        let two = method_not_allowed("PATCH", "/v1/webhooks/w1", &["DELETE", "GET", "PUT"]);
        assert_eq!(two.headers[0].1, "DELETE, GET, PUT");
    }

    #[test]
    fn undocumented_statuses_fall_back() {
        // getAssistantStatus documents no 403 (its 400 is for a malformed `includeCitations`).
        assert_eq!(error(op("getAssistantStatus"), 403, "x", "y").status, 400);
        assert_eq!(error(op("askDocument"), 403, "x", "y").status, 400);
    }
}
