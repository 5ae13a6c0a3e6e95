//! The failed answer an [`Error`](super::Error) keeps: [`ApiError`] (the status, the server's
//! code and messages decoded in the operation's [`ErrorFormat`], the raw body, the headers
//! that matter), the codes of AI errors ([`AiErrorCode`]) and the raw body's own type
//! ([`RawBody`]). [`super::display`] shortens its words into the error's one line.

use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::HeaderMap;

use super::ErrorFormat;
use crate::gateway::gateway_code;
use crate::retry_after::retry_after;

/// The `errorCode` of an AI error body (read with [`Error::ai_code`](super::Error::ai_code)): the
/// codes the reference names, and any other kept verbatim in [`AiErrorCode::Other`].
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
/// Boxed inside, so [`Error`](super::Error) stays small.
#[derive(Clone)]
pub struct ApiError {
    pub(super) fields: Box<Fields>,
}

#[derive(Debug, Clone)]
pub(super) struct Fields {
    status: u16,
    format: ErrorFormat,
    code: Option<String>,
    message: Option<String>,
    messages: Vec<ErrorMessage>,
    details: Option<String>,
    body: Bytes,
    gateway_code: Option<String>,
    retry_after: Option<Duration>,
    pub(super) request_id: Option<crate::RequestId>,
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
    pub(super) fn summary(&self) -> Option<(std::borrow::Cow<'_, str>, bool)> {
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

    /// The id of the call this answers (see [`Error::request_id`](super::Error::request_id)).
    pub fn request_id(&self) -> Option<crate::RequestId> {
        self.fields.request_id.clone()
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
pub(super) struct OneLine<'a>(pub(super) &'a str, pub(super) usize);

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
