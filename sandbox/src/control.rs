//! The control plane: what a test in any language can do to a running sandbox over HTTP,
//! under `/_sandbox` on the API's own port (the API is under `/pubapi`). It is what
//! [`Sandbox`](crate::Sandbox)'s test API does, as JSON:
//!
//! | method and path | body | does |
//! |---|---|---|
//! | `GET /_sandbox` | | the base URL, domain, clock, limits, users and tokens, counters |
//! | `POST /_sandbox/activity` | `{"action": "createFolder", "path": "/P", "as": "sam"}`, `{"action": "folderProjectActivity", "path": "/P", "projectId": "p1", "actionInfo": "…"}` | file-system, note, permission, project or login activity: events, audit records, webhook deliveries |
//! | `GET`, `POST`, `DELETE /_sandbox/faults` | `{"action": "status", "status": 503, "operation": "whoami", "times": 1}`, `{"action": "gatewayFault", "status": 401, "errorcode": "…", "faultstring": "…"}` | fault rules left; add one; remove all |
//! | `GET`, `POST /_sandbox/clock` | `{"advanceSeconds": 90}`, `{"to": "2026-10-01"}` or `{"scale": 60}` | read or move the sandbox clock |
//! | `GET`, `PUT /_sandbox/limits` | `"off"`, `"reference"`, `"general=2/s,1000/d,ai=100/d"` or `{"generalPerSecond": 2, …}` | read or change the limits |
//! | `POST /_sandbox/reset` | | back to the start state (users, tokens and clock stay) |
//! | `GET /_sandbox/deliveries` | | every webhook delivery attempt made |
//! | `POST /_sandbox/tokens` | `{"username": "sam", "active": false}` | deactivate a user's token (403 `ERR_403_DEVELOPER_INACTIVE` from then on) or activate it again |
//! | `GET /_sandbox/counters` | | requests by operation and status, violations by kind with the rule each breaks, faults, deliveries |
//! | `GET /_sandbox/traffic?after=<seq>` | | the exchanges served (after `seq`), with their statuses, headers and bodies |
//! | `GET /_sandbox/conformance` | | the exchanges and delivery bodies checked against the spec, and every problem found |
//! | `GET /_sandbox/arrivals?buckets=<n>` | | requests per limit window over the last `n` windows, with each window's limit (`dashboard.rs`) |
//! | `GET /_sandbox/audit` | | the audit jobs and their state |
//! | `GET /_sandbox/ui` | | the dashboard, an HTML page drawn from the paths above |
//!
//! Answers are JSON; a refused request is 400 naming the field (404 for an unknown path, 405
//! for a method the path does not have, 413 for a body over 1 MiB, 408 for one that does not
//! arrive in time) with `{"error": "<what to fix>"}`. The control plane is neither rate
//! limited, faulted nor recorded in the traffic.
//!
//! Only its user drives it: without a control token, a request must name the sandbox's own
//! address in `Host` (`127.0.0.1:<port>` or `localhost:<port>`: a page on another name that
//! rebinds its DNS to 127.0.0.1 is refused) and come from no other origin (`Origin`,
//! `Sec-Fetch-Site`: a form or a `text/plain` POST from any web page is refused); with one
//! ([`ServerConfig::control_token`](crate::ServerConfig::control_token)), a request must
//! carry it, whatever its `Host`. Refusals are 403. A browser cannot add a header when it
//! opens a page, so `GET /_sandbox/ui` also takes the token as `?token=<token>`; the page
//! sends it on as a header and drops it from the address bar.

use super::Shared;
use super::activity::Activity;
use super::clock::{MAX_MS, MAX_SCALE};
use super::config::LimitsConfig;
use super::dashboard;
use super::dates::{iso_millis, parse_request_date};
use super::faults::{Fault, FaultAction};
use super::fs::FsEntry;
use super::http::parse_query;
use super::limits::Violation;
use super::serve::{BodyPace, read_body};
use super::world::ActionSource;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The prefix every control path starts with.
pub(crate) const PREFIX: &str = "/_sandbox";

/// The largest control request body read.
const MAX_BODY: usize = 1 << 20;

/// The longest `delay` fault, milliseconds (an hour).
const MAX_DELAY_MS: u64 = 3_600_000;

/// The largest `retryAfter` of a throttle fault, seconds (a day, the longest window).
const MAX_RETRY_AFTER: u64 = 86_400;

/// The header a control token may come in (besides `Authorization: Bearer`).
pub(crate) const TOKEN_HEADER: &str = "x-sandbox-control-token";

/// A control-plane answer before it becomes a response.
struct Answer {
    status: u16,
    body: Value,
    allow: Option<&'static str>,
    /// An HTML page instead of the JSON body (the dashboard).
    page: Option<&'static str>,
}

impl Answer {
    fn ok(body: Value) -> Self {
        Answer {
            status: 200,
            body,
            allow: None,
            page: None,
        }
    }

    fn refused(status: u16, message: impl Into<String>) -> Self {
        Answer {
            status,
            body: json!({ "error": message.into() }),
            allow: None,
            page: None,
        }
    }
}

/// The axum handler of every `/_sandbox` request.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().strip_prefix(PREFIX).unwrap_or("");
    let query = parts.uri.query().map(parse_query).unwrap_or_default();
    // The page's own token, from its address (see the module's docs).
    let page_token = (parts.method == "GET" && path.trim_end_matches('/') == "/ui")
        .then(|| query.iter().find(|(name, _)| name == "token"))
        .flatten()
        .map(|(_, token)| token.as_str());
    let answer = match access(&shared, &parts.headers, page_token) {
        Err(refused) => Answer::refused(403, refused),
        Ok(()) => {
            let pace = BodyPace::of(&shared.config.server);
            match read_body(&parts.headers, body, MAX_BODY, pace).await {
                Ok(body) => route(&shared, parts.method.as_str(), path, &query, &body),
                Err(e) => Answer::refused(e.status(), e.to_string()),
            }
        }
    };
    let mut response = Response::new(match answer.page {
        Some(page) => Body::from(page),
        None => Body::from(answer.body.to_string()),
    });
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    if answer.page.is_some() {
        headers.insert(
            "content-type",
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        headers.insert(
            "content-security-policy",
            HeaderValue::from_static(dashboard::CONTENT_SECURITY_POLICY),
        );
        headers.insert("cache-control", HeaderValue::from_static("no-store"));
    } else {
        headers.insert("content-type", HeaderValue::from_static("application/json"));
    }
    if let Some(allow) = answer.allow {
        headers.insert("allow", HeaderValue::from_static(allow));
    }
    if matches!(answer.status, 403 | 408 | 413) {
        headers.insert("connection", HeaderValue::from_static("close"));
    }
    response
}

/// Whether the request may drive the control plane (see the module's docs), or why not;
/// `page_token` is the token in the dashboard page's address.
fn access(shared: &Shared, headers: &HeaderMap, page_token: Option<&str>) -> Result<(), String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(token) = &shared.config.server.control_token {
        let sent = header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .or_else(|| header(TOKEN_HEADER))
            .or(page_token);
        return match sent {
            Some(sent) if same_secret(sent.trim(), token) => Ok(()),
            Some(_) => Err("the control token is wrong".to_string()),
            None => Err(format!(
                "the control plane needs its token: authorization: Bearer <token> or \
                 {TOKEN_HEADER}: <token>"
            )),
        };
    }
    let port = shared.addr.port();
    let own = |authority: &str| {
        let authority = authority.to_ascii_lowercase();
        let ip = shared.addr.ip().to_string();
        [ip.as_str(), "localhost"]
            .iter()
            .any(|host| authority == format!("{host}:{port}") || (port == 80 && authority == *host))
    };
    match headers.get("host").map(|v| v.to_str()) {
        None => {}
        Some(Ok(host)) if own(host) => {}
        Some(host) => {
            return Err(format!(
                "the control plane answers only requests to {}, not to Host {}",
                shared.addr,
                super::fs::shown(host.unwrap_or("<not text>"))
            ));
        }
    }
    if let Some(origin) = headers.get("origin") {
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(own);
        if !same {
            return Err(format!(
                "the control plane answers no other origin than http://{}, not {}",
                shared.addr,
                super::fs::shown(origin.to_str().unwrap_or("<not text>"))
            ));
        }
    }
    if let Some(site) = header("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return Err(format!(
            "the control plane answers no request from another site (Sec-Fetch-Site: {site})"
        ));
    }
    Ok(())
}

/// Compares a sent token with the configured one in time independent of where they differ.
fn same_secret(sent: &str, token: &str) -> bool {
    sent.len() == token.len()
        && sent
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// The methods each control path has.
const PATHS: &[(&str, &str)] = &[
    ("", "GET"),
    ("/activity", "POST"),
    ("/faults", "GET, POST, DELETE"),
    ("/clock", "GET, POST"),
    ("/limits", "GET, PUT"),
    ("/reset", "POST"),
    ("/deliveries", "GET"),
    ("/tokens", "POST"),
    ("/counters", "GET"),
    ("/traffic", "GET"),
    ("/conformance", "GET"),
    ("/arrivals", "GET"),
    ("/audit", "GET"),
    ("/ui", "GET"),
];

fn route(
    shared: &Arc<Shared>,
    method: &str,
    path: &str,
    query: &[(String, String)],
    body: &[u8],
) -> Answer {
    let path = path.strip_suffix('/').unwrap_or(path);
    let result = match (method, path) {
        ("GET", "") => Ok(state(shared)),
        ("POST", "/activity") => parse(body).and_then(|r| activity(shared, r)),
        ("GET", "/faults") => Ok(faults_left(shared)),
        ("POST", "/faults") => parse(body).and_then(|r| add_fault(shared, r)),
        ("DELETE", "/faults") => {
            shared.world().faults.clear();
            Ok(faults_left(shared))
        }
        ("GET", "/clock") => Ok(clock(shared)),
        ("POST", "/clock") => parse(body).and_then(|r| move_clock(shared, r)),
        ("GET", "/limits") => Ok(limits(shared)),
        ("PUT", "/limits") => parse_limits(body).and_then(|r| set_limits(shared, r)),
        ("POST", "/reset") => {
            shared.reset();
            Ok(state(shared))
        }
        ("GET", "/deliveries") => Ok(deliveries(shared)),
        ("POST", "/tokens") => parse(body).and_then(|r| set_token(shared, r)),
        ("GET", "/counters") => Ok(counters(shared)),
        ("GET", "/traffic") => traffic(shared, query),
        ("GET", "/conformance") => Ok(conformance(shared)),
        ("GET", "/arrivals") => dashboard::arrivals(shared, query).map(Answer::ok),
        ("GET", "/audit") => Ok(Answer::ok(dashboard::audit_jobs(shared))),
        ("GET", "/ui") => Ok(Answer {
            page: Some(dashboard::PAGE),
            ..Answer::ok(Value::Null)
        }),
        _ => {
            return match PATHS.iter().find(|(known, _)| *known == path) {
                Some((_, allow)) => Answer {
                    allow: Some(allow),
                    ..Answer::refused(405, format!("{PREFIX}{path} takes {allow}, not {method}"))
                },
                None => Answer::refused(
                    404,
                    format!(
                        "no control path {PREFIX}{path}; there are {}",
                        PATHS
                            .iter()
                            .map(|(p, _)| format!("{PREFIX}{p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
            };
        }
    };
    result.unwrap_or_else(|message| Answer::refused(400, message))
}

/// The body as `T`; a refusal names the field that does not fit.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let mut reader = serde_json::Deserializer::from_slice(body);
    let parsed: T = serde_path_to_error::deserialize(&mut reader).map_err(|e| {
        let path = e.path().to_string();
        if path == "." || path.is_empty() {
            format!("the body does not fit: {}", e.inner())
        } else {
            format!("the body does not fit: {path}: {}", e.inner())
        }
    })?;
    reader
        .end()
        .map_err(|e| format!("the body does not fit: {e}"))?;
    Ok(parsed)
}

fn state(shared: &Shared) -> Answer {
    let world = shared.world();
    let users: Vec<Value> = world
        .users
        .all()
        .iter()
        .map(|(user, token)| {
            json!({
                "id": user.id,
                "username": user.username,
                "email": user.email,
                "role": user.role.name(),
                "scopes": user.scopes,
                "clientId": user.client_id,
                "token": token,
                "active": world.users.is_active(token),
            })
        })
        .collect();
    let counters = &world.counters;
    let body = json!({
        "baseUrl": shared.base_url,
        "domain": shared.config.domain,
        "clock": clock_json(shared),
        "limits": world.limits_config,
        "users": users,
        "counters": {
            "requests": counters.requests,
            "violations": counters.total_violations(),
            "violationsByKind": violations_by_kind(counters),
            "faultsInjected": counters.faults_injected,
            "deliveryAttempts": counters.delivery_attempts,
            "deliveriesSucceeded": counters.deliveries_succeeded,
            "deliveriesFailed": counters.deliveries_failed,
        },
        "faultsLeft": world.faults.len(),
        "events": world.events.len(),
        "webhooks": world.webhooks.all().len(),
    });
    Answer::ok(body)
}

/// Every kind of violation with its count (0 included), so a client learns the names.
fn violations_by_kind(counters: &super::limits::Counters) -> Value {
    Violation::ALL
        .iter()
        .map(|kind| {
            (
                kind.name().to_string(),
                json!(counters.violations_of(*kind)),
            )
        })
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

fn counters(shared: &Shared) -> Answer {
    let counters = shared.world().counters.clone();
    let violations: Vec<Value> = Violation::ALL
        .iter()
        .map(|kind| {
            json!({
                "kind": kind.name(),
                "rule": kind.rule(),
                "count": counters.violations_of(*kind),
            })
        })
        .collect();
    let by_status: serde_json::Map<String, Value> = counters
        .by_status
        .iter()
        .map(|(status, n)| (status.to_string(), json!(n)))
        .collect();
    Answer::ok(json!({
        "requests": counters.requests,
        "byOperation": counters.by_operation,
        "byStatus": by_status,
        "violations": counters.total_violations(),
        "violationsByKind": violations_by_kind(&counters),
        "violationRules": violations,
        "faultsInjected": counters.faults_injected,
        "deliveryAttempts": counters.delivery_attempts,
        "deliveriesSucceeded": counters.deliveries_succeeded,
        "deliveriesFailed": counters.deliveries_failed,
        "webhooksDisabled": counters.webhooks_disabled,
    }))
}

/// `GET /_sandbox/traffic`: the exchanges kept, those after `after` (a `seq`) when given.
fn traffic(shared: &Shared, query: &[(String, String)]) -> Result<Answer, String> {
    let mut after = 0u64;
    for (name, value) in query {
        match name.as_str() {
            "after" => {
                after = value
                    .parse()
                    .map_err(|_| format!("after `{value}` is not an exchange's seq (0 or more)"))?;
            }
            other => return Err(format!("no query parameter `{other}` (after)")),
        }
    }
    let world = shared.world();
    let exchanges: Vec<Value> = world
        .traffic
        .iter()
        .filter(|e| e.seq > after)
        .map(|e| {
            json!({
                "seq": e.seq,
                "at": iso_millis(e.at_ms),
                "operation": e.operation,
                "method": e.method,
                "path": e.path,
                "query": e.query,
                "requestBody": String::from_utf8_lossy(&e.request_body),
                "requestBodyLength": e.request_body_len,
                "requestBodyTruncated": e.request_body_truncated,
                "impersonatedBy": e.impersonated_by,
                "tokenUser": e.token_user,
                "requestId": e.request_id,
                "traceparent": e.traceparent,
                "status": e.status,
                "responseHeaders": e.response_headers,
                "contentType": e.content_type,
                "responseBody": String::from_utf8_lossy(&e.response_body),
                "responseBodyTruncated": e.body_truncated,
                "injected": e.injected,
                "fault": e.fault,
            })
        })
        .collect();
    Ok(Answer::ok(json!({
        "exchanges": exchanges,
        "lastSeq": world.traffic_seq,
    })))
}

fn conformance(shared: &Shared) -> Answer {
    let report = shared.check_conformance();
    Answer::ok(json!({
        "conformant": report.problems.is_empty(),
        "checked": report.checked,
        "skipped": report.skipped,
        "operations": report.operations,
        "problems": report.problems,
    }))
}

/// `POST /_sandbox/tokens`: whose token, and whether it works.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TokenRequest {
    username: String,
    active: bool,
}

fn set_token(shared: &Shared, request: TokenRequest) -> Result<Answer, String> {
    let mut world = shared.world();
    if !world.users.set_active(&request.username, request.active) {
        let known: Vec<&str> = world
            .users
            .all()
            .iter()
            .map(|(u, _)| u.username.as_str())
            .collect();
        return Err(format!(
            "username {} is not a user of the sandbox ({})",
            super::fs::shown(&request.username),
            known.join(", ")
        ));
    }
    Ok(Answer::ok(json!({
        "username": request.username,
        "active": request.active,
    })))
}

fn clock_json(shared: &Shared) -> Value {
    let now = shared.now();
    json!({ "now": iso_millis(now), "nowMs": now, "scale": shared.clock.scale() })
}

fn clock(shared: &Shared) -> Answer {
    Answer::ok(clock_json(shared))
}

/// `POST /_sandbox/clock`: exactly one of the fields.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClockRequest {
    advance_seconds: Option<f64>,
    advance_ms: Option<u64>,
    to: Option<String>,
    scale: Option<f64>,
}

fn move_clock(shared: &Shared, request: ClockRequest) -> Result<Answer, String> {
    match request {
        ClockRequest {
            advance_seconds: Some(seconds),
            advance_ms: None,
            to: None,
            scale: None,
        } => {
            let by = Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("advanceSeconds {seconds} is not a duration of 0 or more"))?;
            let by = within_the_clock(shared, "advanceSeconds", &seconds.to_string(), by)?;
            shared.advance(by);
        }
        ClockRequest {
            advance_seconds: None,
            advance_ms: Some(ms),
            to: None,
            scale: None,
        } => {
            let by = Duration::from_millis(ms);
            let by = within_the_clock(shared, "advanceMs", &ms.to_string(), by)?;
            shared.advance(by);
        }
        ClockRequest {
            advance_seconds: None,
            advance_ms: None,
            to: Some(to),
            scale: None,
        } => {
            let target = parse_request_date(&to).ok_or_else(|| {
                format!("to `{to}` is not a date (2026-10-01) or a UTC time (2026-10-01T09:00:00Z)")
            })?;
            shared
                .advance_to(target.ms)
                .map_err(|e| format!("to `{to}`: {e}"))?;
        }
        ClockRequest {
            advance_seconds: None,
            advance_ms: None,
            to: None,
            scale: Some(scale),
        } => {
            if !(scale.is_finite() && (0.0..=MAX_SCALE).contains(&scale)) {
                return Err(format!(
                    "scale {scale} is not from 0 (frozen) to {MAX_SCALE} (sandbox milliseconds \
                     per real millisecond)"
                ));
            }
            shared.clock.set_scale(scale);
            shared.wakeup.notify_one();
        }
        _ => {
            return Err("give exactly one of advanceSeconds, advanceMs, to or scale".to_string());
        }
    }
    Ok(clock(shared))
}

/// `by`, when the clock moved by it stays within its end ([`MAX_MS`]); else a refusal
/// naming `field`.
fn within_the_clock(
    shared: &Shared,
    field: &str,
    given: &str,
    by: Duration,
) -> Result<Duration, String> {
    let now = shared.now();
    let room = u128::try_from(MAX_MS.saturating_sub(now)).unwrap_or(0);
    if by.as_millis() > room {
        return Err(format!(
            "{field} {given} moves the clock past its end, {} ({room} ms from now)",
            iso_millis(MAX_MS)
        ));
    }
    Ok(by)
}

fn limits(shared: &Shared) -> Answer {
    let limits = shared.world().limits_config;
    Answer::ok(json!({ "limits": limits, "text": limits.to_string() }))
}

/// `PUT /_sandbox/limits`: the text form or the numbers.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LimitsRequest {
    Text(String),
    Numbers(LimitsConfig),
}

/// The text form or the numbers, a refusal of the numbers naming the field.
fn parse_limits(body: &[u8]) -> Result<LimitsRequest, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::String(text)) => Ok(LimitsRequest::Text(text)),
        _ => parse(body).map(LimitsRequest::Numbers),
    }
}

fn set_limits(shared: &Shared, request: LimitsRequest) -> Result<Answer, String> {
    let limits = match request {
        LimitsRequest::Text(text) => text.parse()?,
        LimitsRequest::Numbers(limits) => {
            for (field, value) in [
                ("generalPerSecond", limits.general_per_second),
                ("generalPerDay", limits.general_per_day),
                ("aiPerSecond", limits.ai_per_second),
                ("aiPerMinute", limits.ai_per_minute),
                ("aiPerDay", limits.ai_per_day),
            ] {
                if value == Some(0) {
                    return Err(format!(
                        "{field} must be at least 1 (null for no limit), not 0"
                    ));
                }
            }
            limits
        }
    };
    shared.world().limits_config = limits;
    Ok(self::limits(shared))
}

fn faults_left(shared: &Shared) -> Answer {
    Answer::ok(json!({ "faultsLeft": shared.world().faults.len() }))
}

/// `POST /_sandbox/faults`: whom it hits, how often, and what it does.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FaultRequest {
    operation: Option<String>,
    tag: Option<String>,
    #[serde(default)]
    after: u32,
    times: Option<u32>,
    #[serde(flatten)]
    action: ActionRequest,
}

#[derive(Debug, Deserialize)]
#[serde(
    tag = "action",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum ActionRequest {
    ServerError,
    Status {
        status: u16,
    },
    DropConnection,
    MalformedJson,
    Delay {
        ms: u64,
    },
    Throttle {
        retry_after: u64,
    },
    QuotaExhausted {
        retry_after: u64,
    },
    SlowBody {
        bytes_per_second: u32,
    },
    CutBody {
        after_bytes: usize,
    },
    GatewayFault {
        #[serde(default = "default_gateway_status")]
        status: u16,
        #[serde(default = "default_gateway_errorcode")]
        errorcode: String,
        #[serde(default = "default_gateway_faultstring")]
        faultstring: String,
    },
}

fn default_gateway_status() -> u16 {
    FaultAction::gateway_fault().status()
}

fn default_gateway_errorcode() -> String {
    match FaultAction::gateway_fault() {
        FaultAction::GatewayFault { errorcode, .. } => errorcode,
        _ => String::new(),
    }
}

fn default_gateway_faultstring() -> String {
    match FaultAction::gateway_fault() {
        FaultAction::GatewayFault { faultstring, .. } => faultstring,
        _ => String::new(),
    }
}

impl ActionRequest {
    /// The fault action asked for, once its values are checked.
    fn into_action(self) -> Result<FaultAction, String> {
        let action = match self {
            ActionRequest::Status { status } | ActionRequest::GatewayFault { status, .. }
                if !(400..=599).contains(&status) =>
            {
                return Err(format!(
                    "status {status} is not an error status (400 to 599)"
                ));
            }
            ActionRequest::ServerError => FaultAction::ServerError,
            ActionRequest::Status { status } => FaultAction::Status(status),
            ActionRequest::DropConnection => FaultAction::DropConnection,
            ActionRequest::MalformedJson => FaultAction::MalformedJson,
            ActionRequest::Delay { ms } if ms <= MAX_DELAY_MS => {
                FaultAction::Delay(Duration::from_millis(ms))
            }
            ActionRequest::Delay { ms } => {
                return Err(format!("ms {ms} is longer than {MAX_DELAY_MS} (an hour)"));
            }
            ActionRequest::Throttle { retry_after }
            | ActionRequest::QuotaExhausted { retry_after }
                if retry_after > MAX_RETRY_AFTER =>
            {
                return Err(format!(
                    "retryAfter {retry_after} is longer than {MAX_RETRY_AFTER} seconds (a day)"
                ));
            }
            ActionRequest::Throttle { retry_after } => FaultAction::Throttle { retry_after },
            ActionRequest::QuotaExhausted { retry_after } => {
                FaultAction::QuotaExhausted { retry_after }
            }
            ActionRequest::SlowBody {
                bytes_per_second: 0,
            } => {
                return Err("bytesPerSecond must be at least 1".to_string());
            }
            ActionRequest::SlowBody { bytes_per_second } => {
                FaultAction::SlowBody { bytes_per_second }
            }
            ActionRequest::CutBody { after_bytes } => FaultAction::CutBody { after_bytes },
            ActionRequest::GatewayFault {
                status,
                errorcode,
                faultstring,
            } => FaultAction::GatewayFault {
                status,
                errorcode,
                faultstring,
            },
        };
        Ok(action)
    }
}

fn add_fault(shared: &Shared, request: FaultRequest) -> Result<Answer, String> {
    let operations = pubapi_sdk::operations::ALL;
    let fault = match (&request.operation, &request.tag) {
        (Some(_), Some(_)) => return Err("give operation or tag, not both".to_string()),
        (Some(id), None) => {
            if !operations.iter().any(|op| op.id == id) {
                return Err(format!(
                    "no operation `{id}` (operation ids as in the spec)"
                ));
            }
            Fault::on(id)
        }
        (None, Some(tag)) => {
            if !operations.iter().any(|op| op.tag == tag) {
                return Err(format!("no tag `{tag}` (tags as in the spec)"));
            }
            Fault::on_tag(tag)
        }
        (None, None) => Fault::on_any(),
    };
    let action = request.action.into_action()?;
    let mut fault = fault.after(request.after).action(action);
    if let Some(times) = request.times {
        if times == 0 {
            return Err("times must be at least 1 (leave it out for every request)".to_string());
        }
        fault = fault.times(times);
    }
    shared.world().faults.push(fault);
    Ok(faults_left(shared))
}

/// `POST /_sandbox/activity`: who acts, and what they do.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ActivityRequest {
    /// The acting user (default: the first admin).
    #[serde(rename = "as")]
    user: Option<String>,
    impersonated_by: Option<String>,
    via: Option<String>,
    #[serde(flatten)]
    what: What,
}

#[derive(Debug, Deserialize)]
#[serde(
    tag = "action",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum What {
    CreateFolder {
        path: String,
    },
    CreateFile {
        path: String,
        #[serde(default)]
        content: String,
    },
    Move {
        from: String,
        to: String,
    },
    Copy {
        from: String,
        to: String,
    },
    Delete {
        path: String,
    },
    Restore {
        path: String,
    },
    AddNote {
        path: String,
        text: String,
    },
    ChangePermission {
        folder: String,
        assignee: String,
        old: Option<String>,
        new: Option<String>,
    },
    Login {
        event: String,
        ip_address: String,
        access: String,
    },
    FolderProjectActivity {
        path: String,
        project_id: String,
        action_info: String,
    },
}

fn activity(shared: &Arc<Shared>, request: ActivityRequest) -> Result<Answer, String> {
    let user = match request.user {
        Some(user) => user,
        None => shared
            .world()
            .users
            .admin()
            .map(|(user, _)| user.username.clone())
            .ok_or("the sandbox has no admin user; say who acts with \"as\"")?,
    };
    let mut actor = Activity::new(shared.clone(), &user);
    if let Some(admin) = &request.impersonated_by {
        actor = actor.impersonated_by(admin);
    }
    if let Some(via) = &request.via {
        let source = ActionSource::ALL
            .iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(via))
            .ok_or_else(|| {
                let known: Vec<&str> = ActionSource::ALL.iter().map(|s| s.as_str()).collect();
                format!("via `{via}` is not one of {}", known.join(", "))
            })?;
        actor = actor.via(*source);
    }
    let entry = match request.what {
        What::CreateFolder { path } => actor.create_folder(&path).map(Some),
        What::CreateFile { path, content } => actor.create_file(&path, &content).map(Some),
        What::Move { from, to } => actor.move_entry(&from, &to).map(Some),
        What::Copy { from, to } => actor.copy_entry(&from, &to).map(Some),
        What::Delete { path } => actor.delete(&path).map(Some),
        What::Restore { path } => actor.restore(&path).map(Some),
        What::AddNote { path, text } => actor.add_note(&path, &text).map(|()| None),
        What::ChangePermission {
            folder,
            assignee,
            old,
            new,
        } => actor
            .change_permission(&folder, &assignee, old.as_deref(), new.as_deref())
            .map(|()| None),
        What::Login {
            event,
            ip_address,
            access,
        } => actor.login(&event, &ip_address, &access).map(|()| None),
        What::FolderProjectActivity {
            path,
            project_id,
            action_info,
        } => actor
            .folder_project_activity(&path, &project_id, &action_info)
            .map(|()| None),
    }
    .map_err(|e| e.to_string())?;
    shared.wakeup.notify_one();
    let events = shared.world().events.len();
    Ok(Answer {
        status: 201,
        ..Answer::ok(json!({
            "entry": entry.as_ref().map(entry_json),
            "events": events,
        }))
    })
}

fn entry_json(entry: &FsEntry) -> Value {
    json!({
        "path": entry.path,
        "isFolder": entry.is_folder,
        "groupId": entry.group_id,
        "entryId": entry.entry_id,
        "objectId": entry.object_id,
        "modified": iso_millis(entry.modified_ms),
    })
}

fn deliveries(shared: &Shared) -> Answer {
    let world = shared.world();
    let records: Vec<Value> = world
        .deliveries
        .log()
        .iter()
        .map(|record| {
            json!({
                "webhookId": record.webhook_id,
                "eventId": record.event_id,
                "eventType": record.event_type,
                "attempt": record.attempt,
                "at": iso_millis(record.at_ms),
                "status": record.status,
                "error": record.error,
                "delivered": record.delivered,
                "body": record.body,
            })
        })
        .collect();
    Answer::ok(json!({
        "deliveries": records,
        "pending": world.deliveries.pending().len(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_bodies_read_as_the_table_says() {
        let parsed: FaultRequest =
            parse(br#"{"action": "status", "status": 503, "operation": "whoami", "times": 2}"#)
                .unwrap();
        assert!(matches!(
            parsed.action,
            ActionRequest::Status { status: 503 }
        ));
        assert_eq!(parsed.times, Some(2));
        let parsed: FaultRequest =
            parse(br#"{"action": "slowBody", "bytesPerSecond": 64, "tag": "audit"}"#).unwrap();
        assert!(matches!(
            parsed.action,
            ActionRequest::SlowBody {
                bytes_per_second: 64
            }
        ));
        assert!(parse::<FaultRequest>(br#"{"action": "explode"}"#).is_err());
    }

    #[test]
    fn limits_bodies_take_text_or_numbers() {
        let LimitsRequest::Text(text) = parse_limits(br#""off""#).unwrap() else {
            panic!("a string is the text form");
        };
        assert_eq!(text, "off");
        let LimitsRequest::Numbers(limits) =
            parse_limits(br#"{"generalPerSecond": 5, "aiPerDay": 7}"#).unwrap()
        else {
            panic!("an object is the numbers");
        };
        assert_eq!(limits.general_per_second, Some(5));
        assert_eq!(limits.general_per_day, None);
        assert_eq!(limits.ai_per_day, Some(7));
    }
}
