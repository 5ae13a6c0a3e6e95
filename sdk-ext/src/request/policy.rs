//! The request policy: what happens to every request of a [`crate::Client`], in the order
//! the [module doc](super) lists.
//!
//! For each attempt: wait for the pacer's slot (shared by every clone of the client, so
//! impersonated calls count against the token's own budget), add the bearer token and the
//! impersonation header, send, classify the outcome, and retry only where the retry
//! vocabulary allows it. Refusals that never reach the server come back as a
//! [`LocalRejection`].

use crate::act_as::{ACT_AS, ACT_AS_EMAIL, ActAs};
use crate::fleet::Fleet;
use crate::limits::BudgetConflict;
use crate::limits::{LimitClass, Limits, Pacing, ServerCounters};
use crate::request::classify::{EndpointKind, Outcome, classify_response, classify_transport};
use crate::request::limiter::RateLimiter;
use crate::request::rejection::LocalRejection;
use crate::request::replay::Replay;
use crate::request::retry::{Decision, RetryConfig};
use crate::request_id::{REQUEST_ID_HEADER, RequestId};
use crate::rng::SplitMix64;
use crate::telemetry::{self, Ended};
use crate::token::{SecretToken, TokenSource};
use crate::transport::{ReqwestTransport, Transport};
use futures_util::future::Either;
use pubapi_sdk::hooks::{BoxFuture, RequestPolicy};
use pubapi_sdk::operations::Operation;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use tracing::Instrument;

/// What every clone and view of one client shares.
pub(crate) struct Shared {
    token: Arc<dyn TokenSource>,
    budgets: Budgets,
    /// The first token used and its limiter: set once, then read without a lock, so the
    /// calls of a static token share no lock here.
    first: OnceLock<(SecretToken, RateLimiter)>,
    /// A later token (a rotating source) and its limiter.
    later: Mutex<Option<(SecretToken, RateLimiter)>>,
    /// Whether the token used last is the one in `later`.
    later_in_use: AtomicBool,
    retry: RetryConfig,
    /// The builder's transport; `None` sends through reqwest directly, without boxing each
    /// attempt's future as a `Transport` must.
    transport: Option<Arc<dyn Transport>>,
    settings: Settings,
    rng: Mutex<SplitMix64>,
}

/// The builder's choices the policy applies to every request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Send operations past their sunset instead of refusing them.
    pub(crate) call_removed_operations: bool,
}

impl Shared {
    pub(crate) fn new(
        token: Arc<dyn TokenSource>,
        budgets: Budgets,
        retry: RetryConfig,
        transport: Option<Arc<dyn Transport>>,
        settings: Settings,
    ) -> Self {
        Shared {
            token,
            budgets,
            first: OnceLock::new(),
            later: Mutex::new(None),
            later_in_use: AtomicBool::new(false),
            retry,
            transport,
            settings,
            rng: Mutex::new(SplitMix64::from_entropy()),
        }
    }
}

/// Where a client's limiter comes from.
#[derive(Debug)]
pub(crate) enum Budgets {
    /// The limiter of each token this client uses, shared in the process by every client
    /// of the same token and base URL.
    PerToken {
        base_url: String,
        limits: Limits,
        pacing: Pacing,
        fleet: Option<Fleet>,
    },
    /// One limiter of this client's own.
    Isolated(RateLimiter),
}

impl Shared {
    /// The limiter of `token`: looked up once per token, then cached. The first token's is
    /// borrowed without a lock; a later token's (a rotating source) is cloned from under one.
    ///
    /// # Errors
    /// [`BudgetConflict`] when another client of the token in the process paces it with other
    /// settings.
    pub(crate) fn limiter_for(
        &self,
        token: &SecretToken,
    ) -> Result<Cow<'_, RateLimiter>, BudgetConflict> {
        let (base_url, limits, pacing, fleet) = match &self.budgets {
            Budgets::Isolated(limiter) => return Ok(Cow::Borrowed(limiter)),
            Budgets::PerToken {
                base_url,
                limits,
                pacing,
                fleet,
            } => (base_url, limits, pacing, fleet),
        };
        let lookup = || {
            let fingerprint = token.fingerprint_in(base_url);
            RateLimiter::for_token(fingerprint, *limits, *pacing, fleet.clone())
        };
        let (first, limiter) = match self.first.get() {
            Some(first) => first,
            None => {
                let limiter = lookup()?;
                self.first.get_or_init(|| (token.clone(), limiter))
            }
        };
        if first.expose() == token.expose() {
            if self.later_in_use.load(Ordering::Relaxed) {
                self.later_in_use.store(false, Ordering::Relaxed);
            }
            return Ok(Cow::Borrowed(limiter));
        }
        let mut later = self.later.lock().unwrap_or_else(|p| p.into_inner());
        self.later_in_use.store(true, Ordering::Relaxed);
        match &*later {
            Some((known, limiter)) if known.expose() == token.expose() => {
                Ok(Cow::Owned(limiter.clone()))
            }
            _ => {
                let limiter = lookup()?;
                *later = Some((token.clone(), limiter.clone()));
                Ok(Cow::Owned(limiter))
            }
        }
    }

    /// The limiter of the token used last (a fresh one before the first request).
    pub(crate) fn limiter(&self) -> RateLimiter {
        match &self.budgets {
            Budgets::Isolated(limiter) => limiter.clone(),
            Budgets::PerToken { limits, pacing, .. } => {
                if self.later_in_use.load(Ordering::Relaxed) {
                    let later = self.later.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some((_, limiter)) = &*later {
                        return limiter.clone();
                    }
                }
                match self.first.get() {
                    Some((_, limiter)) => limiter.clone(),
                    None => RateLimiter::with_pacing(*limits, *pacing),
                }
            }
        }
    }
}

impl Shared {
    /// Sends one attempt through the builder's transport, or reqwest.
    fn send<'a>(
        &'a self,
        http: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a {
        match &self.transport {
            Some(transport) => Either::Left(transport.send(http, request)),
            None => Either::Right(http.execute(request)),
        }
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("token", &self.token)
            .field("budgets", &self.budgets)
            .field("retry", &self.retry)
            .field(
                "transport",
                &self.transport.as_deref().unwrap_or(&ReqwestTransport),
            )
            .finish()
    }
}

/// The policy of one client view: the shared parts plus whom the view acts as.
#[derive(Debug)]
pub(crate) struct Policy {
    shared: Arc<Shared>,
    act_as: Option<ActAs>,
}

fn endpoint_kind(class: LimitClass) -> EndpointKind {
    match class {
        LimitClass::Ai => EndpointKind::Ai,
        LimitClass::General => EndpointKind::General,
    }
}

impl Policy {
    pub(crate) fn new(shared: Arc<Shared>, act_as: Option<ActAs>) -> Self {
        Policy { shared, act_as }
    }

    /// Runs one operation: the checks, then the attempts (token, pacing, sending, retries)
    /// and, after a failed answer, the read of its body.
    ///
    /// The checks run at once, so the boxed future holds only the attempts.
    pub(crate) fn run<'a>(
        &'a self,
        http: &'a reqwest::Client,
        mut request: reqwest::Request,
        operation: &'static Operation,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let request_id = RequestId::next();
        // OpenTelemetry's names for an HTTP client's span, and the SDK's own under `pubapi.`;
        // nothing secret: no token, act-as value, query or body.
        let span = if !tracing::level_enabled!(tracing::Level::INFO) {
            // Nothing listens at this level: not even the fields are worked out.
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "pubapi.request",
                otel.kind = "client",
                http.request.method = operation.method,
                server.address = request.url().host_str().unwrap_or_default(),
                url.template = operation.path,
                http.response.status_code = tracing::field::Empty,
                error.r#type = tracing::field::Empty,
                pubapi.operation = operation.id,
                pubapi.limit_class = operation.limit_class.as_str(),
                pubapi.request_id = request_id.as_str(),
                pubapi.attempt = tracing::field::Empty,
                pubapi.limiter_wait_ms = tracing::field::Empty,
            )
        };
        if let Err(rejection) = self.check(&mut request, operation) {
            let mut response = rejection.into_response();
            response.extensions_mut().insert(request_id);
            record(&span, "error.type", "local");
            telemetry::request(operation.id, Ended::Local);
            return Box::pin(std::future::ready(Ok(response)));
        }
        // A disabled span (no subscriber, or one that filters it out) is not entered and
        // left on every poll: the attempts run bare.
        if span.is_disabled() {
            Box::pin(self.attempts(http, request, operation, span, request_id))
        } else {
            Box::pin(
                self.attempts(http, request, operation, span.clone(), request_id)
                    .instrument(span),
            )
        }
    }

    /// The checks before any attempt (steps 1 to 3 of the [module doc](super)): a refusal
    /// is answered without sending anything.
    fn check(
        &self,
        request: &mut reqwest::Request,
        operation: &'static Operation,
    ) -> Result<(), LocalRejection> {
        if let Err(refusal) = crate::request::validate::check(operation, request) {
            return Err(LocalRejection::Invalid {
                operation: operation.id,
                field: refusal.field,
                problem: refusal.problem,
            });
        }
        self.check_sunset(operation)?;
        encode_path_queries(operation, request)?;
        check_path(operation, request.url().path())?;
        self.impersonate(request)
    }

    /// Refuses an operation the reference has removed, once its sunset has passed, unless
    /// the client was built with `call_removed_operations()`.
    fn check_sunset(&self, operation: &'static Operation) -> Result<(), LocalRejection> {
        let Some(sunset) = operation.sunset else {
            return Ok(());
        };
        let sunset = SystemTime::UNIX_EPOCH + Duration::from_secs(sunset);
        if self.shared.settings.call_removed_operations || SystemTime::now() < sunset {
            return Ok(());
        }
        Err(LocalRejection::Removed {
            operation: operation.id,
            sunset,
            successor: operation.successor,
        })
    }

    /// Sends exactly one impersonation header: the view's, unless the call set its own; when
    /// a call set both, the username wins, as on the server. A per-call value is validated
    /// like [`ActAs`]: an invalid one refuses the call with nothing sent.
    fn impersonate(&self, request: &mut reqwest::Request) -> Result<(), LocalRejection> {
        let headers = request.headers_mut();
        // One pass over the few headers instead of two hashed lookups, for the usual call
        // that sets neither.
        if !headers
            .keys()
            .any(|name| *name == ACT_AS || *name == ACT_AS_EMAIL)
        {
            if let Some(who) = &self.act_as {
                headers.insert(who.header_name(), who.header_value());
            }
            return Ok(());
        }
        type Parse = fn(&str) -> Result<ActAs, crate::act_as::ImpersonationError>;
        let per_call: Option<(_, Parse)> = match headers.get(&ACT_AS) {
            Some(value) => Some((value, ActAs::username)),
            None => headers
                .get(&ACT_AS_EMAIL)
                .map(|value| (value, ActAs::email as Parse)),
        };
        match per_call {
            Some((value, parse)) => {
                let text = value.to_str().unwrap_or("\u{fffd}");
                let who = parse(text).map_err(LocalRejection::Impersonation)?;
                if who.header_name() == ACT_AS {
                    headers.remove(&ACT_AS_EMAIL);
                }
                headers.insert(who.header_name(), who.header_value());
            }
            None => {
                if let Some(who) = &self.act_as {
                    headers.insert(who.header_name(), who.header_value());
                }
            }
        }
        Ok(())
    }

    /// The attempts of one operation (step 4 of the [module doc](super)), recording into
    /// `span`.
    ///
    /// An async block rather than an async fn: an async fn's future keeps each argument twice
    /// (where it was passed and where the body moved it), and the request is the largest part
    /// of this future, which every call boxes.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn's future would hold the request twice"
    )]
    fn attempts<'a>(
        &'a self,
        http: &'a reqwest::Client,
        mut request: reqwest::Request,
        operation: &'static Operation,
        span: tracing::Span,
        request_id: RequestId,
    ) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a {
        async move {
            // The attempts are an inner block (kept inline in this future: no second box
            // or copy), so that every way out of them passes through `finish`.
            let result = async {
                let shared = &self.shared;
                let config = &shared.retry;
                let class = operation.limit_class;
                let started = Instant::now();
                let deadline = started + config.operation_timeout();
                let mut waited = Duration::ZERO;
                let mut refreshed_token = false;
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    record(&span, "pubapi.attempt", attempt);
                    let now = if attempt == 1 {
                        started
                    } else {
                        Instant::now()
                    };
                    if now >= deadline {
                        return Ok(LocalRejection::Deadline {
                            elapsed: now - started,
                        }
                        .into_response());
                    }
                    // The token first: its fingerprint picks the limiter, and nothing slow stands
                    // between the slot and the send.
                    let token = match shared.token.ready() {
                        Some(token) => token,
                        None => match shared.token.token().await {
                            Ok(token) => token,
                            Err(e) => {
                                return Ok(LocalRejection::Token(e.to_string()).into_response());
                            }
                        },
                    };
                    let limiter = match shared.limiter_for(&token) {
                        Ok(limiter) => limiter,
                        Err(conflict) => {
                            return Ok(LocalRejection::Budget(conflict).into_response());
                        }
                    };
                    // The blocks end what the future need not keep while it waits: the permit
                    // while the request is out, the answer while it sleeps before a retry.
                    let (sending, replay) = {
                        let permit = match limiter.acquire(class, deadline - now).await {
                            Ok(permit) => permit,
                            Err(e) => return Ok(LocalRejection::Limit(e).into_response()),
                        };
                        record(
                            &span,
                            "pubapi.limiter_wait_ms",
                            permit.waited().as_millis() as u64,
                        );
                        telemetry::limiter_wait(class, permit.waited());
                        // The token and the call's id are set on every attempt, not kept for
                        // the next one (see `Replay`).
                        let headers = request.headers_mut();
                        headers.insert(http::header::AUTHORIZATION, token.header_value());
                        headers.insert(REQUEST_ID_HEADER, request_id.header_value());
                        let replay = Replay::of(&request, shared.transport.is_none());
                        permit.sent();
                        (shared.send(http, request), replay)
                    };
                    let Some(replay) = replay else {
                        // A streaming body cannot be replayed: one attempt only.
                        return with_failed_body(sending.await, operation).await;
                    };
                    let after = {
                        // The HTTP client's read timeout bounds the wait for the head and every read
                        // of the body (see `ClientBuilder::attempt_timeout`): no timer of our own here.
                        let result = sending.await;
                        let outcome = match &result {
                            Ok(response) => {
                                let status = response.status().as_u16();
                                record(&span, "http.response.status_code", status);
                                telemetry::attempt(operation.id, Ended::Status(status));
                                if let Some(counters) =
                                    ServerCounters::from_headers(response.headers())
                                {
                                    limiter.observe(class, counters);
                                    if let (Some(allotted), Some(current)) =
                                        (counters.quota_allotted, counters.quota_current)
                                    {
                                        telemetry::quota_remaining(
                                            class,
                                            allotted.saturating_sub(current),
                                        );
                                    }
                                }
                                let outcome = classify_response(
                                    status,
                                    response.headers(),
                                    endpoint_kind(class),
                                    SystemTime::now(),
                                );
                                if let Some(code) = throttle_label(&outcome, response.headers()) {
                                    telemetry::throttle(code);
                                }
                                outcome
                            }
                            Err(error) => {
                                telemetry::attempt(operation.id, Ended::Transport);
                                classify_transport(error)
                            }
                        };
                        tracing::debug!(?outcome, "attempt finished");

                        if let Ok(response) = &result
                            && response.status() == 401
                            && !refreshed_token
                        {
                            // Give a rotating token source one chance to replace a revoked token.
                            shared.token.invalidate(&token);
                            refreshed_token = true;
                            if let Ok(fresh) = shared.token.token().await
                                && fresh.expose() != token.expose()
                            {
                                tracing::debug!(
                                    "token rejected with 401; retrying once with a fresh token"
                                );
                                telemetry::retry(operation.id, "unauthorized");
                                match replay.into_request(&result) {
                                    Some(again) => {
                                        request = again;
                                        continue;
                                    }
                                    None => return with_failed_body(result, operation).await,
                                }
                            }
                        }
                        if let Outcome::QuotaExhausted { retry_after } = outcome {
                            limiter.server_exhausted(
                                class,
                                retry_after.unwrap_or(Duration::from_secs(60)),
                            );
                        }

                        // The shared generator is locked only if a backoff is drawn.
                        let decision = config.decide(
                            &outcome,
                            operation.is_idempotent(),
                            attempt,
                            waited,
                            &mut &shared.rng,
                        );
                        match decision {
                            Decision::Done => return result,
                            Decision::GiveUp(reason) => {
                                tracing::debug!(%reason, "not retrying");
                                return with_failed_body(result, operation).await;
                            }
                            Decision::Retry { after } if Instant::now() + after >= deadline => {
                                tracing::debug!("next retry would pass the operation deadline");
                                return with_failed_body(result, operation).await;
                            }
                            Decision::Retry { after } => match replay.into_request(&result) {
                                Some(again) => {
                                    telemetry::retry(operation.id, retry_reason(&outcome));
                                    request = again;
                                    after
                                }
                                None => {
                                    tracing::debug!("the answer does not say what was sent");
                                    return with_failed_body(result, operation).await;
                                }
                            },
                        }
                    };
                    tracing::debug!(after_ms = after.as_millis() as u64, "retrying");
                    // Boxed, like every wait off the path of a free slot.
                    Box::pin(tokio::time::sleep(after)).await;
                    waited += after;
                }
            }
            .await;
            finish(result, operation, request_id, &span)
        }
    }
}

/// After the last attempt: the call's id on a failed answer (the typed error reads it there)
/// or on a transport failure's URL ([`crate::request_id::mark`]), its end on the span
/// (OpenTelemetry's `http.response.status_code` and `error.type`) and in the metrics.
fn finish(
    mut result: reqwest::Result<reqwest::Response>,
    operation: &'static Operation,
    request_id: RequestId,
    span: &tracing::Span,
) -> reqwest::Result<reqwest::Response> {
    let ended = match &mut result {
        Ok(response) => {
            let local = LocalRejection::of(response).is_some();
            let status = response.status().as_u16();
            // Only an answer that becomes an error needs it: a success costs no extension map.
            if local || status >= 400 {
                response.extensions_mut().insert(request_id);
            }
            if local {
                record(span, "error.type", "local");
                Ended::Local
            } else {
                record(span, "http.response.status_code", status);
                if status >= 400 && !span.is_disabled() {
                    record(span, "error.type", status.to_string());
                }
                Ended::Status(status)
            }
        }
        Err(error) => {
            record(span, "error.type", transport_error_type(error));
            Ended::Transport
        }
    };
    telemetry::request(operation.id, ended);
    result.map_err(|error| crate::request_id::mark(error, request_id))
}

/// Records `value` as the span's `field`, unless the span is disabled (with `tracing`'s `log`
/// feature on, a disabled span would still work the value out).
fn record<V: tracing::Value>(span: &tracing::Span, field: &str, value: V) {
    if !span.is_disabled() {
        span.record(field, value);
    }
}

/// `error.type` of a call that got no answer.
fn transport_error_type(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else {
        "transport"
    }
}

/// The metrics label of a throttle answer: the SDK's name of its gateway code.
fn throttle_label(outcome: &Outcome, headers: &http::HeaderMap) -> Option<&'static str> {
    use crate::gateway::{OVER_QPS, OVER_RATE};
    match outcome {
        Outcome::Throttled { .. } | Outcome::QuotaExhausted { .. } => {
            let code = crate::gateway::gateway_code(headers);
            Some(match code {
                None => "none",
                Some(c) if c.eq_ignore_ascii_case(OVER_QPS) => OVER_QPS,
                Some(c) if c.eq_ignore_ascii_case(OVER_RATE) => OVER_RATE,
                Some(_) => "unknown",
            })
        }
        Outcome::UnknownThrottle { .. } => Some("unknown"),
        _ => None,
    }
}

/// The metrics label of a retried outcome.
fn retry_reason(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Throttled { .. } | Outcome::UnknownThrottle { .. } => "throttled",
        Outcome::ServerError => "server_error",
        Outcome::TransportError { .. } => "transport",
        _ => "other",
    }
}

/// Step 5 of the [module doc](super): a final answer of 400 or more has its body read and
/// kept. Boxed, as it is rare next to a success, whose future it would otherwise enlarge.
async fn with_failed_body(
    result: reqwest::Result<reqwest::Response>,
    operation: &'static Operation,
) -> reqwest::Result<reqwest::Response> {
    match result {
        Ok(response) if response.status().as_u16() >= 400 => Ok(Box::pin(
            crate::request::failed::keep_failed_body(response, operation),
        )
        .await),
        result => result,
    }
}

/// Checks that the URL still has the operation's shape. Every path value went through
/// [`pubapi_sdk::path::encode_segment`] (one segment, `/` and `\\` encoded), so each literal
/// segment of the template must be where the template puts it, and each value segment must
/// decode to a value [`crate::path::encode_segment`] accepts: not empty, not `.` or `..`, no
/// `/` or backslash. A bad value is refused naming its parameter.
fn check_path(operation: &'static Operation, path: &str) -> Result<(), LocalRejection> {
    if operation.path.contains('{') {
        return check_segments(operation, path);
    }
    // No values: what the segments' walk checks is that the path ends with the template,
    // after the base URL's own path (both start with `/`).
    if path.ends_with(operation.path) {
        Ok(())
    } else {
        Err(shape_error(operation, path))
    }
}

/// [`check_path`]'s walk over the segments ([`crate::path::against_template`]).
fn check_segments(operation: &'static Operation, path: &str) -> Result<(), LocalRejection> {
    use crate::path::TemplateSegment::{Literal, Value};
    for (expected, sent) in crate::path::against_template(operation.path, path) {
        let segment = sent.ok_or_else(|| shape_error(operation, path))?;
        match expected {
            Value(parameter) => {
                let value = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
                crate::path::check_segment(&value).map_err(|error| LocalRejection::PathValue {
                    operation: operation.id,
                    parameter,
                    error,
                })?;
            }
            Literal(literal) if segment != literal => return Err(shape_error(operation, path)),
            Literal(_) => {}
        }
    }
    // Before the template's segments, at least the empty one of the path's leading `/`.
    if path.matches('/').count() < operation.path.matches('/').count() {
        return Err(shape_error(operation, path));
    }
    Ok(())
}

fn shape_error(operation: &'static Operation, path: &str) -> LocalRejection {
    LocalRejection::Path {
        template: operation.path,
        sent: path.to_string(),
    }
}

/// Re-encodes the query parameters that hold a file or folder path
/// ([`Operation::path_queries`]): the generated builder form-encodes them (`%2F` for every
/// slash, `+` for a space), while the reference wants each element percent-encoded and the
/// separating slashes kept. An invalid path is refused naming its parameter.
fn encode_path_queries(
    operation: &'static Operation,
    request: &mut reqwest::Request,
) -> Result<(), LocalRejection> {
    if operation.path_queries.is_empty() || request.url().query().is_none() {
        return Ok(());
    }
    let mut query = String::new();
    for (name, value) in request.url().query_pairs() {
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&url_form(&name));
        query.push('=');
        match operation.path_queries.iter().find(|p| **p == name) {
            Some(parameter) => {
                // `/` is the whole tree, and a folder may be written with a trailing slash.
                let folder = match value.strip_suffix('/') {
                    Some(trimmed) if !trimmed.is_empty() => trimmed,
                    _ => &value,
                };
                let path = if folder == "/" {
                    Ok("/".to_string())
                } else {
                    crate::path::encode_folder_path(folder)
                };
                let path = path.map_err(|error| LocalRejection::PathValue {
                    operation: operation.id,
                    parameter,
                    error,
                })?;
                query.push_str(&path);
            }
            None => query.push_str(&url_form(&value)),
        }
    }
    request.url_mut().set_query(Some(&query));
    Ok(())
}

/// Form-encodes one query name or value, as the generated builder does.
fn url_form(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

impl RequestPolicy for Policy {
    fn execute<'a>(
        &'a self,
        client: &'a reqwest::Client,
        request: reqwest::Request,
        operation: &'static Operation,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        self.run(client, request, operation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::StaticToken;
    use std::collections::VecDeque;

    /// Keeps every request it is given and answers the statuses it holds, then 200.
    #[derive(Debug, Default)]
    struct Recorder {
        statuses: Mutex<VecDeque<u16>>,
        sent: Mutex<Vec<reqwest::Request>>,
    }

    impl Transport for Recorder {
        fn send<'a>(
            &'a self,
            _client: &'a reqwest::Client,
            request: reqwest::Request,
        ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
            let status = self.statuses.lock().unwrap().pop_front().unwrap_or(200);
            self.sent.lock().unwrap().push(request);
            let response = http::Response::builder()
                .status(status)
                .body(Vec::<u8>::new())
                .unwrap();
            Box::pin(async move { Ok(response.into()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_resends_what_the_first_attempt_sent() {
        let recorder = Arc::new(Recorder::default());
        recorder.statuses.lock().unwrap().push_back(503);
        let client = crate::Client::builder()
            .isolated_budget()
            .base_url("http://127.0.0.1:1/pubapi")
            .token(SecretToken::try_from("t0k3n").unwrap())
            .transport(recorder.clone())
            .build()
            .unwrap();
        let bob = client.act_as(ActAs::username("bob").unwrap());
        // The empty body does not decode: only what was sent matters here.
        let _ = bob.identity().whoami().await;
        let sent = recorder.sent.lock().unwrap();
        assert_eq!(sent.len(), 2);
        let (first, retry) = (&sent[0], &sent[1]);
        assert_eq!(
            (
                first.method(),
                first.url(),
                first.version(),
                first.headers()
            ),
            (
                retry.method(),
                retry.url(),
                retry.version(),
                retry.headers()
            )
        );
        assert_eq!(first.headers()["authorization"], "Bearer t0k3n");
        assert_eq!(first.headers()[ACT_AS], "bob");
        // Sent through reqwest, the generated client's request (an act-as view's whoami)
        // would be kept for a retry without a copy.
        assert!(matches!(
            Replay::of(first, true),
            Some(Replay::Inline { .. })
        ));
    }

    #[test]
    fn the_quota_follows_the_token_used_last_through_a_rotation_and_back() {
        let first = SecretToken::try_from("rotation-first").unwrap();
        let second = SecretToken::try_from("rotation-second").unwrap();
        let shared = Shared::new(
            Arc::new(StaticToken::new(first.clone())),
            Budgets::PerToken {
                base_url: "http://rotation.test/pubapi".into(),
                limits: Limits::default(),
                pacing: Pacing::default(),
                fleet: None,
            },
            RetryConfig::default(),
            None,
            Settings {
                call_removed_operations: false,
            },
        );
        let of_first = shared.limiter_for(&first).unwrap().into_owned();
        assert!(shared.limiter().same_as(&of_first));
        let of_second = shared.limiter_for(&second).unwrap().into_owned();
        assert!(!of_second.same_as(&of_first));
        assert!(shared.limiter().same_as(&of_second));
        assert!(shared.limiter_for(&first).unwrap().same_as(&of_first));
        assert!(shared.limiter().same_as(&of_first));
        assert!(shared.limiter_for(&second).unwrap().same_as(&of_second));
        assert!(shared.limiter().same_as(&of_second));
    }

    #[test]
    fn a_template_without_values_is_checked_as_the_walk_over_its_segments_checks_it() {
        let fixed = [
            "",
            "/",
            "v1/whoami",
            "/v1/whoami",
            "/pubapi/v1/whoami",
            "/pubapi//v1/whoami",
            "/pubapi/v1/whoami/",
            "/pubapi/xv1/whoami",
            "/pubapi/v1/whoamix",
        ];
        let literal = pubapi_sdk::operations::ALL
            .iter()
            .filter(|operation| !operation.path.contains('{'));
        for operation in literal {
            let own = [
                operation.path.to_string(),
                format!("/pubapi{}", operation.path),
                format!("/pubapi{}/", operation.path),
                format!("/pubapi/x{}", &operation.path[1..]),
                format!("/pubapi{}", &operation.path[..operation.path.len() - 1]),
            ];
            for path in fixed.iter().map(|p| p.to_string()).chain(own) {
                assert_eq!(
                    check_path(operation, &path).is_ok(),
                    check_segments(operation, &path).is_ok(),
                    "{} against {path:?}",
                    operation.path
                );
            }
        }
    }
}
