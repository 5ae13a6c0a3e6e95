//! The request policy: what happens to every request of a [`crate::Client`], in the order
//! the [module doc](super) lists.
//!
//! For each attempt: wait for the pacer's slot (shared by every clone of the client, so
//! impersonated calls count against the token's own budget), add the bearer token and the
//! impersonation header, send, take the [`Verdict`] on the answer, and retry only where the
//! retry step allows it. Refusals that never reach the server come back as a
//! [`LocalRejection`], carried by an error without a status.

use crate::act_as::{ACT_AS, ACT_AS_EMAIL, ActAs};
use crate::fleet::Fleet;
use crate::limits::BudgetConflict;
use crate::limits::{Limits, Pacing, ServerCounters};
use crate::request::limiter::RateLimiter;
use crate::request::rejection::LocalRejection;
use crate::request::replay::Replay;
use crate::request::retry::{Decision, RetryConfig};
use crate::request_id::{REQUEST_ID_HEADER, RequestId};
use crate::rng::SplitMix64;
use crate::telemetry::{self, Ended};
use crate::token::{SecretToken, TokenSource};
use crate::transport::{ReqwestTransport, Transport};
use crate::verdict::{self, EndpointKind, Refusal, Verdict};
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
            record(&span, "error.type", "local");
            telemetry::request(operation.id, Ended::Local);
            return Box::pin(async move { Err(rejection.into_error().await) });
        }
        let op = Op {
            shared: &self.shared,
            http,
            operation,
            span,
            request_id,
        };
        // A disabled span (no subscriber, or one that filters it out) is not entered and
        // left on every poll: the attempts run bare.
        if op.span.is_disabled() {
            Box::pin(op.try_op(request))
        } else {
            let span = op.span.clone();
            Box::pin(op.try_op(request).instrument(span))
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
}

/// One operation on its way through the attempts (step 4 of the [module doc](super)), in
/// named phases as smithy-rs's orchestrator has them: [`Op::try_op`] runs the attempts and
/// ends the call; [`Op::try_attempt`] is one attempt, from the token to the [`Verdict`] on
/// its answer; [`Op::after_attempt`] decides, from the verdict, between handing the answer
/// back and trying again; [`Op::finish`] puts the call's end on its span, in the metrics and
/// on the answer.
struct Op<'a> {
    shared: &'a Shared,
    http: &'a reqwest::Client,
    operation: &'static Operation,
    span: tracing::Span,
    request_id: RequestId,
}

/// How far an operation has come: what the phases read and update between attempts.
struct Progress {
    attempt: u32,
    started: Instant,
    deadline: Instant,
    /// Time slept between attempts so far.
    waited: Duration,
    /// Whether a 401 already had its one try with a fresh token.
    refreshed_token: bool,
}

/// One attempt's answer (or failure), with what the next attempt needs.
struct Attempted<'a> {
    result: reqwest::Result<reqwest::Response>,
    verdict: Verdict,
    /// What sends the request again; `None` for a streaming body, which is sent once.
    replay: Option<Replay>,
    token: SecretToken,
    limiter: Cow<'a, RateLimiter>,
}

/// What [`Op::after_attempt`] decides.
enum Next {
    /// Hand this back: a success, or the last answer.
    Return(reqwest::Result<reqwest::Response>),
    /// Send `request` again after `after`.
    Retry {
        request: reqwest::Request,
        after: Duration,
    },
}

impl<'a> Op<'a> {
    /// The attempts, then the end of the call: every way out of the loop passes through
    /// [`Op::finish`].
    ///
    /// An async block rather than an async fn: an async fn's future keeps each argument twice
    /// (where it was passed and where the body moved it), and the request is the largest part
    /// of this future, which every call boxes.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn's future would hold the request twice"
    )]
    fn try_op(
        self,
        request: reqwest::Request,
    ) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a {
        async move {
            let result = async {
                let started = Instant::now();
                let mut progress = Progress {
                    attempt: 0,
                    started,
                    deadline: started + self.shared.retry.operation_timeout(),
                    waited: Duration::ZERO,
                    refreshed_token: false,
                };
                let mut request = request;
                loop {
                    let attempted = self.try_attempt(request, &mut progress).await?;
                    match self.after_attempt(attempted, &mut progress).await {
                        Next::Return(result) => return Ok(result),
                        Next::Retry {
                            request: again,
                            after,
                        } => {
                            tracing::debug!(after_ms = after.as_millis() as u64, "retrying");
                            // Boxed, like every wait off the path of a free slot.
                            Box::pin(tokio::time::sleep(after)).await;
                            progress.waited += after;
                            request = again;
                        }
                    }
                }
            }
            .await;
            self.finish(result).await
        }
    }

    /// One attempt: the token, a slot of its pacer, the send, and the [`Verdict`] on the
    /// answer (which feeds the pacer the gateway's counters). A refusal (deadline passed,
    /// no token, no slot in time) ends the operation with nothing sent.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn's future would hold the request twice"
    )]
    fn try_attempt<'p>(
        &'p self,
        mut request: reqwest::Request,
        progress: &'p mut Progress,
    ) -> impl Future<Output = Result<Attempted<'a>, LocalRejection>> + Send + 'p {
        async move {
            let shared = self.shared;
            let class = self.operation.limit_class;
            progress.attempt += 1;
            record(&self.span, "pubapi.attempt", progress.attempt);
            let now = if progress.attempt == 1 {
                progress.started
            } else {
                Instant::now()
            };
            if now >= progress.deadline {
                return Err(LocalRejection::Deadline {
                    elapsed: now - progress.started,
                });
            }
            // The token first: its fingerprint picks the limiter, and nothing slow stands
            // between the slot and the send.
            let token = match shared.token.ready() {
                Some(token) => token,
                None => shared
                    .token
                    .token()
                    .await
                    .map_err(|e| LocalRejection::Token(e.to_string()))?,
            };
            let limiter = shared.limiter_for(&token).map_err(LocalRejection::Budget)?;
            // The block ends the permit while the request is out.
            let (sending, replay) = {
                let permit = limiter
                    .acquire(class, progress.deadline - now)
                    .await
                    .map_err(LocalRejection::Limit)?;
                record(
                    &self.span,
                    "pubapi.limiter_wait_ms",
                    permit.waited().as_millis() as u64,
                );
                telemetry::limiter_wait(class, permit.waited());
                // The token and the call's id are set on every attempt, not kept for the
                // next one (see `Replay`).
                let headers = request.headers_mut();
                headers.insert(http::header::AUTHORIZATION, token.header_value());
                headers.insert(REQUEST_ID_HEADER, self.request_id.header_value());
                let replay = Replay::of(&request, shared.transport.is_none());
                permit.sent();
                (shared.send(self.http, request), replay)
            };
            // The HTTP client's read timeout bounds the wait for the head and every read of
            // the body (see `ClientBuilder::attempt_timeout`): no timer of our own here.
            let result = sending.await;
            let verdict = self.judge(&result, &limiter);
            Ok(Attempted {
                result,
                verdict,
                replay,
                token,
                limiter,
            })
        }
    }

    /// The [`Verdict`] on an attempt's answer, told to the span, the metrics and the pacer
    /// (the gateway's counters).
    fn judge(&self, result: &reqwest::Result<reqwest::Response>, limiter: &RateLimiter) -> Verdict {
        let operation = self.operation;
        let class = operation.limit_class;
        let verdict = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                record(&self.span, "http.response.status_code", status);
                telemetry::attempt(operation.id, Ended::Status(status));
                if let Some(counters) = ServerCounters::from_headers(response.headers()) {
                    limiter.observe(class, counters);
                    if let (Some(allotted), Some(current)) =
                        (counters.quota_allotted, counters.quota_current)
                    {
                        telemetry::quota_remaining(class, allotted.saturating_sub(current));
                    }
                }
                let verdict = verdict::judge(
                    status,
                    response.headers(),
                    EndpointKind::of_class(class),
                    SystemTime::now(),
                );
                if let Some(code) = throttle_label(&verdict, response.headers()) {
                    telemetry::throttle(code);
                }
                verdict
            }
            Err(error) => {
                telemetry::attempt(operation.id, Ended::Transport);
                verdict::judge_transport(error)
            }
        };
        tracing::debug!(?verdict, "attempt finished");
        verdict
    }

    /// After an attempt: a 401 gets one try with a fresh token, a used-up quota blocks the
    /// pacer, and the retry step decides on the verdict ([`RetryConfig::decide`]).
    async fn after_attempt(&self, attempted: Attempted<'a>, progress: &mut Progress) -> Next {
        let Attempted {
            result,
            verdict,
            replay,
            token,
            limiter,
        } = attempted;
        let operation = self.operation;
        let Some(replay) = replay else {
            // A streaming body cannot be replayed: one attempt only.
            return Next::Return(result);
        };
        if verdict == Verdict::Refused(Refusal::Unauthorized)
            && !progress.refreshed_token
            && let Ok(response) = &result
            && response.status() == http::StatusCode::UNAUTHORIZED
        {
            // Give a rotating token source one chance to replace a revoked token.
            self.shared.token.invalidate(&token);
            progress.refreshed_token = true;
            if let Ok(fresh) = self.shared.token.token().await
                && fresh.expose() != token.expose()
            {
                tracing::debug!("token rejected with 401; retrying once with a fresh token");
                telemetry::retry(operation.id, "unauthorized");
                return match replay.into_request(&result) {
                    Some(request) => Next::Retry {
                        request,
                        after: Duration::ZERO,
                    },
                    None => Next::Return(result),
                };
            }
        }
        if let Verdict::QuotaExhausted { retry_after } = verdict {
            limiter.server_exhausted(
                operation.limit_class,
                retry_after.unwrap_or(Duration::from_secs(60)),
            );
        }
        // The shared generator is locked only if a backoff is drawn.
        let decision = self.shared.retry.decide(
            &verdict,
            operation.is_idempotent(),
            progress.attempt,
            progress.waited,
            &mut &self.shared.rng,
        );
        match decision {
            Decision::Done => Next::Return(result),
            Decision::GiveUp(reason) => {
                tracing::debug!(%reason, "not retrying");
                Next::Return(result)
            }
            Decision::Retry { after } if Instant::now() + after >= progress.deadline => {
                tracing::debug!("next retry would pass the operation deadline");
                Next::Return(result)
            }
            Decision::Retry { after } => match replay.into_request(&result) {
                Some(request) => {
                    telemetry::retry(operation.id, retry_reason(&verdict));
                    Next::Retry { request, after }
                }
                None => {
                    tracing::debug!("the answer does not say what was sent");
                    Next::Return(result)
                }
            },
        }
    }

    /// After the last attempt (steps 5 and 6 of the [module doc](super)): a failed answer has
    /// its body read and kept, with the call's id (the typed error reads both there); a
    /// transport failure gets the id on its URL ([`crate::request_id::mark`]); a refusal
    /// becomes the error that carries it. The end goes on the span (OpenTelemetry's
    /// `http.response.status_code` and `error.type`) and into the metrics.
    async fn finish(
        &self,
        result: Result<reqwest::Result<reqwest::Response>, LocalRejection>,
    ) -> reqwest::Result<reqwest::Response> {
        let (span, operation) = (&self.span, self.operation);
        let (ended, result) = match result {
            Err(rejection) => {
                record(span, "error.type", "local");
                telemetry::request(operation.id, Ended::Local);
                return Err(rejection.into_error().await);
            }
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                record(span, "http.response.status_code", status);
                if !verdict::has_error_body(status) {
                    (Ended::Status(status), Ok(response))
                } else {
                    if !span.is_disabled() {
                        record(span, "error.type", status.to_string());
                    }
                    // Boxed, as it is rare next to a success, whose future it would
                    // otherwise enlarge.
                    let mut response = Box::pin(crate::request::failed::keep_failed_body(
                        response, operation,
                    ))
                    .await;
                    response.extensions_mut().insert(self.request_id);
                    (Ended::Status(status), Ok(response))
                }
            }
            Ok(Err(error)) => {
                record(span, "error.type", transport_error_type(&error));
                (
                    Ended::Transport,
                    Err(crate::request_id::mark(error, self.request_id)),
                )
            }
        };
        telemetry::request(operation.id, ended);
        result
    }
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
fn throttle_label(verdict: &Verdict, headers: &http::HeaderMap) -> Option<&'static str> {
    use crate::gateway::{OVER_QPS, OVER_RATE};
    match verdict {
        Verdict::Throttled { .. } | Verdict::QuotaExhausted { .. } => {
            let code = crate::gateway::gateway_code(headers);
            Some(match code {
                None => "none",
                Some(c) if c.eq_ignore_ascii_case(OVER_QPS) => OVER_QPS,
                Some(c) if c.eq_ignore_ascii_case(OVER_RATE) => OVER_RATE,
                Some(_) => "unknown",
            })
        }
        Verdict::UnknownThrottle { .. } => Some("unknown"),
        _ => None,
    }
}

/// The metrics label of a retried outcome.
fn retry_reason(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Throttled { .. } | Verdict::UnknownThrottle { .. } => "throttled",
        Verdict::ServerError => "server_error",
        Verdict::NoAnswer { .. } => "transport",
        _ => "other",
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
