//! Settings for some calls rather than the whole client: retries, timeouts, the request id
//! and extra headers ([`CallOptions`]), taken by a view of the client
//! ([`Client::with_options`](crate::Client::with_options)).
//!
//! A view shares everything with the client it comes from (the token, the pacer of the token,
//! the retry budget, the transport, whom it acts as) and changes only the settings given
//! here, so every area handle, every request builder and the generated client behind
//! [`Client::sdk`](crate::Client::sdk) take them, with the same checks and on the same
//! budget. A view costs one allocation to make: make one for a call, or keep one for a kind of
//! call.
//!
//! ```no_run
//! use pubapi_sdk_ext::options::CallOptions;
//! use pubapi_sdk_ext::{Client, RequestId};
//! use std::time::Duration;
//!
//! # async fn run(client: Client, inbound_id: &str) -> Result<(), Box<dyn std::error::Error>> {
//! // One AI question that must not spend a second daily AI call on a retry.
//! let once = client.with_options(CallOptions::new().retries(0))?;
//! let agents = once.agents().list().await?;
//!
//! // The calls made for one inbound request: its id, a header of the service's own, and a
//! // longer deadline for a large download.
//! let traced = client.with_options(
//!     CallOptions::new()
//!         .request_id(inbound_id.parse::<RequestId>()?)
//!         .header("x-tenant".parse()?, "blue".parse()?)
//!         .operation_timeout(Duration::from_secs(15 * 60)),
//! )?;
//! let me = traced.identity().whoami().await?;
//! # let _ = (agents, me);
//! # Ok(())
//! # }
//! ```

use crate::act_as::{ACT_AS, ACT_AS_EMAIL};
use crate::request_id::{REQUEST_ID_HEADER, RequestId};
use http::{HeaderMap, HeaderName, HeaderValue, header};
use std::fmt;
use std::time::Duration;

/// Settings of the calls of a client view ([`Client::with_options`](crate::Client::with_options));
/// each one left unset is the client's.
///
/// ```
/// use pubapi_sdk_ext::options::CallOptions;
/// use std::time::Duration;
///
/// let options = CallOptions::new()
///     .retries(0)
///     .attempt_timeout(Duration::from_secs(5))
///     .header("x-tenant".parse().unwrap(), "blue".parse().unwrap());
/// assert_eq!(options.max_attempts(), Some(1));
/// // Header values may be personal: `Debug` names the headers only.
/// assert!(format!("{options:?}").contains("x-tenant") && !format!("{options:?}").contains("blue"));
/// ```
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) max_attempts: Option<u32>,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) operation_timeout: Option<Duration>,
    pub(crate) request_id: Option<RequestId>,
    pub(crate) headers: HeaderMap,
}

impl CallOptions {
    /// No settings: every call as the client makes it.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// How many times a call may be sent again after its first attempt (0: sent once),
    /// in place of [`RetryConfig::with_max_attempts`](crate::RetryConfig::with_max_attempts).
    /// What is retried, the waits between attempts and the client's retry budget stay the
    /// client's ([`RetryConfig`](crate::RetryConfig)).
    pub fn retries(mut self, retries: u32) -> Self {
        self.max_attempts = Some(retries.saturating_add(1));
        self
    }

    /// How long one attempt of the view's calls may wait in silence (for its answer, then for
    /// each read of its body), in place of the client's
    /// [`attempt_timeout`](crate::ClientBuilder::attempt_timeout): longer or shorter. An
    /// attempt that runs out is cancelled and retried as the client's retries allow; the call
    /// that runs out of attempts so ends with [`Error::Timeout`](crate::Error::Timeout)
    /// ([`TimeoutBound::Silence`](crate::error::TimeoutBound::Silence)). The SDK keeps the
    /// bound around a [`Transport`](crate::Transport) of your own too.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// How long a call may take, its retries, the waits for its slots and an attempt in flight
    /// included (it is cancelled when the time is up, and the call ends with
    /// [`Error::Timeout`](crate::Error::Timeout),
    /// [`TimeoutBound::Operation`](crate::error::TimeoutBound::Operation), the attempts made
    /// and the request id), in place of
    /// [`RetryConfig::with_operation_timeout`](crate::RetryConfig::with_operation_timeout). A
    /// body the SDK hands back to be read as it comes (a CSV report) is bounded by silence
    /// only, once its answer is in.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = Some(timeout);
        self
    }

    /// The id the calls of the view carry ([`REQUEST_ID_HEADER`]) instead of one of their
    /// own: the id of the request a service is answering, so the platform's logs and the
    /// service's show one id. Any token of visible ASCII up to
    /// [`request_id::MAX_LEN`](crate::request_id::MAX_LEN) characters (a UUID, an nginx
    /// `$request_id`, a W3C trace id), parsed into a [`RequestId`] before anything is sent.
    ///
    /// It applies to **every call made through the view**, each on all its attempts and on
    /// its error, and to every view made from it: a view kept for an inbound request gives
    /// all the calls made for it that one id (the platform's logs show them together; make a
    /// view per call where they must be told apart). A call made through a view of the view
    /// with an id of its own (`view.with_options(CallOptions::new().request_id(..))`) carries
    /// that one instead: the per-call id wins over the view's.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::options::CallOptions;
    /// use pubapi_sdk_ext::{Client, RequestId};
    ///
    /// # async fn run(client: Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let inbound: RequestId = "7f3c5e0a9b2d4c6e8f1a3b5c7d9e0f21".parse()?;
    /// let view = client.with_options(CallOptions::new().request_id(inbound))?;
    /// view.identity().whoami().await?; // x-request-id: 7f3c5e0a…
    /// view.webhooks().list().await?; // x-request-id: 7f3c5e0a… again
    /// let own: RequestId = "4bf92f3577b34da6a3ce929d0e0e4736".parse()?;
    /// view.with_options(CallOptions::new().request_id(own))?
    ///     .identity()
    ///     .whoami()
    ///     .await?; // x-request-id: 4bf92f35…
    /// # Ok(())
    /// # }
    /// ```
    pub fn request_id(mut self, id: RequestId) -> Self {
        self.request_id = Some(id);
        self
    }

    /// A header every attempt of every call of the view sends. A header the SDK sets itself
    /// (the token, the request id, impersonation, the body's framing) is refused by
    /// [`Client::with_options`](crate::Client::with_options) with
    /// [`CallOptionsError::ReservedHeader`]: the SDK's own settings say those.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The attempts a call may make, the first included, when set ([`CallOptions::retries`]
    /// plus one).
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// Puts the settings on a call's request: its headers; answers the call's id (the view's,
    /// or a new one).
    pub(crate) fn apply(&self, request: &mut reqwest::Request) -> RequestId {
        if !self.headers.is_empty() {
            let headers = request.headers_mut();
            for (name, value) in &self.headers {
                headers.append(name.clone(), value.clone());
            }
        }
        match &self.request_id {
            Some(id) => id.clone(),
            None => RequestId::next_with_header().0,
        }
    }

    /// Checks the settings: each may be used as given.
    pub(crate) fn check(&self) -> Result<(), CallOptionsError> {
        for (name, timeout) in [
            ("attempt_timeout", self.attempt_timeout),
            ("operation_timeout", self.operation_timeout),
        ] {
            if timeout == Some(Duration::ZERO) {
                return Err(CallOptionsError::ZeroTimeout { option: name });
            }
        }
        match self.headers.keys().find(|name| is_reserved(name)) {
            Some(name) => Err(CallOptionsError::ReservedHeader { name: name.clone() }),
            None => Ok(()),
        }
    }

    /// `self` with what `newer` sets put over it; headers are added.
    pub(crate) fn merged(&self, newer: CallOptions) -> CallOptions {
        let mut headers = self.headers.clone();
        for (name, value) in &newer.headers {
            headers.append(name.clone(), value.clone());
        }
        CallOptions {
            max_attempts: newer.max_attempts.or(self.max_attempts),
            attempt_timeout: newer.attempt_timeout.or(self.attempt_timeout),
            operation_timeout: newer.operation_timeout.or(self.operation_timeout),
            request_id: newer.request_id.or_else(|| self.request_id.clone()),
            headers,
        }
    }
}

/// Whether the SDK sets `name` itself.
pub(crate) fn is_reserved(name: &HeaderName) -> bool {
    [
        header::AUTHORIZATION,
        header::HOST,
        header::CONTENT_LENGTH,
        header::CONTENT_TYPE,
        header::TRANSFER_ENCODING,
        header::CONNECTION,
        REQUEST_ID_HEADER,
        ACT_AS,
        ACT_AS_EMAIL,
    ]
    .contains(name)
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("max_attempts", &self.max_attempts)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("operation_timeout", &self.operation_timeout)
            .field("request_id", &self.request_id)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why [`Client::with_options`](crate::Client::with_options) refused a [`CallOptions`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallOptionsError {
    /// A header the SDK sets itself: use the SDK's setting for it (the token source, a
    /// request id, [`Client::act_as`](crate::Client::act_as)).
    ReservedHeader {
        /// The header.
        name: HeaderName,
    },
    /// A timeout of zero, which no call could keep.
    ZeroTimeout {
        /// The option: `attempt_timeout` or `operation_timeout`.
        option: &'static str,
    },
}

impl fmt::Display for CallOptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallOptionsError::ReservedHeader { name } => {
                write!(
                    f,
                    "the sdk sets the header {name} itself: use its own setting"
                )
            }
            CallOptionsError::ZeroTimeout { option } => {
                write!(f, "{option} of zero: no call could keep it")
            }
        }
    }
}

impl std::error::Error for CallOptionsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_the_sdk_sets_itself_are_refused_naming_the_header() {
        for name in [
            "authorization",
            "x-request-id",
            "x-service-act-as",
            "content-length",
        ] {
            let options = CallOptions::new().header(name.parse().unwrap(), "v".parse().unwrap());
            assert_eq!(
                options.check(),
                Err(CallOptionsError::ReservedHeader {
                    name: name.parse().unwrap()
                }),
                "{name}"
            );
        }
        let own = CallOptions::new().header("x-tenant".parse().unwrap(), "v".parse().unwrap());
        assert_eq!(own.check(), Ok(()));
    }

    #[test]
    fn a_zero_timeout_is_refused_naming_the_option() {
        let cases = [
            (
                CallOptions::new().attempt_timeout(Duration::ZERO),
                "attempt_timeout",
            ),
            (
                CallOptions::new().operation_timeout(Duration::ZERO),
                "operation_timeout",
            ),
        ];
        for (options, option) in cases {
            assert_eq!(
                options.check(),
                Err(CallOptionsError::ZeroTimeout { option })
            );
        }
    }

    #[test]
    fn newer_settings_win_and_headers_add_up() {
        let older = CallOptions::new()
            .retries(0)
            .operation_timeout(Duration::from_secs(9))
            .header("x-a".parse().unwrap(), "1".parse().unwrap());
        let merged = older.merged(
            CallOptions::new()
                .retries(4)
                .header("x-b".parse().unwrap(), "2".parse().unwrap()),
        );
        assert_eq!(merged.max_attempts, Some(5));
        assert_eq!(merged.operation_timeout, Some(Duration::from_secs(9)));
        assert_eq!(merged.headers.len(), 2);
    }

    #[test]
    fn retries_of_u32_max_do_not_overflow() {
        assert_eq!(
            CallOptions::new().retries(u32::MAX).max_attempts,
            Some(u32::MAX)
        );
    }
}
