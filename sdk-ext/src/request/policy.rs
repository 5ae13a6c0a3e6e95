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
use crate::interceptor::{self, Interceptor};
use crate::limits::BudgetConflict;
use crate::limits::{Limits, Pacing, ServerCounters};
use crate::options::CallOptions;
use crate::request::attempt;
use crate::request::limiter::{Acquired, Permit, RateLimiter};
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
    /// The builder's interceptors, in the order added.
    interceptors: Box<[Arc<dyn Interceptor>]>,
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
        interceptors: Box<[Arc<dyn Interceptor>]>,
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
            interceptors,
            settings,
            rng: Mutex::new(SplitMix64::from_entropy()),
        }
    }
}

/// Where a client's limiter comes from.
#[derive(Debug)]
pub(crate) enum Budgets {
    /// The limiter of each token this client uses, shared in the process by every client
    /// of the same token, whatever base URL it was given.
    PerToken {
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
        let (limits, pacing, fleet) = match &self.budgets {
            Budgets::Isolated(limiter) => return Ok(Cow::Borrowed(limiter)),
            Budgets::PerToken {
                limits,
                pacing,
                fleet,
            } => (limits, pacing, fleet),
        };
        let lookup = || {
            let fingerprint = token.fingerprint();
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
    /// Sends one attempt through the builder's transport (in the call's span: it is code of
    /// the user's), or reqwest.
    fn send<'a>(
        &'a self,
        http: &'a reqwest::Client,
        request: reqwest::Request,
        span: &tracing::Span,
    ) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a {
        match &self.transport {
            Some(transport) => Either::Left(in_span(span, transport.send(http, request))),
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
            .field("interceptors", &self.interceptors)
            .finish()
    }
}

/// The policy of one client view: the shared parts plus whom the view acts as.
#[derive(Debug)]
pub(crate) struct Policy {
    shared: Arc<Shared>,
    act_as: Option<ActAs>,
    /// The view's call settings ([`crate::Client::with_options`]).
    options: Option<Arc<CallOptions>>,
}

impl Policy {
    pub(crate) fn new(
        shared: Arc<Shared>,
        act_as: Option<ActAs>,
        options: Option<Arc<CallOptions>>,
    ) -> Self {
        Policy {
            shared,
            act_as,
            options,
        }
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
        let options = self.options.as_deref();
        let (request_id, request_id_header) = match options {
            Some(options) => options.apply(&mut request),
            None => RequestId::next_with_header(),
        };
        // The call's span, the logical operation: parent of one HTTP client span per attempt
        // ([`attempt`]), which has the conventions' HTTP attributes; here how the call ended
        // (`error.type`, the error status) and the SDK's own fields under `pubapi.`; nothing
        // secret: no token, act-as value, query or body.
        let span = if !tracing::level_enabled!(tracing::Level::INFO) {
            // Nothing listens at this level: not even the fields are worked out.
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "pubapi.request",
                otel.status_code = tracing::field::Empty,
                error.r#type = tracing::field::Empty,
                pubapi.operation = operation.id,
                pubapi.limit_class = operation.limit_class.as_str(),
                // Displayed, so that only a subscriber that keeps it works out its text.
                pubapi.request_id = tracing::field::display(&request_id),
                pubapi.attempt = 1,
                // The call's wait for slots, over all its attempts.
                pubapi.limiter_wait_ms = 0,
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
            request_id: request_id_header,
            options,
        };
        Box::pin(op.try_op(Outgoing::Request(request)))
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
/// its answer; [`Op::decide`] chooses, from the verdict, between handing the answer back
/// and trying again ([`Op::refresh_token`] first, for a revoked token); [`Op::finish`] puts the call's end on its span, in the metrics and
/// on the answer.
struct Op<'a> {
    shared: &'a Shared,
    http: &'a reqwest::Client,
    operation: &'static Operation,
    span: tracing::Span,
    /// The call's id, as its header: the id itself is read back from it when the call ends.
    request_id: http::HeaderValue,
    /// The view's call settings, if it has any.
    options: Option<&'a CallOptions>,
}

/// `duration` in nanoseconds, saturated (584 years).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Progress {
    /// When the operation's time is up.
    ///
    /// Worked out when asked (a call that needs a second attempt) rather than kept: the
    /// boxed future stays within the allocator's per-thread cache.
    fn deadline(&self, timeout: Duration) -> Instant {
        // A timeout past what an instant can hold (`Duration::MAX`) is a deadline 30 years
        // on, not an overflow.
        self.started
            .checked_add(timeout)
            .unwrap_or_else(|| self.started + Duration::from_secs(30 * 365 * 86_400))
    }
}

/// How far an operation has come: what the phases read and update between attempts.
///
/// It lives in the boxed future of every call, which must stay within the 1,032 bytes that
/// glibc serves from its per-thread cache (a larger box costs the allocator's main path, about
/// 1 k instructions a call): times are kept as nanoseconds in a `u64` (half a `Duration`).
struct Progress {
    attempt: u32,
    started: Instant,
    /// Time slept between attempts so far, in nanoseconds.
    waited_ns: u64,
    /// Time the attempts waited for their slots so far, in nanoseconds.
    limiter_waited_ns: u64,
    /// Whether a 401 already had its one try with a fresh token.
    refreshed_token: bool,
}

/// Where an operation's request waits between its attempts: the request, until an attempt
/// sends it; then what sends it again. One place for both keeps the boxed future small.
/// (Not a pacer's slot: that is [`crate::request::limiter`]'s.)
enum Outgoing {
    /// To be sent.
    Request(reqwest::Request),
    /// Sent, with what sends it again; `None` for a streaming body, which is sent once.
    Sent(Option<Replay>),
}

impl Outgoing {
    /// The request, to send: the slot is left empty until the attempt says what sends it
    /// again.
    fn take_request(&mut self) -> Option<reqwest::Request> {
        match std::mem::replace(self, Outgoing::Sent(None)) {
            Outgoing::Request(request) => Some(request),
            Outgoing::Sent(replay) => {
                *self = Outgoing::Sent(replay);
                None
            }
        }
    }

    /// Whether the request sent can be sent again.
    fn can_resend(&self) -> bool {
        matches!(self, Outgoing::Sent(Some(_)))
    }

    /// What sends the request again, taken out of the slot.
    fn take_replay(&mut self) -> Option<Replay> {
        match self {
            Outgoing::Sent(replay) => replay.take(),
            Outgoing::Request(_) => None,
        }
    }
}

/// What [`Op::pace`] found: leave to send now, or the wait for it.
enum Pace<'l> {
    /// The slot is free now.
    Now(Permit<'l>),
    /// The wait for a later slot (or for a fleet's store).
    Wait(BoxFuture<'l, Result<Permit<'l>, crate::limits::LimitError>>),
}

/// One attempt's answer (or failure); what sends the request again is in the [`Outgoing`].
struct Attempted<'a> {
    result: reqwest::Result<reqwest::Response>,
    verdict: Verdict,
    token: SecretToken,
    limiter: Cow<'a, RateLimiter>,
}

/// What [`Op::decide`] chooses.
enum Next {
    /// Hand this back: a success, or the last answer.
    Return(reqwest::Result<reqwest::Response>),
    /// Send the request in the [`Outgoing`] again after this long.
    Retry(Duration),
}

impl<'a> Op<'a> {
    /// How long the call may take: the view's setting, or the client's.
    fn operation_timeout(&self) -> Duration {
        self.options
            .and_then(|options| options.operation_timeout)
            .unwrap_or(self.shared.retry.operation_timeout())
    }

    /// The attempts, then the end of the call: every way out of the loop passes through
    /// [`Op::finish`].
    ///
    /// The span is not entered on every poll (that would cost more than the rest of the
    /// policy): the SDK's events name it as their parent, and what can run code of others or
    /// wait on a store (a token source's fetch, a builder's transport, a fleet's store) runs
    /// in it ([`in_span`]).
    ///
    /// An async block rather than an async fn, with the request kept in the one slot every
    /// attempt takes it from: this future is boxed on every call, and an async fn's (or a
    /// nested block's) future would hold the request twice, growing the box past what the
    /// allocator serves from its per-thread cache.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn's future would hold the request twice"
    )]
    fn try_op(
        self,
        mut slot: Outgoing,
    ) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a {
        async move {
            let started = Instant::now();
            let mut progress = Progress {
                attempt: 0,
                started,
                waited_ns: 0,
                limiter_waited_ns: 0,
                refreshed_token: false,
            };
            let result = loop {
                // In a block of its own: what an attempt leaves is gone before the wait for
                // the next, so the future keeps no room for it during the wait.
                let after = {
                    let attempted = match self.try_attempt(&mut slot, &mut progress).await {
                        Ok(attempted) => attempted,
                        Err(rejection) => break Err(rejection),
                    };
                    if attempted.verdict == Verdict::Success
                        && let Ok(response) = attempted.result
                    {
                        // Nothing to decide: the answer goes back as it is (through no
                        // other step, each of which would move it again), and the retry
                        // budget gets its refund.
                        self.shared.retry.succeeded();
                        return Ok(self.succeeded(response));
                    }
                    let next = if self.wants_fresh_token(&attempted, &slot, &progress) {
                        // Rare: a revoked token, whose source is asked for a fresh one.
                        Box::pin(self.refresh_token(attempted, &mut slot, &mut progress)).await
                    } else {
                        self.decide(attempted, &mut slot, &mut progress)
                    };
                    match next {
                        Next::Return(result) => break Ok(result),
                        Next::Retry(after) => after,
                    }
                };
                tracing::debug!(
                    parent: &self.span,
                    after_ms = after.as_millis() as u64,
                    "retrying"
                );
                // Boxed, like every wait off the path of a free slot.
                Box::pin(tokio::time::sleep(after)).await;
                progress.waited_ns = progress.waited_ns.saturating_add(nanos(after));
            };
            // A refusal before a retry ends a call that was sent: its error keeps the id,
            // on the URL of the request it would have sent again.
            let sent = match (&result, &slot) {
                (Err(_), Outgoing::Request(request)) if progress.attempt > 1 => {
                    Some(request.url().clone())
                }
                _ => None,
            };
            match self.finish(result, sent) {
                Finished::Done(result) => result,
                Finished::Later(later) => later.await,
            }
        }
    }

    /// One attempt: the token, a slot of its pacer, the send, and the [`Verdict`] on the
    /// answer (which feeds the pacer the gateway's counters). A refusal (deadline passed,
    /// no token, no slot in time) ends the operation with nothing sent. The request is taken
    /// from the slot only when it leaves, and what sends it again is put there.
    async fn try_attempt(
        &self,
        slot: &mut Outgoing,
        progress: &mut Progress,
    ) -> Result<Attempted<'a>, LocalRejection> {
        let shared = self.shared;
        let class = self.operation.limit_class;
        progress.attempt += 1;
        let timeout = self.operation_timeout();
        // The first attempt starts when the call does; the deadline is worked out only for
        // a call that needs a second.
        let (now, left) = if progress.attempt == 1 {
            (progress.started, timeout)
        } else {
            record(&self.span, "pubapi.attempt", i64::from(progress.attempt));
            let now = Instant::now();
            let deadline = progress.deadline(timeout);
            if now >= deadline {
                return Err(LocalRejection::Deadline {
                    elapsed: now - progress.started,
                });
            }
            (now, deadline - now)
        };
        // The token first: its fingerprint picks the limiter, and nothing slow stands
        // between the slot and the send.
        let (token, now, left) = match shared.token.ready() {
            Some(token) => (token, now, left),
            None => {
                let token = in_span(&self.span, shared.token.token())
                    .await
                    .map_err(LocalRejection::Token)?;
                // The fetch took time: the slot is looked for from now, in the time left.
                let fetched = Instant::now();
                (token, fetched, left.saturating_sub(fetched - now))
            }
        };
        if let Some(transport) = &shared.transport
            && transport.stops_before_transmit()
        {
            // Rare (a dry run), boxed: the usual call's future keeps no room for it.
            return Box::pin(self.stop_before_transmit(&**transport, slot, token)).await;
        }
        let limiter = shared.limiter_for(&token).map_err(LocalRejection::Budget)?;
        // The block ends the permit while the request is out.
        let sending = {
            let permit = match self.pace(&limiter, left, now)? {
                Pace::Now(permit) => permit,
                Pace::Wait(waiting) => waiting.await.map_err(LocalRejection::Limit)?,
            };
            let Some(mut request) = slot.take_request() else {
                unreachable!("`try_op` puts the request back before every attempt")
            };
            // Kept before the token and the call's id are set: each attempt sets them again
            // (see `Replay`).
            let replay = Replay::of(&request, shared.transport.is_none());
            if !permit.waited().is_zero() {
                progress.limiter_waited_ns = progress
                    .limiter_waited_ns
                    .saturating_add(nanos(permit.waited()));
                record(
                    &self.span,
                    "pubapi.limiter_wait_ms",
                    // An `i64`, which `tracing-opentelemetry` exports as a number.
                    (progress.limiter_waited_ns / 1_000_000) as i64,
                );
            }
            telemetry::limiter_wait(class, permit.waited());
            // The token and the call's id are set on every attempt, not kept for the
            // next one (see `Replay`).
            let headers = request.headers_mut();
            headers.reserve(2);
            headers.insert(http::header::AUTHORIZATION, token.header_value());
            headers.insert(REQUEST_ID_HEADER, self.request_id.clone());
            *slot = Outgoing::Sent(replay);
            let span = attempt::span(&self.span, self.operation, &request, progress.attempt);
            // After the replay is made, so that each attempt carries only what they set for
            // it; in the attempt's span, for their events.
            if !shared.interceptors.is_empty() {
                let _in_span = span.enter();
                interceptor::before_send(
                    &shared.interceptors,
                    self.operation,
                    progress.attempt,
                    RequestId::of_header(&self.request_id),
                    &mut request,
                );
            }
            // After the replay is made: each attempt carries its own span's context.
            #[cfg(feature = "otel")]
            attempt::inject(&span, request.headers_mut());
            #[cfg(feature = "metrics")]
            let sent = (Instant::now(), request.url().clone());
            // Nothing was awaited since the permit came.
            permit.sent_in_same_poll();
            let sending = shared.send(self.http, request, &span);
            #[cfg(feature = "metrics")]
            let sending = (sending, sent);
            (sending, span)
        };
        let (sending, span) = sending;
        #[cfg(feature = "metrics")]
        let (sending, (sent_at, url)) = sending;
        // The HTTP client's read timeout bounds the wait for the head and every read of
        // the body (see `ClientBuilder::attempt_timeout`): no timer of our own here.
        let mut result = sending.await;
        if !shared.interceptors.is_empty() {
            let _in_span = span.enter();
            interceptor::after_receive(
                &shared.interceptors,
                self.operation,
                progress.attempt,
                RequestId::of_header(&self.request_id),
                &mut result,
            );
        }
        let (ended, error_type) = match &result {
            Ok(response) => (Ended::Status(response.status().as_u16()), None),
            Err(error) => (Ended::Transport, Some(transport_error_type(error))),
        };
        attempt::end(&span, ended, error_type);
        #[cfg(feature = "metrics")]
        attempt::duration(self.operation, &url, ended, error_type, sent_at.elapsed());
        drop(span);
        let verdict = self.judge(&result, &limiter);
        Ok(Attempted {
            result,
            verdict,
            token,
            limiter,
        })
    }

    /// The attempt of a transport that stops before transmit (a dry run,
    /// [`Transport::stops_before_transmit`]): the request, with the token and the call's id,
    /// is handed to it without a slot of the pacer, once (nothing kept to send it again).
    async fn stop_before_transmit(
        &self,
        transport: &'a dyn Transport,
        slot: &mut Outgoing,
        token: SecretToken,
    ) -> Result<Attempted<'a>, LocalRejection> {
        let limiter = self
            .shared
            .limiter_for(&token)
            .map_err(LocalRejection::Budget)?;
        let Some(mut request) = slot.take_request() else {
            unreachable!("`try_op` puts the request back before every attempt")
        };
        let headers = request.headers_mut();
        headers.insert(http::header::AUTHORIZATION, token.header_value());
        headers.insert(REQUEST_ID_HEADER, self.request_id.clone());
        let result = transport.send(self.http, request).await;
        let verdict = self.judge(&result, &limiter);
        Ok(Attempted {
            result,
            verdict,
            token,
            limiter,
        })
    }

    /// A slot of `limiter`'s pacer for this call's class, looked for from `now` within `left`:
    /// a free slot without a future (the usual, without a fleet), or the wait for one, boxed,
    /// so that the call's future keeps no room for it.
    fn pace<'l>(
        &self,
        limiter: &'l RateLimiter,
        left: Duration,
        now: Instant,
    ) -> Result<Pace<'l>, LocalRejection> {
        let class = self.operation.limit_class;
        if limiter.has_fleet() {
            // A fleet's store may be slow or down, and says so in events.
            let acquiring = in_span(&self.span, limiter.acquire_from(class, left, now));
            return Ok(Pace::Wait(Box::pin(acquiring)));
        }
        match limiter.book_local(class, left, now, 1, now) {
            Ok(Acquired::Now(permit)) => Ok(Pace::Now(permit)),
            Ok(Acquired::Later(booking)) => {
                Ok(Pace::Wait(Box::pin(limiter.wait_for(booking, now))))
            }
            Err(error) => Err(LocalRejection::Limit(error)),
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
                telemetry::attempt(operation.id, Ended::Status(status));
                if let Some(counters) = ServerCounters::from_headers(response.headers()) {
                    limiter.observe(class, counters);
                    if let (Some(allotted), Some(current)) =
                        (counters.quota_allotted, counters.quota_current)
                    {
                        telemetry::quota_remaining(class, allotted.saturating_sub(current));
                    }
                }
                let verdict =
                    verdict::judge_now(status, response.headers(), EndpointKind::of_class(class));
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
        tracing::debug!(parent: &self.span, ?verdict, "attempt finished");
        verdict
    }

    /// Whether an attempt's answer is a 401 on a token not yet refreshed (and the request can
    /// be sent again): it gets one try with a fresh token ([`Op::refresh_token`]); every other
    /// answer goes to [`Op::decide`] at once, without waiting.
    fn wants_fresh_token(
        &self,
        attempted: &Attempted<'a>,
        slot: &Outgoing,
        progress: &Progress,
    ) -> bool {
        slot.can_resend()
            && attempted.verdict == Verdict::Refused(Refusal::Unauthorized)
            && !progress.refreshed_token
            && attempted
                .result
                .as_ref()
                .is_ok_and(|response| response.status() == http::StatusCode::UNAUTHORIZED)
    }

    /// Gives a rotating token source one chance to replace a token the server refused
    /// (401): with a new token, the request is sent again at once; with the same one, the
    /// retry step decides as for any other answer.
    async fn refresh_token(
        &self,
        attempted: Attempted<'a>,
        slot: &mut Outgoing,
        progress: &mut Progress,
    ) -> Next {
        let token = &attempted.token;
        self.shared.token.invalidate(token);
        progress.refreshed_token = true;
        if let Ok(fresh) = self.shared.token.token().await
            && fresh.expose() != token.expose()
            && let Some(replay) = slot.take_replay()
        {
            tracing::debug!(
                parent: &self.span,
                "token rejected with 401; retrying once with a fresh token"
            );
            telemetry::retry(self.operation.id, "unauthorized");
            return match replay.into_request(&attempted.result) {
                Some(request) => {
                    *slot = Outgoing::Request(request);
                    Next::Retry(Duration::ZERO)
                }
                None => Next::Return(attempted.result),
            };
        }
        self.decide(attempted, slot, progress)
    }

    /// The retry step's decision on an attempt's verdict ([`RetryConfig::decide`]); a used-up
    /// quota blocks the pacer.
    fn decide(
        &self,
        attempted: Attempted<'a>,
        slot: &mut Outgoing,
        progress: &mut Progress,
    ) -> Next {
        let Attempted {
            result,
            verdict,
            token: _,
            limiter,
        } = attempted;
        let operation = self.operation;
        if !slot.can_resend() {
            // A streaming body cannot be replayed: one attempt only.
            return Next::Return(result);
        }
        if let Verdict::QuotaExhausted { retry_after } = verdict {
            limiter.server_exhausted(
                operation.limit_class,
                retry_after.unwrap_or(Duration::from_secs(60)),
            );
        }
        // The shared generator is locked only if a backoff is drawn.
        let decision = self.shared.retry.decide_within(
            self.options
                .and_then(|options| options.max_attempts)
                .unwrap_or(self.shared.retry.max_attempts()),
            &verdict,
            operation.is_idempotent(),
            progress.attempt,
            Duration::from_nanos(progress.waited_ns),
            &mut &self.shared.rng,
        );
        match decision {
            Decision::Done => Next::Return(result),
            Decision::GiveUp(reason) => {
                tracing::debug!(parent: &self.span, %reason, "not retrying");
                Next::Return(result)
            }
            Decision::Retry { after }
                if after
                    >= progress
                        .deadline(self.operation_timeout())
                        .saturating_duration_since(Instant::now()) =>
            {
                tracing::debug!(
                    parent: &self.span,
                    "next retry would pass the operation deadline"
                );
                Next::Return(result)
            }
            Decision::Retry { after } => {
                match slot.take_replay().and_then(|r| r.into_request(&result)) {
                    Some(request) => {
                        telemetry::retry(operation.id, retry_reason(&verdict));
                        *slot = Outgoing::Request(request);
                        Next::Retry(after)
                    }
                    None => {
                        tracing::debug!(parent: &self.span, "the answer does not say what was sent");
                        Next::Return(result)
                    }
                }
            }
        }
    }

    /// After the last attempt (steps 5 and 6 of the [module doc](super)): a failed answer has
    /// its body read and kept, with the call's id (the typed error reads both there); a
    /// transport failure gets the id on its URL ([`crate::request_id::mark`]); a refusal
    /// becomes the error that carries it, with the id on `sent` (the URL of the request it
    /// would have sent again) when an attempt was sent before it. The end goes on the call's span (OpenTelemetry's
    /// `error.type` and the error status; the status is on the attempt's span) and into the
    /// metrics. A success is handed back at once; what needs a wait (a failed body to read, a refusal to turn into
    /// an error) comes back as [`Finished::Later`].
    fn finish(
        &self,
        result: Result<reqwest::Result<reqwest::Response>, LocalRejection>,
        sent: Option<reqwest::Url>,
    ) -> Finished {
        let (span, operation) = (&self.span, self.operation);
        let ended = match &result {
            Err(_) => {
                record(span, "error.type", "local");
                record(span, "otel.status_code", "ERROR");
                Ended::Local
            }
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                if verdict::has_error_body(status) && !span.is_disabled() {
                    record(span, "error.type", status.to_string());
                    record(span, "otel.status_code", "ERROR");
                }
                Ended::Status(status)
            }
            Ok(Err(error)) => {
                record(span, "error.type", transport_error_type(error));
                record(span, "otel.status_code", "ERROR");
                Ended::Transport
            }
        };
        telemetry::request(operation.id, ended);
        let request_id = RequestId::of_header(&self.request_id);
        match result {
            Ok(Ok(response)) if !verdict::has_error_body(response.status().as_u16()) => {
                Finished::Done(Ok(self.keep_id_if_undocumented(response)))
            }
            Ok(Err(error)) => Finished::Done(Err(match request_id {
                Some(id) => crate::request_id::mark(error, id),
                None => error,
            })),
            // Boxed here, as it is rare next to a success, whose future it would enlarge.
            failed => Finished::Later(Box::pin(async move {
                match failed {
                    Ok(Ok(response)) => {
                        let mut response =
                            crate::request::failed::keep_failed_body(response, operation).await;
                        if let Some(id) = request_id {
                            response.extensions_mut().insert(id);
                        }
                        Ok(response)
                    }
                    Ok(Err(error)) => Err(error),
                    Err(rejection) => {
                        let error = rejection.into_error().await;
                        Err(match (sent, request_id) {
                            (Some(url), Some(id)) => {
                                crate::request_id::mark(error.with_url(url), id)
                            }
                            _ => error,
                        })
                    }
                }
            })),
        }
    }
}

impl Op<'_> {
    /// The end of a call whose answer is a success (the usual): into the metrics, and back
    /// as it came (see [`Op::keep_id_if_undocumented`]).
    fn succeeded(&self, response: reqwest::Response) -> reqwest::Response {
        telemetry::request(self.operation.id, Ended::Status(response.status().as_u16()));
        self.keep_id_if_undocumented(response)
    }

    /// A status the spec does not document becomes the generated code's unexpected answer,
    /// and then an error: it keeps the call's id too.
    fn keep_id_if_undocumented(&self, mut response: reqwest::Response) -> reqwest::Response {
        if !documents(self.operation, response.status())
            && let Some(id) = RequestId::of_header(&self.request_id)
        {
            response.extensions_mut().insert(id);
        }
        response
    }
}

/// Whether the spec documents `status` as an answer of `operation`.
fn documents(operation: &'static Operation, status: http::StatusCode) -> bool {
    // Three digits compared as bytes: cheaper than the status's text, on every call.
    let code = status.as_u16();
    let digits = [
        b'0' + (code / 100 % 10) as u8,
        b'0' + (code / 10 % 10) as u8,
        b'0' + (code % 10) as u8,
    ];
    operation
        .responses
        .iter()
        .any(|response| response.status.as_bytes() == digits)
}

/// How a call ends ([`Op::finish`]): at once, or after a wait.
enum Finished {
    /// The result, as it is.
    Done(reqwest::Result<reqwest::Response>),
    /// The result, once this has read a failed body or made a refusal's error.
    Later(BoxFuture<'static, reqwest::Result<reqwest::Response>>),
}

/// Records `value` as the span's `field`, unless the span is disabled (with `tracing`'s `log`
/// feature on, a disabled span would still work the value out).
fn record<V: tracing::Value>(span: &tracing::Span, field: &str, value: V) {
    if !span.is_disabled() {
        span.record(field, value);
    }
}

/// `future`, entered in `span` on every poll (unless the span is disabled): for what runs
/// code of others or waits on a store, whose events belong to the call.
fn in_span<F: Future>(
    span: &tracing::Span,
    future: F,
) -> Either<tracing::instrument::Instrumented<F>, F> {
    if span.is_disabled() {
        Either::Right(future)
    } else {
        Either::Left(future.instrument(span.clone()))
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
mod tests;
