//! Waiting for AI answers.

use crate::error::Error;
use crate::waiter::{WaitConfig, observer};
use std::fmt;
use std::time::Duration;

observer! {
    /// A function told the status of each poll of an AI wait (see [`AiWait::on_status`]); an
    /// empty string when a body has none.
    ///
    /// ```
    /// use pubapi_sdk_ext::ai::{AiWait, StatusObserver};
    ///
    /// let how = AiWait {
    ///     on_status: StatusObserver::new(|status| eprintln!("still {status}")),
    ///     ..AiWait::default()
    /// };
    /// # let _ = how;
    /// ```
    ///
    /// Two observers are equal when they are the same function (or both none).
    pub struct StatusObserver(&str);
}

/// How to poll for an AI answer. Every poll is an AI call (100 a day per token by default),
/// so the defaults are patient: first after 5 s, growing by half up to 60 s, for at most
/// 10 minutes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiWait {
    /// The first interval (at least 1 s).
    pub min_interval: Duration,
    /// The largest interval.
    pub max_interval: Duration,
    /// Give up after this long.
    pub deadline: Duration,
    /// Told the status of every poll (`PENDING`, `RUNNING`, `IN_PROGRESS`, …): a progress
    /// display's hook. None by default.
    pub on_status: StatusObserver,
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
            on_status: StatusObserver::default(),
        }
    }
}

/// The spelling of an open status enum, both ways: `as_str` and `Display` write each named
/// variant as the API spells it, and `From<&str>` reads those spellings back, any other text
/// as `Other`, kept as sent.
macro_rules! open_status {
    ($name:ident { $($variant:ident => $text:literal,)+ }) => {
        impl $name {
            /// The status as the API spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            fn from(status: &str) -> Self {
                match status {
                    $($text => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// The status of an assistant execution (reference 4.3), an open enum: a value the SDK does
/// not name is kept as [`AssistantStatus::Other`].
///
/// The reference names `IN_PROGRESS` (still running) and `COMPLETED`; every status other than
/// `IN_PROGRESS` is final. The platform's own clients also end on `FAILED` and
/// `AWAITING_USER_CONFIRMATION`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AssistantStatus {
    /// `IN_PROGRESS`: the only status that keeps the wait polling.
    InProgress,
    /// `COMPLETED`: the answer is there.
    Completed,
    /// `FAILED`.
    Failed,
    /// `AWAITING_USER_CONFIRMATION`: a pending action needs the user.
    AwaitingUserConfirmation,
    /// A status the SDK does not name, as sent (final, like every status but `IN_PROGRESS`).
    Other(String),
}

open_status!(AssistantStatus {
    InProgress => "IN_PROGRESS",
    Completed => "COMPLETED",
    Failed => "FAILED",
    AwaitingUserConfirmation => "AWAITING_USER_CONFIRMATION",
});

impl AssistantStatus {
    /// Whether the wait ends on this status: every status but `IN_PROGRESS`.
    pub fn is_final(&self) -> bool {
        *self != AssistantStatus::InProgress
    }
}

/// The status of an agent question, an open enum: a value the SDK does not name is kept as
/// [`AgentStatus::Other`].
///
/// The reference ends polling on `COMPLETED` or `FAILED`; the platform's clients see
/// `PENDING` and `RUNNING` before that, the sandbox `IN_PROGRESS`, and the platform's CLI
/// also stops on `AWAITING_USER_CONFIRMATION` (a pending action needs the user: polling does
/// not change it, and each poll spends an AI call). Every other status keeps the wait
/// polling, up to its deadline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentStatus {
    /// `PENDING`.
    Pending,
    /// `RUNNING`.
    Running,
    /// `IN_PROGRESS` (the sandbox's in-between status).
    InProgress,
    /// `COMPLETED`: final, the answer is there.
    Completed,
    /// `FAILED`: final.
    Failed,
    /// `AWAITING_USER_CONFIRMATION`: final, a pending action needs the user.
    AwaitingUserConfirmation,
    /// A status the SDK does not name, as sent (in-between: polling goes on).
    Other(String),
}

open_status!(AgentStatus {
    Pending => "PENDING",
    Running => "RUNNING",
    InProgress => "IN_PROGRESS",
    Completed => "COMPLETED",
    Failed => "FAILED",
    AwaitingUserConfirmation => "AWAITING_USER_CONFIRMATION",
});

impl AgentStatus {
    /// Whether polling ends on this status: `COMPLETED`, `FAILED` and
    /// `AWAITING_USER_CONFIRMATION`.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            AgentStatus::Completed | AgentStatus::Failed | AgentStatus::AwaitingUserConfirmation
        )
    }
}

/// Why an asynchronous AI question produced no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum AskError {
    /// A call failed (see [`Error`]).
    Api(Error),
    /// The execution ended `FAILED`.
    Failed {
        /// The final status.
        status: String,
        /// The response text sent with it (the failure text), if any.
        response_text: Option<String>,
    },
    /// The assistant stopped at `AWAITING_USER_CONFIRMATION`: a pending action needs the
    /// user. `result` is the whole status body; its `pending_actions` say what to confirm.
    AwaitingConfirmation {
        /// The ask response: the execution and conversation ids, to act on the confirmation.
        execution: Box<pubapi_sdk::types::AssistantAskResponse>,
        /// The status body, with `pending_actions`, `response_text` and the tool calls so far.
        result: Box<pubapi_sdk::types::AssistantStatusResponse>,
    },
    /// The agent stopped at `AWAITING_USER_CONFIRMATION`: a pending action needs the user.
    AgentAwaitingConfirmation {
        /// The ask response: the request and conversation ids.
        request: Box<pubapi_sdk::types::AgentAskResponse>,
        /// The status body as sent.
        result: Box<pubapi_sdk::types::AgentRequestStatus>,
    },
}

impl AskError {
    /// The server's answer of a call that failed ([`AskError::Api`]); none for an execution
    /// that ended `FAILED` or awaits confirmation (those came with a success status).
    pub fn api_error(&self) -> Option<&crate::error::ApiError> {
        match self {
            AskError::Api(e) => e.api_error(),
            _ => None,
        }
    }

    /// The pending actions of an execution awaiting the user's confirmation.
    pub fn pending_actions(&self) -> &[serde_json::Value] {
        match self {
            AskError::AwaitingConfirmation { result, .. } => &result.pending_actions,
            _ => &[],
        }
    }
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Api(e) => write!(f, "ai call failed: {e}"),
            AskError::Failed {
                status,
                response_text: Some(text),
            } => write!(f, "the execution ended {status}: {text}"),
            AskError::Failed { status, .. } => write!(f, "the execution ended {status}"),
            AskError::AwaitingConfirmation { result, .. } => write!(
                f,
                "the assistant awaits the user's confirmation of {} pending action(s)",
                result.pending_actions.len()
            ),
            AskError::AgentAwaitingConfirmation { request, .. } => write!(
                f,
                "the agent awaits the user's confirmation (request {})",
                request.request_id
            ),
        }
    }
}

impl std::error::Error for AskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // `Display` already says what the API error says.
            AskError::Api(e) => e.source(),
            _ => None,
        }
    }
}

impl crate::waiter::ServerAnswer for AskError {
    fn status(&self) -> Option<u16> {
        match self {
            AskError::Api(e) => e.status(),
            _ => None,
        }
    }

    fn code(&self) -> Option<&str> {
        match self {
            AskError::Api(e) => e.code(),
            _ => None,
        }
    }

    fn api_error(&self) -> Option<&crate::error::ApiError> {
        AskError::api_error(self)
    }
}

impl From<Error> for AskError {
    fn from(e: Error) -> Self {
        AskError::Api(e)
    }
}
