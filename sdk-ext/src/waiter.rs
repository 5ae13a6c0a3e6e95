//! A small generic waiter: poll an operation until an acceptor says it is done or failed, no
//! more often than a minimum interval, within a deadline.
//!
//! Intervals are measured from the end of one poll to the start of the next: a poll's
//! request may wait for the pacer before it leaves, so only its answer bounds when the
//! server saw it, and the gap the platform asked for holds at the server. The waiter gives
//! up rather than poll early when the deadline comes first. Time comes from tokio's clock (tests run with paused time); dropping the
//! future cancels the wait.

use std::fmt;
use std::future::Future;
#[cfg(any(feature = "ai", feature = "audit"))]
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::time::HumanDuration;

/// A function told what each poll of a wait saw, or none: the one core of the public
/// observers ([`StatusObserver`](crate::ai::StatusObserver),
/// [`JobObserver`](crate::audit::JobObserver)), which name what `T` is. Two are equal when
/// they are the same function (or both none).
#[cfg(any(feature = "ai", feature = "audit"))]
pub(crate) struct Observer<T: ?Sized>(Option<Arc<Observe<T>>>);

/// What an [`Observer`] calls.
#[cfg(any(feature = "ai", feature = "audit"))]
type Observe<T> = dyn Fn(&T) + Send + Sync;

#[cfg(any(feature = "ai", feature = "audit"))]
impl<T: ?Sized> Observer<T> {
    /// Calls `observe` with what each poll saw.
    pub(crate) fn new(observe: impl Fn(&T) + Send + Sync + 'static) -> Self {
        Observer(Some(Arc::new(observe)))
    }

    /// Tells the function, if there is one, what a poll saw.
    pub(crate) fn tell(&self, seen: &T) {
        if let Some(observe) = &self.0 {
            observe(seen);
        }
    }

    /// `<name>(set)` or `<name>(none)`: the debug text of the public observer `name`.
    pub(crate) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = if self.0.is_some() { "set" } else { "none" };
        write!(f, "{name}({set})")
    }
}

/// Declares a public observer of a wait: a newtype of [`Observer`] over what each poll saw,
/// with `new`, the crate's `tell`, equality by function and the debug text `<name>(set)` or
/// `<name>(none)`. The type's docs are the caller's.
#[cfg(any(feature = "ai", feature = "audit"))]
macro_rules! observer {
    ($(#[$doc:meta])* pub struct $name:ident(&$seen:ty);) => {
        $(#[$doc])*
        #[derive(Clone, Default, PartialEq, Eq)]
        pub struct $name($crate::waiter::Observer<$seen>);

        impl $name {
            /// Calls `observe` with what each poll saw.
            pub fn new(observe: impl Fn(&$seen) + Send + Sync + 'static) -> Self {
                $name($crate::waiter::Observer::new(observe))
            }

            /// Tells the function, if there is one, what a poll saw.
            pub(crate) fn tell(&self, seen: &$seen) {
                self.0.tell(seen);
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.debug(stringify!($name), f)
            }
        }
    };
}

#[cfg(any(feature = "ai", feature = "audit"))]
pub(crate) use observer;

#[cfg(any(feature = "ai", feature = "audit"))]
impl<T: ?Sized> Clone for Observer<T> {
    fn clone(&self) -> Self {
        Observer(self.0.clone())
    }
}

#[cfg(any(feature = "ai", feature = "audit"))]
impl<T: ?Sized> Default for Observer<T> {
    fn default() -> Self {
        Observer(None)
    }
}

#[cfg(any(feature = "ai", feature = "audit"))]
impl<T: ?Sized> PartialEq for Observer<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

#[cfg(any(feature = "ai", feature = "audit"))]
impl<T: ?Sized> Eq for Observer<T> {}

/// What the acceptor says about one poll.
#[derive(Debug)]
pub enum Verdict<T, E> {
    /// Finished: stop and return this.
    Done(T),
    /// Not yet: poll again after the interval.
    Pending,
    /// Finished unsuccessfully, or the poll itself failed in a way waiting cannot fix.
    Failed(E),
}

/// Poll timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitConfig {
    min_interval: Duration,
    max_interval: Duration,
    deadline: Duration,
}

impl WaitConfig {
    /// Polls every `min_interval` at first, growing by half each time up to `max_interval`,
    /// and gives up after `deadline` in total. `max_interval` is raised to `min_interval`
    /// when lower.
    pub fn new(min_interval: Duration, max_interval: Duration, deadline: Duration) -> Self {
        WaitConfig {
            min_interval,
            max_interval: max_interval.max(min_interval),
            deadline,
        }
    }

    /// The same configuration with every interval raised to at least `floor`: the way an
    /// operation enforces the platform's polling minimum whatever the caller configured.
    pub fn with_floor(self, floor: Duration) -> Self {
        WaitConfig::new(
            self.min_interval.max(floor),
            self.max_interval.max(floor),
            self.deadline,
        )
    }

    /// The first (and smallest) interval.
    pub fn min_interval(&self) -> Duration {
        self.min_interval
    }

    /// The largest interval.
    pub fn max_interval(&self) -> Duration {
        self.max_interval
    }

    /// The total time allowed.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    fn next_interval(&self, current: Duration) -> Duration {
        current.saturating_add(current / 2).min(self.max_interval)
    }
}

/// Why waiting stopped without a result.
#[derive(Debug)]
#[non_exhaustive]
pub enum WaitError<E> {
    /// The acceptor reported a failure.
    #[non_exhaustive]
    Failed {
        /// The failure.
        error: E,
        /// Polls made.
        polls: u32,
        /// Time spent waiting.
        waited: Duration,
        /// What the call had started before it waited, if it started anything (see
        /// [`Started`]).
        started: Option<Box<Started>>,
    },
    /// The deadline would pass before the next poll was allowed.
    #[non_exhaustive]
    TimedOut {
        /// Polls made.
        polls: u32,
        /// Time spent waiting.
        waited: Duration,
        /// What the call had started before it waited, if it started anything (see
        /// [`Started`]): it may still finish.
        started: Option<Box<Started>>,
    },
}

/// What a call that starts work and then waits for it had started when its wait stopped
/// ([`WaitError::started`]): the question asked or the job made, each already paid for out
/// of the day's budget. After a timeout or a failed poll, waiting for it again costs polls
/// only, where starting it again costs another question or job; after a final failure
/// (`FAILED`, a job the platform no longer knows) it says what failed.
///
/// Set on every error of [`Agents::ask_and_wait`](crate::api::Agents::ask_and_wait),
/// [`Assistant::ask_and_wait`](crate::api::Assistant::ask_and_wait) and
/// [`Audit::run`](crate::api::Audit::run) after the start succeeded; a wait on something
/// the caller started itself (`wait`), or a start that failed, leaves it `None`.
///
/// ```no_run
/// use pubapi_sdk_ext::ai::AiWait;
/// use pubapi_sdk_ext::waiter::{Started, WaitError};
/// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let agents = client.agents();
/// let answer = match agents.ask_and_wait("agent-1", "Summarise Q3", AiWait::default()).await {
///     Err(WaitError::TimedOut { started: Some(started), .. }) => match *started {
///         // Still running: wait again, without asking (and paying) again.
///         Started::AgentQuestion { agent_id, request, .. } => {
///             agents.wait(&agent_id, &request, AiWait::default()).await?
///         }
///         other => return Err(format!("not an agent's question: {other:?}").into()),
///     },
///     other => other?,
/// };
/// println!("{}", answer.result.response_text.unwrap_or_default());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Started {
    /// A question asked of an agent: wait again with
    /// [`Agents::wait`](crate::api::Agents::wait).
    #[cfg(feature = "ai")]
    #[non_exhaustive]
    AgentQuestion {
        /// The agent asked.
        agent_id: String,
        /// The ask's answer: the ids to poll.
        request: crate::types::AgentAskResponse,
    },
    /// A question asked of the assistant: wait again with
    /// [`Assistant::wait`](crate::api::Assistant::wait).
    #[cfg(feature = "ai")]
    AssistantQuestion(crate::types::AssistantAskResponse),
    /// A report job: wait again with [`Audit::wait`](crate::api::Audit::wait) on the
    /// `AuditJob { id, kind, format }` these make.
    #[cfg(feature = "audit")]
    #[non_exhaustive]
    AuditJob {
        /// The job's id (also its report's).
        id: String,
        /// The report kind.
        kind: crate::types::AuditReportKind,
        /// The report format asked for.
        format: crate::types::AuditFormat,
    },
}

impl fmt::Display for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "ai")]
            Started::AgentQuestion { agent_id, request } => {
                write!(f, "request {} of agent {agent_id}", request.request_id)
            }
            #[cfg(feature = "ai")]
            Started::AssistantQuestion(execution) => {
                write!(f, "assistant execution {}", execution.execution_id)
            }
            #[cfg(feature = "audit")]
            Started::AuditJob { id, kind, .. } => write!(f, "{kind} report job {id}"),
            // Without the areas that wait, nothing can be started.
            #[cfg(not(any(feature = "ai", feature = "audit")))]
            _ => match *self {},
        }
    }
}

impl<E> WaitError<E> {
    /// What the call had started before it waited (see [`Started`]).
    pub fn started(&self) -> Option<&Started> {
        match self {
            WaitError::Failed { started, .. } | WaitError::TimedOut { started, .. } => {
                started.as_deref()
            }
        }
    }

    /// The same error, saying that the call had started `what` before it waited.
    #[cfg(any(feature = "ai", feature = "audit"))]
    pub(crate) fn after_starting(mut self, what: Started) -> Self {
        match &mut self {
            WaitError::Failed { started, .. } | WaitError::TimedOut { started, .. } => {
                *started = Some(Box::new(what));
            }
        }
        self
    }

    /// The error of a call that failed before it could wait: nothing was started.
    pub(crate) fn before_waiting(error: E) -> Self {
        WaitError::Failed {
            error,
            polls: 0,
            waited: Duration::ZERO,
            started: None,
        }
    }

    /// How many polls were made.
    pub fn polls(&self) -> u32 {
        match self {
            WaitError::Failed { polls, .. } | WaitError::TimedOut { polls, .. } => *polls,
        }
    }

    /// How long the waiter waited.
    pub fn waited(&self) -> Duration {
        match self {
            WaitError::Failed { waited, .. } | WaitError::TimedOut { waited, .. } => *waited,
        }
    }
}

impl<E: fmt::Display> fmt::Display for WaitError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::Failed {
                error,
                polls,
                waited,
                started,
            } => {
                match polls {
                    // What failed was the start (or the client), not a poll.
                    0 => write!(f, "failed before the first poll: {error}")?,
                    polls => write!(
                        f,
                        "failed after {} in {}: {error}",
                        Polls(*polls),
                        HumanDuration(*waited)
                    )?,
                }
                match started {
                    Some(started) => write!(f, " (after starting {started})"),
                    None => Ok(()),
                }
            }
            WaitError::TimedOut {
                polls,
                waited,
                started,
            } => {
                write!(
                    f,
                    "timed out after {} in {}",
                    Polls(*polls),
                    HumanDuration(*waited)
                )?;
                match started {
                    Some(started) => write!(
                        f,
                        "; {started} may still finish: wait for it again rather than start it again"
                    ),
                    None => Ok(()),
                }
            }
        }
    }
}

/// `1 poll`, `3 polls`.
struct Polls(u32);

impl fmt::Display for Polls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("1 poll"),
            n => write!(f, "{n} polls"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for WaitError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // `Display` already says what the error says: a chain continues with its cause.
            WaitError::Failed { error, .. } => error.source(),
            WaitError::TimedOut { .. } => None,
        }
    }
}

/// An error that may carry the server's answer: what [`WaitError::status`],
/// [`WaitError::code`] and [`WaitError::api_error`] reach through.
pub trait ServerAnswer {
    /// The HTTP status of the server's answer, when there was one.
    fn status(&self) -> Option<u16>;
    /// The server's error code, when there was one.
    fn code(&self) -> Option<&str>;
    /// The server's answer, when the error was built from one.
    fn api_error(&self) -> Option<&ApiError>;
}

impl ServerAnswer for crate::Error {
    fn status(&self) -> Option<u16> {
        crate::Error::status(self)
    }

    fn code(&self) -> Option<&str> {
        crate::Error::code(self)
    }

    fn api_error(&self) -> Option<&ApiError> {
        crate::Error::api_error(self)
    }
}

impl<E: ServerAnswer> WaitError<E> {
    /// The HTTP status of the failure's server answer (none for a timeout).
    pub fn status(&self) -> Option<u16> {
        match self {
            WaitError::Failed { error, .. } => error.status(),
            WaitError::TimedOut { .. } => None,
        }
    }

    /// The server's error code of the failure (none for a timeout).
    pub fn code(&self) -> Option<&str> {
        match self {
            WaitError::Failed { error, .. } => error.code(),
            WaitError::TimedOut { .. } => None,
        }
    }

    /// The server's answer that failed the wait (a quota, a 500, a job the platform no
    /// longer knows), with its status, code, messages, `Retry-After` and request id; none for
    /// a timeout or a failure without an answer. One call instead of a match through
    /// [`WaitError::Failed`] and the error inside it.
    ///
    /// ```no_run
    /// # use pubapi_sdk_ext::ai::AiWait;
    /// # async fn run(client: pubapi_sdk_ext::Client) {
    /// if let Err(e) = client.agents().ask_and_wait("agent-1", "Summarise Q3", AiWait::default()).await {
    ///     if let Some(answer) = e.api_error() {
    ///         eprintln!("{} {:?}", answer.status(), answer.request_id());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            WaitError::Failed { error, .. } => error.api_error(),
            WaitError::TimedOut { .. } => None,
        }
    }
}

/// Polls `poll` until it returns [`Verdict::Done`] or [`Verdict::Failed`], or the deadline.
///
/// ```
/// use pubapi_sdk_ext::waiter::{wait, Verdict, WaitConfig};
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let mut n = 0;
/// let config = WaitConfig::new(Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(60));
/// let result: Result<u32, _> = wait::<_, (), _, _>(config, || {
///     n += 1;
///     let n = n;
///     async move { if n == 3 { Verdict::Done(n) } else { Verdict::Pending } }
/// })
/// .await;
/// assert_eq!(result.unwrap(), 3);
/// # });
/// ```
pub async fn wait<T, E, F, Fut>(config: WaitConfig, mut poll: F) -> Result<T, WaitError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Verdict<T, E>>,
{
    let started = Instant::now();
    // `Duration::MAX` ("no deadline") is further than an instant reaches.
    let deadline = started.checked_add(config.deadline);
    let mut interval = config.min_interval;
    let mut polls = 0;
    loop {
        polls += 1;
        match poll().await {
            Verdict::Done(value) => return Ok(value),
            Verdict::Failed(error) => {
                return Err(WaitError::Failed {
                    error,
                    polls,
                    waited: started.elapsed(),
                    started: None,
                });
            }
            Verdict::Pending => {}
        }
        // From the end of this poll, not its start: the request may have waited for the
        // pacer, so only the answer's arrival bounds when the server saw it.
        // An interval past what an instant reaches never comes: the wait ends there too.
        let next = match (Instant::now().checked_add(interval), deadline) {
            (Some(next), Some(deadline)) if next <= deadline => next,
            (Some(next), None) => next,
            _ => {
                return Err(WaitError::TimedOut {
                    polls,
                    waited: started.elapsed(),
                    started: None,
                });
            }
        };
        tokio::time::sleep_until(next).await;
        interval = config.next_interval(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_failed_wait_says_its_cause_once_and_reaches_its_status_and_code() {
        let body = bytes::Bytes::from_static(
            br#"{"Errors":[{"code":"JOB_NOT_FOUND","description":"no job 7"}]}"#,
        );
        let error = crate::Error::from_response(
            crate::error::ErrorFormat::General,
            crate::error::Area::Audit,
            404,
            &http::HeaderMap::new(),
            body,
            // No `Retry-After`: the time of the answer plays no part.
            std::time::SystemTime::UNIX_EPOCH,
        );
        let failed = WaitError::Failed {
            error,
            polls: 3,
            waited: Duration::from_secs(360),
            started: None,
        };
        assert_eq!(failed.status(), Some(404));
        assert_eq!(failed.code(), Some("JOB_NOT_FOUND"));
        let mut chain = failed.to_string();
        let mut next = std::error::Error::source(&failed);
        while let Some(e) = next {
            chain.push_str(&format!(" <- {e}"));
            next = e.source();
        }
        assert_eq!(chain.matches("no job 7").count(), 1, "{chain}");
        assert!(
            chain.starts_with("failed after 3 polls in 6m: not found"),
            "{chain}"
        );
        let timed_out: WaitError<crate::Error> = WaitError::TimedOut {
            polls: 2,
            waited: Duration::from_secs(60),
            started: None,
        };
        assert_eq!((timed_out.status(), timed_out.code()), (None, None));
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    async fn run(
        config: WaitConfig,
        verdicts: Vec<Verdict<&'static str, &'static str>>,
        poll_takes: Duration,
    ) -> (Result<&'static str, WaitError<&'static str>>, Vec<Duration>) {
        let start = Instant::now();
        let times = Arc::new(Mutex::new(Vec::new()));
        let verdicts = Arc::new(Mutex::new(verdicts.into_iter()));
        let result = wait(config, || {
            let times = times.clone();
            let verdicts = verdicts.clone();
            async move {
                times.lock().unwrap().push(start.elapsed());
                tokio::time::sleep(poll_takes).await;
                verdicts.lock().unwrap().next().unwrap_or(Verdict::Pending)
            }
        })
        .await;
        let times = times.lock().unwrap().clone();
        (result, times)
    }

    #[tokio::test(start_paused = true)]
    async fn each_poll_waits_its_growing_interval_after_the_last_answer() {
        let config = WaitConfig::new(secs(10), secs(20), secs(300));
        let verdicts = vec![
            Verdict::Pending,
            Verdict::Pending,
            Verdict::Pending,
            Verdict::Done("ok"),
        ];
        let (result, times) = run(config, verdicts, secs(3)).await;
        assert_eq!(result.unwrap(), "ok");
        // Each poll takes 3 s: the next starts 10, 15 and 20 s after its answer.
        assert_eq!(times, vec![secs(0), secs(13), secs(31), secs(54)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_and_intervals_of_duration_max_are_no_overflow() {
        let config = WaitConfig::new(secs(5), Duration::MAX, Duration::MAX);
        let verdicts = vec![Verdict::Pending, Verdict::Pending, Verdict::Done("ok")];
        let (result, times) = run(config, verdicts, secs(0)).await;
        assert_eq!(result.unwrap(), "ok");
        assert_eq!(
            times,
            vec![secs(0), secs(5), secs(12) + Duration::from_millis(500)]
        );
        // An interval no instant reaches ends the wait instead of overflowing.
        let config = WaitConfig::new(Duration::MAX, Duration::MAX, Duration::MAX);
        let (result, _) = run(config, vec![Verdict::Pending], secs(0)).await;
        assert!(matches!(result, Err(WaitError::TimedOut { polls: 1, .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn failure_reports_polls_and_time_waited() {
        let config = WaitConfig::new(secs(5), secs(5), secs(300));
        let (result, _) = run(
            config,
            vec![Verdict::Pending, Verdict::Failed("boom")],
            secs(0),
        )
        .await;
        match result {
            Err(WaitError::Failed {
                error,
                polls,
                waited,
                started: None,
            }) => {
                assert_eq!((error, polls, waited), ("boom", 2, secs(5)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_rather_than_poll_early_at_the_deadline() {
        let config = WaitConfig::new(secs(120), secs(120), secs(300));
        let (result, times) = run(config, vec![], secs(0)).await;
        assert_eq!(times, vec![secs(0), secs(120), secs(240)]);
        match result {
            Err(e @ WaitError::TimedOut { .. }) => {
                assert_eq!(e.polls(), 3);
                assert_eq!(e.waited(), secs(240));
                assert_eq!(e.to_string(), "timed out after 3 polls in 4m");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn floor_raises_every_interval() {
        let config = WaitConfig::new(secs(5), secs(30), secs(600)).with_floor(secs(120));
        assert_eq!(config.min_interval(), secs(120));
        assert_eq!(config.max_interval(), secs(120));
        assert_eq!(config.deadline(), secs(600));
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_future_cancels_the_wait() {
        let polls = Arc::new(Mutex::new(0));
        let counter = polls.clone();
        let config = WaitConfig::new(secs(10), secs(10), secs(1000));
        let waiting = wait::<(), (), _, _>(config, move || {
            *counter.lock().unwrap() += 1;
            async { Verdict::Pending }
        });
        let _ = tokio::time::timeout(secs(25), waiting).await;
        tokio::time::sleep(secs(100)).await;
        assert_eq!(*polls.lock().unwrap(), 3);
    }
}
