//! Helpers shared by the wire conformance tests (`tests/wire_*.rs`, one file per area).
//!
//! Every test talks to a real socket: an httpmock server whose one catch-all mock records what
//! arrives and answers with a scripted [`Reply`]. [`Expect`] spells out the exact request an
//! operation must send (method, encoded path, raw query, every header, JSON body);
//! [`assert_errors`] walks the error statuses the reference documents for an operation, each
//! in the area's error format; [`assert_decoded!`] snapshots a decoded success body with ids
//! and times redacted, after [`assert_round_trip`] has shown that no field was lost. The shapes
//! that repeat from operation to operation are tables: [`request_tests!`] (one call, the exact
//! request), [`error_tests!`] (the documented errors), [`decoded!`] (one call's decoded success)
//! [`success!`] (that, round-tripped and snapshotted), [`forward_compat!`] (unknown fields
//! ignored) and [`answered!`] (one call's response and the count of requests), each row named
//! after its test. A test
//! that only needs one operation answered (not the exact request recorded) uses the typed mocks of
//! `pubapi-httpmock` instead (`server.get_audit_job(|when, then| ..)`).
//!
//! Test names follow `<operation>_<point>_<behaviour>` (the operation's generated method name,
//! then `request_full`, `request_minimal`, `success`, `errors` or `forward_compat`), or
//! `<operation>::<point>_<behaviour>` for tests a macro makes in a module per operation; the
//! coverage test in `wire_coverage.rs` relies on it and reads the names from each file's list
//! of tests (`wire/lists/<file>.snap`, checked against the test harness).

// Each test file uses a part of the helpers.
#![allow(dead_code, unused_macros)]

use httpmock::{HttpMockRequest, Mock, MockServer};
use pubapi_sdk::operations::{self, Operation};
use pubapi_sdk_ext::error::{ErrorFormat, ForbiddenReason};
use pubapi_sdk_ext::{ActAs, Budget, Client, Error, LimitClass, Limits, RetryConfig, SecretToken};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bearer token every test client sends.
pub const TOKEN: &str = "t";
/// The user impersonated by the views of the "full" request tests.
pub const BOB: &str = "bob";
/// The e-mail address impersonated where a test uses `X-Service-Act-As-Email`.
pub const BOB_EMAIL: &str = "bob@acme.example.com";
/// A path value that needs percent-encoding: a space, `+`, non-ASCII text, `#`, `?` and `%`
/// (a `/` or `\` is refused before sending: an id is one segment).
pub const AWKWARD_ID: &str = "v 1+\u{e9}#3?4%5";
/// [`AWKWARD_ID`] as one encoded path segment.
pub const AWKWARD_ID_ENCODED: &str = "v%201%2B%C3%A9%233%3F4%255";
/// The version of the reference the generated client announces in `api-version`.
pub const API_VERSION: &str = "1.3.4";

/// No pacing: the tests send a handful of requests as fast as they like.
const UNLIMITED: Limits = Limits {
    general: Budget::new(None, None),
    ai: Budget::new(None, None),
};

fn builder(server: &MockServer) -> pubapi_sdk_ext::ClientBuilder {
    Client::builder()
        .isolated_budget()
        .base_url(&server.url("/pubapi"))
        .token(SecretToken::try_from(TOKEN).expect("valid token"))
        .limits(UNLIMITED)
}

/// The client users hold, pointed at `server`, with the default retries and no pacing.
pub fn client(server: &MockServer) -> Client {
    builder(server).build().expect("client builds")
}

/// As [`client`], with one attempt per operation, so each error response is seen once.
pub fn single_attempt_client(server: &MockServer) -> Client {
    builder(server)
        .retry(RetryConfig::default().with_max_attempts(1))
        .build()
        .expect("client builds")
}

/// A view of [`client`] acting as [`BOB`] (`X-Service-Act-As`).
pub fn bob(server: &MockServer) -> Client {
    client(server).act_as(ActAs::username(BOB).expect("valid username"))
}

/// A view of [`client`] acting as [`BOB_EMAIL`] (`X-Service-Act-As-Email`).
pub fn bob_by_email(server: &MockServer) -> Client {
    client(server).act_as(ActAs::email(BOB_EMAIL).expect("valid e-mail address"))
}

// ------------------------------------------------------------------ replies

/// What the mock answers.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

impl Reply {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::status(status).body("application/json", body.to_string())
    }

    /// `status` without a body.
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: None,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body and its content type.
    pub fn body(self, content_type: &str, body: impl Into<String>) -> Reply {
        let mut reply = self.header("content-type", content_type);
        reply.body = Some(body.into());
        reply
    }
}

// ------------------------------------------------------------------ recording

/// The catch-all mock of one server: it records every request and answers with its reply.
pub struct Recorder<'a> {
    mock: Mock<'a>,
    seen: Arc<Mutex<Vec<HttpMockRequest>>>,
}

impl std::fmt::Debug for Recorder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("mock", &self.mock.id)
            .finish()
    }
}

/// Installs the catch-all mock on `server`.
pub async fn serve(server: &MockServer, reply: Reply) -> Recorder<'_> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mock = server
        .mock_async(move |when, then| {
            when.is_true(move |request: &HttpMockRequest| {
                sink.lock().unwrap().push(request.clone());
                true
            });
            let mut then = then.status(reply.status);
            for (name, value) in &reply.headers {
                then = then.header(name, value);
            }
            if let Some(body) = reply.body {
                then.body(body);
            }
        })
        .await;
    Recorder { mock, seen }
}

impl Recorder<'_> {
    /// The requests received so far, in order.
    pub async fn requests(&self) -> Vec<SeenRequest> {
        let seen: Vec<SeenRequest> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(SeenRequest::from)
            .collect();
        assert_eq!(
            self.mock.calls_async().await,
            seen.len(),
            "every request was recorded once"
        );
        seen
    }

    /// How many requests arrived.
    pub async fn calls(&self) -> usize {
        self.requests().await.len()
    }

    /// Asserts that exactly one request arrived and that it is exactly `expected`.
    pub async fn assert_only(&self, expected: Expect) {
        let seen = self.requests().await;
        assert_eq!(seen.len(), 1, "exactly one request: {seen:#?}");
        assert_eq!(seen[0], expected.0);
    }
}

/// A request as it arrived, reduced to what the client decides: `host` and `content-length`
/// are left out (they follow from the server and the body).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRequest {
    /// The method, upper case.
    pub method: String,
    /// The raw (still percent-encoded) path.
    pub path: String,
    /// The raw query string.
    pub query: Option<String>,
    /// Every header, names lower case; repeated headers are joined with ` | `.
    pub headers: BTreeMap<String, String>,
    /// The body.
    pub body: Body,
}

/// A request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// No body.
    Empty,
    /// A body that parses as JSON.
    Json(Value),
    /// Any other body.
    Text(String),
}

impl From<&HttpMockRequest> for SeenRequest {
    fn from(request: &HttpMockRequest) -> SeenRequest {
        let uri = request.uri();
        let mut headers = BTreeMap::<String, String>::new();
        for (name, value) in request.headers_vec() {
            let name = name.to_ascii_lowercase();
            if name == "host" || name == "content-length" {
                continue;
            }
            // A fresh id per call: its shape is checked, its value stands in as a placeholder.
            let value = &if name == "x-request-id" {
                request_id_placeholder(value)
            } else {
                value.clone()
            };
            headers
                .entry(name)
                .and_modify(|joined| {
                    joined.push_str(" | ");
                    joined.push_str(value);
                })
                .or_insert_with(|| value.clone());
        }
        let raw = request.body_ref();
        let body = if raw.is_empty() {
            Body::Empty
        } else {
            match serde_json::from_slice(raw) {
                Ok(value) => Body::Json(value),
                Err(_) => Body::Text(String::from_utf8_lossy(raw).into_owned()),
            }
        };
        SeenRequest {
            method: request.method_str().to_owned(),
            path: uri.path().to_owned(),
            query: uri.query().map(str::to_owned),
            headers,
            body,
        }
    }
}

/// What stands for a request id (36 characters, hex digits and dashes in the shape of a
/// UUID) in a [`SeenRequest`]; any other value is kept as sent, so the comparison fails.
fn request_id_placeholder(value: &str) -> String {
    let groups: Vec<usize> = value.split('-').map(str::len).collect();
    let shaped =
        groups == [8, 4, 4, 4, 12] && value.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit());
    if shaped {
        REQUEST_ID.to_owned()
    } else {
        value.to_owned()
    }
}

/// The placeholder of a well-formed request id.
const REQUEST_ID: &str = "<request id>";

/// The exact request an operation must send.
///
/// It starts with what every call carries: `authorization: Bearer t`, `accept:
/// application/json`, `api-version: 1.3.4`, the SDK's `user-agent` and a request id
/// (`x-request-id`); the builder methods add the rest.
#[derive(Debug, Clone)]
pub struct Expect(SeenRequest);

impl Expect {
    /// A `GET` of `path` (below the base URL, already percent-encoded).
    pub fn get(path: &str) -> Expect {
        Expect::new("GET", path)
    }

    /// A `POST` of `path`.
    pub fn post(path: &str) -> Expect {
        Expect::new("POST", path)
    }

    /// A `PUT` of `path`.
    pub fn put(path: &str) -> Expect {
        Expect::new("PUT", path)
    }

    /// A `DELETE` of `path`.
    pub fn delete(path: &str) -> Expect {
        Expect::new("DELETE", path)
    }

    fn new(method: &str, path: &str) -> Expect {
        let headers = [
            ("accept", "application/json"),
            ("api-version", API_VERSION),
            ("authorization", "Bearer t"),
            ("user-agent", pubapi_sdk_ext::client::USER_AGENT),
            ("x-request-id", REQUEST_ID),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
        Expect(SeenRequest {
            method: method.to_owned(),
            path: format!("/pubapi{path}"),
            query: None,
            headers,
            body: Body::Empty,
        })
    }

    /// The raw query string, exactly as sent.
    pub fn query(mut self, query: &str) -> Expect {
        self.0.query = Some(query.to_owned());
        self
    }

    /// A JSON body, sent with `content-type: application/json`.
    pub fn json(mut self, body: Value) -> Expect {
        self.0.body = Body::Json(body);
        self.header("content-type", "application/json")
    }

    /// `X-Service-Act-As: <username>`.
    pub fn act_as(self, username: &str) -> Expect {
        self.header("x-service-act-as", username)
    }

    /// `X-Service-Act-As-Email: <address>`.
    pub fn act_as_email(self, address: &str) -> Expect {
        self.header("x-service-act-as-email", address)
    }

    /// `accept: */*`: operations whose success has no body set no `accept` of their own, so
    /// the HTTP client's default goes out.
    pub fn accept_any(self) -> Expect {
        self.header("accept", "*/*")
    }

    /// Sets a header (replacing the default of that name).
    pub fn header(mut self, name: &str, value: &str) -> Expect {
        self.0.headers.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Leaves out one of the default headers.
    pub fn without_header(mut self, name: &str) -> Expect {
        self.0.headers.remove(name);
        self
    }
}

// ------------------------------------------------------------------ tables of tests

/// Tests that send one call and check the exact request it became, one row a test: its
/// name (and doc), the client that sends (a function of this module: `client`, `bob`,
/// `bob_by_email`), the [`Reply`], the call on the generated client up to `.send()` (the
/// closure's argument is `client.sdk()`) and the [`Expect`]ed request.
///
/// ```text
/// request_tests! {
///     /// No sort given, no query sent.
///     list_agents_request_minimal_sends_no_query:
///         client, Reply::json(200, &agents_body()),
///         |sdk| sdk.list_agents()
///         => Expect::get("/v1/ai/agents/list");
/// }
/// ```
macro_rules! request_tests {
    ($(
        $(#[$doc:meta])*
        $name:ident: $view:ident, $reply:expr, |$sdk:ident| $call:expr => $expect:expr;
    )*) => {$(
        $(#[$doc])*
        #[tokio::test]
        async fn $name() {
            let server = httpmock::MockServer::start_async().await;
            let seen = $crate::wire::serve(&server, $reply).await;
            let client = $crate::wire::$view(&server);
            let $sdk = client.sdk();
            $call.send().await.unwrap();
            seen.assert_only($expect).await;
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use request_tests;

/// The two request tests of an operation without parameters, a GET of `path` (whoami, the
/// events cursor, the webhooks list): through `view` ([`bob`] or [`bob_by_email`]) it sends
/// that view's impersonation header, and through [`client`] the path alone. Each test's name
/// (and doc) comes first, the view after the first; then the answer, the call on the
/// generated client up to `.send()`, and the path.
macro_rules! parameterless_get_tests {
    (@seen bob, $expect:expr) => {
        $expect.act_as($crate::wire::BOB)
    };
    (@seen bob_by_email, $expect:expr) => {
        $expect.act_as_email($crate::wire::BOB_EMAIL)
    };
    (
        $(#[$view_doc:meta])*
        $through_a_view:ident: $view:ident,
        $(#[$minimal_doc:meta])*
        $minimal:ident,
        $reply:expr, |$sdk:ident| $call:expr => $path:expr $(,)?
    ) => {
        $crate::wire::request_tests! {
            $(#[$view_doc])*
            $through_a_view: $view, $reply, |$sdk| $call
                => $crate::wire::parameterless_get_tests!(@seen $view, Expect::get($path));

            $(#[$minimal_doc])*
            $minimal: client, $reply, |$sdk| $call => Expect::get($path);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use parameterless_get_tests;

/// Tests of the documented error statuses of an operation ([`assert_errors`]), one row a
/// test: its name (and doc), the operation id, the statuses the reference documents and the
/// call on the generated client up to `.send()` (the closure's argument is `client.sdk()`).
macro_rules! error_tests {
    ($(
        $(#[$doc:meta])*
        $name:ident: $operation:expr, $statuses:expr, |$sdk:ident| $call:expr;
    )*) => {$(
        $(#[$doc])*
        #[tokio::test]
        async fn $name() {
            $crate::wire::assert_errors($operation, &$statuses, |client| async move {
                let $sdk = client.sdk();
                $call.send().await.map_err(pubapi_sdk_ext::Error::from).map(drop)
            })
            .await;
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use error_tests;

/// The decoded success of one call on the generated client (up to `.send()`; the closure's
/// argument is `client.sdk()`), sent by [`client`] to a server answering `reply`.
macro_rules! decoded {
    ($reply:expr, |$sdk:ident| $call:expr $(,)?) => {{
        let server = httpmock::MockServer::start_async().await;
        let _seen = $crate::wire::serve(&server, $reply).await;
        let client = $crate::wire::client(&server);
        let $sdk = client.sdk();
        $call.send().await.unwrap().into_inner()
    }};
}
#[allow(unused_imports)]
pub(crate) use decoded;

/// The decoded success of one call (as [`decoded!`]) answered with status 200 and `body`,
/// after checking that it serializes back to exactly `body` ([`assert_round_trip`]) and
/// snapshotting it ([`assert_decoded!`], named after the test); the test goes on with the
/// checks of its own fields.
macro_rules! success {
    ($body:expr, |$sdk:ident| $call:expr $(,)?) => {{
        let body: serde_json::Value = $body;
        let decoded = $crate::wire::decoded!($crate::wire::Reply::json(200, &body), |$sdk| $call);
        $crate::wire::assert_round_trip(&decoded, &body);
        $crate::wire::assert_decoded!(decoded);
        decoded
    }};
}
#[allow(unused_imports)]
pub(crate) use success;

/// The decoded success of one call (as [`decoded!`]) answered with status 200 and `known`
/// grown by an unknown field at each JSON pointer of `at` ([`with_unknown_fields`]), after
/// checking that it serializes back to exactly `known`: the unknown fields are ignored, and
/// nothing known is lost.
macro_rules! forward_compat {
    ($known:expr, $at:expr, |$sdk:ident| $call:expr $(,)?) => {{
        let known: &serde_json::Value = $known;
        let sent = $crate::wire::with_unknown_fields(known, $at);
        let decoded = $crate::wire::decoded!($crate::wire::Reply::json(200, &sent), |$sdk| $call);
        $crate::wire::assert_round_trip(&decoded, known);
        decoded
    }};
}
#[allow(unused_imports)]
pub(crate) use forward_compat;

/// One call on the generated client (up to `.send()`; the closure's argument is
/// `client.sdk()`), sent by `view` (a function of this module: `client`,
/// `single_attempt_client`, …) to a server answering `reply`: the response, unwrapped, and how
/// many requests arrived.
macro_rules! answered {
    ($view:ident, $reply:expr, |$sdk:ident| $call:expr $(,)?) => {{
        let server = httpmock::MockServer::start_async().await;
        let seen = $crate::wire::serve(&server, $reply).await;
        let client = $crate::wire::$view(&server);
        let $sdk = client.sdk();
        let response = $call.send().await.unwrap();
        (response, seen.calls().await)
    }};
}
#[allow(unused_imports)]
pub(crate) use answered;

/// Asserts an answer without content, as [`answered!`] gives it: its `status`, the empty body
/// the generated client decodes as `()`, and exactly one request sent.
#[track_caller]
pub fn assert_no_content(answered: (pubapi_sdk::ResponseValue<()>, usize), status: u16) {
    let (response, calls) = answered;
    assert_eq!(response.status(), status);
    let () = response.into_inner();
    assert_eq!(calls, 1);
}

// ------------------------------------------------------------------ success bodies

/// Asserts that `decoded`, serialized again, is exactly `body`: decoding kept every field the
/// body names, under its wire name and with its JSON type.
#[track_caller]
pub fn assert_round_trip<T: Serialize>(decoded: &T, body: &Value) {
    let again = serde_json::to_value(decoded).expect("decoded values serialize");
    assert_eq!(
        &again, body,
        "the decoded value, serialized again, differs from the body"
    );
}

/// The key added by [`with_unknown_fields`].
pub const UNKNOWN_FIELD: &str = "fieldFromTheFuture";

/// `body` with an unknown field (holding an object, an array, a number, `null`) added to the
/// objects at the JSON pointers `at` (`""` is the top level).
pub fn with_unknown_fields(body: &Value, at: &[&str]) -> Value {
    let mut extended = body.clone();
    for pointer in at {
        extended
            .pointer_mut(pointer)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{pointer:?} is an object of the body"))
            .insert(
                UNKNOWN_FIELD.to_owned(),
                json!({"nested": [1, "two", null, {"deeper": true}], "since": "1.4.0"}),
            );
    }
    extended
}

/// The keys whose values are ids in the bodies of the reference.
const ID_KEYS: &[&str] = &[
    "id",
    "agentId",
    "requestId",
    "conversationId",
    "executionId",
    "entryId",
    "objectId",
    "chunkId",
    "folderId",
    "userId",
    "avatarEosObjectId",
    "webhookId",
    "clientId",
    "targetFolderId",
    "latest_id",
    "oldest_id",
    "latest_event_id",
    "oldest_event_id",
    "target_id",
    "target_group_id",
    "source_id",
    "source_group_id",
    "user_id",
    "actor_id",
    "assignee_id",
    "assigner_id",
    "performed_by_id",
    "subject_id",
];

/// The keys whose values are times.
const TIME_KEYS: &[&str] = &[
    "lastUpdated",
    "timestamp",
    "createdOn",
    "lastProcessedAt",
    "expires",
    "time",
    "date_and_time",
];

/// insta settings of the success snapshots: sorted maps, ids and times redacted.
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_sort_maps(true);
    settings.set_omit_expression(true);
    for key in ID_KEYS {
        settings.add_redaction(&format!(".**.{key}"), "[id]");
    }
    for key in TIME_KEYS {
        settings.add_redaction(&format!(".**.{key}"), "[time]");
    }
    settings
}

/// Snapshots a decoded value as JSON, named after the test, with [`snapshot_settings`].
macro_rules! assert_decoded {
    ($value:expr) => {
        $crate::wire::snapshot_settings().bind(|| insta::assert_json_snapshot!($value))
    };
}
pub(crate) use assert_decoded;

// ------------------------------------------------------------------ errors

/// The variant of [`Error`] a response became, with the values a caller acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// [`Error::Unauthorized`].
    Unauthorized,
    /// [`Error::Forbidden`] with its reason.
    Forbidden(ForbiddenReason),
    /// [`Error::NotFound`].
    NotFound,
    /// [`Error::Conflict`].
    Conflict,
    /// [`Error::InvalidRequest`].
    InvalidRequest,
    /// [`Error::Throttled`] with its `Retry-After`.
    Throttled(Option<Duration>),
    /// [`Error::QuotaExhausted`] with its class and reset delay.
    QuotaExhausted(Option<LimitClass>, Option<Duration>),
    /// [`Error::Server`].
    Server,
    /// [`Error::UnexpectedStatus`] with its status.
    UnexpectedStatus(u16),
    /// Anything else, as displayed.
    Other(String),
}

/// The [`Kind`] of `error`.
pub fn kind(error: &Error) -> Kind {
    match error {
        Error::Unauthorized(_) => Kind::Unauthorized,
        Error::Forbidden { reason, .. } => Kind::Forbidden(*reason),
        Error::NotFound(_) => Kind::NotFound,
        Error::Conflict(_) => Kind::Conflict,
        Error::InvalidRequest(_) => Kind::InvalidRequest,
        Error::Throttled { retry_after, .. } => Kind::Throttled(*retry_after),
        Error::QuotaExhausted {
            class, resets_in, ..
        } => Kind::QuotaExhausted(*class, *resets_in),
        Error::Server(_) => Kind::Server,
        Error::UnexpectedStatus(e) => Kind::UnexpectedStatus(e.status()),
        other => Kind::Other(format!("{other:?}")),
    }
}

/// The error families of the reference: which body format an area uses and what its 403 and
/// throttling look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// AI endpoints; `feature_gated` for agents (403 when the feature is off).
    Ai { feature_gated: bool },
    /// Webhooks: `{code, message, details}`; throttled with 403.
    Webhooks,
    /// whoami: webhooks-format 401, general-API throttle 403.
    Identity,
    /// Audit: `{Errors: [...]}`; 403 for users who may not run reports; 429.
    Audit,
    /// Events: the lists' 400 in the general format (the spec's choice; the reference shows
    /// no events error body); 401 and the general-API throttle 403 without a body.
    Events,
}

impl Family {
    fn of(operation: &Operation) -> Family {
        match operation.tag {
            "agents" => Family::Ai {
                feature_gated: true,
            },
            "document-ai" | "assistant" | "copilot" | "knowledge-bases" | "hybrid-search" => {
                Family::Ai {
                    feature_gated: false,
                }
            }
            "webhooks" => Family::Webhooks,
            "identity" => Family::Identity,
            "audit" => Family::Audit,
            "events" => Family::Events,
            other => panic!("no error family for tag {other}"),
        }
    }

    fn format(self) -> ErrorFormat {
        match self {
            Family::Ai { .. } => ErrorFormat::Ai,
            Family::Webhooks | Family::Identity => ErrorFormat::Webhooks,
            Family::Audit | Family::Events => ErrorFormat::General,
        }
    }

    fn class(self) -> LimitClass {
        match self {
            Family::Ai { .. } => LimitClass::Ai,
            _ => LimitClass::General,
        }
    }
}

/// One error response and what it must become.
#[derive(Debug, Clone)]
struct Case {
    label: String,
    status: u16,
    reply: Reply,
    kind: Kind,
    code: Option<&'static str>,
    message: Option<&'static str>,
    details: Option<&'static str>,
    messages: usize,
    gateway: Option<&'static str>,
}

impl Case {
    fn new(label: &str, status: u16, kind: Kind) -> Case {
        Case {
            label: label.to_owned(),
            status,
            reply: Reply::status(status),
            kind,
            code: None,
            message: None,
            details: None,
            messages: 0,
            gateway: None,
        }
    }

    fn ai(status: u16, kind: Kind, code: &'static str, message: &'static str) -> Case {
        let mut case = Case::new(code, status, kind);
        case.reply = Reply::json(status, &json!({"errorMessage": message, "errorCode": code}));
        (case.code, case.message) = (Some(code), Some(message));
        case
    }

    fn webhooks(status: u16, kind: Kind, code: &'static str, message: &'static str) -> Case {
        let mut case = Case::new(code, status, kind);
        case.reply = Reply::json(status, &json!({"code": code, "message": message}));
        (case.code, case.message) = (Some(code), Some(message));
        case
    }

    fn webhooks_with_details(
        status: u16,
        kind: Kind,
        code: &'static str,
        message: &'static str,
        details: &'static str,
    ) -> Case {
        let mut case = Case::webhooks(status, kind, code, message);
        case.reply = Reply::json(
            status,
            &json!({"code": code, "message": message, "details": details}),
        );
        case.details = Some(details);
        case
    }

    /// A general-format body with one entry per problem.
    fn general(status: u16, kind: Kind, problems: &[(&'static str, &'static str)]) -> Case {
        let mut case = Case::new(problems[0].0, status, kind);
        let errors: Vec<Value> = problems
            .iter()
            .map(|(code, description)| json!({"description": description, "code": code}))
            .collect();
        case.reply = Reply::json(status, &json!({ "Errors": errors }));
        (case.code, case.message) = (Some(problems[0].0), Some(problems[0].1));
        case.messages = problems.len();
        case
    }

    /// The gateway's throttle answer: no body, `Retry-After` and `X-Gateway-Error-Code`.
    fn throttle(status: u16, gateway: &'static str, retry_after: u64, kind: Kind) -> Case {
        let mut case = Case::new(
            &format!("{gateway} retry-after {retry_after}"),
            status,
            kind,
        );
        case.reply = Reply::status(status)
            .header("retry-after", &retry_after.to_string())
            .header("x-gateway-error-code", gateway);
        case.gateway = Some(gateway);
        case
    }

    fn no_body(status: u16, kind: Kind) -> Case {
        Case::new("no body", status, kind)
    }
}

const OVER_QPS: &str = "ERR_403_DEVELOPER_OVER_QPS";
const OVER_RATE: &str = "ERR_403_DEVELOPER_OVER_RATE";

fn secs(n: u64) -> Option<Duration> {
    Some(Duration::from_secs(n))
}

/// The responses the reference describes for `status` in `family`; `has_body` says whether the
/// spec documents a body for it.
fn cases(family: Family, status: u16, has_body: bool) -> Vec<Case> {
    let class = Some(family.class());
    let throttles = |status| {
        vec![
            Case::throttle(status, OVER_QPS, 1, Kind::Throttled(secs(1))),
            Case::throttle(
                status,
                OVER_RATE,
                3600,
                Kind::QuotaExhausted(class, secs(3600)),
            ),
        ]
    };
    match (family, status) {
        (Family::Ai { .. }, 400) => vec![Case::ai(
            400,
            Kind::InvalidRequest,
            "QUESTION_MANDATORY",
            "Question is mandatory",
        )],
        (Family::Ai { .. }, 401) => vec![Case::ai(
            401,
            Kind::Unauthorized,
            "UNAUTHORIZED",
            "Invalid or expired token",
        )],
        (Family::Ai { feature_gated }, 403) => {
            let reason = if feature_gated {
                ForbiddenReason::FeatureNotEnabled
            } else {
                ForbiddenReason::Other
            };
            vec![Case::ai(
                403,
                Kind::Forbidden(reason),
                "FORBIDDEN",
                "The agents feature is not enabled for the domain",
            )]
        }
        (Family::Ai { .. }, 404) => vec![Case::ai(404, Kind::NotFound, "NOT_FOUND", "Not found")],
        // The copilot after its removal: no error kind of its own, the status and the AI body
        // are kept.
        (Family::Ai { .. }, 410) => vec![Case::ai(
            410,
            Kind::UnexpectedStatus(410),
            "ENDPOINT_REMOVED",
            "POST /v1/ai/copilot/ask was removed; use POST /v1/ai/assistant/ask.",
        )],
        (Family::Ai { .. }, 429) => {
            let mut cases = vec![
                Case::throttle(429, OVER_QPS, 30, Kind::Throttled(secs(30))),
                Case::throttle(
                    429,
                    OVER_RATE,
                    3600,
                    Kind::QuotaExhausted(class, secs(3600)),
                ),
            ];
            cases.push(Case::no_body(429, Kind::Throttled(None)));
            cases
        }
        (Family::Ai { .. }, 500) if has_body => vec![Case::ai(
            500,
            Kind::Server,
            "INTERNAL_SERVER_ERROR",
            "Unexpected error",
        )],
        (Family::Ai { .. }, 500) => vec![Case::no_body(500, Kind::Server)],
        (Family::Webhooks, 400) => vec![
            Case::webhooks_with_details(
                400,
                Kind::InvalidRequest,
                "request_schema_error",
                "Invalid request",
                "eventType[0]: fs:unknown is not an event type",
            ),
            Case::webhooks(
                400,
                Kind::InvalidRequest,
                "hook_invalid_url",
                "url is not a valid HTTPS URL",
            ),
        ],
        (Family::Webhooks | Family::Identity, 401) => vec![Case::webhooks(
            401,
            Kind::Unauthorized,
            "gateway_error_forbidden_not_authorized",
            "Token invalid or expired",
        )],
        (Family::Webhooks, 403) => {
            let mut cases = vec![Case::webhooks(
                403,
                Kind::Forbidden(ForbiddenReason::MissingScope),
                "missing_scope_error",
                "The token lacks the Service.webhooks scope",
            )];
            cases.extend(throttles(403));
            cases
        }
        (Family::Webhooks, 404) => vec![Case::webhooks(
            404,
            Kind::NotFound,
            "hook_not_found_error",
            "Webhook not found",
        )],
        (Family::Webhooks, 409) => vec![Case::webhooks(
            409,
            Kind::Conflict,
            "hook_quota_error",
            "Webhook quota reached",
        )],
        (Family::Webhooks, 500) => vec![Case::no_body(500, Kind::Server)],
        (Family::Identity | Family::Events, 403) => throttles(403),
        (Family::Events, 401) => vec![Case::no_body(401, Kind::Unauthorized)],
        (Family::Events, 400) => vec![Case::general(
            400,
            Kind::InvalidRequest,
            &[
                ("MISSING_FIELD", "`id` is required"),
                (
                    "INVALID_VALUE",
                    "`count` must be an integer from 1 to 100, not \"500\"",
                ),
            ],
        )],
        (Family::Audit, 400) => vec![Case::general(
            400,
            Kind::InvalidRequest,
            &[
                ("MISSING_FIELD", "format is required"),
                ("INVALID_VALUE", "date_end must be after date_start"),
            ],
        )],
        (Family::Audit, 401) => vec![Case::general(
            401,
            Kind::Unauthorized,
            &[("UNAUTHORIZED", "Invalid or expired token")],
        )],
        (Family::Audit, 403) => {
            let mut cases = vec![Case::general(
                403,
                Kind::Forbidden(ForbiddenReason::MayNotRunReports),
                &[("FORBIDDEN", "The user may not run reports")],
            )];
            cases.extend(throttles(403));
            cases
        }
        (Family::Audit, 404) => vec![Case::general(
            404,
            Kind::NotFound,
            &[("NOT_FOUND", "Report or job not found")],
        )],
        (Family::Audit, 429) => vec![{
            let mut case = Case::new("retry-after 120", 429, Kind::Throttled(secs(120)));
            case.reply = Reply::status(429).header("retry-after", "120");
            case
        }],
        (family, status) => panic!("the reference describes no {status} for {family:?}"),
    }
}

/// The error statuses (4xx and 5xx) the spec documents for `operation`, with whether each
/// has a body.
fn documented_errors(operation: &Operation) -> Vec<(u16, bool)> {
    operation
        .responses
        .iter()
        .filter_map(|r| {
            let status: u16 = r.status.parse().ok()?;
            (status >= 400).then_some((status, !r.content_types.is_empty()))
        })
        .collect()
}

/// Asserts that `path` (raw, below `/pubapi`) fills the path template of `operation`.
#[track_caller]
fn assert_path_fits(operation: &Operation, path: &str) {
    let path = path.strip_prefix("/pubapi").expect("below the base URL");
    let template: Vec<&str> = operation.path.split('/').collect();
    let segments: Vec<&str> = path.split('/').collect();
    let fits = template.len() == segments.len()
        && template.iter().zip(&segments).all(|(t, s)| {
            if t.starts_with('{') {
                !s.is_empty()
            } else {
                t == s
            }
        });
    assert!(
        fits,
        "{path} is not a path of {} ({})",
        operation.id, operation.path
    );
}

/// For every error status the reference documents for `operation_id` (listed in `statuses`,
/// which must be exactly the documented ones), answers `call` with each response the area's
/// error format gives for it, once, and checks the typed error: its variant, status, code,
/// message(s), details, throttle header and raw body.
pub async fn assert_errors<F, Fut>(operation_id: &str, statuses: &[u16], call: F)
where
    F: Fn(Client) -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    let operation = operations::find(operation_id).expect("an operation of the spec");
    let documented = documented_errors(operation);
    let documented_statuses: Vec<u16> = documented.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses, documented_statuses,
        "{operation_id}: the error statuses of the reference"
    );
    let family = Family::of(operation);
    for (status, has_body) in documented {
        for case in cases(family, status, has_body) {
            let context = format!("{operation_id} {status} {}", case.label);
            let server = MockServer::start_async().await;
            let recorder = serve(&server, case.reply.clone()).await;
            let error = call(single_attempt_client(&server))
                .await
                .expect_err(&context);
            let seen = recorder.requests().await;
            assert_eq!(seen.len(), 1, "{context}: one attempt, no retry");
            assert_eq!(seen[0].method, operation.method, "{context}");
            assert_path_fits(operation, &seen[0].path);

            assert_eq!(kind(&error), case.kind, "{context}: {error}");
            assert_eq!(error.status(), Some(status), "{context}");
            let api = error.api_error().expect("built from the response");
            assert_eq!(api.format(), family.format(), "{context}: format");
            assert_eq!(api.code(), case.code, "{context}: code");
            assert_eq!(api.message(), case.message, "{context}: message");
            assert_eq!(api.details(), case.details, "{context}: details");
            assert_eq!(api.messages().len(), case.messages, "{context}: messages");
            assert_eq!(api.gateway_code(), case.gateway, "{context}: gateway code");
            let sent = case.reply.body.as_deref().unwrap_or_default();
            assert_eq!(
                api.body(),
                sent.as_bytes(),
                "{context}: the raw body is kept"
            );
        }
    }
}

// ------------------------------------------------------------------ the list of tests

/// The tests of this file as its test harness lists them (`--list`), kept in
/// `wire/lists/<file>.snap` for `wire_coverage.rs`: adding, renaming or removing a test changes
/// the list, and this test fails until the new list is reviewed and accepted.
#[test]
fn list_of_tests_is_the_harness_list() {
    let binary = std::env::current_exe().expect("the test binary's path");
    let output = std::process::Command::new(binary)
        .args(["--list", "--format", "terse"])
        .output()
        .expect("the test binary runs");
    assert!(output.status.success(), "--list fails: {output:?}");
    let listed = String::from_utf8(output.stdout).expect("test names are UTF-8");
    let mut names: Vec<&str> = listed
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .filter(|name| !name.starts_with("wire::"))
        .collect();
    names.sort_unstable();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("lists");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(env!("CARGO_CRATE_NAME"), names.join("\n")));
}
