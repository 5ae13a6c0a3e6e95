//! The `Display` of [`Error`]: one short lowercase line per variant, the server's words (from
//! [`ApiError`]) cut to one line, and the request id the call was sent with when it has one.
//! No token and no impersonation value ever appears.

use std::fmt;

use super::api_error::OneLine;
use super::{ApiError, Error, operations_at};
use crate::time::HumanDuration;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (words, error) = match self {
            Error::Unauthorized(e) => ("unauthorized, token invalid or revoked", e),
            Error::Forbidden { reason, error } => {
                write!(f, "forbidden, {reason}")?;
                return tail(f, error);
            }
            Error::NotFound(e) => ("not found", e),
            Error::Conflict(e) => ("conflict", e),
            Error::InvalidRequest(e) => ("invalid request", e),
            Error::Throttled { retry_after, error } => return throttled(f, *retry_after, error),
            Error::QuotaExhausted {
                class,
                resets_in,
                error,
                request_id,
            } => {
                return quota_exhausted(f, *class, *resets_in, error.as_ref(), request_id.as_ref());
            }
            Error::Server(e) => ("server error", e),
            Error::UnexpectedStatus(e) => ("unexpected status", e),
            Error::Transport(e) => return transport(f, e),
            Error::Timeout {
                elapsed,
                bound,
                attempts,
                request_id,
            } => {
                match bound {
                    super::TimeoutBound::Silence => write!(
                        f,
                        "timed out: nothing received for {} (the attempt timeout)",
                        HumanDuration(*elapsed)
                    )?,
                    _ => write!(f, "timed out after {}", HumanDuration(*elapsed))?,
                }
                match attempts {
                    0 => {}
                    1 => f.write_str(", 1 attempt")?,
                    n => write!(f, ", {n} attempts")?,
                }
                return sent_as(f, request_id.as_ref());
            }
            Error::Decode {
                path,
                message,
                request_id,
                ..
            } => {
                write!(f, "response body does not decode at {path}: {message}")?;
                return sent_as(f, request_id.as_deref());
            }
            Error::InvalidInput(e) => return write!(f, "{e}; nothing was sent"),
            Error::RetryNotSent { error, request_id } => {
                write!(f, "{error}; the call was sent, its retry was not")?;
                return sent_as(f, Some(request_id));
            }
            Error::Checkpoint(e) => return write!(f, "event stream checkpoint: {e}"),
            Error::FleetUnavailable {
                class,
                waited,
                error,
            } => {
                return write!(
                    f,
                    "no {class} slot: the fleet's budget store did not answer in {} ({error}); \
                     nothing was sent",
                    HumanDuration(*waited)
                );
            }
            Error::Removed {
                operation,
                sunset,
                successor,
            } => return removed(f, operation, *sunset, *successor),
            #[cfg(feature = "blocking")]
            Error::InAsyncContext => {
                return f.write_str(
                    "the blocking client was called inside an async runtime, nothing sent; \
                     use the async client there",
                );
            }
        };
        f.write_str(words)?;
        tail(f, error)
    }
}

/// The server's words, one short line each (they end up in log lines): the status and code,
/// the message, and the request id.
fn tail(f: &mut fmt::Formatter<'_>, e: &ApiError) -> fmt::Result {
    match e.code() {
        Some(code) => write!(f, " ({} {})", e.status(), OneLine(code, 40))?,
        None => write!(f, " ({})", e.status())?,
    }
    if let Some((text, joined)) = e.summary() {
        write!(f, ": {}", OneLine(&text, if joined { 120 } else { 80 }))?;
    }
    sent_as(f, e.request_id().as_ref())
}

/// [`Error::Throttled`]'s line: a gateway code the SDK does not know, and when to retry.
fn throttled(
    f: &mut fmt::Formatter<'_>,
    retry_after: Option<std::time::Duration>,
    error: &ApiError,
) -> fmt::Result {
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
        write!(f, ", retry after {}", HumanDuration(after))?;
    }
    tail(f, error)
}

/// [`Error::QuotaExhausted`]'s line: the class, when the quota resets, and the answer's words
/// (or, without an answer, the request id alone).
fn quota_exhausted(
    f: &mut fmt::Formatter<'_>,
    class: Option<crate::limits::LimitClass>,
    resets_in: Option<std::time::Duration>,
    error: Option<&ApiError>,
    request_id: Option<&crate::RequestId>,
) -> fmt::Result {
    match class {
        Some(class) => write!(f, "daily {class} quota exhausted")?,
        None => f.write_str("daily quota exhausted")?,
    }
    if let Some(resets_in) = resets_in {
        write!(f, ", resets in {}", HumanDuration(resets_in))?;
    }
    match error {
        Some(error) => tail(f, error),
        None => sent_as(f, request_id),
    }
}

/// [`Error::Transport`]'s line: the operation and host called, and what went wrong in words
/// of our own (reqwest's name the URL again; its causes follow in `source()`).
fn transport(f: &mut fmt::Formatter<'_>, e: &reqwest::Error) -> fmt::Result {
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
    sent_as(f, crate::request_id::of_transport(e).as_ref())
}

/// [`Error::Removed`]'s line: when, and the operation to use instead.
fn removed(
    f: &mut fmt::Formatter<'_>,
    operation: &str,
    sunset: std::time::SystemTime,
    successor: Option<&str>,
) -> fmt::Result {
    write!(
        f,
        "{operation} was removed on {}, nothing sent",
        httpdate::fmt_http_date(sunset)
    )?;
    match successor {
        Some(pubapi_sdk::operations::id::ASK_ASSISTANT) => {
            f.write_str("; use askAssistant: client.assistant().ask_and_wait(..)")
        }
        Some(successor) => write!(f, "; use {successor}"),
        None => Ok(()),
    }
}

/// The id of the call an error ends, at the end of its `Display`, when it has one.
fn sent_as(f: &mut fmt::Formatter<'_>, id: Option<&crate::RequestId>) -> fmt::Result {
    match id {
        Some(id) => write!(f, " [request id {id}]"),
        None => Ok(()),
    }
}
