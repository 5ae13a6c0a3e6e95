//! How a request is served: matched to its operation of the spec (the table in
//! `pubapi_sdk::operations::ALL`), then fault injection, authentication, rate limits,
//! impersonation and scopes, removal (410 once the sandbox clock reaches the operation's
//! `x-pubapi-sunset`), the operation's handler, and the record of the exchange.

use super::Shared;
use super::auth::{Caller, ImpersonationError};
use super::config::WEBHOOKS_SCOPE;
use super::faults::FaultAction;
use super::http::{
    ApiRequest, BodyFault, ErrorFormat, Reply, decode, documents, error, error_format, is_ai,
    method_not_allowed, parse_query, removed, unreadable,
};
use super::limits::{GatewayCounters, Throttle, Violation};
use super::serve::{BodyPace, DRAIN_CAP, drain_body, read_body};
use super::traffic::{Exchange, MAX_RECORDED_BODY};
use super::{ai, audit, events, webhooks};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::StreamExt;
use pubapi_sdk::operations::id;
use pubapi_sdk::operations::{ALL, Operation};
use serde_json::json;
use std::sync::Arc;

/// Path parameters by name, percent-decoded.
pub type PathParams = Vec<(String, String)>;

/// Where a method and a path (below `/pubapi`) lead.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// The operation, with its path parameters.
    Operation(&'static Operation, PathParams),
    /// A path of the spec without this method: the methods it has (for `Allow`), sorted.
    MethodNotAllowed(Vec<&'static str>),
    /// No path of the spec.
    NotFound,
}

/// Matches the path first, then the method: among the templates the path fits, those with the
/// most literal segments win (`/v1/audit/jobs/{id}` over `/v1/audit/{type}/{id}`), and the
/// method picks the operation among them. A method the winning path lacks is
/// [`Route::MethodNotAllowed`]; it never falls through to a template with fewer literals.
pub fn route(method: &str, path: &str) -> Route {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let mut best_literals = 0;
    let mut fitting: Vec<(&'static Operation, PathParams)> = Vec::new();
    for op in ALL {
        let Some((literals, params)) = fit(op.path, &segments) else {
            continue;
        };
        if fitting.is_empty() || literals > best_literals {
            best_literals = literals;
            fitting.clear();
        } else if literals < best_literals {
            continue;
        }
        fitting.push((op, params));
    }
    if fitting.is_empty() {
        return Route::NotFound;
    }
    if let Some(found) = fitting
        .iter()
        .position(|(op, _)| op.method.eq_ignore_ascii_case(method))
    {
        let (op, params) = fitting.swap_remove(found);
        return Route::Operation(op, params);
    }
    let mut allow: Vec<&'static str> = fitting.iter().map(|(op, _)| op.method).collect();
    allow.sort_unstable();
    allow.dedup();
    Route::MethodNotAllowed(allow)
}

/// Whether `segments` fill `template`: its number of literal segments and the path
/// parameters, percent-decoded.
fn fit(template: &str, segments: &[&str]) -> Option<(usize, PathParams)> {
    let template: Vec<&str> = template.split('/').collect();
    if template.len() != segments.len() {
        return None;
    }
    let mut literals = 0;
    let mut params = Vec::new();
    for (t, s) in template.iter().zip(segments) {
        if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            if s.is_empty() {
                return None;
            }
            params.push((name.to_string(), decode(s, false)));
        } else if t == s {
            literals += 1;
        } else {
            return None;
        }
    }
    Some((literals, params))
}

/// The axum handler of every request: 404 for a path outside the spec, 405 (with `Allow`) for
/// a method its path does not have, 413 for a body over the limit and 408 for one that does
/// not arrive in time, else the operation's answer.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let query = parts.uri.query().map(parse_query).unwrap_or_default();
    let rest = parts.uri.path().strip_prefix("/pubapi").unwrap_or("");
    let method = parts.method.as_str();
    let server = &shared.config.server;
    let route = route(method, rest);
    let (op, params) = match route {
        Route::Operation(op, params) => (op, params),
        unmatched => {
            let reply = match unmatched {
                Route::MethodNotAllowed(allow) => method_not_allowed(method, rest, &allow),
                _ => Reply::empty(404),
            };
            // The body of a request that cannot be served is not kept, but read (up to a
            // cap) so the connection can serve the client's next request; a longer one
            // closes it, and the answer says so.
            let reply = if drain_body(&parts.headers, body, DRAIN_CAP, BodyPace::of(server)).await {
                reply
            } else {
                reply.header("Connection", "close")
            };
            return refused(&shared, None, &parts, query, reply);
        }
    };
    let read = read_body(
        &parts.headers,
        body,
        server.max_body_bytes,
        BodyPace::of(server),
    )
    .await;
    let body = match read {
        Ok(body) => body,
        Err(refused) => {
            let reply = unreadable(op, refused.status(), refused.code(), &refused.to_string());
            return self::refused(&shared, Some(op), &parts, query, reply);
        }
    };
    let request = ApiRequest {
        op,
        method: parts.method.to_string(),
        path: rest.to_string(),
        params,
        query,
        headers: parts.headers,
        body,
    };
    let (reply, impersonated_by) = process(&shared, &request).await;
    let who = Who {
        token_user: token_user(&shared, &request.headers),
        impersonated_by,
        request_id: header_text(&request.headers, "x-request-id"),
        traceparent: header_text(&request.headers, "traceparent"),
    };
    record(
        &shared,
        Some(op),
        &request.method,
        &request.path,
        request.query,
        request.body,
        &reply,
        who,
    );
    dated(into_response(reply), shared.now())
}

/// Answers `reply` to a request refused before any operation ran (its body not kept),
/// recorded with the user of its token.
fn refused(
    shared: &Shared,
    op: Option<&'static Operation>,
    parts: &axum::http::request::Parts,
    query: Vec<(String, String)>,
    reply: Reply,
) -> Response {
    let rest = parts.uri.path().strip_prefix("/pubapi").unwrap_or("");
    let who = Who {
        token_user: token_user(shared, &parts.headers),
        impersonated_by: None,
        request_id: header_text(&parts.headers, "x-request-id"),
        traceparent: header_text(&parts.headers, "traceparent"),
    };
    let method = parts.method.as_str();
    record(shared, op, method, rest, query, Vec::new(), &reply, who);
    dated(into_response(reply), shared.now())
}

/// The username of the sandbox token `headers` carry, if any.
fn token_user(shared: &Shared, headers: &axum::http::HeaderMap) -> Option<String> {
    shared
        .world()
        .users
        .authenticate(headers)
        .map(|(_, user)| user.username.clone())
}

/// The response with HTTP's `Date` by the sandbox's clock, as the platform's answers carry
/// its own time (hyper would otherwise fill in the wall clock): a client that decides by the
/// server's time (which UTC days have ended) sees the sandbox's.
fn dated(mut response: Response, now_ms: i64) -> Response {
    if let Ok(date) = HeaderValue::from_str(&super::dates::http_date(now_ms)) {
        response.headers_mut().insert("date", date);
    }
    response
}

async fn process(shared: &Shared, req: &ApiRequest) -> (Reply, Option<String>) {
    let fault = {
        let mut world = shared.world();
        world.counters.requests += 1;
        *world
            .counters
            .by_operation
            .entry(req.op.id.to_string())
            .or_default() += 1;
        let fault = world.faults.take(req.op);
        if fault.is_some() {
            world.counters.faults_injected += 1;
        }
        fault
    };
    let mut body_fault = None;
    match fault {
        Some(FaultAction::Delay(by)) => tokio::time::sleep(by).await,
        Some(FaultAction::SlowBody { bytes_per_second }) => {
            body_fault = Some(BodyFault::Slow {
                bytes_per_second: bytes_per_second.max(1),
            });
        }
        Some(FaultAction::CutBody { after_bytes }) => {
            body_fault = Some(BodyFault::Cut { after_bytes });
        }
        Some(action) => {
            let reply = Reply {
                fault: true,
                ..fault_reply(req.op, action)
            };
            return (reply, None);
        }
        None => {}
    }
    let (mut reply, impersonated_by) = answer(shared, req);
    if body_fault.is_some() {
        reply.body_fault = body_fault;
        reply.injected = true;
    }
    // A delay changes nothing of the reply, but it is the test's, as the others are.
    reply.fault = fault.is_some();
    (reply, impersonated_by)
}

/// Authorizes and answers a request that no fault replaced. Every answer to a request whose
/// token the limiter counted carries the gateway's `x-accesstoken-*` counters.
fn answer(shared: &Shared, req: &ApiRequest) -> (Reply, Option<String>) {
    let (caller, counters) = match authorize(shared, req) {
        Ok(authorized) => authorized,
        Err(reply) => return (reply, None),
    };
    let with_counters = |mut reply: Reply| {
        reply.headers.extend(counters.headers());
        reply
    };
    // An operation past its removal date (`x-pubapi-sunset`) is gone, whatever the body.
    if let Some(gone) = removed(req.op, shared.now()) {
        return (with_counters(gone), caller.impersonated_by);
    }
    let reply = dispatch(shared, req, &caller);
    (with_counters(reply), caller.impersonated_by)
}

fn authorize(shared: &Shared, req: &ApiRequest) -> Result<(Caller, GatewayCounters), Reply> {
    let op = req.op;
    let now = shared.now();
    let mut world = shared.world();
    let Some((token, token_user)) = world
        .users
        .authenticate(&req.headers)
        .map(|(t, u)| (t, u.clone()))
    else {
        return Err(unauthorized(op));
    };
    if !world.users.is_active(&token) {
        world.counters.violation(Violation::InactiveToken);
        return Err(inactive(op));
    }
    let ai = is_ai(op);
    let limits = world.limits_config;
    let admitted = world.limits.admit(&token, ai, now, &limits);
    let counters = world.limits.counters(&token, ai, now, &limits);
    if let Err(throttle) = admitted {
        let kind = match (ai, throttle) {
            (false, Throttle::OverQps { .. } | Throttle::MinuteFull { .. }) => Violation::OverQps,
            (false, Throttle::OverRate { .. }) => Violation::OverRate,
            (true, Throttle::OverQps { .. }) => Violation::AiOverQps,
            (true, Throttle::MinuteFull { .. }) => Violation::AiOverMinute,
            (true, Throttle::OverRate { .. }) => Violation::AiOverRate,
        };
        world.counters.violation(kind);
        let mut reply = throttled(op, throttle);
        reply.headers.extend(counters.headers());
        return Err(reply);
    }
    let caller = match world.users.caller(token, &token_user, &req.headers) {
        Ok(caller) => caller,
        Err(refused) => {
            let message = match refused {
                ImpersonationError::NotAdmin => {
                    "only admin tokens may act as another user".to_string()
                }
                ImpersonationError::UnknownUser(who) => format!("no user {who} to act as"),
            };
            let status = if documents(op, 403) { 403 } else { 401 };
            let code = match error_format(op) {
                ErrorFormat::Webhook => "impersonation_not_allowed",
                _ => "IMPERSONATION_NOT_ALLOWED",
            };
            let mut reply = error(op, status, code, &message);
            reply.headers.extend(counters.headers());
            return Err(reply);
        }
    };
    if op.tag == "webhooks" && !caller.has_scope(WEBHOOKS_SCOPE) {
        let mut reply = error(
            op,
            403,
            "missing_scope_error",
            &format!("the token lacks the {WEBHOOKS_SCOPE} scope"),
        );
        reply.headers.extend(counters.headers());
        return Err(reply);
    }
    Ok((caller, counters))
}

/// The gateway code of a token that is no longer valid (the platform's clients show it).
pub const INACTIVE_CODE: &str = "ERR_403_DEVELOPER_INACTIVE";

/// The answer to a token deactivated through the control plane: 403 with
/// `X-Gateway-Error-Code: ERR_403_DEVELOPER_INACTIVE`, the area's error body where the
/// operation documents a 403 body, no `Retry-After`. The spec's gateway codes do not list it,
/// so the reply is marked as set up by the control plane (not checked for conformance).
pub fn inactive(op: &Operation) -> Reply {
    let message = "the token is not valid: its developer key is inactive";
    let body = if documents(op, 403) {
        error(op, 403, INACTIVE_CODE, message)
    } else {
        Reply::empty(403)
    };
    Reply {
        status: 403,
        injected: true,
        ..body
    }
    .header("X-Gateway-Error-Code", INACTIVE_CODE)
}

fn unauthorized(op: &Operation) -> Reply {
    let code = match error_format(op) {
        ErrorFormat::Webhook => "gateway_error_forbidden_not_authorized",
        _ => "UNAUTHORIZED",
    };
    error(op, 401, code, "the token is invalid or expired")
}

/// The throttle reply of `op`: 429 for AI, 403 for the general API, with
/// `X-Gateway-Error-Code` and `Retry-After`.
pub fn throttled(op: &Operation, throttle: Throttle) -> Reply {
    let code = throttle.gateway_code();
    let reply = if is_ai(op) {
        Reply::empty(429)
    } else {
        error(op, 403, code, "the token is over its request limit")
    };
    reply
        .header("Retry-After", throttle.retry_after().to_string())
        .header("X-Gateway-Error-Code", code)
}

fn fault_reply(op: &Operation, action: FaultAction) -> Reply {
    match action {
        FaultAction::ServerError if documents(op, 500) => {
            error(op, 500, "INTERNAL_SERVER_ERROR", "injected fault")
        }
        FaultAction::ServerError => Reply {
            injected: true,
            ..Reply::empty(500)
        },
        FaultAction::MalformedJson => {
            let status = op
                .responses
                .iter()
                .find_map(|r| {
                    r.status
                        .parse::<u16>()
                        .ok()
                        .filter(|s| (200..300).contains(s))
                })
                .unwrap_or(200);
            Reply {
                content_type: Some("application/json".into()),
                body: b"{\"malformed\": [1, 2".to_vec(),
                injected: true,
                ..Reply::empty(status)
            }
        }
        FaultAction::Throttle { retry_after } => throttled(op, Throttle::OverQps { retry_after }),
        FaultAction::QuotaExhausted { retry_after } => {
            throttled(op, Throttle::OverRate { retry_after })
        }
        FaultAction::Status(status) if documents(op, status) => {
            error(op, status, "INJECTED_FAULT", "injected fault")
        }
        FaultAction::Status(status) => Reply {
            injected: true,
            ..Reply::empty(status.clamp(400, 599))
        },
        FaultAction::GatewayFault {
            status,
            errorcode,
            faultstring,
        } => Reply {
            injected: true,
            ..Reply::json(
                status.clamp(400, 599),
                &json!({ "fault": {
                    "faultstring": faultstring,
                    "detail": { "errorcode": errorcode },
                }}),
            )
        },
        FaultAction::DropConnection => Reply {
            body_fault: Some(BodyFault::DropConnection),
            injected: true,
            ..Reply::empty(0)
        },
        // Handled before the request is answered (see `process`).
        FaultAction::Delay(_) | FaultAction::SlowBody { .. } | FaultAction::CutBody { .. } => {
            Reply::empty(500)
        }
    }
}

fn dispatch(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    match req.op.id {
        id::LIST_AGENTS => ai::list_agents(shared, req, caller),
        id::ASK_AGENT => ai::ask_agent(shared, req, caller),
        id::GET_AGENT_REQUEST_STATUS => ai::agent_status(shared, req, caller),
        id::ASK_DOCUMENT => ai::ask_document(shared, req, caller),
        id::SUMMARIZE_DOCUMENT => ai::summarize_document(shared, req, caller),
        id::ASK_ASSISTANT => ai::ask_assistant(shared, req, caller),
        id::GET_ASSISTANT_STATUS => ai::assistant_status(shared, req, caller),
        id::ASK_COPILOT => ai::ask_copilot(shared, req, caller),
        id::LIST_KNOWLEDGE_BASES => ai::list_knowledge_bases(shared, req, caller),
        id::ASK_KNOWLEDGE_BASE => ai::ask_knowledge_base(shared, req, caller),
        id::HYBRID_SEARCH => ai::hybrid_search(shared, req, caller),
        id::GET_AUDIT_JOB => audit::job(shared, req, caller),
        id::GET_AUDIT_REPORT => audit::report(shared, req, caller),
        id::DELETE_AUDIT_REPORT => audit::delete(shared, req, caller),
        id if pubapi_sdk::audit_kinds::by_operation(id).is_some() => {
            audit::create(shared, req, caller)
        }
        id::CREATE_WEBHOOK => webhooks::create(shared, req, caller),
        id::LIST_WEBHOOKS => webhooks::list(shared, req, caller),
        id::GET_WEBHOOK_DETAILS => webhooks::details(shared, req, caller),
        id::GET_WEBHOOK_STATUS => webhooks::get_status(shared, req, caller),
        id::SET_WEBHOOK_STATUS => webhooks::set_status(shared, req, caller),
        id::UPDATE_WEBHOOK => webhooks::update(shared, req, caller),
        id::DELETE_WEBHOOK => webhooks::delete(shared, req, caller),
        id::WHOAMI => Reply::json(
            200,
            &json!({
                "clientId": caller.client_id(),
                "username": caller.user.username,
                "domain": shared.config.domain,
                "scopes": caller.token_user.scopes,
            }),
        ),
        id::GET_EVENTS_CURSOR => events::cursor(shared, req, caller),
        id::LIST_EVENTS_V1 => events::list(shared, req, caller, false),
        id::LIST_EVENTS_V2 => events::list(shared, req, caller, true),
        _ => error(req.op, 500, "INTERNAL_SERVER_ERROR", "operation not served"),
    }
}

/// Who made a request: the username of its token, and the admin acting for someone.
#[derive(Default)]
struct Who {
    token_user: Option<String>,
    impersonated_by: Option<String>,
    request_id: Option<String>,
    traceparent: Option<String>,
}

/// A request header's value as text, if it has one (the ids a client's log and traces name
/// the call by).
fn header_text(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(256).collect())
}

#[allow(clippy::too_many_arguments)]
fn record(
    shared: &Shared,
    op: Option<&'static Operation>,
    method: &str,
    path: &str,
    query: Vec<(String, String)>,
    request_body: Vec<u8>,
    reply: &Reply,
    who: Who,
) {
    let now = shared.now();
    let capacity = shared.config.traffic_capacity;
    let mut world = shared.world();
    world.traffic_seq += 1;
    *world.counters.by_status.entry(reply.status).or_default() += 1;
    if capacity == 0 {
        return;
    }
    let server = &shared.config.server;
    let request_body_len = request_body.len();
    let mut request_body = request_body;
    if request_body_len > server.traffic_request_body_bytes {
        request_body.truncate(server.traffic_request_body_bytes);
        request_body.shrink_to_fit();
    }
    let exchange = Exchange {
        seq: world.traffic_seq,
        at_ms: now,
        operation: op.map(|o| o.id),
        method: method.to_string(),
        path: path.to_string(),
        query,
        request_body_truncated: request_body.len() < request_body_len,
        request_body,
        request_body_len,
        impersonated_by: who.impersonated_by,
        token_user: who.token_user,
        request_id: who.request_id,
        traceparent: who.traceparent,
        status: reply.status,
        response_headers: reply.headers.clone(),
        content_type: reply.content_type.clone(),
        response_body: reply.body[..reply.body.len().min(MAX_RECORDED_BODY)].to_vec(),
        body_truncated: reply.body.len() > MAX_RECORDED_BODY,
        injected: reply.injected,
        fault: reply.fault,
    };
    world
        .traffic
        .push(exchange, capacity, server.traffic_max_bytes);
}

/// Records an exchange outside the spec's operations (the token endpoint).
pub(crate) fn record_unmatched(
    shared: &Shared,
    method: &str,
    path: &str,
    request_body: Vec<u8>,
    reply: &Reply,
) {
    record(
        shared,
        None,
        method,
        path,
        Vec::new(),
        request_body,
        reply,
        Who::default(),
    );
}

pub(crate) fn into_response(reply: Reply) -> Response {
    if reply.body_fault == Some(BodyFault::DropConnection) {
        // A body that fails before its first byte makes hyper close the connection.
        let failing = futures_util::stream::once(async {
            Err::<Vec<u8>, std::io::Error>(std::io::Error::other("fault: dropped connection"))
        });
        return Response::new(Body::from_stream(failing));
    }
    let length = reply.body.len();
    let body = match reply.body_fault {
        Some(BodyFault::Slow { bytes_per_second }) => slow_body(reply.body, bytes_per_second),
        Some(BodyFault::Cut { after_bytes }) => cut_body(reply.body, after_bytes),
        _ => Body::from(reply.body),
    };
    let mut response = Response::new(body);
    if reply.body_fault.is_some() {
        // A streamed body has no length of its own; announce the whole one, as the server
        // would have, so a cut is a short body and not a clean end.
        response
            .headers_mut()
            .insert("content-length", HeaderValue::from(length));
    }
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Some(content_type) = reply.content_type
        && let Ok(value) = HeaderValue::from_str(&content_type)
    {
        headers.insert("content-type", value);
    }
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

/// `body` in pieces of a tenth of a second's worth, a piece every 100 ms.
fn slow_body(body: Vec<u8>, bytes_per_second: u32) -> Body {
    let piece = (bytes_per_second as usize / 10).max(1);
    let pieces: Vec<Vec<u8>> = body.chunks(piece).map(<[u8]>::to_vec).collect();
    let stream = futures_util::stream::iter(pieces).then(|piece| async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        Ok::<_, std::io::Error>(piece)
    });
    Body::from_stream(stream)
}

/// The first `after_bytes` of `body`, then a broken connection.
fn cut_body(mut body: Vec<u8>, after_bytes: usize) -> Body {
    body.truncate(after_bytes);
    let head_and_part = futures_util::stream::iter([Ok(body)]);
    // The break comes a moment later, so the head and the first bytes are on the wire
    // (hyper drops a response whose body fails before it was flushed).
    let cut = futures_util::stream::once(async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Err(std::io::Error::other("fault: connection cut mid-body"))
    });
    Body::from_stream(head_and_part.chain(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operation `route` finds, or `None`.
    fn operation(method: &str, path: &str) -> Option<(&'static str, PathParams)> {
        match route(method, path) {
            Route::Operation(op, params) => Some((op.id, params)),
            _ => None,
        }
    }

    #[test]
    fn every_operation_matches_its_own_template() {
        for op in ALL {
            let path = op.path.replace('{', "x").replace('}', "");
            let (found, _) = operation(op.method, &path).unwrap();
            assert_eq!(found, op.id, "{path}");
        }
    }

    #[test]
    fn literal_segments_win_and_params_are_decoded() {
        let (op, params) = operation("GET", "/v1/audit/jobs/abc").unwrap();
        assert_eq!(op, "getAuditJob");
        assert_eq!(params, vec![("id".to_string(), "abc".to_string())]);
        let (op, params) = operation("GET", "/v1/audit/logins/a%20b").unwrap();
        assert_eq!(op, "getAuditReport");
        assert_eq!(params[1].1, "a b");
        assert_eq!(
            operation("POST", "/v1/audit/logins").unwrap().0,
            "createLoginsAudit"
        );
        assert_eq!(
            operation("DELETE", "/v1/audit/logins/r1").unwrap().0,
            "deleteAuditReport"
        );
    }

    #[test]
    fn a_method_the_path_lacks_is_405_with_the_paths_methods() {
        assert_eq!(
            route("PATCH", "/v1/whoami"),
            Route::MethodNotAllowed(vec!["GET"])
        );
        assert_eq!(
            route("POST", "/v1/webhooks/w1"),
            Route::MethodNotAllowed(vec!["DELETE", "PUT"])
        );
        assert_eq!(
            route("GET", "/v1/audit/logins"),
            Route::MethodNotAllowed(vec!["POST"])
        );
        // The method is matched case-insensitively, as before.
        assert!(matches!(route("get", "/v1/whoami"), Route::Operation(..)));
    }

    #[test]
    fn delete_of_an_audit_job_is_405_allow_get_not_the_report_route() {
        assert_eq!(
            route("DELETE", "/v1/audit/jobs/j1"),
            Route::MethodNotAllowed(vec!["GET"])
        );
    }

    #[test]
    fn unknown_paths_stay_404() {
        assert_eq!(route("GET", "/v1/nothing"), Route::NotFound);
        assert_eq!(route("DELETE", "/v1/nothing"), Route::NotFound);
        assert_eq!(route("GET", "/v1/audit/jobs"), Route::NotFound);
        assert_eq!(route("GET", "/v1/webhooks//status"), Route::NotFound);
    }

    #[tokio::test]
    async fn the_405_goes_out_with_allow_and_a_general_body_and_no_operation() {
        let sandbox = crate::Sandbox::start(crate::SandboxConfig::testing()).await;
        let token = sandbox.admin_token();
        let reply = sandbox
            .raw()
            .request("DELETE", "/v1/audit/jobs/j1", Some(&token))
            .send()
            .await;
        assert_eq!(reply.status, 405);
        assert_eq!(reply.header("allow"), Some("GET"));
        assert_eq!(
            reply.json(),
            json!({"Errors": [{
                "description": "DELETE is not a method of /v1/audit/jobs/j1; it has GET",
                "code": "METHOD_NOT_ALLOWED",
            }]})
        );
        let unknown = sandbox.raw().get("/v1/nothing", &token).await;
        assert_eq!(unknown.status, 404);
        let traffic = sandbox.traffic();
        assert_eq!(traffic.len(), 2);
        assert!(traffic.iter().all(|e| e.operation.is_none()));
        sandbox.assert_conformant();
    }

    #[test]
    fn throttles_take_the_area_form() {
        let op = |id: &str| ALL.iter().find(|o| o.id == id).unwrap();
        let ai = throttled(op("listAgents"), Throttle::OverRate { retry_after: 9 });
        assert_eq!(ai.status, 429);
        assert!(ai.body.is_empty());
        assert!(ai.headers.contains(&("Retry-After".into(), "9".into())));
        let general = throttled(op("whoami"), Throttle::OverQps { retry_after: 1 });
        assert_eq!(general.status, 403);
        assert!(general.body.is_empty());
        let hooks = throttled(op("listWebhooks"), Throttle::OverQps { retry_after: 1 });
        assert_eq!(
            hooks.body_json().unwrap()["code"],
            "ERR_403_DEVELOPER_OVER_QPS"
        );
        assert!(hooks.headers.contains(&(
            "X-Gateway-Error-Code".into(),
            "ERR_403_DEVELOPER_OVER_QPS".into()
        )));
    }
}
