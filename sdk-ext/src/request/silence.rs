//! The bounds on an attempt's time, kept by the SDK rather than the HTTP client (whose
//! timeouts are the client's alone: a view could not give one call a longer bound): the
//! attempt's bound on silence (no answer, or no byte of its body, for that long: the
//! client's [`attempt_timeout`](crate::ClientBuilder::attempt_timeout), or a view's
//! [`CallOptions::attempt_timeout`](crate::options::CallOptions::attempt_timeout)) and the
//! operation's deadline, which cancels an attempt in flight.
//!
//! A bound that runs out during an attempt travels as the source of the attempt's error
//! ([`TimedOut`]), which [`Error`](crate::Error) turns into
//! [`Error::Timeout`](crate::Error::Timeout); a body handed back to be read as it comes (a
//! CSV report) keeps the bound on silence on every read ([`bounded`]).

use crate::error::TimeoutBound;
use crate::request_id::RequestId;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// A bound on time that ran out during an attempt.
#[derive(Debug, Clone)]
pub(crate) struct TimedOut {
    /// Which bound.
    pub(crate) bound: TimeoutBound,
    /// The call's time so far (the operation's deadline) or the silence (an attempt's bound).
    pub(crate) elapsed: Duration,
    /// The attempts sent, this one included.
    pub(crate) attempts: u32,
    /// The call's id.
    pub(crate) request_id: Option<RequestId>,
}

impl TimedOut {
    /// The error an attempt (or a read of its body) ends with.
    pub(crate) async fn into_error(self) -> reqwest::Error {
        crate::request::rejection::error_with_source(Box::new(self)).await
    }

    /// [`TimedOut::into_error`] without a wait, where an await would grow the call's future:
    /// the error is made by a read that fails at once, so its future is ready when first
    /// polled.
    pub(crate) fn error_now(self) -> reqwest::Error {
        use futures_util::FutureExt;
        match self.into_error().now_or_never() {
            Some(error) => error,
            None => unreachable!("a body whose first read fails is read at once"),
        }
    }

    /// The one among an error's sources, if any.
    pub(crate) fn in_sources<'e>(
        error: &'e (dyn std::error::Error + 'static),
    ) -> Option<&'e TimedOut> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(timed_out) = error.downcast_ref::<TimedOut>() {
                return Some(timed_out);
            }
            next = error.source();
        }
        None
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bound {
            TimeoutBound::Silence => write!(f, "nothing received for {:?}", self.elapsed),
            _ => write!(f, "the operation timeout ran out after {:?}", self.elapsed),
        }
    }
}

impl std::error::Error for TimedOut {}

/// The earlier of the silence bound from `now` and the operation's `deadline`, and which of
/// the two it is.
pub(crate) fn first_bound(
    now: Instant,
    silence: Duration,
    deadline: Instant,
) -> (Instant, TimeoutBound) {
    match now.checked_add(silence) {
        Some(quiet) if quiet < deadline => (quiet, TimeoutBound::Silence),
        _ => (deadline, TimeoutBound::Operation),
    }
}

/// The next chunk of `response`'s body, unless `silence` passes first or the `deadline` does
/// (then which bound ran out).
pub(crate) async fn chunk_within(
    response: &mut reqwest::Response,
    silence: Duration,
    deadline: Instant,
) -> Result<reqwest::Result<Option<Bytes>>, TimeoutBound> {
    let (until, bound) = first_bound(Instant::now(), silence, deadline);
    tokio::time::timeout_at(until, response.chunk())
        .await
        .map_err(|_| bound)
}

/// `response` with each read of its body bounded by `silence`: a read that waits longer ends
/// the body with a [`TimedOut`] of `attempts` attempts and the call's `request_id`.
pub(crate) fn bounded(
    response: reqwest::Response,
    silence: Duration,
    attempts: u32,
    request_id: Option<RequestId>,
) -> reqwest::Response {
    use reqwest::ResponseBuilderExt;
    let url = response.url().clone();
    let mut response = response;
    let (status, version) = (response.status(), response.version());
    let headers = std::mem::take(response.headers_mut());
    let extensions = std::mem::take(response.extensions_mut());
    let quiet = Quiet {
        body: Box::pin(response.bytes_stream()),
        sleep: Box::pin(tokio::time::sleep(silence)),
        silence,
        timed_out: Some(TimedOut {
            bound: TimeoutBound::Silence,
            elapsed: silence,
            attempts,
            request_id,
        }),
    };
    let mut rebuilt = http::Response::builder()
        .url(url)
        .body(reqwest::Body::wrap_stream(quiet))
        .unwrap_or_default();
    *rebuilt.status_mut() = status;
    *rebuilt.version_mut() = version;
    *rebuilt.headers_mut() = headers;
    rebuilt.extensions_mut().extend(extensions);
    reqwest::Response::from(rebuilt)
}

/// A body whose every read waits at most `silence`.
struct Quiet {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send + Sync>>,
    sleep: Pin<Box<Sleep>>,
    silence: Duration,
    /// The error of a read that waits too long; taken when it is given (the body ends).
    timed_out: Option<TimedOut>,
}

impl Stream for Quiet {
    type Item = Result<Bytes, Box<dyn std::error::Error + Send + Sync>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(_) = &self.timed_out else {
            return Poll::Ready(None);
        };
        match self.body.poll_next_unpin(cx) {
            Poll::Ready(item) => {
                let deadline = Instant::now() + self.silence;
                self.sleep.as_mut().reset(deadline);
                Poll::Ready(item.map(|read| read.map_err(Into::into)))
            }
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(
                    self.timed_out
                        .take()
                        .map(|timed_out| Err(Box::new(timed_out) as _)),
                ),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bound_is_the_earlier_of_the_silence_and_the_deadline() {
        let now = Instant::now();
        let cases = [
            (1, 5, TimeoutBound::Silence, 1),
            (5, 1, TimeoutBound::Operation, 1),
            (3, 3, TimeoutBound::Operation, 3),
        ];
        for (silence, deadline, bound, at) in cases {
            let deadline = now + Duration::from_secs(deadline);
            assert_eq!(
                first_bound(now, Duration::from_secs(silence), deadline),
                (now + Duration::from_secs(at), bound),
                "{silence} s of silence, deadline in {deadline:?}"
            );
        }
        // A silence past what an instant holds leaves the deadline.
        let deadline = now + Duration::from_secs(1);
        assert_eq!(
            first_bound(now, Duration::MAX, deadline),
            (deadline, TimeoutBound::Operation)
        );
    }
}
