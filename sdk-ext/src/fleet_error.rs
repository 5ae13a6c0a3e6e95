//! The error of a fleet's stores ([`crate::fleet`]): what failed, and whether trying again
//! may help. Below both the fleet and the limiter, which reports a store that could not be
//! reached ([`crate::limits::LimitError::StoreUnavailable`]); re-exported from
//! [`crate::fleet`], where users name it.

use std::fmt;

/// A fleet's store failed, could not be reached, or holds something that is not what was
/// saved there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetError {
    /// What kind of failure: whether trying again may help.
    pub kind: FleetErrorKind,
    /// What failed, e.g. `redis: connection refused`; a corrupt store's message names the
    /// file or key.
    pub message: String,
}

/// What kind of failure a [`FleetError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FleetErrorKind {
    /// The store could not be reached or did not answer: trying again later may work.
    Unavailable,
    /// The store answered with something that is not a checkpoint (an empty or garbled
    /// file, a key holding no integer): trying again will not mend it; someone has to look.
    Corrupt,
    /// Another consumer holds the stream's lease now: the save was refused.
    LeaseLost,
    /// The store's address is not one this crate can use (a malformed Redis URL, a `ca` file
    /// that cannot be read): trying again will not mend it; the configuration must change.
    Invalid,
}

impl FleetError {
    /// The store could not be reached or did not answer.
    pub fn unavailable(message: impl Into<String>) -> Self {
        FleetError {
            kind: FleetErrorKind::Unavailable,
            message: message.into(),
        }
    }

    /// What is saved at `location` (a file path, a key) is not a checkpoint: `what` says why.
    pub fn corrupt(location: impl fmt::Display, what: impl fmt::Display) -> Self {
        FleetError {
            kind: FleetErrorKind::Corrupt,
            message: format!("{location} holds no checkpoint: {what}"),
        }
    }

    /// The lease of stream `name` passed to another consumer.
    pub fn lease_lost(name: &str) -> Self {
        FleetError {
            kind: FleetErrorKind::LeaseLost,
            message: format!("another consumer holds stream {name:?} now"),
        }
    }

    /// The store's address is not one this crate can use: `message` names the problem.
    pub fn invalid(message: impl Into<String>) -> Self {
        FleetError {
            kind: FleetErrorKind::Invalid,
            message: message.into(),
        }
    }

    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self::unavailable(message)
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FleetErrorKind::Unavailable => write!(f, "fleet store failed: {}", self.message),
            FleetErrorKind::Corrupt => write!(f, "fleet store corrupt: {}", self.message),
            FleetErrorKind::LeaseLost => write!(f, "lease lost: {}", self.message),
            FleetErrorKind::Invalid => write!(f, "fleet store misconfigured: {}", self.message),
        }
    }
}

impl std::error::Error for FleetError {}
