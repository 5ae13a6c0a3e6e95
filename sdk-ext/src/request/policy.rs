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
use crate::limits::{LimitClass, Limits, Pacing, ServerCounters};
use crate::request::classify::{EndpointKind, Outcome, classify_response, classify_transport};
use crate::request::limiter::RateLimiter;
use crate::request::rejection::LocalRejection;
use crate::request::retry::{Decision, RetryConfig};
use crate::rng::SplitMix64;
use crate::token::{SecretToken, TokenSource};
use crate::transport::Transport;
use pubapi_sdk::hooks::{BoxFuture, RequestPolicy};
use pubapi_sdk::operations::Operation;
use std::borrow::Cow;
use std::fmt;
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
    transport: Arc<dyn Transport>,
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
        transport: Arc<dyn Transport>,
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
    pub(crate) fn limiter_for(&self, token: &SecretToken) -> Cow<'_, RateLimiter> {
        let (base_url, limits, pacing, fleet) = match &self.budgets {
            Budgets::Isolated(limiter) => return Cow::Borrowed(limiter),
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
        let (first, limiter) = self.first.get_or_init(|| (token.clone(), lookup()));
        if first.expose() == token.expose() {
            if self.later_in_use.load(Ordering::Relaxed) {
                self.later_in_use.store(false, Ordering::Relaxed);
            }
            return Cow::Borrowed(limiter);
        }
        let mut later = self.later.lock().unwrap_or_else(|p| p.into_inner());
        self.later_in_use.store(true, Ordering::Relaxed);
        match &*later {
            Some((known, limiter)) if known.expose() == token.expose() => {
                Cow::Owned(limiter.clone())
            }
            _ => {
                let limiter = lookup();
                *later = Some((token.clone(), limiter.clone()));
                Cow::Owned(limiter)
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

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("token", &self.token)
            .field("budgets", &self.budgets)
            .field("retry", &self.retry)
            .field("transport", &self.transport)
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

    /// Runs one operation: pacing, auth, impersonation, attempts and retries.
    pub(crate) async fn run(
        &self,
        http: &reqwest::Client,
        mut request: reqwest::Request,
        operation: &'static Operation,
    ) -> reqwest::Result<reqwest::Response> {
        let span = tracing::info_span!(
            "pubapi.request",
            operation = operation.id,
            method = operation.method,
            attempt = tracing::field::Empty,
            status = tracing::field::Empty,
            limiter_wait_ms = tracing::field::Empty,
        );
        if let Err(refusal) = crate::request::validate::check(operation, &request) {
            return Ok(LocalRejection::Invalid {
                operation: operation.id,
                field: refusal.field,
                problem: refusal.problem,
            }
            .into_response());
        }
        if let Err(rejection) = self
            .check_sunset(operation)
            .and_then(|()| encode_path_queries(operation, &mut request))
            .and_then(|()| check_path(operation, request.url().path()))
        {
            return Ok(rejection.into_response());
        }
        if let Err(rejection) = self.impersonate(&mut request) {
            return Ok(rejection.into_response());
        }
        let response = self
            .attempts(http, request, operation)
            .instrument(span)
            .await?;
        if response.status().as_u16() < 400 || LocalRejection::of(&response).is_some() {
            return Ok(response);
        }
        Ok(crate::request::failed::keep_failed_body(response, operation).await)
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
        if headers.contains_key(&ACT_AS) {
            headers.remove(&ACT_AS_EMAIL);
        }
        let per_call = [
            (ACT_AS, ActAs::username as fn(&str) -> _),
            (ACT_AS_EMAIL, ActAs::email),
        ]
        .into_iter()
        .find_map(|(name, parse)| headers.get(name).map(|value| (value, parse)));
        match per_call {
            Some((value, parse)) => {
                let text = value.to_str().unwrap_or("\u{fffd}");
                let who = parse(text).map_err(LocalRejection::Impersonation)?;
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

    async fn attempts(
        &self,
        http: &reqwest::Client,
        request: reqwest::Request,
        operation: &'static Operation,
    ) -> reqwest::Result<reqwest::Response> {
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
            let span = tracing::Span::current();
            span.record("attempt", attempt);
            let now = Instant::now();
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
                    Err(e) => return Ok(LocalRejection::Token(e.to_string()).into_response()),
                },
            };
            let limiter = shared.limiter_for(&token);
            let permit = match limiter.acquire(class, deadline - now).await {
                Ok(permit) => permit,
                Err(e) => return Ok(LocalRejection::Limit(e).into_response()),
            };
            span.record("limiter_wait_ms", permit.waited().as_millis() as u64);
            let Some(mut this_attempt) = request.try_clone() else {
                // A streaming body cannot be replayed: one attempt only.
                let mut request = request;
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, token.header_value());
                permit.sent();
                return shared.transport.send(http, request).await;
            };
            this_attempt
                .headers_mut()
                .insert(http::header::AUTHORIZATION, token.header_value());
            permit.sent();

            // The HTTP client's read timeout bounds the wait for the head and every read of
            // the body (see `ClientBuilder::attempt_timeout`): no timer of our own here.
            let result = shared.transport.send(http, this_attempt).await;
            let outcome = match &result {
                Ok(response) => {
                    span.record("status", response.status().as_u16());
                    if let Some(counters) = ServerCounters::from_headers(response.headers()) {
                        limiter.observe(class, counters);
                    }
                    classify_response(
                        response.status().as_u16(),
                        response.headers(),
                        endpoint_kind(class),
                        SystemTime::now(),
                    )
                }
                Err(error) => classify_transport(error),
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
                    tracing::debug!("token rejected with 401; retrying once with a fresh token");
                    continue;
                }
            }
            if let Outcome::QuotaExhausted { retry_after } = outcome {
                limiter.server_exhausted(class, retry_after.unwrap_or(Duration::from_secs(60)));
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
                Decision::Done | Decision::GiveUp(_) => {
                    if let Decision::GiveUp(reason) = decision {
                        tracing::debug!(%reason, "not retrying");
                    }
                    return result;
                }
                Decision::Retry { after } => {
                    if Instant::now() + after >= deadline {
                        tracing::debug!("next retry would pass the operation deadline");
                        return result;
                    }
                    drop(result);
                    tracing::debug!(after_ms = after.as_millis() as u64, "retrying");
                    tokio::time::sleep(after).await;
                    waited += after;
                }
            }
        }
    }
}

/// Checks that the URL still has the operation's shape. Every path value went through
/// [`pubapi_sdk::path::encode_segment`] (one segment, `/` and `\\` encoded), so each literal
/// segment of the template must be where the template puts it, and each value segment must
/// decode to a value [`crate::path::encode_segment`] accepts: not empty, not `.` or `..`, no
/// `/` or backslash. A bad value is refused naming its parameter.
fn check_path(operation: &'static Operation, path: &str) -> Result<(), LocalRejection> {
    let shape_error = || LocalRejection::Path {
        template: operation.path,
        sent: path.to_string(),
    };
    // From the end: the base URL's own path comes before the template's segments.
    let mut sent = path.rsplit('/');
    let template = operation.path.strip_prefix('/').unwrap_or(operation.path);
    for expected in template.rsplit('/') {
        let segment = sent.next().ok_or_else(shape_error)?;
        match expected.strip_prefix('{').and_then(|e| e.strip_suffix('}')) {
            Some(parameter) => {
                let value = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
                crate::path::check_segment(&value).map_err(|error| LocalRejection::PathValue {
                    operation: operation.id,
                    parameter,
                    error,
                })?;
            }
            None if segment != expected => return Err(shape_error()),
            None => {}
        }
    }
    match sent.next() {
        Some(_) => Ok(()),
        None => Err(shape_error()),
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
        Box::pin(self.run(client, request, operation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::StaticToken;

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
            Arc::new(crate::transport::ReqwestTransport),
            Settings {
                call_removed_operations: false,
            },
        );
        let of_first = shared.limiter_for(&first).into_owned();
        assert!(shared.limiter().same_as(&of_first));
        let of_second = shared.limiter_for(&second).into_owned();
        assert!(!of_second.same_as(&of_first));
        assert!(shared.limiter().same_as(&of_second));
        assert!(shared.limiter_for(&first).same_as(&of_first));
        assert!(shared.limiter().same_as(&of_first));
        assert!(shared.limiter_for(&second).same_as(&of_second));
        assert!(shared.limiter().same_as(&of_second));
    }
}
