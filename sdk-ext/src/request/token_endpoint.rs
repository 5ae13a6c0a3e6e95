//! Calling the token endpoint politely.
//!
//! The token endpoint is `/puboauth/token`, outside `/pubapi`; its request parameters and
//! grant flows are not in the reference, so a [`crate::TokenSource`] builds the request
//! itself. What the reference does say is how it throttles: **409 with `Retry-After`**
//! (100 requests per hour for public applications, 10 per user per hour for internal ones).
//! [`send_token_request`] gives that request the same retry vocabulary as the API calls, and
//! [`TokenPacer`] keeps it within those hourly limits with the same limiter as the API calls.

use crate::limits::{Budget, LimitClass, LimitError, Limits, Pacing};
use crate::request::limiter::RateLimiter;
use crate::request::retry::{Decision, RetryConfig};
use crate::rng::SplitMix64;
use crate::verdict::{EndpointKind, judge, judge_transport};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// Which flow a token request belongs to, and so which hourly window it counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenFlow {
    /// The public application flow: one window for the application.
    Public,
    /// The internal application flow: one window per user.
    Internal {
        /// The user the token is for.
        user: String,
    },
}

/// The token endpoint's limits (section 8 of the reference), configurable for other plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLimits {
    /// Requests per hour of the public application flow (default 100).
    pub public_per_hour: u32,
    /// Requests per user per hour of the internal application flow (default 10).
    pub internal_per_user_per_hour: u32,
}

impl Default for TokenLimits {
    fn default() -> Self {
        TokenLimits {
            public_per_hour: 100,
            internal_per_user_per_hour: 10,
        }
    }
}

/// Paces token requests to the token endpoint's hourly limits, one rolling window per flow
/// (per user for the internal flow), kept a margin longer like every other window.
///
/// ```no_run
/// use pubapi_sdk_ext::RetryConfig;
/// use pubapi_sdk_ext::{TokenFlow, TokenPacer};
/// use std::time::Duration;
///
/// # async fn run(http: reqwest::Client, pacer: &TokenPacer) -> Result<(), Box<dyn std::error::Error>> {
/// let flow = TokenFlow::Internal { user: "svc-reports".into() };
/// let response = pacer
///     .send(&flow, Duration::from_secs(30), &RetryConfig::default(), || {
///         http.post("https://acme.example.com/puboauth/token")
///             .header("content-type", "application/x-www-form-urlencoded")
///             .body("grant_type=password")
///             .send()
///     })
///     .await?;
/// println!("{}", response.status());
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct TokenPacer {
    limits: TokenLimits,
    windows: Mutex<HashMap<TokenFlow, RateLimiter>>,
}

impl TokenPacer {
    /// A pacer with these limits.
    pub fn new(limits: TokenLimits) -> Self {
        TokenPacer {
            limits,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a slot of `flow` (at most `max_wait`), then sends as [`send_token_request`]
    /// does.
    ///
    /// # Errors
    /// [`TokenPacingError::Limit`] when the flow's hourly window has no slot within
    /// `max_wait` (nothing was sent), [`TokenPacingError::Http`] when the request failed.
    pub async fn send<F, Fut>(
        &self,
        flow: &TokenFlow,
        max_wait: Duration,
        retry: &RetryConfig,
        mut send: F,
    ) -> Result<reqwest::Response, TokenPacingError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = reqwest::Result<reqwest::Response>>,
    {
        let limiter = self.window(flow);
        attempts(retry, Some((&limiter, max_wait)), &mut send)
            .await
            .map_err(TokenPacingError::Limit)?
            .map_err(TokenPacingError::Http)
    }

    fn window(&self, flow: &TokenFlow) -> RateLimiter {
        let per_hour = match flow {
            TokenFlow::Public => self.limits.public_per_hour,
            TokenFlow::Internal { .. } => self.limits.internal_per_user_per_hour,
        };
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        windows
            .entry(flow.clone())
            .or_insert_with(|| {
                let budget = Budget::new(None, None).with_per_hour(Some(per_hour));
                RateLimiter::with_pacing(
                    Limits {
                        general: budget,
                        ai: budget,
                    },
                    Pacing::burst(Pacing::DEFAULT_MARGIN),
                )
            })
            .clone()
    }
}

/// Why [`TokenPacer::send`] has no response.
#[derive(Debug)]
#[non_exhaustive]
pub enum TokenPacingError {
    /// The flow's hourly window has no slot in time; nothing was sent.
    Limit(LimitError),
    /// The request failed.
    Http(reqwest::Error),
}

impl std::fmt::Display for TokenPacingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenPacingError::Limit(e) => write!(f, "token endpoint budget: {e}"),
            TokenPacingError::Http(_) => f.write_str("token request failed"),
        }
    }
}

impl std::error::Error for TokenPacingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenPacingError::Limit(e) => Some(e),
            TokenPacingError::Http(e) => Some(e),
        }
    }
}

/// Sends a token request built by `send` (called once per attempt) and retries it after a
/// 409 for as long as its `Retry-After` says, within `retry`'s attempts, cap and total wait.
/// A connection that never opened is retried too; a 5xx is not (the request is a POST).
/// Returns the last response (or transport error) for the caller to read.
///
/// ```no_run
/// use pubapi_sdk_ext::RetryConfig;
/// use pubapi_sdk_ext::send_token_request;
///
/// # async fn run(http: reqwest::Client) -> Result<(), reqwest::Error> {
/// let response = send_token_request(&RetryConfig::default(), || {
///     // The parameters are your grant's; the reference does not show them.
///     http.post("https://acme.example.com/puboauth/token")
///         .header("content-type", "application/x-www-form-urlencoded")
///         .body("grant_type=client_credentials")
///         .send()
/// })
/// .await?;
/// println!("{}", response.status());
/// # Ok(()) }
/// ```
pub async fn send_token_request<F, Fut>(
    retry: &RetryConfig,
    mut send: F,
) -> reqwest::Result<reqwest::Response>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = reqwest::Result<reqwest::Response>>,
{
    match attempts(retry, None, &mut send).await {
        Ok(result) => result,
        Err(_) => unreachable!("no pacer, no pacing error"),
    }
}

/// The attempts of one token request: each takes a slot of `pace` first, when given.
async fn attempts<F, Fut>(
    retry: &RetryConfig,
    pace: Option<(&RateLimiter, Duration)>,
    send: &mut F,
) -> Result<reqwest::Result<reqwest::Response>, LimitError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = reqwest::Result<reqwest::Response>>,
{
    let mut rng = SplitMix64::from_entropy();
    let mut waited = Duration::ZERO;
    let mut attempt = 0;
    loop {
        attempt += 1;
        if let Some((limiter, max_wait)) = pace {
            // Every attempt, retries included, takes a slot of the window.
            limiter.acquire(LimitClass::General, max_wait).await?.sent();
        }
        let result = send().await;
        let verdict = match &result {
            Ok(response) => judge(
                response.status().as_u16(),
                response.headers(),
                EndpointKind::Token,
                crate::time::now(),
            ),
            Err(error) => judge_transport(error),
        };
        match retry.decide(&verdict, false, attempt, waited, &mut rng) {
            Decision::Retry { after } => {
                tracing::debug!(
                    after_ms = after.as_millis() as u64,
                    "token endpoint throttled; retrying"
                );
                drop(result);
                tokio::time::sleep(after).await;
                waited += after;
            }
            Decision::Done | Decision::GiveUp(_) => return Ok(result),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::time::Instant;

    fn response(status: u16, retry_after: Option<&str>) -> reqwest::Response {
        let mut builder = http::Response::builder().status(status);
        if let Some(seconds) = retry_after {
            builder = builder.header("retry-after", seconds);
        }
        reqwest::Response::from(builder.body(Vec::<u8>::new()).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_token_request_is_retried_after_retry_after() {
        let start = Instant::now();
        let calls = Mutex::new(Vec::new());
        let result = send_token_request(&RetryConfig::default(), || {
            let mut calls = calls.lock().unwrap();
            calls.push(start.elapsed());
            let answer = if calls.len() == 1 {
                response(409, Some("30"))
            } else {
                response(200, None)
            };
            async move { Ok(answer) }
        })
        .await
        .unwrap();
        assert_eq!(result.status(), 200);
        assert_eq!(
            *calls.lock().unwrap(),
            vec![Duration::ZERO, Duration::from_secs(30)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn token_requests_keep_to_the_hourly_window_of_their_flow() {
        let pacer = TokenPacer::new(TokenLimits {
            public_per_hour: 100,
            internal_per_user_per_hour: 2,
        });
        let start = Instant::now();
        let calls = Mutex::new(Vec::new());
        let alice = TokenFlow::Internal {
            user: "alice".into(),
        };
        let send = || {
            calls.lock().unwrap().push(start.elapsed());
            async { Ok(response(200, None)) }
        };
        let retry = RetryConfig::default();
        let wait = Duration::from_secs(10);
        pacer.send(&alice, wait, &retry, send).await.unwrap();
        pacer.send(&alice, wait, &retry, send).await.unwrap();
        // The third within the hour is refused, nothing sent.
        assert!(matches!(
            pacer.send(&alice, wait, &retry, send).await,
            Err(TokenPacingError::Limit(
                LimitError::DailyBudgetExhausted { .. }
            ))
        ));
        // Another user has a window of their own; allowed to wait, alice goes after the hour.
        let bob = TokenFlow::Internal { user: "bob".into() };
        pacer.send(&bob, wait, &retry, send).await.unwrap();
        let hour = Duration::from_secs(3700);
        pacer.send(&alice, hour, &retry, send).await.unwrap();
        let calls = calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[3], Duration::from_secs(3600) + Pacing::DEFAULT_MARGIN);
    }

    #[tokio::test(start_paused = true)]
    async fn token_server_error_is_not_resent() {
        let calls = Mutex::new(0);
        let result = send_token_request(&RetryConfig::default(), || {
            *calls.lock().unwrap() += 1;
            async { Ok(response(500, None)) }
        })
        .await
        .unwrap();
        assert_eq!(result.status(), 500);
        assert_eq!(*calls.lock().unwrap(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn throttling_beyond_the_attempts_returns_the_last_409() {
        let calls = Mutex::new(0);
        let config = RetryConfig::default().with_max_attempts(2);
        let result = send_token_request(&config, || {
            *calls.lock().unwrap() += 1;
            async { Ok(response(409, Some("1"))) }
        })
        .await
        .unwrap();
        assert_eq!(result.status(), 409);
        assert_eq!(*calls.lock().unwrap(), 2);
    }
}
