//! What the reference requires of a request that the spec cannot say, checked by the policy
//! before anything is sent: so every public path to an operation (the area handles, the
//! generated client behind `Client::sdk`, requests built by hand) is checked the same way.
//!
//! | operation | checks |
//! |---|---|
//! | `createWebhook`, `updateWebhook` | `url` is `https://` with a host (or `http://` to a loopback host, for sandboxes), `eventType` not empty and every entry an event name or wildcard of the reference, `path` at most 100 absolute folder paths |
//! | `askAgent` | `question` not blank, at most 35,000 characters; no key named twice in an object |
//! | `askDocument`, `askAssistant`, `askCopilot`, `askKnowledgeBase` | `question` not blank; no key named twice in an object |
//! | `summarizeDocument` | no key named twice in an object |
//! | `create<Kind>Audit` | [`AuditRequest::validate`](crate::audit::AuditRequest::validate): dates, `date_end` after `date_start`, the kind's required filters |
//! | `listEventsV1`, `listEventsV2` | `count` in 1..=100, no empty `type` entry |
//! | `hybridSearch` | `query` 3 to 250 characters, `semanticWeight` 0 to 1, `limit` 1 to 1,000, `page` at least 0, `size` at least 1 (the spec's bounds: the platform's clients keep them) |

#[cfg(feature = "audit")]
use crate::audit_request::AuditRequest;
use crate::error::{Error, InputError};
use crate::loopback::is_loopback;
#[cfg(feature = "webhooks")]
use crate::webhook::EventFilter;
#[cfg(feature = "webhooks")]
use crate::webhook::registration::MAX_PATHS;

use pubapi_sdk::limits;

/// The longest question an agent accepts, in characters (re-exported as
/// [`crate::ai::MAX_QUESTION_CHARS`]): the spec's `maxLength` of `AgentAskRequest.question`.
pub const MAX_QUESTION_CHARS: usize = limits::AGENT_ASK_REQUEST_QUESTION_MAX_LENGTH;

/// The smallest events page (`count`): the spec's `minimum` of `EventsCount`.
const MIN_EVENTS_COUNT: u64 = {
    assert!(limits::EVENTS_COUNT_MINIMUM >= 0);
    limits::EVENTS_COUNT_MINIMUM as u64
};

/// The largest events page (`count`), also the default (see
/// [`crate::events::EventQuery::MAX_COUNT`]): the spec's `maximum` of `EventsCount`.
pub(crate) const MAX_EVENTS_COUNT: u8 = {
    assert!(limits::EVENTS_COUNT_MAXIMUM > 0 && limits::EVENTS_COUNT_MAXIMUM <= u8::MAX as i64);
    limits::EVENTS_COUNT_MAXIMUM as u8
};

use pubapi_sdk::operations::Operation;
use serde_json::Value;

/// A field of the request and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The field, as the reference names it.
    pub(crate) field: &'static str,
    /// What is wrong with it.
    pub(crate) problem: String,
}

fn refuse(field: &'static str, problem: impl Into<String>) -> Result<(), Violation> {
    Err(Violation {
        field,
        problem: problem.into(),
    })
}

/// Checks `request` for `operation`; operations without rules pass.
pub(crate) fn check(operation: &Operation, request: &reqwest::Request) -> Result<(), Violation> {
    let body = || {
        request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
            .unwrap_or(Value::Null)
    };
    use pubapi_sdk::operations::id;
    match operation.id {
        #[cfg(feature = "webhooks")]
        id::CREATE_WEBHOOK | id::UPDATE_WEBHOOK => webhook(&body()),
        id::ASK_AGENT => {
            no_key_twice(request)?;
            question(&body(), Some(MAX_QUESTION_CHARS))
        }
        id::ASK_DOCUMENT | id::ASK_ASSISTANT | id::ASK_COPILOT | id::ASK_KNOWLEDGE_BASE => {
            no_key_twice(request)?;
            question(&body(), None)
        }
        id::SUMMARIZE_DOCUMENT => no_key_twice(request),
        id::LIST_EVENTS_V1 | id::LIST_EVENTS_V2 => events_query(request.url()),
        id::HYBRID_SEARCH => hybrid_search(&body()),
        #[cfg(feature = "audit")]
        id if pubapi_sdk::audit_kinds::by_operation(id).is_some() => {
            let bytes = request.body().and_then(reqwest::Body::as_bytes);
            match bytes.and_then(|bytes| AuditRequest::from_body(id, bytes)) {
                Some(Ok(report)) => audit(&report),
                // Not a body of this kind: the server says what is wrong with it.
                Some(Err(_)) | None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The webhook URL rule alone (also used by `Registration`).
pub(crate) fn webhook_url(url: &str) -> Result<(), Violation> {
    let parsed = match reqwest::Url::parse(url) {
        Ok(parsed) => parsed,
        Err(e) => return refuse("url", format!("{url:?} is not a URL: {e}")),
    };
    let has_host = parsed.host_str().is_some_and(|h| !h.is_empty());
    match parsed.scheme() {
        "https" if has_host => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        _ => refuse(
            "url",
            format!(
                "{url:?} is not an https:// URL (the platform delivers only over HTTPS; \
                 http:// is accepted for loopback sandboxes)"
            ),
        ),
    }
}

#[cfg(feature = "webhooks")]
fn webhook(body: &Value) -> Result<(), Violation> {
    if let Some(url) = body.get("url").and_then(Value::as_str) {
        webhook_url(url)?;
    }
    if let Some(events) = body.get("eventType").and_then(Value::as_array) {
        if events.is_empty() {
            return refuse("eventType", "at least one event is required when given");
        }
        for entry in events {
            let text = entry.as_str().unwrap_or_default();
            if let Err(e) = EventFilter::parse(text) {
                return refuse("eventType", format!("{text:?}: {e}"));
            }
        }
    }
    if let Some(paths) = body.get("path").and_then(Value::as_str) {
        let paths: Vec<&str> = paths.split(',').collect();
        if paths.len() > MAX_PATHS {
            return refuse(
                "path",
                format!("{} paths, at most {MAX_PATHS}", paths.len()),
            );
        }
        if let Some(bad) = paths
            .iter()
            .find(|p| !p.starts_with('/') || p.chars().any(char::is_control))
        {
            return refuse("path", format!("{bad:?} is not an absolute folder path"));
        }
    }
    Ok(())
}

/// The AI asks' open objects (`AgentAskRequest`, `ChatMessage`, `SelectedFile`,
/// `ModelDetails`) send the fields the reference does not name from their `extra` map, next
/// to their named fields: a key of `extra` that is also set as a field would be sent twice,
/// and which of the two the platform reads is not said. (An agent ask's `chatHistory` is
/// free JSON: a message turned into a `Value` before it is put there keeps one of the two,
/// `extra`'s, with nothing left to find here. A body nested deeper than `serde_json` reads,
/// 128 levels, is not walked past that depth.)
fn no_key_twice(request: &reqwest::Request) -> Result<(), Violation> {
    let Some(bytes) = request.body().and_then(reqwest::Body::as_bytes) else {
        return Ok(());
    };
    match twice_named_key(bytes) {
        Some(key) => refuse(
            "extra",
            format!(
                "the body names {key:?} twice in one object: a key of `extra` that is also \
                 a field of its own (set it there, once)"
            ),
        ),
        None => Ok(()),
    }
}

/// The first key that some object of the JSON text `bytes` names twice, at any depth; `None`
/// for text that is not JSON (the server says what is wrong with it).
fn twice_named_key(bytes: &[u8]) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    use std::collections::HashSet;

    /// Walks one value, noting the first key named twice.
    #[derive(Clone, Copy)]
    struct Walk<'a>(&'a RefCell<Option<String>>);

    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !keys.insert(key.clone()) {
                    *self.0.borrow_mut() = Some(key);
                    return Err(A::Error::custom("a key named twice"));
                }
                map.next_value_seed(self)?;
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element_seed(self)?.is_some() {}
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    }

    let found = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    // A body that is not JSON stops the walk: not this check's to refuse.
    let _ = Walk(&found).deserialize(&mut deserializer);
    found.into_inner()
}

fn question(body: &Value, max_chars: Option<usize>) -> Result<(), Violation> {
    match body.get("question").and_then(Value::as_str) {
        Some(question) => question_text(question, max_chars),
        None => Ok(()),
    }
}

/// The question rule alone (also used by `Agents::ask`): not blank, at most `max_chars`
/// characters where the reference gives a limit.
pub(crate) fn question_text(question: &str, max_chars: Option<usize>) -> Result<(), Violation> {
    if question.trim().is_empty() {
        return refuse("question", "is required (it is empty or blank)");
    }
    let chars = question.chars().count();
    match max_chars {
        Some(max) if chars > max => {
            refuse("question", format!("{chars} characters, at most {max}"))
        }
        _ => Ok(()),
    }
}

/// The bounds of a hybrid search the spec writes (the platform's clients keep them; a search
/// outside them costs one of the day's AI calls for a 400). A field of another JSON type is
/// the server's to refuse.
fn hybrid_search(body: &Value) -> Result<(), Violation> {
    if let Some(query) = body.get("query").and_then(Value::as_str) {
        let (min, max) = (
            limits::HYBRID_SEARCH_REQUEST_QUERY_MIN_CHARS,
            limits::HYBRID_SEARCH_REQUEST_QUERY_MAX_CHARS,
        );
        let chars = query.chars().count();
        if !(min..=max).contains(&chars) {
            return refuse(
                "query",
                format!("{chars} characters, outside {min} to {max}"),
            );
        }
    }
    if let Some(weight) = body.get("semanticWeight").and_then(Value::as_f64) {
        let (min, max) = (
            limits::HYBRID_SEARCH_REQUEST_SEMANTIC_WEIGHT_MINIMUM,
            limits::HYBRID_SEARCH_REQUEST_SEMANTIC_WEIGHT_MAXIMUM,
        );
        if !(min..=max).contains(&weight) {
            return refuse(
                "semanticWeight",
                format!("{weight} is outside {min} to {max}"),
            );
        }
    }
    let integers = [
        (
            "limit",
            limits::HYBRID_SEARCH_REQUEST_LIMIT_MINIMUM,
            limits::HYBRID_SEARCH_REQUEST_LIMIT_MAXIMUM,
        ),
        (
            "page",
            limits::HYBRID_SEARCH_REQUEST_PAGE_MINIMUM,
            limits::HYBRID_SEARCH_REQUEST_PAGE_MAXIMUM,
        ),
        (
            "size",
            limits::HYBRID_SEARCH_REQUEST_SIZE_MINIMUM,
            limits::HYBRID_SEARCH_REQUEST_SIZE_MAXIMUM,
        ),
    ];
    for (field, min, max) in integers {
        let Some(value) = body.get(field).filter(|v| v.is_number()) else {
            continue;
        };
        // A number past what an `i64` holds is past the bound too.
        let within = value.as_i64().is_some_and(|n| (min..=max).contains(&n));
        if !within {
            let problem = match value.as_i64() {
                None if value.as_f64().is_some_and(|n| n.fract() != 0.0) => {
                    format!("{value} is not a whole number")
                }
                Some(_) if max == i64::MAX => format!("{value} is below {min}"),
                _ => format!("{value} is outside {min} to {max}"),
            };
            return refuse(field, problem);
        }
    }
    Ok(())
}

fn events_query(url: &reqwest::Url) -> Result<(), Violation> {
    for (name, value) in url.query_pairs() {
        match &*name {
            "count" => match value.parse::<u64>() {
                Ok(count) if (MIN_EVENTS_COUNT..=u64::from(MAX_EVENTS_COUNT)).contains(&count) => {}
                _ => {
                    return refuse(
                        "count",
                        format!("{value} is outside {MIN_EVENTS_COUNT}..={MAX_EVENTS_COUNT}"),
                    );
                }
            },
            "type" if value.split('|').any(str::is_empty) => {
                return refuse("type", format!("{value:?} has an empty event type"));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(feature = "audit")]
fn audit(report: &AuditRequest) -> Result<(), Violation> {
    match report.validate() {
        Ok(()) => Ok(()),
        Err(Error::InvalidInput(InputError::Invalid { field, problem })) => {
            Err(Violation { field, problem })
        }
        Err(other) => refuse("request", other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(id: &str) -> &'static Operation {
        pubapi_sdk::operations::ALL
            .iter()
            .find(|op| op.id == id)
            .unwrap()
    }

    fn post(body: Value) -> reqwest::Request {
        let mut request = reqwest::Request::new(
            reqwest::Method::POST,
            "https://acme.example.com/pubapi/x".parse().unwrap(),
        );
        *request.body_mut() = Some(body.to_string().into());
        request
    }

    /// A POST of `text` as it is (a `Value` cannot hold a key twice).
    fn post_text(text: &'static str) -> reqwest::Request {
        let mut request = post(Value::Null);
        *request.body_mut() = Some(text.into());
        request
    }

    fn get(query: &str) -> reqwest::Request {
        reqwest::Request::new(
            reqwest::Method::GET,
            format!("https://acme.example.com/pubapi/v2/events?{query}")
                .parse()
                .unwrap(),
        )
    }

    #[test]
    fn each_rule_refuses_naming_its_field() {
        let cases = [
            (
                "createWebhook",
                post(json!({"url": "http://hooks.example.com/in"})),
                Some("url"),
            ),
            (
                "createWebhook",
                post(json!({"url": "https://hooks.example.com/in"})),
                None,
            ),
            (
                "createWebhook",
                post(json!({"url": "http://127.0.0.1:9000/in"})),
                None,
            ),
            (
                "updateWebhook",
                post(json!({"url": "ftp://x.example.com"})),
                Some("url"),
            ),
            (
                "createWebhook",
                post(json!({"url": "https://h.example.com", "eventType": []})),
                Some("eventType"),
            ),
            (
                "createWebhook",
                post(json!({"url": "https://h.example.com", "eventType": ["fs:*", "group:*"]})),
                Some("eventType"),
            ),
            (
                "createWebhook",
                post(
                    json!({"url": "https://h.example.com", "eventType": ["fs:add_file"], "path": "/A,/B"}),
                ),
                None,
            ),
            (
                "createWebhook",
                post(json!({"url": "https://h.example.com", "path": "/A,B"})),
                Some("path"),
            ),
            (
                "askAgent",
                post(json!({"question": " \n"})),
                Some("question"),
            ),
            (
                "askAgent",
                post(json!({"question": "x".repeat(35_001)})),
                Some("question"),
            ),
            (
                "askAgent",
                post(json!({"question": "x".repeat(35_000)})),
                None,
            ),
            (
                "askKnowledgeBase",
                post(json!({"question": ""})),
                Some("question"),
            ),
            (
                "askAgent",
                post_text(r#"{"question": "q", "instructions": "a", "instructions": "b"}"#),
                Some("extra"),
            ),
            (
                "askAssistant",
                post_text(
                    r#"{"question": "q", "modelDetails": {"name": "a", "version": "1", "name": "b"}}"#,
                ),
                Some("extra"),
            ),
            (
                "askAssistant",
                post_text(
                    r#"{"question": "q", "chatHistory": {"messages": [{"role": "user"}, {"role": "user"}]}}"#,
                ),
                None,
            ),
            (
                "summarizeDocument",
                post_text(r#"{"chatHistory": {"messages": [{"role": "user", "role": "x"}]}}"#),
                Some("extra"),
            ),
            (
                "askAssistant",
                post(json!({"question": "x".repeat(40_000)})),
                None,
            ),
            (
                "createLoginsAudit",
                post(
                    json!({"format": "json", "date_start": "2026-02-01", "date_end": "2026-01-01", "events": ["logins"]}),
                ),
                Some("date_end"),
            ),
            (
                "createLoginsAudit",
                post(
                    json!({"format": "json", "date_start": "2026-01-01", "date_end": "2026-02-01", "events": ["logins"]}),
                ),
                None,
            ),
            (
                "createFilesAudit",
                post(
                    json!({"format": "json", "date_start": "2026-01-01", "date_end": "2026-02-01"}),
                ),
                Some("folders"),
            ),
            (
                "createUsersAudit",
                post(
                    json!({"format": "json", "date_start": "2026-02-28", "date_end": "2026-02-01"}),
                ),
                Some("date_end"),
            ),
            // A day the spec's date pattern refuses does not decode as the typed body: the
            // server says what is wrong with it.
            (
                "createUsersAudit",
                post(
                    json!({"format": "json", "date_start": "2026-02-30", "date_end": "2026-03-01"}),
                ),
                None,
            ),
            ("listEventsV2", get("id=0&count=101"), Some("count")),
            ("listEventsV2", get("id=0&count=0"), Some("count")),
            ("listEventsV1", get("id=0&count=100&type=note"), None),
            ("listEventsV2", get("id=0&type=note%7C"), Some("type")),
            ("whoami", get(""), None),
            ("hybridSearch", post(json!({"query": "ab"})), Some("query")),
            ("hybridSearch", post(json!({"query": "abc"})), None),
            (
                "hybridSearch",
                post(json!({"query": "é".repeat(250)})),
                None,
            ),
            (
                "hybridSearch",
                post(json!({"query": "x".repeat(251)})),
                Some("query"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "semanticWeight": 1.5})),
                Some("semanticWeight"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "semanticWeight": -0.1})),
                Some("semanticWeight"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "semanticWeight": 0, "limit": 1000, "page": 0})),
                None,
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "semanticWeight": 1.0, "limit": 1})),
                None,
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "limit": 1001})),
                Some("limit"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "limit": 0})),
                Some("limit"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "page": -1})),
                Some("page"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "size": 0})),
                Some("size"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "limit": 1e300})),
                Some("limit"),
            ),
            (
                "hybridSearch",
                post(json!({"query": "policy", "page": 1.5})),
                Some("page"),
            ),
        ];
        for (id, request, field) in cases {
            let result = check(op(id), &request);
            assert_eq!(
                result.as_ref().err().map(|r| r.field),
                field,
                "{id}: {result:?}"
            );
        }
    }

    /// What a hybrid search's refusal says: the value and the bound it misses.
    #[test]
    fn a_hybrid_search_refusal_names_the_value_and_the_bound() {
        let problem = |body: Value| check(op("hybridSearch"), &post(body)).unwrap_err().problem;
        for (body, said) in [
            (json!({"query": "ab"}), "2 characters, outside 3 to 250"),
            (
                json!({"query": "abc", "semanticWeight": 1.5}),
                "1.5 is outside 0 to 1",
            ),
            (
                json!({"query": "abc", "limit": 1001}),
                "1001 is outside 1 to 1000",
            ),
            (json!({"query": "abc", "page": -1}), "-1 is below 0"),
            (
                json!({"query": "abc", "page": 1.5}),
                "1.5 is not a whole number",
            ),
            (
                json!({"query": "abc", "size": 1e300}),
                "1e+300 is outside 1 to 9223372036854775807",
            ),
        ] {
            assert_eq!(problem(body.clone()), said, "{body}");
        }
    }
}
