//! One operation on its way through the attempts (step 4 of [`crate::request`]): the state
//! it carries from one attempt to the next ([`Op`], the request in its [`Outgoing`] slot),
//! the loop of attempts ([`Op::try_op`]), the decision after each ([`Op::decide`]) and the
//! call's end ([`Op::finish`]). One attempt itself is [`super::try_attempt`]'s.

use crate::error::TimeoutBound;
use crate::options::CallOptions;
use crate::request::limiter::{Permit, RateLimiter};
use crate::request::rejection::LocalRejection;
use crate::request::replay::Replay;
use crate::request::retry::Decision;
use crate::request::silence::{TimedOut, chunk_within};
use crate::request_id::RequestId;
use crate::telemetry::{self, Ended};
use crate::token::SecretToken;
use crate::verdict::{self, Verdict};
use pubapi_sdk::hooks::BoxFuture;
use pubapi_sdk::operations::Operation;
use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

use super::{Shared, record, transport_error_type};

/// One operation on its way through the attempts (step 4 of the [module doc](crate::request)), in
/// named phases as smithy-rs's orchestrator has them: [`Op::try_op`] runs the attempts and ends the
/// call; [`Op::try_attempt`] is one attempt, from the token to the [`Verdict`] on its answer;
/// [`Op::decide`] chooses, from the verdict, between handing the answer back and trying again
/// ([`Op::refresh_token`] first, for a revoked token); [`Op::finish`] puts the call's end on its
/// span, in the metrics and on the answer.
pub(super) struct Op<'a> {
    pub(super) shared: &'a Shared,
    pub(super) http: &'a reqwest::Client,
    pub(super) operation: &'static Operation,
    pub(super) span: tracing::Span,
    /// The call's id (each attempt's header shares its text).
    pub(super) request_id: RequestId,
    /// The view's call settings, if it has any.
    pub(super) options: Option<&'a CallOptions>,
}

impl Op<'_> {
    /// How long an attempt may wait in silence: the view's setting, or the client's.
    pub(super) fn silence(&self) -> Duration {
        self.options
            .and_then(|options| options.attempt_timeout)
            .unwrap_or(self.shared.settings.attempt_timeout)
    }
}

/// `duration` in nanoseconds, saturated (584 years).
pub(super) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Progress {
    /// When the operation's time is up.
    ///
    /// Worked out when asked (a call that needs a second attempt) rather than kept: the
    /// boxed future stays within the allocator's per-thread cache.
    pub(super) fn deadline(&self, timeout: Duration) -> Instant {
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
pub(super) struct Progress {
    pub(super) attempt: u32,
    pub(super) started: Instant,
    /// Time slept between attempts so far, in nanoseconds.
    pub(super) waited_ns: u64,
    /// Time the attempts waited for their slots so far, in nanoseconds.
    pub(super) limiter_waited_ns: u64,
    /// Whether a 401 already had its one try with a fresh token.
    pub(super) refreshed_token: bool,
}

/// Where an operation's request waits between its attempts: the request, until an attempt
/// sends it; then what sends it again. One place for both keeps the boxed future small.
/// (Not a pacer's slot: that is [`crate::request::limiter`]'s.)
pub(super) enum Outgoing {
    /// To be sent.
    Request(reqwest::Request),
    /// Sent, with what sends it again; `None` for a streaming body, which is sent once.
    Sent(Option<Replay>),
}

impl Outgoing {
    /// The request, to send: the slot is left empty until the attempt says what sends it
    /// again.
    pub(super) fn take_request(&mut self) -> Option<reqwest::Request> {
        match std::mem::replace(self, Outgoing::Sent(None)) {
            Outgoing::Request(request) => Some(request),
            Outgoing::Sent(replay) => {
                *self = Outgoing::Sent(replay);
                None
            }
        }
    }

    /// Whether the request sent can be sent again.
    pub(super) fn can_resend(&self) -> bool {
        matches!(self, Outgoing::Sent(Some(_)))
    }

    /// What sends the request again, taken out of the slot.
    pub(super) fn take_replay(&mut self) -> Option<Replay> {
        match self {
            Outgoing::Sent(replay) => replay.take(),
            Outgoing::Request(_) => None,
        }
    }
}

/// What [`Op::pace`] found: leave to send now, or the wait for it.
pub(super) enum Pace<'l> {
    /// The slot is free now.
    Now(Permit<'l>),
    /// The wait for a later slot (or for a fleet's store).
    Wait(BoxFuture<'l, Result<Permit<'l>, crate::limits::LimitError>>),
}

/// One attempt's answer (or failure); what sends the request again is in the [`Outgoing`].
pub(super) struct Attempted<'a> {
    pub(super) result: reqwest::Result<reqwest::Response>,
    pub(super) verdict: Verdict,
    pub(super) token: SecretToken,
    pub(super) limiter: Cow<'a, RateLimiter>,
}

/// What [`Op::decide`] chooses.
pub(super) enum Next {
    /// Hand this back: a success, or the last answer, with the [`Verdict`] on it (which a
    /// failed answer's error is built from, without judging it again).
    Return(reqwest::Result<reqwest::Response>, Verdict),
    /// Send the request in the [`Outgoing`] again after this long.
    Retry(Duration),
}

impl<'a> Op<'a> {
    /// How long the call may take: the view's setting, or the client's.
    pub(super) fn operation_timeout(&self) -> Duration {
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
    /// in it ([`in_span`](super::in_span)).
    ///
    /// An async block rather than an async fn, with the request kept in the one slot every
    /// attempt takes it from: this future is boxed on every call, and an async fn's (or a
    /// nested block's) future would hold the request twice, growing the box past what the
    /// allocator serves from its per-thread cache.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn's future would hold the request twice"
    )]
    pub(super) fn try_op(
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
            let later: BoxFuture<'static, _> = 'later: {
                let result = loop {
                    // In a block of its own: what an attempt leaves is gone before the wait for
                    // the next, so the future keeps no room for it during the wait.
                    let after = {
                        let attempted = match self.try_attempt(&mut slot, &mut progress).await {
                            // Nothing to decide: the answer goes back as it is (matched in
                            // place, through no other step, each of which would move it again),
                            // and the retry budget gets its refund.
                            Ok(Attempted {
                                result: Ok(mut response),
                                verdict: Verdict::Success,
                                ..
                            }) => {
                                self.shared.retry.succeeded();
                                self.succeeded(&mut response);
                                if crate::request::success_body::is_decoded(
                                    self.operation,
                                    &response,
                                ) {
                                    // Boxed, and awaited out of the loop: the call's future
                                    // keeps no room for the read, nor for the attempt's
                                    // leftovers during it.
                                    let id = Some(self.request_id.clone());
                                    let within = Within {
                                        silence: self.silence(),
                                        deadline: progress.deadline(self.operation_timeout()),
                                        started: progress.started,
                                        attempts: progress.attempt,
                                    };
                                    break 'later Box::pin(read_success(response, id, within));
                                }
                                return Ok(self.bound_streamed(response, progress.attempt));
                            }
                            Ok(attempted) => attempted,
                            Err(rejection) => break Err(rejection),
                        };
                        let next = if self.wants_fresh_token(&attempted, &slot, &progress) {
                            // Rare: a revoked token, whose source is asked for a fresh one.
                            Box::pin(self.refresh_token(attempted, &mut slot, &mut progress)).await
                        } else {
                            self.decide(attempted, &mut slot, &mut progress)
                        };
                        match next {
                            Next::Return(result, verdict) => break Ok((result, verdict)),
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
                match self.finish(result, sent, progress.attempt) {
                    Finished::Done(result) => return result,
                    Finished::Later(later) => later,
                }
            };
            later.await
        }
    }

    /// The retry step's decision on an attempt's verdict
    /// ([`RetryConfig::decide`](crate::request::retry::RetryConfig::decide)); a used-up quota
    /// blocks the pacer.
    pub(super) fn decide(
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
            return Next::Return(result, verdict);
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
            Decision::Done => Next::Return(result, verdict),
            Decision::GiveUp(reason) => {
                tracing::debug!(parent: &self.span, %reason, "not retrying");
                Next::Return(result, verdict)
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
                Next::Return(result, verdict)
            }
            Decision::Retry { after } => match slot.take_replay() {
                Some(replay) => {
                    telemetry::retry(operation.id, retry_reason(&verdict));
                    *slot = Outgoing::Request(replay.into_request());
                    Next::Retry(after)
                }
                None => Next::Return(result, verdict),
            },
        }
    }

    /// After the last attempt (steps 5 and 6 of the [module doc](crate::request)): a failed answer
    /// has its body read and kept, with the call's id (the typed error reads both there); a
    /// transport failure gets the id on its URL ([`crate::request_id::mark`]); a refusal becomes
    /// the error that carries it, with the id on `sent` (the URL of the request it would have sent
    /// again) when an attempt was sent before it. The end goes on the call's span (OpenTelemetry's
    /// `error.type` and the error status; the status is on the attempt's span) and into the
    /// metrics. A success is handed back at once; what needs a wait (a failed body to read, a
    /// refusal to turn into an error) comes back as [`Finished::Later`].
    pub(super) fn finish(
        &self,
        result: Result<(reqwest::Result<reqwest::Response>, Verdict), LocalRejection>,
        sent: Option<reqwest::Url>,
        attempts: u32,
    ) -> Finished {
        let (span, operation) = (&self.span, self.operation);
        let ended = match &result {
            Err(_) => {
                record(span, "error.type", "local");
                record(span, "otel.status_code", "ERROR");
                Ended::Local
            }
            Ok((Ok(response), _)) => {
                let status = response.status().as_u16();
                if verdict::has_error_body(status) && !span.is_disabled() {
                    record(span, "error.type", status.to_string());
                    record(span, "otel.status_code", "ERROR");
                }
                Ended::Status(status)
            }
            Ok((Err(error), _)) => {
                record(span, "error.type", transport_error_type(error));
                record(span, "otel.status_code", "ERROR");
                Ended::Transport
            }
        };
        telemetry::request(operation.id, ended);
        let request_id = Some(self.request_id.clone());
        let silence = self.silence();
        match result {
            Ok((Ok(mut response), _)) if !verdict::has_error_body(response.status().as_u16()) => {
                self.keep_id_if_undocumented(&mut response);
                Finished::Done(Ok(self.bound_streamed(response, attempts)))
            }
            Ok((Err(error), _)) => Finished::Done(Err(match request_id {
                Some(id) => crate::request_id::mark(error, id),
                None => error,
            })),
            // Boxed here, as it is rare next to a success, whose future it would enlarge.
            failed => Finished::Later(Box::pin(async move {
                match failed {
                    Ok((Ok(response), verdict)) => {
                        let mut response = crate::request::failed::keep_failed_body(
                            response, operation, verdict, silence,
                        )
                        .await;
                        if let Some(id) = request_id {
                            response.extensions_mut().insert(id);
                        }
                        Ok(response)
                    }
                    Ok((Err(error), _)) => Err(error),
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
    pub(super) fn succeeded(&self, response: &mut reqwest::Response) {
        telemetry::request(self.operation.id, Ended::Status(response.status().as_u16()));
        self.keep_id_if_undocumented(response);
    }

    /// A body handed back to be read as it comes (a CSV report) keeps the attempt's bound on
    /// silence on every read; an empty one needs none.
    pub(super) fn bound_streamed(
        &self,
        response: reqwest::Response,
        attempts: u32,
    ) -> reqwest::Response {
        if response.content_length() == Some(0) {
            return response;
        }
        let id = Some(self.request_id.clone());
        crate::request::silence::bounded(response, self.silence(), attempts, id)
    }

    /// A status the spec does not document becomes the generated code's unexpected answer,
    /// and then an error: it keeps the call's id too.
    pub(super) fn keep_id_if_undocumented(&self, response: &mut reqwest::Response) {
        if crate::request::success_body::documented(self.operation, response.status()).is_none()
            && let Some(id) = Some(self.request_id.clone())
        {
            response.extensions_mut().insert(id);
        }
    }
}

/// Reads a success body the generated code decodes (see
/// [`success_body`](crate::request::success_body)), and hands the answer back with the body
/// tied to the call's id `id`; a read that fails is the call's transport failure, with the id
/// on its URL, as any other; a read that runs out of time (`within`) is the timeout of the
/// call; an empty body is the decode failure it will be, with the id.
async fn read_success(
    mut response: reqwest::Response,
    id: Option<RequestId>,
    within: Within,
) -> reqwest::Result<reqwest::Response> {
    use crate::request::success_body::{EmptySuccess, tag};
    let url = response.url().clone();
    let (status, version) = (response.status(), response.version());
    let headers = std::mem::take(response.headers_mut());
    let extensions = std::mem::take(response.extensions_mut());
    let body = match read_whole(&mut response, &within).await {
        Ok(Ok(body)) => body,
        Ok(Err(bound)) => {
            let elapsed = match bound {
                TimeoutBound::Silence => within.silence,
                _ => within.started.elapsed(),
            };
            let timed_out = TimedOut {
                bound,
                elapsed,
                attempts: within.attempts,
                request_id: id,
            };
            return Err(timed_out.into_error().await);
        }
        Err(error) => {
            let error = error.with_url(url);
            return Err(match id {
                Some(id) => crate::request_id::mark(error, id),
                None => error,
            });
        }
    };
    if body.is_empty() {
        return Err(EmptySuccess { request_id: id }.into_error().await);
    }
    let body = match id {
        Some(id) => tag(body, id),
        None => body,
    };
    use reqwest::ResponseBuilderExt;
    let mut rebuilt = http::Response::builder()
        .url(url)
        .body(body)
        .unwrap_or_default();
    *rebuilt.status_mut() = status;
    *rebuilt.version_mut() = version;
    *rebuilt.headers_mut() = headers;
    rebuilt.extensions_mut().extend(extensions);
    Ok(reqwest::Response::from(rebuilt))
}

/// The bounds on the read of a success body: the attempt's silence and the operation's
/// deadline (from when the call `started`), after `attempts` attempts.
pub(super) struct Within {
    pub(super) silence: Duration,
    pub(super) deadline: Instant,
    pub(super) started: Instant,
    pub(super) attempts: u32,
}

/// A body read whole (its one chunk as it came, or the chunks joined), or the bound that ran
/// out first.
async fn read_whole(
    response: &mut reqwest::Response,
    within: &Within,
) -> reqwest::Result<Result<bytes::Bytes, TimeoutBound>> {
    let next = async |response: &mut reqwest::Response| {
        chunk_within(response, within.silence, within.deadline).await
    };
    let Some(first) = (match next(response).await {
        Ok(read) => read?,
        Err(bound) => return Ok(Err(bound)),
    }) else {
        return Ok(Ok(bytes::Bytes::new()));
    };
    let Some(second) = (match next(response).await {
        Ok(read) => read?,
        Err(bound) => return Ok(Err(bound)),
    }) else {
        return Ok(Ok(first));
    };
    let announced = response.content_length().unwrap_or(0);
    // What the head announces, up to 16 MiB: a length is no promise.
    let mut body = Vec::with_capacity(
        usize::try_from(announced.min(1 << 24))
            .unwrap_or(0)
            .max(first.len() + second.len()),
    );
    body.extend_from_slice(&first);
    body.extend_from_slice(&second);
    loop {
        match next(response).await {
            Ok(read) => match read? {
                Some(chunk) => body.extend_from_slice(&chunk),
                None => return Ok(Ok(bytes::Bytes::from(body))),
            },
            Err(bound) => return Ok(Err(bound)),
        }
    }
}

/// How a call ends ([`Op::finish`]): at once, or after a wait.
pub(super) enum Finished {
    /// The result, as it is.
    Done(reqwest::Result<reqwest::Response>),
    /// The result, once this has read a failed body or made a refusal's error.
    Later(BoxFuture<'static, reqwest::Result<reqwest::Response>>),
}

/// The metrics label of a retried outcome.
pub(super) fn retry_reason(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Throttled { .. } | Verdict::UnknownThrottle { .. } => "throttled",
        Verdict::ServerError => "server_error",
        Verdict::NoAnswer { .. } => "transport",
        _ => "other",
    }
}
