//! What a webhook registration says, built and checked before `client.webhooks()`
//! ([`crate::api::Webhooks`]) creates, updates or renews it. The deliveries it brings are
//! read by the receiver in [`crate::webhook`].
//!
//! Everything the reference checks is checked before sending: the `url` is HTTPS, an
//! `eventType` list is non-empty and names known events or the wildcards `fs:*`, `link:*`,
//! `comment:*`, `permission:*`, `meta:*` (workflow and group events have none), and at most
//! 100 folder paths are joined with commas. The webhook endpoints need the
//! `Service.webhooks` scope.
//!
//! ```no_run
//! use pubapi_sdk_ext::webhook::registration::Registration;
//! use pubapi_sdk_ext::webhook::{EventFilter, EventType, Wildcard};
//!
//! # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let registration = Registration::new("https://hooks.example.com/pubapi")?
//!     .events([EventFilter::Wildcard(Wildcard::Fs), EventType::CommentSetComment.into()])?
//!     .paths(["/Shared/Contracts", "/Shared/Legal"])?
//!     .auth_header("a-long-random-secret");
//! let hook = client.webhooks().create(&registration).await?;
//! println!("{:?} expires at {:?}", hook.webhook_id, hook.expires);
//! # Ok(()) }
//! ```

use crate::error::{Error, InputError};
use crate::webhook::EventFilter;
use crate::webhook::endpoint::{EndpointCheck, EndpointRefused};
use pubapi_sdk::types::{
    WebhookCreateRequest, WebhookEventTypeFilter, WebhookState, WebhookSummary,
    WebhookUpdateRequest,
};
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most folder paths one registration may filter on.
/// The most paths a webhook registration may filter on: the spec's `x-pubapi-max-items` of
/// the `path` of `WebhookCreateRequest` (and of `WebhookUpdateRequest`, the same rule).
pub const MAX_PATHS: usize = pubapi_sdk::limits::WEBHOOK_CREATE_REQUEST_PATH_MAX_ITEMS;
const _: () = assert!(MAX_PATHS == pubapi_sdk::limits::WEBHOOK_UPDATE_REQUEST_PATH_MAX_ITEMS);

/// What a registration subscribes to; validated as it is built. Its endpoint is checked
/// before it is sent ([`Registration::check_endpoint`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Registration {
    url: String,
    events: Option<Vec<EventFilter>>,
    paths: Vec<String>,
    auth_header: Option<String>,
    endpoint_check: EndpointCheck,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("url", &self.url)
            .field("events", &self.events)
            .field("paths", &self.paths)
            .field(
                "auth_header",
                &self.auth_header.as_ref().map(|_| "** redacted **"),
            )
            .field("endpoint_check", &self.endpoint_check)
            .finish()
    }
}

impl Registration {
    /// A registration delivering every event of every path to `url`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `url` is not an absolute `https://` URL with a host.
    pub fn new(url: &str) -> Result<Self, Error> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| Error::invalid_input("url", format!("{url:?} is not a URL: {e}")))?;
        if parsed.scheme() != "https" || parsed.host_str().is_none_or(str::is_empty) {
            return Err(Error::invalid_input(
                "url",
                format!("{url:?} is not an https:// URL"),
            ));
        }
        Ok(Registration {
            url: url.to_string(),
            events: None,
            paths: Vec::new(),
            auth_header: None,
            endpoint_check: EndpointCheck::PublicRoots,
        })
    }

    /// A registration to a plain-HTTP loopback URL (`http://127.0.0.1:…`, `http://[::1]:…`,
    /// `http://localhost:…`), for sandboxes and tests only: the platform itself requires
    /// HTTPS with a publicly signed certificate. It speaks no TLS, so its endpoint is not
    /// checked ([`Registration::check_endpoint`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `url` is not `http://` to a loopback host.
    pub fn loopback_for_tests(url: &str) -> Result<Self, Error> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| Error::invalid_input("url", format!("{url:?} is not a URL: {e}")))?;
        if parsed.scheme() != "http" || !crate::loopback::is_loopback(&parsed) {
            return Err(Error::invalid_input(
                "url",
                format!("{url:?} is not http:// to a loopback host"),
            ));
        }
        Ok(Registration {
            url: url.to_string(),
            events: None,
            paths: Vec::new(),
            auth_header: None,
            endpoint_check: EndpointCheck::Skipped,
        })
    }

    /// Registers without checking the endpoint first ([`Registration::check_endpoint`]),
    /// for a caller who knows better: an endpoint that is not deployed yet, or a platform of
    /// your own that trusts another authority. The platform still requires a publicly signed
    /// certificate, and disables a webhook after 4 failed deliveries.
    pub fn skip_endpoint_check(mut self) -> Self {
        self.endpoint_check = EndpointCheck::Skipped;
        self
    }

    /// Checks the endpoint against the roots of `ca_pem` (one or more PEM certificates)
    /// instead of the public ones: for tests of the check with a CA of their own (feature
    /// `test-util`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `ca_pem` holds no certificate.
    #[cfg(feature = "test-util")]
    pub fn trusting_for_tests(mut self, ca_pem: &str) -> Result<Self, Error> {
        if crate::webhook::endpoint::roots_of_pem(ca_pem).is_none() {
            return Err(Error::invalid_input("ca_pem", "holds no PEM certificate"));
        }
        self.endpoint_check = EndpointCheck::Roots(ca_pem.to_owned());
        Ok(self)
    }

    /// The endpoint deliveries go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Checks the registration's endpoint before it is registered, as
    /// [`webhook::endpoint`](crate::webhook::endpoint) says: a TLS handshake with it, its
    /// certificate verified against the public roots, as the platform's deliveries will be.
    /// `Ok` at once for a registration that is not checked (a loopback receiver, or one with
    /// [`skip_endpoint_check`](Registration::skip_endpoint_check)).
    /// [`Webhooks::create`](crate::api::Webhooks::create), `update` and `renew_if_expiring`
    /// run it before they send anything; call it yourself to check an endpoint without
    /// registering it.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::webhook::endpoint::EndpointProblem;
    /// use pubapi_sdk_ext::webhook::registration::Registration;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let registration = Registration::new("https://hooks.example.com/pubapi")?;
    /// match registration.check_endpoint().await {
    ///     Ok(()) => println!("the platform can deliver there"),
    ///     Err(refused) if refused.problem == EndpointProblem::SelfSigned => {
    ///         println!("get a certificate from a public authority")
    ///     }
    ///     Err(refused) => println!("{refused}"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`EndpointRefused`], naming the endpoint and the problem.
    pub async fn check_endpoint(&self) -> Result<(), EndpointRefused> {
        crate::webhook::endpoint::check(&self.url, &self.endpoint_check).await
    }

    /// [`Registration::check_endpoint`], as the [`Error`] a registering call answers.
    pub(crate) async fn checked(&self) -> Result<(), Error> {
        self.check_endpoint()
            .await
            .map_err(|refused| Error::InvalidInput(InputError::Endpoint(refused)))
    }

    /// Only these events (exact names or wildcards); at least one.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty list.
    pub fn events<I, F>(mut self, filters: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = F>,
        F: Into<EventFilter>,
    {
        let filters: Vec<EventFilter> = filters.into_iter().map(Into::into).collect();
        if filters.is_empty() {
            return Err(Error::invalid_input(
                "eventType",
                "at least one event is required when given",
            ));
        }
        self.events = Some(filters);
        Ok(self)
    }

    /// Only these events, parsed from their names (`fs:add_file`, `fs:*`, ...).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first entry that is not a known event or wildcard.
    pub fn event_names<I: IntoIterator<Item = S>, S: AsRef<str>>(
        self,
        names: I,
    ) -> Result<Self, Error> {
        let filters = names
            .into_iter()
            .map(|n| {
                EventFilter::parse(n.as_ref()).map_err(|e| {
                    Error::invalid_input("eventType", format!("{:?}: {e}", n.as_ref()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.events(filters)
    }

    /// Only events below these folder paths (at most 100, sent comma-separated).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for more than 100 paths, or a path that is empty, relative,
    /// contains a comma (the separator) or a control character.
    pub fn paths<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        paths: I,
    ) -> Result<Self, Error> {
        let paths: Vec<String> = paths.into_iter().map(Into::into).collect();
        if paths.len() > MAX_PATHS {
            return Err(Error::invalid_input(
                "path",
                format!("{} paths, at most {MAX_PATHS}", paths.len()),
            ));
        }
        if let Some(bad) = paths
            .iter()
            .find(|p| !p.starts_with('/') || p.contains(',') || p.chars().any(char::is_control))
        {
            return Err(Error::invalid_input(
                "path",
                format!("{bad:?} is not an absolute folder path without commas"),
            ));
        }
        self.paths = paths;
        Ok(self)
    }

    /// The value the platform sends in the `authorization` header of every delivery (give
    /// the same value to the receiver).
    pub fn auth_header(mut self, value: impl Into<String>) -> Self {
        self.auth_header = Some(value.into());
        self
    }

    fn event_type(&self) -> Vec<WebhookEventTypeFilter> {
        self.events
            .iter()
            .flatten()
            // The spec lists the names and wildcards; an `EventType::Unknown` made into a filter
            // by hand has no spelling the platform takes and is not sent.
            .filter_map(|f| WebhookEventTypeFilter::try_from(f.as_str()).ok())
            .collect()
    }

    /// The `path` filter: `None` for all paths. [`Self::paths`] admits only absolute paths,
    /// so the joined value is never empty (the spec's `minLength: 1`) and the conversion
    /// always succeeds.
    fn path<T: std::str::FromStr>(&self) -> Option<T> {
        (!self.paths.is_empty())
            .then(|| self.paths.join(","))
            .and_then(|joined| joined.parse().ok())
    }

    pub(crate) fn create_body(&self) -> WebhookCreateRequest {
        WebhookCreateRequest {
            url: self.url.clone(),
            event_type: self.event_type(),
            path: self.path(),
            auth_header: self.auth_header.clone(),
        }
    }

    pub(crate) fn update_body(&self, status: Option<Status>) -> WebhookUpdateRequest {
        WebhookUpdateRequest {
            url: self.url.clone(),
            event_type: self.event_type(),
            path: self.path(),
            auth_header: self.auth_header.clone(),
            status: status.map(Status::state),
        }
    }
}

/// The status to set on a registration. What the platform reports is the generated
/// [`WebhookState`] of [`WebhookSummary::status`], which also keeps a value added later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Deliveries are sent.
    Enabled,
    /// Deliveries stop (set by the caller, or by the platform after 4 failed attempts).
    Disabled,
}

impl Status {
    pub(crate) fn state(self) -> WebhookState {
        WebhookState::from(self.as_str())
    }

    /// `enabled` or `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Enabled => "enabled",
            Status::Disabled => "disabled",
        }
    }
}

/// The webhook error codes of the reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WebhookErrorCode {
    /// 400: bad JSON, an invalid `eventType` value, more than 100 paths.
    RequestSchema,
    /// 400: `url` is not a valid HTTPS URL.
    InvalidUrl,
    /// 401: token invalid or expired.
    NotAuthorized,
    /// 403: the token lacks the `Service.webhooks` scope.
    MissingScope,
    /// 404: the webhook id is unknown or not owned by the client id.
    NotFound,
    /// 409: the webhook count for the client id and domain is at its maximum.
    Quota,
    /// A code this SDK does not know, as sent.
    Other(String),
}

impl Error {
    /// The webhook error code of a webhooks-area error, if the body had one.
    pub fn webhook_code(&self) -> Option<WebhookErrorCode> {
        Some(match self.code()? {
            "request_schema_error" => WebhookErrorCode::RequestSchema,
            "hook_invalid_url" => WebhookErrorCode::InvalidUrl,
            "gateway_error_forbidden_not_authorized" => WebhookErrorCode::NotAuthorized,
            "missing_scope_error" => WebhookErrorCode::MissingScope,
            "hook_not_found_error" => WebhookErrorCode::NotFound,
            "hook_quota_error" => WebhookErrorCode::Quota,
            other => WebhookErrorCode::Other(other.to_string()),
        })
    }
}

/// Whether a registration's `expires` (Unix seconds) falls within `window` of `now`. A
/// summary without `expires` is not considered expiring.
pub fn expires_within(summary: &WebhookSummary, window: Duration, now: SystemTime) -> bool {
    let Some(expires) = summary.expires.and_then(|e| u64::try_from(e).ok()) else {
        return false;
    };
    // Past what a `SystemTime` holds: a window that long covers every expiry, an expiry
    // that far is in no window.
    let Some(limit) = now.checked_add(window) else {
        return true;
    };
    UNIX_EPOCH
        .checked_add(Duration::from_secs(expires))
        .is_some_and(|at| at <= limit)
}

/// When a registration expires, typed: `expires` (Unix seconds, reference 2.9) of a full
/// [`Webhook`](pubapi_sdk::types::Webhook) or a [`WebhookSummary`] as an instant.
pub trait WebhookExpiry {
    /// `expires` as an instant; `None` when the body has none.
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`](crate::time::TimeError::OutOfRange) when the number is outside
    /// the years -9999 to 9999.
    fn expires_at(&self) -> Result<Option<jiff::Timestamp>, crate::time::TimeError>;
}

impl WebhookExpiry for WebhookSummary {
    fn expires_at(&self) -> Result<Option<jiff::Timestamp>, crate::time::TimeError> {
        self.expires
            .map(|seconds| crate::time::epoch_seconds("expires", seconds))
            .transpose()
    }
}

impl WebhookExpiry for pubapi_sdk::types::Webhook {
    fn expires_at(&self) -> Result<Option<jiff::Timestamp>, crate::time::TimeError> {
        self.expires
            .map(|seconds| crate::time::epoch_seconds("expires", seconds))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InputError;
    use crate::webhook::{EventType, Wildcard};

    fn field_of(result: Result<Registration, Error>) -> &'static str {
        match result {
            Err(Error::InvalidInput(InputError::Invalid { field, .. })) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn url_must_be_https() {
        assert!(Registration::new("https://hooks.example.com/in").is_ok());
        for bad in [
            "http://hooks.example.com/in",
            "hooks.example.com",
            "ftp://x/y",
            "https://",
        ] {
            assert_eq!(field_of(Registration::new(bad)), "url", "{bad}");
        }
    }

    #[test]
    fn plain_http_is_only_for_loopback_test_receivers() {
        assert!(Registration::loopback_for_tests("http://127.0.0.1:8080/hooks").is_ok());
        assert!(Registration::loopback_for_tests("http://localhost:8080/hooks").is_ok());
        assert!(Registration::loopback_for_tests("http://[::1]:8080/hooks").is_ok());
        for bad in [
            "http://10.0.0.5/hooks",
            "http://hooks.example.com/",
            "https://127.0.0.1/",
        ] {
            assert_eq!(
                field_of(Registration::loopback_for_tests(bad)),
                "url",
                "{bad}"
            );
        }
    }

    #[test]
    fn event_list_when_given_is_not_empty_and_names_known_events() {
        let base = || Registration::new("https://h.example.com/").unwrap();
        assert_eq!(
            field_of(base().events(Vec::<EventFilter>::new())),
            "eventType"
        );
        assert_eq!(
            field_of(base().event_names(["fs:add_file", "fs:explode"])),
            "eventType"
        );
        assert_eq!(field_of(base().event_names(["workflow:*"])), "eventType");
        assert_eq!(field_of(base().event_names(["group:*"])), "eventType");
        let ok = base().event_names([
            "fs:*",
            "link:*",
            "comment:*",
            "permission:*",
            "meta:*",
            "group:create",
        ]);
        assert_eq!(ok.unwrap().event_type().len(), 6);
    }

    #[test]
    fn at_most_one_hundred_absolute_paths_joined_by_commas() {
        let base = || Registration::new("https://h.example.com/").unwrap();
        let hundred: Vec<String> = (0..100).map(|i| format!("/f/{i}")).collect();
        let joined: String = base().paths(hundred).unwrap().path().unwrap();
        assert_eq!(joined.split(',').count(), 100);
        let too_many: Vec<String> = (0..101).map(|i| format!("/f/{i}")).collect();
        assert_eq!(field_of(base().paths(too_many)), "path");
        assert_eq!(field_of(base().paths(["/a,b"])), "path");
        assert_eq!(field_of(base().paths(["relative"])), "path");
    }

    #[test]
    fn bodies_carry_the_reference_field_names() {
        let r = Registration::new("https://h.example.com/in")
            .unwrap()
            .events([
                EventFilter::Wildcard(Wildcard::Fs),
                EventType::CommentSetComment.into(),
            ])
            .unwrap()
            .paths(["/A", "/B"])
            .unwrap()
            .auth_header("s3cret");
        let body = serde_json::to_value(r.update_body(Some(Status::Disabled))).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"url": "https://h.example.com/in", "eventType": ["fs:*", "comment:set_comment"],
                               "path": "/A,/B", "authHeader": "s3cret", "status": "disabled"})
        );
        assert!(!format!("{r:?}").contains("s3cret"));
    }

    #[test]
    fn expiry_window() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let summary = |expires| WebhookSummary {
            expires: Some(expires),
            status: pubapi_sdk::types::WebhookState::Enabled,
            webhook_id: "w1".into(),
        };
        assert!(expires_within(
            &summary(1_000_500),
            Duration::from_secs(600),
            now
        ));
        assert!(!expires_within(
            &summary(1_000_700),
            Duration::from_secs(600),
            now
        ));
        // At the ends of the range: no overflow of the clock's type.
        assert!(expires_within(&summary(1_000_700), Duration::MAX, now));
        assert!(!expires_within(
            &summary(i64::MAX),
            Duration::from_secs(600),
            now
        ));
        assert!(expires_within(&summary(i64::MAX), Duration::MAX, now));
    }

    #[test]
    fn registration_expires_is_unix_seconds() {
        let summary = |expires| WebhookSummary {
            expires,
            status: pubapi_sdk::types::WebhookState::Enabled,
            webhook_id: "w1".into(),
        };
        let summary_at = summary(Some(1_767_607_200));
        let at = summary_at.expires_at().unwrap().unwrap();
        assert_eq!(at.to_string(), "2026-01-05T10:00:00Z");
        let full: pubapi_sdk::types::Webhook =
            serde_json::from_value(serde_json::json!({"webhookId": "w1", "expires": i64::MAX}))
                .unwrap();
        assert_eq!(full.expires_at().unwrap_err().field(), "expires");
        assert_eq!(summary(None).expires_at(), Ok(None));
    }
}
