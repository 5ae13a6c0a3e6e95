//! Waiting for AI answers.

use crate::error::Error;
use crate::waiter::WaitConfig;
use std::fmt;
use std::time::Duration;

/// How to poll for an AI answer. Every poll is an AI call (100 a day per token by default),
/// so the defaults are patient: first after 5 s, growing by half up to 60 s, for at most
/// 10 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AiWait {
    /// The first interval (at least 1 s).
    pub min_interval: Duration,
    /// The largest interval.
    pub max_interval: Duration,
    /// Give up after this long.
    pub deadline: Duration,
}

impl AiWait {
    /// The floor of every interval.
    pub const FLOOR: Duration = Duration::from_secs(1);

    pub(crate) fn config(&self) -> WaitConfig {
        WaitConfig::new(self.min_interval, self.max_interval, self.deadline).with_floor(Self::FLOOR)
    }
}

impl Default for AiWait {
    fn default() -> Self {
        AiWait {
            min_interval: Duration::from_secs(5),
            max_interval: Duration::from_secs(60),
            deadline: Duration::from_secs(600),
        }
    }
}

/// Why an asynchronous AI question produced no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum AskError {
    /// A call failed (see [`Error`]).
    Api(Error),
    /// The agent reported `FAILED`.
    Failed {
        /// The final status.
        status: String,
        /// The response text the agent gave with it, if any.
        response_text: Option<String>,
    },
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Api(e) => write!(f, "ai call failed: {e}"),
            AskError::Failed { status, .. } => write!(f, "the agent answered {status}"),
        }
    }
}

impl std::error::Error for AskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AskError::Api(e) => Some(e),
            AskError::Failed { .. } => None,
        }
    }
}

impl From<Error> for AskError {
    fn from(e: Error) -> Self {
        AskError::Api(e)
    }
}
