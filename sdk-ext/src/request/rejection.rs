//! Refusals the request policy gives without sending anything.
//!
//! The generated client's hook can only return a `reqwest::Response` or a `reqwest::Error`, so
//! when the policy refuses to send (the daily budget is spent, the deadline has passed, the
//! token source failed), it answers with a `reqwest::Error` whose source is the
//! [`LocalRejection`] ([`LocalRejection::into_error`]): no response, no status.
//! [`crate::Error`] finds it in the error's sources ([`LocalRejection::in_sources`]) and turns
//! it into its typed variant; nothing reached the server.

use crate::limits::LimitError;
use std::fmt;
use std::time::Duration;

/// Why the policy answered without sending the request.
#[derive(Debug, Clone)]
pub(crate) enum LocalRejection {
    /// The pacer has no slot in time (daily budget spent, or the queue is longer than the
    /// time left).
    Limit(LimitError),
    /// The operation's overall deadline passed before an attempt could start.
    Deadline {
        /// Time spent on the operation so far.
        elapsed: Duration,
        /// The attempts sent before.
        attempts: u32,
    },
    /// The token source could not produce a token (its error kept whole).
    Token(crate::token::TokenError),
    /// Another client of the token paces it with other settings.
    Budget(crate::limits::BudgetConflict),
    /// A per-call impersonation header value is not valid.
    Impersonation(crate::act_as::ImpersonationError),
    /// A path parameter's value cannot be one segment (empty, `.`, `..`, a `/` or a
    /// backslash), or a path-valued query parameter is not a valid path.
    PathValue {
        /// The operationId.
        operation: &'static str,
        /// The parameter's name in the spec, e.g. `webhookId` or `folder`.
        parameter: &'static str,
        /// What is wrong with the value.
        error: crate::path::PathError,
    },
    /// The reference removed the operation on its sunset, which has passed.
    Removed {
        /// The operationId.
        operation: &'static str,
        /// When it was removed.
        sunset: std::time::SystemTime,
        /// The operationId that replaces it.
        successor: Option<&'static str>,
    },
    /// A field of the body or query breaks a rule of the reference the spec cannot state
    /// (see `validate.rs`).
    Invalid {
        /// The field, as the reference names it.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The URL no longer matches the operation's path template.
    Path {
        /// The operation's path template.
        template: &'static str,
        /// The path the request would have gone to.
        sent: String,
    },
}

impl LocalRejection {
    /// This refusal as the error the generated client's hook answers, with the refusal as
    /// its source. reqwest makes its errors itself: this one comes from reading a body whose
    /// first read fails with the refusal.
    pub(crate) async fn into_error(self) -> reqwest::Error {
        error_with_source(Box::new(self)).await
    }

    /// The refusal among an error's sources, if the policy refused the call.
    pub(crate) fn in_sources<'e>(
        error: &'e (dyn std::error::Error + 'static),
    ) -> Option<&'e LocalRejection> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(rejection) = error.downcast_ref::<LocalRejection>() {
                return Some(rejection);
            }
            next = error.source();
        }
        None
    }
}

/// A `reqwest::Error` whose source is `source`: for what the policy answers instead of a
/// response. reqwest makes its errors itself: this one comes from reading a body whose first
/// read fails with `source`.
pub(crate) async fn error_with_source(
    source: Box<dyn std::error::Error + Send + Sync>,
) -> reqwest::Error {
    let body =
        reqwest::Body::wrap_stream(futures_util::stream::iter([Err::<bytes::Bytes, _>(source)]));
    let response = reqwest::Response::from(http::Response::new(body));
    match response.bytes().await {
        Err(error) => error,
        // A body whose only read fails cannot be read whole.
        Ok(_) => unreachable!("a body whose first read fails was read"),
    }
}

impl fmt::Display for LocalRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The typed error's own text: what a person reads is the same either way.
        write!(
            f,
            "refused before sending: {}",
            crate::Error::from(self.clone())
        )
    }
}

impl std::error::Error for LocalRejection {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_travels_as_the_source_of_an_error_without_a_status() {
        let rejection = LocalRejection::Deadline {
            elapsed: Duration::from_secs(3),
            attempts: 1,
        };
        let error = rejection.into_error().await;
        assert_eq!(error.status(), None);
        assert!(matches!(
            LocalRejection::in_sources(&error),
            Some(LocalRejection::Deadline { elapsed, .. }) if *elapsed == Duration::from_secs(3)
        ));
        let other = reqwest::Client::new().get("not a url").build().unwrap_err();
        assert!(LocalRejection::in_sources(&other).is_none());
    }
}
