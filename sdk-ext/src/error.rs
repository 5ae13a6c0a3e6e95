//! The error callers match on.
//!
//! [`Error`] has one variant per thing a caller may want to handle
//! differently: a revoked token, a missing permission, a missing item, a
//! conflict, a rejected request, throttling, an exhausted daily quota, a
//! server fault, a transport failure, a timeout, an undecodable success body
//! and input refused before anything was sent. Every variant built from a
//! response keeps the status, the server's code and messages, and the raw
//! body in an [`ApiError`].
//!
//! The reference uses three error body formats ([`ErrorFormat`]). Error
//! bodies never fail to decode: whatever does not fit is kept as raw bytes.
//!
//! `Display` is short and lowercase and holds no token and no impersonation
//! value; the server's own message is in the [`ApiError`] returned by
//! `source()`. The `Display` of an error of a call that was sent **ends with its
//! request id**, ` [request id 0192f3a8-…]` (the id [`Error::request_id`] gives): a
//! log line of the `Display` has it already, so a wrapper that also logs
//! `request_id()` should not write it into the message a second time.
//!
//! The parts: this file holds [`Error`], how it is built and what it answers; `error/api_error.rs`
//! the failed answer a variant keeps ([`ApiError`], its body decoded in the operation's error
//! format, [`AiErrorCode`], [`RawBody`]); `error/input.rs` the refusals of input before anything
//! is sent ([`InputError`]); `error/display.rs` the one-line `Display` of [`Error`], built on
//! the other two.

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::HeaderMap;
use serde::de::DeserializeOwned;

use crate::act_as::ImpersonationError;
use crate::limits::LimitClass;
use crate::path::PathError;
use crate::token::TokenError;
use crate::verdict::{EndpointKind, Refusal, Verdict};

/// Everything that can go wrong calling the API.
///
/// ```
/// use std::time::SystemTime;
/// use bytes::Bytes;
/// use http::HeaderMap;
/// use pubapi_sdk_ext::error::{Area, Error, ErrorFormat, ForbiddenReason};
///
/// let body = Bytes::from_static(br#"{"code":"missing_scope_error","message":"Missing scope"}"#);
/// let error = Error::from_response(ErrorFormat::Webhooks, Area::Webhooks, 403, &HeaderMap::new(), body, SystemTime::now());
/// match &error {
///     Error::Forbidden { reason: ForbiddenReason::MissingScope, error } => {
///         assert_eq!(error.message(), Some("Missing scope"));
///     }
///     other => panic!("{other}"),
/// }
/// assert_eq!(error.to_string(), "forbidden, missing scope (403 missing_scope_error): Missing scope");
/// assert_eq!(error.code(), Some("missing_scope_error"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// 401: the token is invalid or revoked. Tokens stop working when the
    /// user changes the password; get a new one.
    Unauthorized(ApiError),
    /// 403: the token's user may not do this.
    Forbidden {
        /// Why, as far as the response and the endpoint tell.
        reason: ForbiddenReason,
        /// The response.
        error: ApiError,
    },
    /// 404: the item or path does not exist (or the user cannot see it).
    NotFound(ApiError),
    /// 409: a conflict, for example the webhook quota (`hook_quota_error`).
    Conflict(ApiError),
    /// 400 or 422: the request was refused; every message is kept in
    /// [`ApiError::messages`].
    InvalidRequest(ApiError),
    /// Still throttled (403 `ERR_403_DEVELOPER_OVER_QPS` or 429) after the
    /// retries allowed.
    Throttled {
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
        /// The response.
        error: ApiError,
    },
    /// The daily quota is used up, as the server (`ERR_403_DEVELOPER_OVER_RATE`)
    /// or the client-side limiter says.
    QuotaExhausted {
        /// The budget that is used up, when known.
        class: Option<LimitClass>,
        /// When it frees up again, when known.
        resets_in: Option<Duration>,
        /// The response; `None` when the limiter refused before sending.
        error: Option<ApiError>,
        /// The id of the call when the limiter refused a retry, after an attempt of the call
        /// was sent (with a response, [`ApiError::request_id`] has it too); read it with
        /// [`Error::request_id`].
        request_id: Option<crate::RequestId>,
    },
    /// 5xx.
    Server(ApiError),
    /// A status the API does not document for errors.
    UnexpectedStatus(ApiError),
    /// No response: connection, TLS, protocol or body transfer failure.
    Transport(reqwest::Error),
    /// A bound on time ran out ([`TimeoutBound`]): the operation's deadline (the whole call,
    /// an attempt in flight included, which is cancelled), or an attempt's bound on silence
    /// (no answer, or no byte of its body, for that long) after the retries allowed.
    Timeout {
        /// Time spent before giving up: on the call for [`TimeoutBound::Operation`], the
        /// silence for [`TimeoutBound::Silence`].
        elapsed: Duration,
        /// Which bound ran out.
        bound: TimeoutBound,
        /// How many attempts of the call were sent (0: none, the time ran out before).
        attempts: u32,
        /// The id of the call when an attempt of it was sent before the time ran out; read
        /// it with [`Error::request_id`].
        request_id: Option<crate::RequestId>,
    },
    /// A success body that does not match the expected type.
    Decode {
        /// The JSON path of the value that failed, such as `items[2].id`.
        path: String,
        /// What was wrong there.
        message: String,
        /// The whole body (its `Debug` shows only the length).
        body: RawBody,
        /// The id of the call whose answer this body is, when the body came from a call of
        /// a [`Client`](crate::Client) (the generated client's or an area handle's); read it
        /// with [`Error::request_id`]. `None` for a body decoded on its own
        /// ([`Error::decode`]). Boxed: it is rare, and every [`Error`] (and every error that
        /// holds one) stays as small as before.
        request_id: Option<Box<crate::RequestId>>,
    },
    /// Input refused before anything was sent.
    InvalidInput(InputError),
    /// A call that was sent could not send its retry: the client's token source gave no
    /// token for it ([`InputError::Token`], say a refresh that failed), or the new token is
    /// paced by another client with other limits ([`InputError::BudgetConflict`]). The same
    /// refusal before the first attempt is [`Error::InvalidInput`], with nothing sent.
    RetryNotSent {
        /// Why the retry could not be sent (boxed: it is rare, and every [`Error`] stays as
        /// small as before).
        error: Box<InputError>,
        /// The id the call's sent attempts carried (also [`Error::request_id`]).
        request_id: crate::RequestId,
    },
    /// The checkpoint store of an event stream failed; the stream did not start anywhere
    /// else (that would lose or repeat events). When the store could not be reached
    /// ([`FleetErrorKind::Unavailable`](crate::fleet::FleetErrorKind::Unavailable)) the stream
    /// tries again after a backoff; when it holds something that is not a checkpoint
    /// ([`FleetErrorKind::Corrupt`](crate::fleet::FleetErrorKind::Corrupt), the message names
    /// the file or key) the stream ends with this error.
    Checkpoint(crate::fleet::FleetError),
    /// The [fleet](crate::fleet)'s budget store could not be reached before the call's
    /// deadline, and the fleet sends nothing its store did not grant; nothing was sent.
    FleetUnavailable {
        /// The class the call waited for.
        class: crate::LimitClass,
        /// How long it waited for the store.
        waited: Duration,
        /// The store's last failure.
        error: crate::fleet::FleetError,
    },
    /// The reference removed the operation on a date that has passed (the copilot, on 30
    /// September 2026); nothing was sent. Use the successor, or build the client with
    /// `call_removed_operations()` for a platform that still serves it.
    Removed {
        /// The operationId, e.g. `askCopilot`.
        operation: &'static str,
        /// When it was removed.
        sunset: std::time::SystemTime,
        /// The operationId that replaces it, e.g. `askAssistant`.
        successor: Option<&'static str>,
    },
    /// The blocking client (feature `blocking`) was called on a thread that belongs to a
    /// tokio runtime (an async task, `spawn_blocking`, or inside `Runtime::enter`), where
    /// blocking on its own runtime would stall or panic; nothing was sent. Use the async
    /// [`Client`](crate::Client) there.
    #[cfg(feature = "blocking")]
    InAsyncContext,
}

/// The [`ApiError`] an [`Error`] holds, borrowed as `$self` is (`as_ref` or `as_mut` for the
/// optional one): one list of the variants that answer with a response.
macro_rules! api_error_of {
    ($self:ident, $borrow:ident) => {
        match $self {
            Error::Unauthorized(e)
            | Error::NotFound(e)
            | Error::Conflict(e)
            | Error::InvalidRequest(e)
            | Error::Server(e)
            | Error::UnexpectedStatus(e)
            | Error::Forbidden { error: e, .. }
            | Error::Throttled { error: e, .. } => Some(e),
            Error::QuotaExhausted { error, .. } => error.$borrow(),
            Error::Transport(_)
            | Error::Timeout { .. }
            | Error::Decode { .. }
            | Error::InvalidInput(_)
            | Error::RetryNotSent { .. }
            | Error::Checkpoint(_)
            | Error::FleetUnavailable { .. }
            | Error::Removed { .. } => None,
            #[cfg(feature = "blocking")]
            Error::InAsyncContext => None,
        }
    };
}

impl Error {
    /// Input refused before sending: `field` and what is wrong with it.
    pub(crate) fn invalid_input(field: &'static str, problem: impl Into<String>) -> Error {
        Error::InvalidInput(InputError::Invalid {
            field,
            problem: problem.into(),
        })
    }

    /// Builds the error for a non-success response.
    ///
    /// `format` is the error body format of the endpoint; `area` says which
    /// part of the API answered, which is what distinguishes the reasons of
    /// a 403 and the limit class of an exhausted quota. `now` turns an
    /// HTTP-date `Retry-After` into a delay.
    pub fn from_response(
        format: ErrorFormat,
        area: Area,
        status: u16,
        headers: &HeaderMap,
        body: Bytes,
        now: SystemTime,
    ) -> Error {
        let endpoint = EndpointKind::of_class(area.limit_class());
        let verdict = crate::verdict::judge(status, headers, endpoint, now);
        let error = ApiError::new(format, status, headers, body, now);
        Error::of_verdict(verdict, error, Some(area))
    }

    /// The error of a failed answer, as its [verdict](crate::verdict) says; `area` is the
    /// answering operation's (`None` when no operation is known: no limit class, no 403
    /// reason of an area).
    pub(crate) fn of_verdict(verdict: Verdict, error: ApiError, area: Option<Area>) -> Error {
        match verdict {
            Verdict::Throttled { .. } | Verdict::UnknownThrottle { .. } => Error::Throttled {
                retry_after: error.retry_after(),
                error,
            },
            Verdict::QuotaExhausted { retry_after } => Error::QuotaExhausted {
                class: area.map(Area::limit_class),
                resets_in: retry_after,
                error: Some(error),
                request_id: None,
            },
            Verdict::ServerError => Error::Server(error),
            Verdict::Refused(Refusal::Unauthorized) => Error::Unauthorized(error),
            Verdict::Refused(Refusal::Forbidden) => Error::Forbidden {
                reason: ForbiddenReason::of(area, error.gateway_code(), error.code()),
                error,
            },
            Verdict::Refused(Refusal::NotFound) => Error::NotFound(error),
            Verdict::Refused(Refusal::Conflict) => Error::Conflict(error),
            Verdict::Refused(Refusal::Invalid) => Error::InvalidRequest(error),
            // A success status the generated code does not decode, an undocumented status,
            // or (never, with an answer in hand) no answer.
            Verdict::Success | Verdict::NoAnswer { .. } | Verdict::Refused(Refusal::Unexpected) => {
                Error::UnexpectedStatus(error)
            }
        }
    }

    /// Decodes a success body, naming the JSON path of any mismatch.
    ///
    /// The path is read from where serde_json stopped: a missing field names its object; a
    /// mismatch inside an untagged or internally tagged enum (which serde reads whole before
    /// it tries the enum's shapes) names the array or object that holds the enum.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use pubapi_sdk_ext::error::Error;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Status { #[allow(dead_code)] webhook_id: u32 }
    ///
    /// let body = Bytes::from_static(br#"{"webhook_id":"abc"}"#);
    /// match Error::decode::<Status>(body) {
    ///     Err(Error::Decode { path, .. }) => assert_eq!(path, "webhook_id"),
    ///     _ => unreachable!(),
    /// }
    /// ```
    pub fn decode<T: DeserializeOwned>(body: Bytes) -> Result<T, Error> {
        Self::decode_slice(&body)
    }

    /// [`Error::decode`] into a type that may borrow from `body`.
    pub(crate) fn decode_slice<'de, T: serde::Deserialize<'de>>(
        body: &'de [u8],
    ) -> Result<T, Error> {
        // One deserializer for the value: the path of a mismatch is read back from where
        // serde_json stopped, only when there is one.
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let (path, message) = match T::deserialize(&mut deserializer) {
            Ok(value) => match deserializer.end() {
                Ok(()) => return Ok(value),
                // Trailing characters after the value.
                Err(e) => (".".to_owned(), e.to_string()),
            },
            Err(e) => (
                json_path::json_path_at(body, e.line(), e.column()),
                e.to_string(),
            ),
        };
        Err(Error::Decode {
            path,
            message,
            body: RawBody(Bytes::copy_from_slice(body)),
            request_id: None,
        })
    }

    /// `value` as a `T`, read from its JSON text so that a `T` read from a `Value` goes
    /// through the deserializer its response bodies use (one compiled visitor, not two).
    /// On a mismatch: the JSON path (as [`Error::decode`] names it) and serde's message,
    /// without serde_json's line and column (which count in the re-written text).
    pub(crate) fn decode_value<T: DeserializeOwned>(
        value: &serde_json::Value,
    ) -> Result<T, (String, String)> {
        // A `Value`'s keys are strings: writing it never fails.
        let text = serde_json::to_vec(value).unwrap_or_default();
        serde_json::from_slice(&text).map_err(|e| {
            let position = format!(" at line {} column {}", e.line(), e.column());
            let message = e.to_string();
            let message = message
                .strip_suffix(&position)
                .unwrap_or(&message)
                .to_owned();
            let path = json_path::json_path_at(&text, e.line(), e.column());
            (path, message)
        })
    }

    /// The HTTP status, when there was a response.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Transport(e) => e.status().map(|s| s.as_u16()),
            _ => self.api_error().map(ApiError::status),
        }
    }

    /// The server's error code (`errorCode`, `code` or the first
    /// `Errors[].code`), when there is one.
    pub fn code(&self) -> Option<&str> {
        self.api_error().and_then(ApiError::code)
    }

    /// The typed `errorCode` of an AI endpoint's error body (see [`ApiError::ai_code`]).
    pub fn ai_code(&self) -> Option<AiErrorCode> {
        self.api_error().and_then(ApiError::ai_code)
    }

    /// The response, for the variants built from one.
    pub fn api_error(&self) -> Option<&ApiError> {
        api_error_of!(self, as_ref)
    }

    /// The id of the call this error ends ([`crate::RequestId`], sent in `x-request-id`, the
    /// same for every attempt of the call): quote it to the platform's support, find it on
    /// the call's span. Every error of a call that was sent has it: a failed answer, a
    /// transport failure, a timeout, a refused retry, and a success whose body could not be
    /// read ([`Error::Transport`]) or does not decode ([`Error::Decode`]). `None` for a
    /// refusal before anything was sent, a response that did not pass a client's policy, or
    /// a body decoded on its own. When there is one, the error's `Display` ends with it
    /// (` [request id …]`).
    pub fn request_id(&self) -> Option<crate::RequestId> {
        match self {
            Error::Transport(e) => crate::request_id::of_transport(e),
            Error::RetryNotSent { request_id, .. } => Some(request_id.clone()),
            Error::Decode { request_id, .. } => request_id.as_deref().cloned(),
            Error::Timeout { request_id, .. } | Error::QuotaExhausted { request_id, .. }
                if request_id.is_some() =>
            {
                request_id.clone()
            }
            other => other.api_error().and_then(ApiError::request_id),
        }
    }

    fn api_error_mut(&mut self) -> Option<&mut ApiError> {
        api_error_of!(self, as_mut)
    }

    /// Keeps the id of the call this error answers.
    pub(crate) fn with_request_id(mut self, id: Option<crate::RequestId>) -> Self {
        let Some(id) = id else { return self };
        if let Error::Timeout { request_id, .. } | Error::QuotaExhausted { request_id, .. } =
            &mut self
        {
            *request_id = Some(id.clone());
        }
        if let Error::Decode { request_id, .. } = &mut self {
            *request_id = Some(Box::new(id.clone()));
        }
        if let Some(error) = self.api_error_mut() {
            error.fields.request_id = Some(id);
        }
        self
    }

    /// Whether the same request may succeed if sent again later: throttling,
    /// server errors, timeouts and transport failures. Whether resending is
    /// *safe* depends on the operation; see [`RetryConfig`](crate::RetryConfig).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Throttled { .. } | Error::Server(_) | Error::Timeout { .. } => true,
            Error::Transport(e) => !(e.is_builder() || e.is_redirect() || e.is_decode()),
            _ => false,
        }
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Transport(e) => Some(e),
            // `Display` already says what the input error says.
            Error::InvalidInput(e) => e.source(),
            Error::RetryNotSent { error, .. } => error.source(),
            // The server's code and message are in this error's own `Display`; the response
            // stays reachable through `api_error()` without printing it twice in a chain.
            _ => None,
        }
    }
}

/// The operations whose path template matches a URL path (ending with it, below the base
/// URL's own path): one, or those of the same path with other methods.
pub(crate) fn operations_at(
    path: &str,
) -> impl Iterator<Item = &'static pubapi_sdk::operations::Operation> + '_ {
    use crate::path::TemplateSegment::{Literal, Value};
    pubapi_sdk::operations::ALL.iter().filter(move |op| {
        crate::path::against_template(op.path, path).all(|pair| match pair {
            (Value(_), Some(segment)) => !segment.is_empty(),
            (Literal(expected), Some(segment)) => segment == expected,
            (_, None) => false,
        })
    })
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::InvalidInput(e)
    }
}

impl From<ImpersonationError> for Error {
    fn from(e: ImpersonationError) -> Self {
        Error::InvalidInput(e.into())
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::InvalidInput(e.into())
    }
}

impl From<TokenError> for Error {
    fn from(e: TokenError) -> Self {
        Error::InvalidInput(e.into())
    }
}

/// A transport failure, or a refusal of the client's policy that travelled as one.
impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        Error::of_reqwest(e)
    }
}

pub use crate::verdict::ForbiddenReason;

/// Which bound on time an [`Error::Timeout`] ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutBound {
    /// The operation timeout ([`CallOptions::operation_timeout`](crate::options::CallOptions::operation_timeout),
    /// [`RetryConfig::with_operation_timeout`](crate::RetryConfig::with_operation_timeout)):
    /// the whole call, its retries, the waits for its slots and an attempt in flight.
    Operation,
    /// The attempt timeout, a bound on silence
    /// ([`ClientBuilder::attempt_timeout`](crate::ClientBuilder::attempt_timeout),
    /// [`CallOptions::attempt_timeout`](crate::options::CallOptions::attempt_timeout)): no
    /// answer, or no byte of its body, for that long.
    Silence,
}
pub use api_error::{AiErrorCode, ApiError, ErrorMessage, RawBody};
#[cfg(feature = "webhooks")]
pub use endpoint::{EndpointProblem, EndpointRefused};
pub use input::InputError;
pub use pubapi_sdk::operations::{Area, ErrorFormat};

mod api_error;
mod display;
#[cfg(feature = "webhooks")]
mod endpoint;
mod input;
pub(crate) mod json_path;

#[cfg(test)]
mod tests;
