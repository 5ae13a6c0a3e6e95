//! How a [`Client`] is built: its [`ClientBuilder`] and why a build fails ([`BuildError`]).

use crate::Client;
use crate::fleet::Fleet;
use crate::interceptor::Interceptor;
use crate::limits::{Limits, Pacing};
use crate::loopback::is_loopback;
use crate::request::limiter::{BudgetDomain, RateLimiter};
use crate::request::policy::{Budgets, Policy, Settings, Shared};
use crate::request::retry::RetryConfig;
use crate::token::{SecretToken, StaticToken, TokenSource};
use crate::transport::Transport;
use pubapi_sdk::hooks::Inner;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The user agent every request carries.
pub const USER_AGENT: &str = concat!("pubapi-sdk-ext/", env!("CARGO_PKG_VERSION"));

/// How long a connection may take to open, unless the builder says otherwise.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one attempt may wait in silence, unless the builder says otherwise.
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The HTTP client of every request the SDK sends itself (the API's, and a token grant's):
/// no redirect followed (no credential may follow one to another origin, and the audit job's
/// 303 must reach the SDK), no `Referer`, the connection bounded by `connect`, every read by
/// `read` of silence when given. The API's client has no read bound of its own: the policy
/// keeps each attempt's (`request::silence`), which a view may make longer or shorter.
pub(crate) fn http_client(
    connect: Duration,
    read: Option<Duration>,
) -> reqwest::Result<reqwest::Client> {
    let builder = reqwest::Client::builder();
    let builder = match read {
        // Bodies are bounded by silence, not by size: a read that waits longer than this
        // fails, a download that keeps flowing never does.
        Some(read) => builder.read_timeout(read),
        None => builder,
    };
    builder
        // Static: reqwest copies it onto every request and into every connector it clones.
        .user_agent(http::HeaderValue::from_static(USER_AGENT))
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .connect_timeout(connect)
        // HTTP/1.1 even where another crate of the build turns reqwest's `http2` on: the
        // retries are the policy's (`RetryConfig`), and reqwest's own layer, which copies
        // every request for the HTTP/2 refusals it resends, is off.
        .http1_only()
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .build()
}

/// Builds a [`Client`]; see [`Client::builder`].
///
/// Defaults: connect timeout 10 s, 60 s per attempt, the reference's limits
/// ([`Limits::default`]), [`RetryConfig::default`], redirects never followed (the audit job's
/// 303 must reach the SDK, and no credential may follow a redirect to another origin), no
/// `Referer`, rustls, HTTP/1.1. Retries are the policy's ([`RetryConfig`]): reqwest's own retry
/// layer is off (hyper still resends a request that a closed pooled connection never wrote).
pub struct ClientBuilder {
    base_url: Option<Result<String, BuildError>>,
    token: Option<Arc<dyn TokenSource>>,
    limits: Limits,
    retry: RetryConfig,
    connect_timeout: Duration,
    attempt_timeout: Duration,
    transport: Option<Arc<dyn Transport>>,
    interceptors: Vec<Arc<dyn Interceptor>>,
    allow_plain_http: bool,
    call_removed_operations: bool,
    pacing: Pacing,
    isolated_budget: bool,
    fleet: Option<Fleet>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            base_url: None,
            token: None,
            limits: Limits::default(),
            retry: RetryConfig::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            transport: None,
            interceptors: Vec::new(),
            allow_plain_http: false,
            call_removed_operations: false,
            pacing: Pacing::default(),
            isolated_budget: false,
            fleet: None,
        }
    }
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("token", &self.token)
            .field("limits", &self.limits)
            .field("retry", &self.retry)
            .field("interceptors", &self.interceptors)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// The customer domain: `acme.example.com` becomes `https://acme.example.com/pubapi`.
    pub fn domain(mut self, domain: &str) -> Self {
        self.base_url = Some(domain_base_url(domain));
        self
    }

    /// A full base URL including `/pubapi` (a sandbox, a test server, a proxy). Plain
    /// `http` is accepted for loopback hosts only (the bearer token would travel in clear
    /// text), unless [`ClientBuilder::allow_plain_http`] is called.
    pub fn base_url(mut self, url: &str) -> Self {
        self.base_url = Some(parse_base_url(url));
        self
    }

    /// Accepts a plain `http` base URL to a host that is not loopback (a test network, a
    /// TLS-terminating sidecar). The token is then sent unencrypted.
    pub fn allow_plain_http(mut self) -> Self {
        self.allow_plain_http = true;
        self
    }

    /// A static bearer token.
    pub fn token(mut self, token: SecretToken) -> Self {
        self.token = Some(Arc::new(StaticToken::new(token)));
        self
    }

    /// A source that fetches or rotates tokens (see [`TokenSource`]).
    pub fn token_source(mut self, source: Arc<dyn TokenSource>) -> Self {
        self.token = Some(source);
        self
    }

    /// The rate limits of the token's plan (default: the reference's 2/s and 1,000/day, AI
    /// 100/day).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How starts are spread and how much margin the windows keep (default: evenly, 100 ms;
    /// see [`Pacing`]).
    pub fn pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// Gives this client a budget of its own instead of the one every client of the token
    /// on its domain shares in the process: for tests on paused time, or a deliberate split
    /// of a token's budget. The limits are then this client's alone to keep. With a
    /// [fleet](ClientBuilder::fleet), the client is a member of the fleet of its own, as if
    /// it were another process: its own pacer, the fleet's shared windows (a simulation of
    /// many processes in one, say).
    pub fn isolated_budget(mut self) -> Self {
        self.isolated_budget = true;
        self
    }

    /// Shares the token's budget with every process of a fleet through `fleet`'s store (for
    /// example `fleet::redis::RedisBudget`, feature `redis`): replicas of a service that use
    /// one token then pace together. With [`ClientBuilder::isolated_budget`], this client
    /// joins the fleet on a pacer of its own.
    pub fn fleet(mut self, fleet: Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Retry, backoff and deadline settings.
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// The TCP + TLS connect timeout (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one attempt may wait (default 60 s): for the response head after sending,
    /// and then for each read of the body. It bounds waiting, not work: a body of any size
    /// (a CSV report of gigabytes) downloads as long as data keeps arriving. An attempt that
    /// runs out is cancelled and retried as the retries allow, and the call that runs out of
    /// attempts so ends with [`Error::Timeout`](crate::Error::Timeout)
    /// ([`TimeoutBound::Silence`](crate::error::TimeoutBound::Silence)), not a transport
    /// error. A view may set its own, longer or shorter
    /// ([`CallOptions::attempt_timeout`](crate::options::CallOptions::attempt_timeout)). The
    /// whole operation, retries and an attempt in flight included, is bounded by
    /// [`RetryConfig`]'s deadline.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// Sends operations the reference has removed (the copilot, after 30 September 2026)
    /// instead of refusing them locally with [`crate::Error::Removed`]: for a platform that
    /// still serves them.
    pub fn call_removed_operations(mut self) -> Self {
        self.call_removed_operations = true;
        self
    }

    /// Replaces the transport (tests script responses with it).
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Adds an interceptor around every attempt (see [`crate::interceptor`]): it runs before
    /// sending after those added earlier, and after receiving before them.
    pub fn interceptor(mut self, interceptor: Arc<dyn Interceptor>) -> Self {
        self.interceptors.push(interceptor);
        self
    }

    /// Builds the client.
    ///
    /// Every client of one token on one domain in the process paces on one budget, as the
    /// gateway counts it: `http://127.0.0.1:8080` and `http://localhost:8080` (or a trailing
    /// slash, or upper case) are one budget, not two; clients of the token against another
    /// host or port (a mock server per test) pace on another (and
    /// [`ClientBuilder::isolated_budget`] gives a client its own).
    ///
    /// # Errors
    /// [`BuildError`] when the base URL or domain is missing or invalid, no token was given,
    /// or the HTTP client cannot be built; [`BuildError::BudgetConflict`] when another client
    /// of the same token in the process (whatever its base URL) paces it with other limits,
    /// pacing or fleet.
    pub fn build(self) -> Result<Client, BuildError> {
        let base_url = self.base_url.ok_or(BuildError::MissingBaseUrl)??;
        if !self.allow_plain_http && !is_https_or_loopback(&base_url) {
            return Err(BuildError::InvalidBaseUrl(format!(
                "{base_url} is plain http to a host that is not loopback: the token would \
                 travel unencrypted (call allow_plain_http() to accept that)"
            )));
        }
        let token = self.token.ok_or(BuildError::MissingToken)?;
        let http =
            http_client(self.connect_timeout, None).map_err(|e| BuildError::Http(e.to_string()))?;
        let url = reqwest::Url::parse(&base_url)
            .map_err(|e| BuildError::InvalidBaseUrl(format!("{base_url}: {e}")))?;
        let budget = match (self.isolated_budget, self.fleet) {
            (true, None) => Budgets::Isolated(RateLimiter::with_pacing(self.limits, self.pacing)),
            (isolated, fleet) => Budgets::PerToken {
                limits: self.limits,
                pacing: self.pacing,
                fleet,
                domain: (!isolated).then(|| BudgetDomain::of(&url)),
            },
        };
        let ready = token.ready();
        let shared = Arc::new(Shared::new(
            token,
            budget,
            self.retry,
            self.transport,
            self.interceptors.into(),
            Settings {
                call_removed_operations: self.call_removed_operations,
                attempt_timeout: self.attempt_timeout,
            },
        ));
        // A static token's pacer is looked up now, so settings that could not take effect
        // are refused here rather than at the first call.
        if let Some(token) = ready {
            shared
                .limiter_for(&token)
                .map_err(BuildError::BudgetConflict)?;
        }
        let policy = Policy::new(shared.clone(), None, None);
        let sdk = pubapi_sdk::Client::new_with_client(
            &base_url,
            http,
            Inner::with_policy(Arc::new(policy)),
        );
        Ok(Client {
            sdk,
            shared,
            act_as: None,
            options: None,
        })
    }
}

/// Why a [`Client`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither `domain` nor `base_url` was given.
    MissingBaseUrl,
    /// No token or token source was given.
    MissingToken,
    /// The domain is not a host name (`acme.example.com`).
    InvalidDomain(String),
    /// The base URL does not parse or is not `http(s)`.
    InvalidBaseUrl(String),
    /// The HTTP client could not be built.
    Http(String),
    /// Another client of the same token in the process paces it with other limits, pacing
    /// or fleet.
    BudgetConflict(crate::limits::BudgetConflict),
    /// [`ClientBuilder::build_blocking`] was called on a thread that belongs to a tokio
    /// runtime (an async task, `spawn_blocking`, or inside `Runtime::enter`): build the async
    /// client there.
    #[cfg(feature = "blocking")]
    InAsyncContext,
    /// The blocking client's own runtime could not be started.
    #[cfg(feature = "blocking")]
    Runtime(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::MissingBaseUrl => f.write_str("no domain or base url given"),
            BuildError::MissingToken => f.write_str("no token or token source given"),
            BuildError::InvalidDomain(d) => write!(f, "invalid domain {d:?}: expected a host name"),
            BuildError::InvalidBaseUrl(m) => write!(f, "invalid base url: {m}"),
            BuildError::Http(m) => write!(f, "cannot build the http client: {m}"),
            BuildError::BudgetConflict(conflict) => conflict.fmt(f),
            #[cfg(feature = "blocking")]
            BuildError::InAsyncContext => f.write_str(
                "a blocking client cannot be built inside an async runtime: use build() there",
            ),
            #[cfg(feature = "blocking")]
            BuildError::Runtime(m) => write!(f, "cannot start the blocking client's runtime: {m}"),
        }
    }
}

impl std::error::Error for BuildError {}

fn domain_base_url(domain: &str) -> Result<String, BuildError> {
    let valid_label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let (host, port) = match domain.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => (host, Some(port)),
        _ => (domain, None),
    };
    if host.len() > 253 || !host.split('.').all(valid_label) {
        return Err(BuildError::InvalidDomain(domain.to_string()));
    }
    Ok(match port {
        Some(port) => format!("https://{host}:{port}/pubapi"),
        None => format!("https://{host}/pubapi"),
    })
}

fn parse_base_url(url: &str) -> Result<String, BuildError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| BuildError::InvalidBaseUrl(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(BuildError::InvalidBaseUrl(format!(
            "scheme {} is not http or https",
            parsed.scheme()
        )));
    }
    if parsed.query().is_some()
        || parsed.fragment().is_some()
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(BuildError::InvalidBaseUrl(
            "a base url has no query, fragment or user info".into(),
        ));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_string())
}

fn is_https_or_loopback(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|url| url.scheme() == "https" || is_loopback(&url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_needs_a_loopback_host_or_an_explicit_opt_in() {
        let build = |url: &str| {
            Client::builder()
                .base_url(url)
                .token(SecretToken::try_from("t").unwrap())
                .build()
        };
        assert!(build("http://127.0.0.1:8080/pubapi").is_ok());
        assert!(build("http://localhost:8080/pubapi").is_ok());
        assert!(build("https://acme.example.com/pubapi").is_ok());
        assert!(matches!(
            build("http://acme.example.com/pubapi"),
            Err(BuildError::InvalidBaseUrl(_))
        ));
        let opted_in = Client::builder()
            .base_url("http://acme.example.com/pubapi")
            .allow_plain_http()
            .token(SecretToken::try_from("t").unwrap())
            .build();
        assert!(opted_in.is_ok());
    }

    #[test]
    fn base_url_with_a_password_is_refused() {
        assert!(matches!(
            parse_base_url("http://:secret@127.0.0.1/pubapi"),
            Err(BuildError::InvalidBaseUrl(_))
        ));
    }

    #[test]
    fn domain_becomes_the_https_pubapi_root() {
        assert_eq!(
            domain_base_url("acme.example.com").unwrap(),
            "https://acme.example.com/pubapi"
        );
        assert_eq!(
            domain_base_url("acme.example.com:8443").unwrap(),
            "https://acme.example.com:8443/pubapi"
        );
    }

    #[test]
    fn domain_with_a_scheme_or_path_is_rejected() {
        for bad in [
            "https://acme.example.com",
            "acme.example.com/pubapi",
            "",
            "a..b",
            "-a.com",
            "a b",
        ] {
            assert!(
                matches!(domain_base_url(bad), Err(BuildError::InvalidDomain(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn base_url_keeps_its_path_without_trailing_slash() {
        assert_eq!(
            parse_base_url("http://127.0.0.1:8080/pubapi/").unwrap(),
            "http://127.0.0.1:8080/pubapi"
        );
        assert!(matches!(
            parse_base_url("ftp://x/pubapi"),
            Err(BuildError::InvalidBaseUrl(_))
        ));
        assert!(matches!(
            parse_base_url("not a url"),
            Err(BuildError::InvalidBaseUrl(_))
        ));
    }

    #[test]
    fn build_needs_a_base_url_and_a_token() {
        assert_eq!(
            Client::builder().build().unwrap_err(),
            BuildError::MissingBaseUrl
        );
        assert_eq!(
            Client::builder()
                .domain("acme.example.com")
                .build()
                .unwrap_err(),
            BuildError::MissingToken
        );
    }
}
