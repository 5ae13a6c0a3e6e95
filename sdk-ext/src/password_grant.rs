//! The token grant the platform's own clients use: a form POST to `/puboauth/token` with
//! `client_id`, `username`, `password` and `grant_type=password`.
//!
//! The reference names the token endpoint and its throttle (409 with `Retry-After`; 10
//! requests per user per hour for an internal application) but shows neither its parameters
//! nor its grants (reference 5.9, 8); the platform's clients send this form and read an OAuth
//! 2.0 answer (RFC 6749 5.1: `access_token`; 5.2: `error`, `error_description`).
//! [`PasswordGrant`] is a [`TokenSource`] that makes that request once, caches the token for
//! every call of the client, and asks again only after the API rejected the token with 401
//! (a changed password): tokens do not expire on their own. Its request goes through
//! [`send_token_request`] (retried after a 409 as long as its
//! `Retry-After` says), or through a shared [`TokenPacer`] that keeps the hourly window of
//! the internal flow.

use crate::limits::LimitError;
use crate::request::retry::RetryConfig;
use crate::request::token_endpoint::{TokenFlow, TokenPacer, TokenPacingError, send_token_request};
use crate::token::{SecretToken, TokenError, TokenFuture, TokenSource};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The path of the token endpoint, outside `/pubapi` (reference 5.9).
pub const TOKEN_PATH: &str = "/puboauth/token";

/// A [`TokenSource`] that obtains the token with the password grant of the platform's
/// clients, caches it, and fetches it again after the API rejected it.
///
/// `Debug` shows the endpoint, the client id and the username; the password and the token
/// are never printed.
///
/// ```no_run
/// use pubapi_sdk_ext::{Client, PasswordGrant};
/// use std::sync::Arc;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let password = std::env::var("PUBAPI_PASSWORD")?;
/// let grant = PasswordGrant::for_domain("acme.example.com", "my-client-id", "svc-reports", password)?;
/// let client = Client::builder()
///     .domain("acme.example.com")
///     .token_source(Arc::new(grant))
///     .build()?;
/// println!("{:?}", client.identity().whoami().await?.username);
/// # Ok(()) }
/// ```
pub struct PasswordGrant {
    url: reqwest::Url,
    client_id: String,
    username: String,
    password: String,
    http: reqwest::Client,
    retry: RetryConfig,
    pacer: Option<(Arc<TokenPacer>, Duration)>,
    cached: Mutex<Option<SecretToken>>,
    /// Held while a grant is in flight, so concurrent callers wait for one request; keeps
    /// the refusal of the last grant, which the callers that waited for it share instead of
    /// each sending the password again (repeated wrong passwords lock accounts, and the
    /// internal flow has 10 requests an hour).
    fetching: tokio::sync::Mutex<Option<TokenError>>,
}

impl fmt::Debug for PasswordGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cached = self.lock_cache().is_some();
        f.debug_struct("PasswordGrant")
            .field("url", &self.url.as_str())
            .field("client_id", &self.client_id)
            .field("username", &self.username)
            .field("password", &"** redacted **")
            .field("cached", &cached)
            .finish_non_exhaustive()
    }
}

impl PasswordGrant {
    /// A grant to the token endpoint at `token_url` (a full URL; `https`, or plain `http` to
    /// a loopback host such as a sandbox).
    ///
    /// # Errors
    /// [`GrantError::InvalidUrl`] when `token_url` is not such a URL.
    pub fn new(
        token_url: &str,
        client_id: impl Into<String>,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<Self, GrantError> {
        let invalid = |problem: &str| GrantError::InvalidUrl {
            url: without_credentials(token_url),
            problem: problem.to_string(),
        };
        let url = reqwest::Url::parse(token_url).map_err(|e| invalid(&e.to_string()))?;
        match url.scheme() {
            "https" => {}
            "http" if crate::loopback::is_loopback(&url) => {}
            "http" => return Err(invalid("plain http is for loopback hosts only")),
            _ => return Err(invalid("not an http(s) URL")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("credentials belong in the form, not the URL"));
        }
        Ok(PasswordGrant {
            url,
            client_id: client_id.into(),
            username: username.into(),
            password: password.into(),
            // The API client's: no redirect followed (a 307 or 308 would send the form,
            // password included, to wherever it points), the connection and reads bounded.
            http: crate::client::http_client(
                crate::client::DEFAULT_CONNECT_TIMEOUT,
                Some(crate::client::DEFAULT_ATTEMPT_TIMEOUT),
            )
            .map_err(|e| invalid(&e.to_string()))?,
            retry: RetryConfig::default(),
            pacer: None,
            cached: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(None),
        })
    }

    /// A grant to the token endpoint of a customer domain: `https://<domain>/puboauth/token`.
    ///
    /// # Errors
    /// [`GrantError::InvalidUrl`] when the domain does not make a URL.
    pub fn for_domain(
        domain: &str,
        client_id: impl Into<String>,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<Self, GrantError> {
        PasswordGrant::new(
            &format!("https://{domain}{TOKEN_PATH}"),
            client_id,
            username,
            password,
        )
    }

    /// Sends the grant with this HTTP client (proxies, TLS roots) instead of the default one,
    /// which follows no redirect (the form carries the password) and bounds the connection
    /// (10 s) and every read (60 s of silence).
    #[must_use]
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = http;
        self
    }

    /// How a throttled grant (409 with `Retry-After`) is retried; the default is
    /// [`RetryConfig::default`].
    #[must_use]
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// Sends the grant through `pacer`, in the hourly window of this user's internal flow,
    /// waiting at most `max_wait` for a slot. Share one pacer among the grants of a process.
    #[must_use]
    pub fn pacer(mut self, pacer: Arc<TokenPacer>, max_wait: Duration) -> Self {
        self.pacer = Some((pacer, max_wait));
        self
    }

    /// The token endpoint's URL.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// Sends the grant once and returns the token the endpoint hands out, without caching
    /// it (the [`TokenSource`] methods cache).
    ///
    /// # Errors
    /// [`GrantError::Refused`] with the status and the server's `error` and
    /// `error_description` when the endpoint refuses the grant (a wrong password answers 400
    /// `invalid_grant`, an unknown client 401 `invalid_client`); [`GrantError::Throttled`]
    /// when it is still throttled after the retries; [`GrantError::Paced`] when the pacer had
    /// no slot in time (nothing was sent); [`GrantError::Http`] when the request failed;
    /// [`GrantError::Malformed`] when a success does not carry a usable `access_token`.
    pub async fn fetch(&self) -> Result<SecretToken, GrantError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "password")
            .append_pair("client_id", &self.client_id)
            .append_pair("username", &self.username)
            .append_pair("password", &self.password)
            .finish();
        let send = || {
            self.http
                .post(self.url.clone())
                .header(
                    http::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .header(http::header::ACCEPT, "application/json")
                .body(form.clone())
                .send()
        };
        let response = match &self.pacer {
            Some((pacer, max_wait)) => {
                let flow = TokenFlow::Internal {
                    user: self.username.clone(),
                };
                match pacer.send(&flow, *max_wait, &self.retry, send).await {
                    Ok(response) => response,
                    Err(TokenPacingError::Limit(limit)) => return Err(GrantError::Paced(limit)),
                    Err(TokenPacingError::Http(error)) => return Err(GrantError::Http(error)),
                }
            }
            None => send_token_request(&self.retry, send)
                .await
                .map_err(GrantError::Http)?,
        };
        let status = response.status().as_u16();
        let retry_after = crate::retry_after::retry_after(response.headers(), crate::time::now());
        // A token answer is a few hundred bytes: an endless body is not read to its end.
        let body = crate::request::failed::read_capped(response, None)
            .await
            .map_err(GrantError::Http)?;
        read_answer(status, retry_after, &body).map_err(|e| e.without(&self.password))
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Option<SecretToken>> {
        self.cached.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn cached_or_fetch(&self) -> Result<SecretToken, TokenError> {
        if let Some(token) = self.lock_cache().clone() {
            return Ok(token);
        }
        let (mut refusal, waited) = match self.fetching.try_lock() {
            Ok(free) => (free, false),
            Err(_) => (self.fetching.lock().await, true),
        };
        // The grant this caller waited for may have ended either way.
        if let Some(token) = self.lock_cache().clone() {
            return Ok(token);
        }
        if waited && let Some(refused) = refusal.as_ref() {
            return Err(refused.clone());
        }
        match self.fetch().await {
            Ok(token) => {
                *refusal = None;
                *self.lock_cache() = Some(token.clone());
                Ok(token)
            }
            Err(error) => {
                let error = TokenError::unavailable(error);
                *refusal = Some(error.clone());
                Err(error)
            }
        }
    }
}

impl TokenSource for PasswordGrant {
    /// The cached token, or one grant's: one request however many callers wait, who share
    /// its token or its refusal. A call after a refusal asks again.
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.cached_or_fetch())
    }

    fn ready(&self) -> Option<SecretToken> {
        self.lock_cache().clone()
    }

    /// Drops the cached token when it is the one rejected, so the next call grants again.
    fn invalidate(&self, rejected: &SecretToken) {
        let mut cached = self.lock_cache();
        if cached.as_ref() == Some(rejected) {
            *cached = None;
        }
    }
}

/// `url` as an error may show it: without the user and password of its authority (a URL
/// given with credentials is refused, and must not print them).
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// What the token endpoint's answer means: a token, or why not.
fn read_answer(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Result<SecretToken, GrantError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        access_token: Option<String>,
        error: Option<String>,
        error_description: Option<String>,
    }
    let answer: Option<Answer> = serde_json::from_slice(body).ok();
    if (200..300).contains(&status) {
        let Some(raw) = answer.and_then(|a| a.access_token) else {
            return Err(GrantError::Malformed {
                status,
                problem: "the answer has no `access_token` string".into(),
            });
        };
        return SecretToken::try_from(raw).map_err(|e| GrantError::Malformed {
            status,
            problem: format!("the `access_token` is not a usable token: {e}"),
        });
    }
    let (error, description) = answer
        .map(|a| (a.error, a.error_description))
        .unwrap_or_default();
    // A body that is not the OAuth error object is kept as the message, shortened.
    let description = description.or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        (!text.is_empty() && error.is_none()).then(|| text.chars().take(300).collect())
    });
    if status == 409 {
        return Err(GrantError::Throttled {
            retry_after,
            description,
        });
    }
    Err(GrantError::Refused {
        status,
        error,
        description,
    })
}

/// Why a [`PasswordGrant`] has no token.
///
/// The messages never contain the password or a token.
#[derive(Debug)]
#[non_exhaustive]
pub enum GrantError {
    /// The token endpoint's URL is not usable.
    InvalidUrl {
        /// The URL as given, with any user and password of its authority shown as `***`.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The endpoint refused the grant: 400 `invalid_grant` (wrong username or password),
    /// `invalid_request`, `unsupported_grant_type`; 401 `invalid_client`; or another status.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The OAuth error code (`error`), when the answer has one.
        error: Option<String>,
        /// The server's message (`error_description`, or the body when it is not the OAuth
        /// error object).
        description: Option<String>,
    },
    /// The endpoint is still throttled (409) after the retries.
    Throttled {
        /// Its last `Retry-After` (delta-seconds or an HTTP date), when it sent one.
        retry_after: Option<Duration>,
        /// The server's message.
        description: Option<String>,
    },
    /// The pacer had no slot of the hourly window within its wait; nothing was sent.
    Paced(LimitError),
    /// The request failed (connection, timeout, body).
    Http(reqwest::Error),
    /// A success whose body has no usable `access_token`.
    Malformed {
        /// The HTTP status.
        status: u16,
        /// What is missing or wrong.
        problem: String,
    },
}

impl GrantError {
    /// The error with `password` (as sent in the form, and as given) blotted out of the
    /// server's message: an endpoint or a proxy that echoes the request would otherwise put
    /// the password into `Display`.
    fn without(self, password: &str) -> GrantError {
        if password.is_empty() {
            return self;
        }
        let encoded: String = form_urlencoded::byte_serialize(password.as_bytes()).collect();
        let scrub = |text: Option<String>| {
            text.map(|t| t.replace(password, "***").replace(&encoded, "***"))
        };
        match self {
            GrantError::Refused {
                status,
                error,
                description,
            } => GrantError::Refused {
                status,
                error: scrub(error),
                description: scrub(description),
            },
            GrantError::Throttled {
                retry_after,
                description,
            } => GrantError::Throttled {
                retry_after,
                description: scrub(description),
            },
            other => other,
        }
    }

    /// The OAuth error code of a refusal (`invalid_grant`, `invalid_client`, ...).
    pub fn oauth_error(&self) -> Option<&str> {
        match self {
            GrantError::Refused { error, .. } => error.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status the endpoint answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            GrantError::Refused { status, .. } | GrantError::Malformed { status, .. } => {
                Some(*status)
            }
            GrantError::Throttled { .. } => Some(409),
            _ => None,
        }
    }
}

impl fmt::Display for GrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantError::InvalidUrl { url, problem } => {
                write!(f, "token endpoint url {url:?} is not usable: {problem}")
            }
            GrantError::Refused {
                status,
                error,
                description,
            } => {
                write!(f, "token grant refused with {status}")?;
                if let Some(error) = error {
                    write!(f, " {error}")?;
                }
                if let Some(description) = description {
                    write!(f, ": {description}")?;
                }
                Ok(())
            }
            GrantError::Throttled { retry_after, .. } => {
                f.write_str("token endpoint still throttled (409)")?;
                if let Some(after) = retry_after {
                    write!(f, ", retry after {}", crate::time::HumanDuration(*after))?;
                }
                Ok(())
            }
            GrantError::Paced(_) => f.write_str("token endpoint's hourly window has no slot"),
            GrantError::Http(_) => f.write_str("token request failed"),
            GrantError::Malformed { status, problem } => {
                write!(
                    f,
                    "token endpoint answered {status} without a token: {problem}"
                )
            }
        }
    }
}

impl std::error::Error for GrantError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GrantError::Paced(e) => Some(e),
            GrantError::Http(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oauth_error_answer_is_a_refusal_with_the_servers_code_and_message() {
        let body = br#"{"error": "invalid_grant", "error_description": "bad credentials"}"#;
        let err = read_answer(400, None, body).unwrap_err();
        assert_eq!(err.oauth_error(), Some("invalid_grant"));
        assert_eq!(err.status(), Some(400));
        assert_eq!(
            err.to_string(),
            "token grant refused with 400 invalid_grant: bad credentials"
        );
        let html = read_answer(502, None, b"<html>bad gateway</html>").unwrap_err();
        assert_eq!(
            html.to_string(),
            "token grant refused with 502: <html>bad gateway</html>"
        );
    }

    #[test]
    fn a_409_is_throttled_with_its_retry_after() {
        let err = read_answer(409, Some(Duration::from_secs(1800)), b"{}").unwrap_err();
        assert!(matches!(
            err,
            GrantError::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(1800)
        ));
    }

    #[test]
    fn a_success_without_a_usable_token_is_malformed() {
        for body in [
            &br#"{"token_type": "bearer"}"#[..],
            b"not json",
            br#"{"access_token": "a b"}"#,
        ] {
            let err = read_answer(200, None, body).unwrap_err();
            assert!(
                matches!(err, GrantError::Malformed { status: 200, .. }),
                "{err:?}"
            );
        }
        let token = read_answer(
            200,
            None,
            br#"{"access_token": "t0k", "token_type": "bearer"}"#,
        );
        assert_eq!(token.unwrap().expose(), "t0k");
    }

    #[test]
    fn urls_are_https_or_loopback_http_without_credentials() {
        let grant = |url: &str| PasswordGrant::new(url, "app", "sam", "pw");
        assert!(grant("https://acme.example.com/puboauth/token").is_ok());
        assert!(grant("http://127.0.0.1:8080/puboauth/token").is_ok());
        for bad in [
            "http://acme.example.com/puboauth/token",
            "ftp://acme.example.com/token",
            "https://sam:pw@acme.example.com/puboauth/token",
            "not a url",
        ] {
            assert!(
                matches!(grant(bad), Err(GrantError::InvalidUrl { .. })),
                "{bad}"
            );
        }
        assert_eq!(
            PasswordGrant::for_domain("acme.example.com", "app", "sam", "pw")
                .unwrap()
                .url(),
            "https://acme.example.com/puboauth/token"
        );
    }

    #[test]
    fn debug_never_shows_the_password() {
        let grant =
            PasswordGrant::new("https://a.example.com/t", "app", "sam", "CANARY-pw").unwrap();
        let debug = format!("{grant:?}");
        assert!(!debug.contains("CANARY"), "{debug}");
        assert!(
            debug.contains("sam") && debug.contains("redacted"),
            "{debug}"
        );
    }
}
