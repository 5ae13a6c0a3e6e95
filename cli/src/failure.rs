//! Why a command stopped, as an exit code scripts can use and a message a person can act on:
//! the SDK's error (with the server's code and message) and what to do next.

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::error::ForbiddenReason;
use pubapi_sdk_ext::fleet::FleetErrorKind;
use pubapi_sdk_ext::waiter::WaitError;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

/// The exit codes `pubapi --help` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Something else failed: a file, a listener.
    Failed = 1,
    /// A flag, a value or the configuration is wrong; nothing was sent.
    Usage = 2,
    /// The API refused the request.
    Api = 3,
    /// A rate limit or quota is exhausted.
    Quota = 4,
    /// The API could not be reached, or a wait timed out.
    Unreachable = 5,
    /// Ctrl-C.
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// A command's failure: how to exit, what happened, what to do.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What happened.
    pub message: String,
    /// What to do next, when there is something to say.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with `exit` and `message`, no hint.
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
            hint: None,
        }
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Usage, message)
    }

    /// Something else (a file, a listener) failed.
    pub fn failed(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Failed, message)
    }

    /// The same failure with a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// Ctrl-C.
    pub fn interrupted() -> Failure {
        Failure::new(Exit::Interrupted, "interrupted")
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

fn wait_time(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..=90 => format!("{secs} s"),
        91..=5400 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{:.1} h", secs as f64 / 3600.0),
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        let message = error.to_string();
        let (exit, hint): (Exit, Option<String>) = match &error {
            Error::InvalidInput(_) => (Exit::Usage, None),
            Error::Unauthorized(_) => (
                Exit::Api,
                Some(
                    "the token is invalid, revoked or expired (tokens stop working when their \
                     user changes the password): set a new PUBAPI_TOKEN or update the profile"
                        .into(),
                ),
            ),
            Error::Forbidden { reason, .. } => (
                Exit::Api,
                Some(match reason {
                    ForbiddenReason::MissingScope => {
                        "the token lacks the scope this needs: create a token with it".into()
                    }
                    ForbiddenReason::FeatureNotEnabled => {
                        "the feature is not enabled for this domain: ask its administrator".into()
                    }
                    ForbiddenReason::MayNotRunReports => {
                        "audit reports need an admin, or a power user allowed to run reports".into()
                    }
                    _ => {
                        "this user may not do this; --act-as (admin tokens) acts as another".into()
                    }
                }),
            ),
            Error::NotFound(_) => (
                Exit::Api,
                Some("check the id or path; the list commands show what exists".into()),
            ),
            Error::Throttled { retry_after, .. } => (
                Exit::Quota,
                Some(match retry_after {
                    Some(after) => format!("try again in {}", wait_time(*after)),
                    None => "try again in a minute".into(),
                }),
            ),
            Error::QuotaExhausted { resets_in, .. } => (
                Exit::Quota,
                Some(match resets_in {
                    Some(after) => format!(
                        "the budget frees up in {}; `pubapi quota` shows what is left",
                        wait_time(*after)
                    ),
                    None => "`pubapi quota` shows what is left".into(),
                }),
            ),
            Error::Transport(_) | Error::Timeout { .. } => (
                Exit::Unreachable,
                Some(
                    "check PUBAPI_DOMAIN (or PUBAPI_BASE_URL) and the network, then try again"
                        .into(),
                ),
            ),
            Error::Removed { .. } => (Exit::Api, None),
            Error::Checkpoint(e) if e.kind == FleetErrorKind::Corrupt => (
                Exit::Usage,
                Some(
                    "the checkpoint file holds something else than pubapi's checkpoints: \
                     restore it, or move it away to start again from --from"
                        .into(),
                ),
            ),
            Error::Checkpoint(_) => (Exit::Failed, None),
            _ => (Exit::Api, None),
        };
        Failure {
            exit,
            message,
            hint,
        }
    }
}

impl<E> From<WaitError<E>> for Failure
where
    E: Into<Failure> + fmt::Display,
{
    fn from(error: WaitError<E>) -> Failure {
        match error {
            WaitError::Failed { error, .. } => error.into(),
            WaitError::TimedOut { polls, waited } => Failure::new(
                Exit::Unreachable,
                format!("no answer after {polls} polls in {}", wait_time(waited)),
            ),
            _ => Failure::new(Exit::Api, "the wait stopped"),
        }
    }
}

impl From<pubapi_sdk_ext::ai::AskError> for Failure {
    fn from(error: pubapi_sdk_ext::ai::AskError) -> Failure {
        match error {
            pubapi_sdk_ext::ai::AskError::Api(error) => error.into(),
            other => Failure::new(Exit::Api, other.to_string()),
        }
    }
}
