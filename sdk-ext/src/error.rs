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
//! `source()`.

use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::HeaderMap;
use serde::de::DeserializeOwned;

use crate::act_as::ImpersonationError;
use crate::gateway::gateway_code;
use crate::limits::LimitClass;
use crate::path::PathError;
use crate::retry_after::retry_after;
use crate::time::HumanDuration;
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
    /// The operation's deadline passed.
    Timeout {
        /// Time spent before giving up.
        elapsed: Duration,
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
    },
    /// Input refused before anything was sent.
    InvalidInput(InputError),
    /// The checkpoint store of an event stream failed; the stream did not start anywhere
    /// else (that would lose or repeat events). When the store could not be reached
    /// ([`FleetErrorKind::Unavailable`](crate::fleet::FleetErrorKind::Unavailable)) the stream
    /// tries again after a backoff; when it holds something that is not a checkpoint
    /// ([`FleetErrorKind::Corrupt`](crate::fleet::FleetErrorKind::Corrupt), the message names
    /// the file or key) the stream ends with this error.
    Checkpoint(crate::fleet::FleetError),
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
            | Error::Checkpoint(_)
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
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let (path, message) = match serde_path_to_error::deserialize(&mut deserializer) {
            Ok(value) => match deserializer.end() {
                Ok(()) => return Ok(value),
                // Trailing characters after the value.
                Err(e) => (".".to_owned(), e.to_string()),
            },
            Err(e) => (e.path().to_string(), e.into_inner().to_string()),
        };
        Err(Error::Decode {
            path,
            message,
            body: RawBody(Bytes::copy_from_slice(body)),
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
    /// the call's span. `None` for a refusal before anything was sent, or a response that did
    /// not pass a client's policy. A call refused before a retry (its deadline, its pacer or
    /// its token) keeps the id its sent attempts carried.
    pub fn request_id(&self) -> Option<crate::RequestId> {
        match self {
            Error::Transport(e) => crate::request_id::of_transport(e),
            Error::Timeout { request_id, .. } | Error::QuotaExhausted { request_id, .. }
                if request_id.is_some() =>
            {
                *request_id
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
            *request_id = Some(id);
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The server's words, one short line each: they end up in log lines.
        let tail = |f: &mut fmt::Formatter<'_>, e: &ApiError| {
            match e.code() {
                Some(code) => write!(f, " ({} {})", e.status(), OneLine(code, 40))?,
                None => write!(f, " ({})", e.status())?,
            }
            if let Some((text, joined)) = e.summary() {
                write!(f, ": {}", OneLine(&text, if joined { 120 } else { 80 }))?;
            }
            sent_as(f, e.request_id())
        };
        match self {
            Error::Unauthorized(e) => {
                f.write_str("unauthorized, token invalid or revoked")?;
                tail(f, e)
            }
            Error::Forbidden { reason, error } => {
                write!(f, "forbidden, {reason}")?;
                tail(f, error)
            }
            Error::NotFound(e) => {
                f.write_str("not found")?;
                tail(f, e)
            }
            Error::Conflict(e) => {
                f.write_str("conflict")?;
                tail(f, e)
            }
            Error::InvalidRequest(e) => {
                f.write_str("invalid request")?;
                tail(f, e)
            }
            Error::Throttled { retry_after, error } => {
                f.write_str("throttled")?;
                if let Some(code) = error
                    .gateway_code()
                    .filter(|code| !crate::gateway::is_known(code))
                {
                    write!(
                        f,
                        " with a gateway code the SDK does not know ({})",
                        OneLine(code, 60)
                    )?;
                }
                if let Some(after) = retry_after {
                    write!(f, ", retry after {}", HumanDuration(*after))?;
                }
                tail(f, error)
            }
            Error::QuotaExhausted {
                class,
                resets_in,
                error,
                request_id,
            } => {
                match class {
                    Some(class) => write!(f, "daily {class} quota exhausted")?,
                    None => f.write_str("daily quota exhausted")?,
                }
                if let Some(resets_in) = resets_in {
                    write!(f, ", resets in {}", HumanDuration(*resets_in))?;
                }
                match error {
                    Some(error) => tail(f, error),
                    None => sent_as(f, *request_id),
                }
            }
            Error::Server(e) => {
                f.write_str("server error")?;
                tail(f, e)
            }
            Error::UnexpectedStatus(e) => {
                f.write_str("unexpected status")?;
                tail(f, e)
            }
            Error::Transport(e) => {
                f.write_str("transport error")?;
                if let Some(url) = e.url() {
                    let operations: Vec<&str> = operations_at(url.path()).map(|op| op.id).collect();
                    if !operations.is_empty() {
                        write!(f, " calling {}", operations.join(" or "))?;
                    }
                    if let Some(host) = url.host_str() {
                        write!(f, " on {host}")?;
                    }
                }
                // reqwest's own words name the URL again; its causes follow in `source()`.
                let what = if e.is_timeout() {
                    "timed out waiting for the server"
                } else if e.is_connect() {
                    "could not connect"
                } else if e.is_body() || e.is_decode() {
                    "the response body broke off"
                } else if e.is_request() {
                    "the request could not be sent"
                } else {
                    "no response"
                };
                write!(f, ": {what}")?;
                sent_as(f, crate::request_id::of_transport(e))
            }
            Error::Timeout {
                elapsed,
                request_id,
            } => {
                write!(f, "timed out after {}", HumanDuration(*elapsed))?;
                sent_as(f, *request_id)
            }
            Error::Decode { path, message, .. } => {
                write!(f, "response body does not decode at {path}: {message}")
            }
            Error::InvalidInput(e) => write!(f, "{e}; nothing was sent"),
            Error::Checkpoint(e) => write!(f, "event stream checkpoint: {e}"),
            Error::Removed {
                operation,
                sunset,
                successor,
            } => {
                write!(
                    f,
                    "{operation} was removed on {}, nothing sent",
                    httpdate::fmt_http_date(*sunset)
                )?;
                match successor {
                    Some(pubapi_sdk::operations::id::ASK_ASSISTANT) => {
                        f.write_str("; use askAssistant: client.assistant().ask_and_wait(..)")
                    }
                    Some(successor) => write!(f, "; use {successor}"),
                    None => Ok(()),
                }
            }
            #[cfg(feature = "blocking")]
            Error::InAsyncContext => f.write_str(
                "the blocking client was called inside an async runtime, nothing sent; \
                 use the async client there",
            ),
        }
    }
}

/// The id of the call an error ends, at the end of its `Display`, when it has one.
fn sent_as(f: &mut fmt::Formatter<'_>, id: Option<crate::RequestId>) -> fmt::Result {
    match id {
        Some(id) => write!(f, " [request id {id}]"),
        None => Ok(()),
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Transport(e) => Some(e),
            // `Display` already says what the input error says.
            Error::InvalidInput(e) => e.source(),
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
pub use pubapi_sdk::operations::{Area, ErrorFormat};

/// The `errorCode` of an AI error body (read with [`Error::ai_code`]): the codes the reference
/// names, and any other kept verbatim in [`AiErrorCode::Other`].
///
/// Written here, not generated: the reference says its list of codes is not complete, so the
/// spec keeps `errorCode` a plain string (an `enum` there would be a closed set).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AiErrorCode {
    /// `QUESTION_MANDATORY`: the question is missing.
    QuestionMandatory,
    /// `INTERNAL_SERVER_ERROR`.
    InternalServerError,
    /// A code the reference does not name, as sent.
    Other(String),
}

impl AiErrorCode {
    /// The codes the reference names, as sent.
    pub const KNOWN: &'static [&'static str] = &["QUESTION_MANDATORY", "INTERNAL_SERVER_ERROR"];

    /// The code as sent.
    pub fn as_str(&self) -> &str {
        match self {
            AiErrorCode::QuestionMandatory => "QUESTION_MANDATORY",
            AiErrorCode::InternalServerError => "INTERNAL_SERVER_ERROR",
            AiErrorCode::Other(code) => code,
        }
    }

    /// Whether the reference names the code.
    pub fn is_known(&self) -> bool {
        !matches!(self, AiErrorCode::Other(_))
    }
}

impl From<&str> for AiErrorCode {
    fn from(code: &str) -> Self {
        match code {
            "QUESTION_MANDATORY" => AiErrorCode::QuestionMandatory,
            "INTERNAL_SERVER_ERROR" => AiErrorCode::InternalServerError,
            other => AiErrorCode::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for AiErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a general-format `Errors` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMessage {
    /// Its `code`.
    pub code: Option<String>,
    /// Its `description`.
    pub description: Option<String>,
}

/// An error response as received: status, the server's code and messages
/// in whichever of the three formats it came, the gateway code, the
/// `Retry-After` and the raw body.
///
/// Boxed inside, so [`Error`] stays small.
#[derive(Clone)]
pub struct ApiError {
    fields: Box<Fields>,
}

#[derive(Debug, Clone)]
struct Fields {
    status: u16,
    format: ErrorFormat,
    code: Option<String>,
    message: Option<String>,
    messages: Vec<ErrorMessage>,
    details: Option<String>,
    body: Bytes,
    gateway_code: Option<String>,
    retry_after: Option<Duration>,
    request_id: Option<crate::RequestId>,
    /// The body was the gateway's `fault` envelope, in no format of the reference.
    fault: bool,
}

/// What one error format yields from a body.
#[derive(Default)]
struct Parsed {
    code: Option<String>,
    message: Option<String>,
    messages: Vec<ErrorMessage>,
    details: Option<String>,
}

impl ApiError {
    /// Reads a response; never fails, whatever the body holds.
    ///
    /// The body is read in `format` first; if it has none of that format's
    /// fields, the other two formats are tried (a gateway may answer in its
    /// own format). A body that is not a JSON object is only kept raw.
    pub fn new(
        format: ErrorFormat,
        status: u16,
        headers: &HeaderMap,
        body: Bytes,
        now: SystemTime,
    ) -> ApiError {
        let mut fields = Fields {
            status,
            format,
            code: None,
            message: None,
            messages: Vec::new(),
            details: None,
            gateway_code: gateway_code(headers).map(str::to_owned),
            retry_after: retry_after(headers, now),
            request_id: None,
            fault: false,
            body,
        };
        // Only an object can be an error body (a struct would also read from an array).
        let object = fields.body.trim_ascii_start().starts_with(b"{");
        let others = [ErrorFormat::Ai, ErrorFormat::Webhooks, ErrorFormat::General]
            .into_iter()
            .filter(|f| *f != format);
        let found = std::iter::once(format)
            .chain(others)
            .filter(|_| object)
            .find_map(|candidate| parse(candidate, &fields.body).map(|p| (candidate, p)));
        if let Some((candidate, parsed)) = found {
            fields.format = candidate;
            fields.code = parsed.code;
            fields.message = parsed.message;
            fields.messages = parsed.messages;
            fields.details = parsed.details;
        } else if let Ok(Fault { fault }) = serde_json::from_slice::<Fault>(&fields.body) {
            fields.message = fault.faultstring;
            fields.code = fault.detail.and_then(|detail| detail.errorcode);
            fields.fault = true;
        }
        ApiError {
            fields: Box::new(fields),
        }
    }

    /// HTTP status.
    pub fn status(&self) -> u16 {
        self.fields.status
    }

    /// The format the body was read as: the endpoint's, or the one that
    /// matched when the body came in another.
    pub fn format(&self) -> ErrorFormat {
        self.fields.format
    }

    /// The server's code: `errorCode`, `code`, or the first `Errors[].code`.
    pub fn code(&self) -> Option<&str> {
        self.fields.code.as_deref()
    }

    /// The `errorCode` of an AI-format body, typed: `QUESTION_MANDATORY` and
    /// `INTERNAL_SERVER_ERROR` as the reference names them, any other code kept verbatim in
    /// [`AiErrorCode::Other`] ([`ApiError::code`] keeps the raw string). `None` when the body
    /// was not read as the AI format or has no code.
    pub fn ai_code(&self) -> Option<AiErrorCode> {
        match self.fields.format {
            // The gateway's envelope on an AI endpoint is not the AI format: its
            // `errorcode` is the gateway's, not an `errorCode`.
            ErrorFormat::Ai if !self.fields.fault => self.code().map(AiErrorCode::from),
            _ => None,
        }
    }

    /// Whether the body was the gateway's own envelope,
    /// `{fault: {faultstring, detail: {errorcode}}}`, rather than one of the reference's three
    /// formats: [`ApiError::code`] is then its `errorcode` and [`ApiError::message`] its
    /// `faultstring`, and [`ApiError::ai_code`] is `None`.
    pub fn is_gateway_fault(&self) -> bool {
        self.fields.fault
    }

    /// The server's message: `errorMessage`, `message`, or the first
    /// `Errors[].description`.
    pub fn message(&self) -> Option<&str> {
        self.fields.message.as_deref()
    }

    /// Every `Errors` entry of a general-format body, in order.
    pub fn messages(&self) -> &[ErrorMessage] {
        &self.fields.messages
    }

    /// The server's words for a person: every `Errors[].description` joined with `; ` when
    /// there are several (`true`), or the one message (`false`).
    fn summary(&self) -> Option<(std::borrow::Cow<'_, str>, bool)> {
        let descriptions: Vec<&str> = self
            .messages()
            .iter()
            .filter_map(|m| m.description.as_deref())
            .collect();
        if descriptions.len() > 1 {
            Some((descriptions.join("; ").into(), true))
        } else {
            self.message().map(|m| (m.into(), false))
        }
    }

    /// `details` of a webhooks-format body.
    pub fn details(&self) -> Option<&str> {
        self.fields.details.as_deref()
    }

    /// The raw body, kept whatever it holds.
    pub fn body(&self) -> &Bytes {
        &self.fields.body
    }

    /// `x-gateway-error-code`.
    pub fn gateway_code(&self) -> Option<&str> {
        self.fields.gateway_code.as_deref()
    }

    /// `Retry-After`, as a delay from the response's arrival.
    pub fn retry_after(&self) -> Option<Duration> {
        self.fields.retry_after
    }

    /// The id of the call this answers (see [`Error::request_id`]).
    pub fn request_id(&self) -> Option<crate::RequestId> {
        self.fields.request_id
    }
}

/// Reads `body` as `format`, with the spec's type of that format (`AiError`,
/// `WebhookError`, `GeneralError`); `None` when it is not one (a field of another type, or
/// none of its fields).
fn parse(format: ErrorFormat, body: &[u8]) -> Option<Parsed> {
    use pubapi_sdk::types::{AiError, GeneralError, WebhookError};
    let parsed = match format {
        ErrorFormat::Ai => {
            let AiError {
                error_code,
                error_message,
            } = serde_json::from_slice(body).ok()?;
            Parsed {
                code: error_code,
                message: error_message,
                ..Parsed::default()
            }
        }
        ErrorFormat::Webhooks => {
            let WebhookError {
                code,
                details,
                message,
            } = serde_json::from_slice(body).ok()?;
            Parsed {
                code,
                message,
                details,
                ..Parsed::default()
            }
        }
        ErrorFormat::General => {
            let GeneralError { errors } = serde_json::from_slice(body).ok()?;
            let messages: Vec<ErrorMessage> = errors
                .into_iter()
                .map(|item| ErrorMessage {
                    code: item.code,
                    description: item.description,
                })
                .collect();
            Parsed {
                code: messages.iter().find_map(|m| m.code.clone()),
                message: messages.iter().find_map(|m| m.description.clone()),
                messages,
                details: None,
            }
        }
    };
    (parsed.code.is_some() || parsed.message.is_some() || !parsed.messages.is_empty())
        .then_some(parsed)
}

/// The gateway's own envelope, `{fault: {faultstring, detail: {errorcode}}}`: the platform's
/// own clients meet it; the reference does not show it, so the spec has no type for it.
#[derive(serde::Deserialize)]
struct Fault {
    fault: FaultBody,
}

#[derive(serde::Deserialize)]
struct FaultBody {
    faultstring: Option<String>,
    detail: Option<FaultDetail>,
}

#[derive(serde::Deserialize)]
struct FaultDetail {
    errorcode: Option<String>,
}

/// Text from a server shown in one line: control characters escaped, at most `.1`
/// characters shown (escapes included), then `…`.
struct OneLine<'a>(&'a str, usize);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let OneLine(text, max) = *self;
        let mut shown = 0;
        for c in text.chars() {
            // Control characters, line and paragraph separators and bidi controls would
            // break or reorder the line.
            let breaks_line = c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            let escaped = breaks_line.then(|| c.escape_default().to_string());
            let width = escaped.as_ref().map_or(1, |e| e.chars().count());
            if shown + width > max {
                return f.write_str("…");
            }
            shown += width;
            match escaped {
                Some(escaped) => f.write_str(&escaped)?,
                None => write!(f, "{c}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fields {
            status,
            format,
            code,
            message,
            messages,
            details,
            body,
            gateway_code,
            retry_after,
            request_id,
            fault,
        } = &*self.fields;
        f.debug_struct("ApiError")
            .field("status", status)
            .field("format", format)
            .field("code", code)
            .field("message", message)
            .field("messages", messages)
            .field("details", details)
            .field("gateway_code", gateway_code)
            .field("retry_after", retry_after)
            .field("request_id", request_id)
            .field("fault", fault)
            .field("body", &RawBody(body.clone()))
            .finish()
    }
}

/// A response body kept for inspection. Its `Debug` shows only the length: bodies can hold
/// secrets (a webhook `authHeader`) or personal data, and `Debug` output ends up in logs.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RawBody(pub Bytes);

impl std::ops::Deref for RawBody {
    type Target = Bytes;

    fn deref(&self) -> &Bytes {
        &self.0
    }
}

impl From<Bytes> for RawBody {
    fn from(body: Bytes) -> Self {
        RawBody(body)
    }
}

impl fmt::Debug for RawBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawBody({} bytes)", self.0.len())
    }
}

impl fmt::Display for ApiError {
    /// `http 400 request_schema_error: <the server's message(s)>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http {}", self.status())?;
        if let Some(code) = self.code() {
            write!(f, " {code}")?;
        }
        if let Some((text, _)) = self.summary() {
            write!(f, ": {text}")?;
        }
        Ok(())
    }
}

impl StdError for ApiError {}

/// Input refused before anything was sent.
#[derive(Debug)]
#[non_exhaustive]
pub enum InputError {
    /// An impersonation value.
    Impersonation(ImpersonationError),
    /// A path or path value.
    Path(PathError),
    /// The value of a path parameter (or of a path-valued query parameter) of an operation;
    /// nothing was sent.
    PathValue {
        /// The operationId, e.g. `getWebhookDetails`.
        operation: &'static str,
        /// The parameter's name in the spec, e.g. `webhookId`.
        parameter: &'static str,
        /// What is wrong with the value.
        error: PathError,
    },
    /// A bearer token.
    Token(TokenError),
    /// The client's limits, pacing or fleet differ from those another client of the same
    /// token already paces it with (see [`crate::limits::BudgetConflict`]).
    BudgetConflict(crate::limits::BudgetConflict),
    /// Any other field.
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Impersonation(_) => f.write_str("invalid impersonation value"),
            InputError::Path(_) => f.write_str("invalid path"),
            InputError::PathValue {
                operation,
                parameter,
                ..
            } => write!(f, "invalid `{parameter}` of {operation}"),
            InputError::Token(TokenError::Unavailable(_)) => f.write_str("no token"),
            InputError::Token(_) => f.write_str("invalid token"),
            InputError::BudgetConflict(conflict) => conflict.fmt(f),
            InputError::Invalid { field, problem } => write!(f, "invalid {field}: {problem}"),
        }
    }
}

impl StdError for InputError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            InputError::Impersonation(e) => Some(e),
            InputError::Path(e) | InputError::PathValue { error: e, .. } => Some(e),
            InputError::Token(e) => Some(e),
            InputError::BudgetConflict(_) | InputError::Invalid { .. } => None,
        }
    }
}

impl From<ImpersonationError> for InputError {
    fn from(e: ImpersonationError) -> Self {
        InputError::Impersonation(e)
    }
}

impl From<PathError> for InputError {
    fn from(e: PathError) -> Self {
        InputError::Path(e)
    }
}

impl From<TokenError> for InputError {
    fn from(e: TokenError) -> Self {
        InputError::Token(e)
    }
}

#[cfg(test)]
mod tests;
