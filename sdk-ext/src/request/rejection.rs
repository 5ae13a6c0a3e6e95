//! Answers the request policy gives without sending anything.
//!
//! The generated client's hook can only return a `reqwest::Response` or a `reqwest::Error`, so
//! when the policy refuses to send (the daily budget is spent, the deadline has passed, the
//! token source failed), it answers with a synthetic response carrying a [`LocalRejection`]
//! extension. [`crate::Error`] turns it back into the typed error; nothing reached the server.

use crate::limits::LimitError;
use std::time::Duration;

/// Why the policy answered without sending the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LocalRejection {
    /// The pacer has no slot in time (daily budget spent, or the queue is longer than the
    /// time left).
    Limit(LimitError),
    /// The operation's overall deadline passed before an attempt could start.
    Deadline {
        /// Time spent on the operation so far.
        elapsed: Duration,
    },
    /// The token source could not produce a token.
    Token(String),
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
        /// The operationId.
        operation: &'static str,
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
    /// The synthetic response carrying this rejection: 429 for the pacer, 408 for the
    /// deadline, 401 for the token source.
    pub(crate) fn into_response(self) -> reqwest::Response {
        let status = match self {
            LocalRejection::Limit(_) => 429,
            LocalRejection::Deadline { .. } => 408,
            LocalRejection::Removed { .. } => 410,
            LocalRejection::Token(_) => 401,
            LocalRejection::Budget(_) => 400,
            LocalRejection::Impersonation(_)
            | LocalRejection::Invalid { .. }
            | LocalRejection::Path { .. }
            | LocalRejection::PathValue { .. } => 400,
        };
        let mut response = http::Response::new(Vec::<u8>::new());
        *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
        response.extensions_mut().insert(self);
        reqwest::Response::from(response)
    }

    /// The rejection a response carries, if the policy synthesized it.
    pub(crate) fn of(response: &reqwest::Response) -> Option<&LocalRejection> {
        response.extensions().get::<LocalRejection>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejection_survives_the_round_trip_through_a_response() {
        let rejection = LocalRejection::Deadline {
            elapsed: Duration::from_secs(3),
        };
        let response = rejection.clone().into_response();
        assert_eq!(response.status(), 408);
        assert_eq!(LocalRejection::of(&response), Some(&rejection));
    }
}
