//! Calling the token endpoint politely.
//!
//! The token endpoint is `/puboauth/token`, outside `/pubapi`; its request parameters and
//! grant flows are not in the reference, so a [`crate::TokenSource`] builds the request
//! itself. What the reference does say is how it throttles: **409 with `Retry-After`**
//! (100 requests per hour for public applications, 10 per user per hour for internal ones).
//! [`send_token_request`] gives that request the same retry vocabulary as the API calls.

use crate::classify::{EndpointKind, classify_response, classify_transport};
use crate::retry::{Decision, RetryConfig, SplitMix64};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Sends a token request built by `send` (called once per attempt) and retries it after a
/// 409 for as long as its `Retry-After` says, within `retry`'s attempts, cap and total wait.
/// A connection that never opened is retried too; a 5xx is not (the request is a POST).
/// Returns the last response (or transport error) for the caller to read.
///
/// ```no_run
/// use pubapi_sdk_ext::RetryConfig;
/// use pubapi_sdk_ext::token_endpoint::send_token_request;
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
    let mut rng = SplitMix64::from_entropy();
    let mut waited = Duration::ZERO;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = send().await;
        let outcome = match &result {
            Ok(response) => classify_response(
                response.status().as_u16(),
                response.headers(),
                EndpointKind::Token,
                SystemTime::now(),
            ),
            Err(error) => classify_transport(error),
        };
        match retry.decide(&outcome, false, attempt, waited, &mut rng) {
            Decision::Retry { after } => {
                tracing::debug!(
                    after_ms = after.as_millis() as u64,
                    "token endpoint throttled; retrying"
                );
                drop(result);
                tokio::time::sleep(after).await;
                waited += after;
            }
            Decision::Done | Decision::GiveUp(_) => return result,
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
