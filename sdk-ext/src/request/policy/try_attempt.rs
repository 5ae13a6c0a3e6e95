//! One attempt of an operation ([`Op::try_attempt`]): the token, a slot of its pacer, the
//! send and the [`Verdict`] on the answer, with a fresh token after a 401; a transport that
//! stops before transmit gets the request without a slot. Built on [`super::call`]'s state.

use super::call::{Attempted, Next, Op, Outgoing, Pace, Progress, nanos};
use super::{in_span, record, transport_error_type};
use crate::error::TimeoutBound;
use crate::interceptor::{self};
use crate::limits::ServerCounters;
use crate::request::attempt;
use crate::request::limiter::{Acquired, RateLimiter};
use crate::request::rejection::LocalRejection;
use crate::request::replay::Replay;
use crate::request::silence::TimedOut;
use crate::request_id::REQUEST_ID_HEADER;
use crate::telemetry::{self, Ended};
use crate::token::{SecretToken, TokenSource};
use crate::transport::Transport;
use crate::verdict::{self, EndpointKind, Refusal, Verdict};
use std::time::Duration;
use tokio::time::Instant;

impl<'a> Op<'a> {
    /// One attempt: the token, a slot of its pacer, the send, and the [`Verdict`] on the
    /// answer (which feeds the pacer the gateway's counters). A refusal (deadline passed,
    /// no token, no slot in time) ends the operation with nothing sent. The request is taken
    /// from the slot only when it leaves, and what sends it again is put there.
    pub(super) async fn try_attempt(
        &self,
        slot: &mut Outgoing,
        progress: &mut Progress,
    ) -> Result<Attempted<'a>, LocalRejection> {
        let shared = self.shared;
        progress.attempt += 1;
        let (now, left) = self.attempt_window(progress)?;
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
        let span;
        #[cfg(feature = "metrics")]
        let sent;
        // The block ends the permit and the request (both borrowed, so kept until their
        // scope ends) before the request is out: the call's future keeps no room for them
        // while it waits.
        // The wait for the head is bounded by the attempt's silence and the operation's
        // deadline (the body's reads are bounded where they are read: `Op::try_op`); the
        // send is boxed with its timer, so the call's future keeps a pointer for it, not the
        // send and a timer (which would grow it past the allocator's per-thread cache).
        let (timed, bound, start) = {
            let permit = match self.pace(&limiter, left, now)? {
                Pace::Now(permit) => permit,
                Pace::Wait(waiting) => waiting.await.map_err(LocalRejection::Limit)?,
            };
            let start = permit.start_id();
            let Some(mut request) = slot.take_request() else {
                unreachable!("`try_op` puts the request back before every attempt")
            };
            // Kept (made in its slot) before the token and the call's id are set: each
            // attempt sets them again (see `Replay`).
            *slot = Outgoing::Sent(Replay::of(&request));
            self.record_limiter_wait(progress, permit.waited());
            self.set_token_and_id(&mut request, &token);
            span = attempt::span(&self.span, self.operation, &request, progress.attempt);
            // After the replay is made, so that each attempt carries only what they set for
            // it; in the attempt's span, for their events.
            self.before_send(&span, progress.attempt, &mut request);
            // After the replay is made: each attempt carries its own span's context.
            #[cfg(feature = "otel")]
            attempt::inject(&span, request.headers_mut());
            #[cfg(feature = "metrics")]
            {
                sent = (Instant::now(), request.url().clone());
            }
            // Nothing was awaited since the permit came.
            permit.sent_in_same_poll();
            let (until, bound) = crate::request::silence::first_bound(
                Instant::now(),
                self.silence(),
                progress.deadline(self.operation_timeout()),
            );
            let sending = shared.send(self.http, request, &span);
            (
                Box::pin(tokio::time::timeout_at(until, sending)),
                bound,
                start,
            )
        };
        let mut result = match timed.await {
            Ok(result) => result,
            // Rare: the attempt is cancelled (its request dropped), and ends as a
            // timeout of the call (the deadline) or of the attempt (retried as any other).
            Err(_) => Err(self.timed_out(bound, progress)),
        };
        self.after_receive(&span, progress.attempt, &mut result);
        #[cfg(not(feature = "metrics"))]
        self.end_attempt(span, &result);
        #[cfg(feature = "metrics")]
        self.end_attempt(span, &result, sent);
        let verdict = self.judge(&result, &limiter);
        if let Verdict::Throttled { .. } = verdict {
            // Refused before it was executed: the platform did not count it.
            limiter.not_counted(self.operation.limit_class, start);
        }
        Ok(Attempted {
            result,
            verdict,
            token,
            limiter,
        })
    }

    /// The error of attempt `progress.attempt`, whose `bound` ran out before its answer.
    fn timed_out(&self, bound: TimeoutBound, progress: &Progress) -> reqwest::Error {
        let elapsed = match bound {
            TimeoutBound::Silence => self.silence(),
            _ => progress.started.elapsed(),
        };
        TimedOut {
            bound,
            elapsed,
            attempts: progress.attempt,
            request_id: Some(self.request_id.clone()),
        }
        .error_now()
    }

    /// When attempt `progress.attempt` starts and the time it has: the first starts when the
    /// call does, with the whole timeout; a later one is refused once the deadline (worked out
    /// only for a call that needs a second attempt) has passed.
    fn attempt_window(&self, progress: &Progress) -> Result<(Instant, Duration), LocalRejection> {
        let timeout = self.operation_timeout();
        if progress.attempt == 1 {
            return Ok((progress.started, timeout));
        }
        record(&self.span, "pubapi.attempt", i64::from(progress.attempt));
        let now = Instant::now();
        let deadline = progress.deadline(timeout);
        if now >= deadline {
            return Err(LocalRejection::Deadline {
                elapsed: now - progress.started,
                attempts: progress.attempt - 1,
            });
        }
        Ok((now, deadline - now))
    }

    /// Counts the wait for a slot of the pacer: on the call's span (in all) and in the
    /// metrics.
    fn record_limiter_wait(&self, progress: &mut Progress, waited: Duration) {
        if !waited.is_zero() {
            progress.limiter_waited_ns = progress.limiter_waited_ns.saturating_add(nanos(waited));
            record(
                &self.span,
                "pubapi.limiter_wait_ms",
                // An `i64`, which `tracing-opentelemetry` exports as a number.
                (progress.limiter_waited_ns / 1_000_000) as i64,
            );
        }
        telemetry::limiter_wait(self.operation.limit_class, waited);
    }

    /// The builder's interceptors add their headers to the request of attempt `attempt`, in
    /// the attempt's `span`, for their events.
    fn before_send(&self, span: &tracing::Span, attempt: u32, request: &mut reqwest::Request) {
        let interceptors = &self.shared.interceptors;
        if !interceptors.is_empty() {
            let _in_span = span.enter();
            let id = Some(self.request_id.clone());
            interceptor::before_send(interceptors, self.operation, attempt, id, request);
        }
    }

    /// The builder's interceptors see the answer of attempt `attempt`, in its `span`.
    fn after_receive(
        &self,
        span: &tracing::Span,
        attempt: u32,
        result: &mut reqwest::Result<reqwest::Response>,
    ) {
        let interceptors = &self.shared.interceptors;
        if !interceptors.is_empty() {
            let _in_span = span.enter();
            let id = Some(self.request_id.clone());
            interceptor::after_receive(interceptors, self.operation, attempt, id, result);
        }
    }

    /// Sets the bearer token and the call's id on an attempt's request (every attempt sets
    /// them again, see `Replay`).
    fn set_token_and_id(&self, request: &mut reqwest::Request, token: &SecretToken) {
        let headers = request.headers_mut();
        headers.insert(http::header::AUTHORIZATION, token.header_value());
        headers.insert(REQUEST_ID_HEADER, self.request_id.header_value());
    }

    /// Ends the attempt's `span` with how `result` ended; with feature `metrics`, records the
    /// attempt's duration since it was `sent` (when, and to which URL).
    fn end_attempt(
        &self,
        span: tracing::Span,
        result: &reqwest::Result<reqwest::Response>,
        #[cfg(feature = "metrics")] sent: (Instant, reqwest::Url),
    ) {
        let (ended, error_type) = match result {
            Ok(response) => (Ended::Status(response.status().as_u16()), None),
            Err(error) => (Ended::Transport, Some(transport_error_type(error))),
        };
        attempt::end(&span, ended, error_type);
        #[cfg(feature = "metrics")]
        attempt::duration(self.operation, &sent.1, ended, error_type, sent.0.elapsed());
    }

    /// The attempt of a transport that stops before transmit (a dry run,
    /// [`Transport::stops_before_transmit`]): the request, with the token and the call's id,
    /// is handed to it without a slot of the pacer, once (nothing kept to send it again).
    pub(super) async fn stop_before_transmit(
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
        self.set_token_and_id(&mut request, &token);
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
    pub(super) fn pace<'l>(
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
    pub(super) fn judge(
        &self,
        result: &reqwest::Result<reqwest::Response>,
        limiter: &RateLimiter,
    ) -> Verdict {
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
                match verdict::judge_transport(error) {
                    // The policy's own bound on silence ran out (`request::silence`).
                    Verdict::NoAnswer { connect, .. } if TimedOut::in_sources(error).is_some() => {
                        Verdict::NoAnswer {
                            connect,
                            timeout: true,
                        }
                    }
                    verdict => verdict,
                }
            }
        };
        tracing::debug!(parent: &self.span, ?verdict, "attempt finished");
        verdict
    }

    /// Whether an attempt's answer is a 401 on a token not yet refreshed (and the request can
    /// be sent again): it gets one try with a fresh token ([`Op::refresh_token`]); every other
    /// answer goes to [`Op::decide`] at once, without waiting.
    pub(super) fn wants_fresh_token(
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
    pub(super) async fn refresh_token(
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
            *slot = Outgoing::Request(replay.into_request());
            return Next::Retry(Duration::ZERO);
        }
        self.decide(attempted, slot, progress)
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
