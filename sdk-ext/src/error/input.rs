//! Input refused before anything was sent ([`InputError`]), by the SDK's own checks or those
//! of the act-as value, a path value or a token; [`super::Error::InvalidInput`] carries it.

use std::error::Error as StdError;
use std::fmt;

use crate::act_as::ImpersonationError;
use crate::path::PathError;
use crate::token::TokenError;

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
    /// A webhook endpoint the platform could not deliver to, found by the check before its
    /// registration (`Registration::check_endpoint`).
    #[cfg(feature = "webhooks")]
    Endpoint(super::EndpointRefused),
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
            #[cfg(feature = "webhooks")]
            InputError::Endpoint(refused) => refused.fmt(f),
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
            #[cfg(feature = "webhooks")]
            InputError::Endpoint(_) => None,
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
