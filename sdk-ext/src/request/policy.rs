//! The request policy: what happens to every request of a [`crate::Client`], in the order
//! the [module doc](super) lists.
//!
//! For each attempt: wait for the pacer's slot (shared by every clone of the client, so
//! impersonated calls count against the token's own budget), add the bearer token and the
//! impersonation header, send, take the [`Verdict`](crate::verdict::Verdict) on the answer, and
//! retry only where the retry step allows it. Refusals that never reach the server come back as a
//! [`LocalRejection`], carried by an error without a status.
//!
//! The parts, each a phase of the module doc's list: this module holds what a client shares
//! ([`Shared`]) and the [`Policy`] that runs every operation: the checks before the first
//! attempt (the sunset, the act-as header) and the URL's in [`url`]; [`call`] runs the
//! attempts of one operation ([`call::Op::try_op`]), decides after each and ends the call;
//! [`try_attempt`] is one attempt, from the token to the verdict. Each builds only on those
//! before it (and this module).

use crate::act_as::{ACT_AS, ACT_AS_EMAIL, ActAs};
use crate::fleet::Fleet;
use crate::interceptor::Interceptor;
use crate::limits::BudgetConflict;
use crate::limits::{Limits, Pacing};
use crate::options::CallOptions;
use crate::request::limiter::{BudgetDomain, RateLimiter};
use crate::request::rejection::LocalRejection;
use crate::request::retry::RetryConfig;
use crate::request_id::RequestId;
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
use tracing::Instrument;

mod call;
mod try_attempt;
mod url;

use call::{Op, Outgoing};
use url::{check_path, encode_path_queries};

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
    /// How long an attempt may wait in silence (`ClientBuilder::attempt_timeout`), unless a
    /// view says otherwise.
    pub(crate) attempt_timeout: Duration,
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
    /// The limiter of each token this client uses: shared in the process by every client of
    /// the same token on the same domain (whatever the spelling of its base URL), or, when
    /// `domain` is `None` (an isolated budget in a fleet), this client's own, in the fleet's
    /// windows.
    PerToken {
        limits: Limits,
        pacing: Pacing,
        fleet: Option<Fleet>,
        domain: Option<BudgetDomain>,
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
        let (limits, pacing, fleet, domain) = match &self.budgets {
            Budgets::Isolated(limiter) => return Ok(Cow::Borrowed(limiter)),
            Budgets::PerToken {
                limits,
                pacing,
                fleet,
                domain,
            } => (limits, pacing, fleet, domain),
        };
        let (limits, pacing, fleet, domain) = (*limits, *pacing, fleet, domain);
        let lookup = || {
            let fingerprint = token.fingerprint();
            match domain {
                Some(domain) => {
                    RateLimiter::for_token(fingerprint, domain, limits, pacing, fleet.clone())
                }
                None => Ok(RateLimiter::of_token(
                    fingerprint,
                    limits,
                    pacing,
                    fleet.clone(),
                )),
            }
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
        let request_id = match options {
            Some(options) => options.apply(&mut request),
            None => RequestId::next_with_header().0,
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
            request_id,
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
        if self.shared.settings.call_removed_operations || crate::time::now() < sunset {
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
    if error.is_timeout() || crate::request::silence::TimedOut::in_sources(error).is_some() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else {
        "transport"
    }
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
