//! Waiting for AI answers.

use crate::error::Error;
use crate::waiter::WaitConfig;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
    /// A status the SDK does not know (neither running nor final) ends the wait with
    /// [`AskError::UnknownStatus`] after this many polls in a row (default 3): long enough to
    /// ride out a transitional value, short enough not to wait for ever on one that is final.
    pub unknown_status_polls: u32,
    /// Told the status of every poll (`PENDING`, `RUNNING`, `IN_PROGRESS`, …): a progress
    /// display's hook. None by default.
    pub on_status: StatusObserver,
}

/// A function told the status of each poll of an AI wait (see [`AiWait::on_status`]).
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
#[derive(Clone, Default)]
pub struct StatusObserver(Option<Arc<Observe>>);

/// What a [`StatusObserver`] calls.
type Observe = dyn Fn(&str) + Send + Sync;

impl StatusObserver {
    /// Calls `observe` with the status of each poll (an empty string when a body has none).
    pub fn new(observe: impl Fn(&str) + Send + Sync + 'static) -> Self {
        StatusObserver(Some(Arc::new(observe)))
    }

    fn tell(&self, status: Option<&str>) {
        if let Some(observe) = &self.0 {
            observe(status.unwrap_or_default());
        }
    }
}

impl fmt::Debug for StatusObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "StatusObserver(set)"
        } else {
            "StatusObserver(none)"
        })
    }
}

/// Two observers are equal when they are the same function (or both none).
impl PartialEq for StatusObserver {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for StatusObserver {}

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
            unknown_status_polls: 3,
            on_status: StatusObserver::default(),
        }
    }
}

/// Where an asynchronous AI execution stands, read from its `status`.
///
/// The reference names `COMPLETED` and `FAILED` for agents and `IN_PROGRESS` and `COMPLETED`
/// for the assistant; the platform's own clients also see `PENDING` and `RUNNING` (agents)
/// and end on `FAILED` and `AWAITING_USER_CONFIRMATION` (assistant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `IN_PROGRESS`, `PENDING`, `RUNNING`: poll again.
    Running,
    /// `COMPLETED`: the answer is there.
    Completed,
    /// `FAILED`.
    Failed,
    /// `AWAITING_USER_CONFIRMATION`: a pending action needs the user.
    AwaitingConfirmation,
    /// Anything else, or no status at all.
    Unknown,
}

impl Phase {
    pub(crate) fn of(status: Option<&str>) -> Phase {
        match status {
            Some("IN_PROGRESS" | "PENDING" | "RUNNING") => Phase::Running,
            Some("COMPLETED") => Phase::Completed,
            Some("FAILED") => Phase::Failed,
            Some("AWAITING_USER_CONFIRMATION") => Phase::AwaitingConfirmation,
            _ => Phase::Unknown,
        }
    }
}

/// Counts unknown statuses in a row; says when the wait should stop on one.
#[derive(Debug)]
pub(crate) struct UnknownStatuses {
    limit: u32,
    seen: std::sync::atomic::AtomicU32,
    observer: StatusObserver,
}

impl UnknownStatuses {
    pub(crate) fn new(how: &AiWait) -> Self {
        UnknownStatuses {
            limit: how.unknown_status_polls.max(1),
            seen: std::sync::atomic::AtomicU32::new(0),
            observer: how.on_status.clone(),
        }
    }

    /// The verdict of one poll whose body says `status` and `response_text`: done on
    /// `COMPLETED`, failed on `FAILED` (with the text), `awaiting(body)` on
    /// `AWAITING_USER_CONFIRMATION`, pending while running, and failed once an unknown status
    /// has lasted too long.
    pub(crate) fn verdict<T>(
        &self,
        status: Option<String>,
        response_text: Option<String>,
        body: T,
        awaiting: impl FnOnce(T) -> AskError,
    ) -> crate::waiter::Verdict<T, AskError> {
        use crate::waiter::Verdict;
        self.observer.tell(status.as_deref());
        let phase = Phase::of(status.as_deref());
        if let Some(stuck) = self.record(&phase, status.as_deref()) {
            return Verdict::Failed(stuck);
        }
        match phase {
            Phase::Completed => Verdict::Done(body),
            Phase::Failed => Verdict::Failed(AskError::Failed {
                status: status.unwrap_or_default(),
                response_text,
            }),
            Phase::AwaitingConfirmation => Verdict::Failed(awaiting(body)),
            Phase::Running | Phase::Unknown => Verdict::Pending,
        }
    }

    /// Records one poll's phase; `Some(error)` when an unknown status has lasted too long.
    fn record(&self, phase: &Phase, status: Option<&str>) -> Option<AskError> {
        use std::sync::atomic::Ordering;
        if *phase != Phase::Unknown {
            self.seen.store(0, Ordering::Relaxed);
            return None;
        }
        let polls = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        (polls >= self.limit).then(|| AskError::UnknownStatus {
            status: status.map(str::to_string),
            polls,
        })
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
    /// The status stayed at a value the SDK does not know (neither running nor final) for
    /// [`AiWait::unknown_status_polls`] polls.
    UnknownStatus {
        /// The status as sent (`None` when the body had none).
        status: Option<String>,
        /// How many polls in a row answered it.
        polls: u32,
    },
}

impl AskError {
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
            AskError::UnknownStatus { status, polls } => write!(
                f,
                "the execution reported the unknown status {status:?} on {polls} polls in a row"
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
}

impl From<Error> for AskError {
    fn from(e: Error) -> Self {
        AskError::Api(e)
    }
}
