//! Why a command stopped, as an exit code scripts can use and a message a person can act on:
//! the SDK's error (with the server's code and message) and what to do next.

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::error::{ForbiddenReason, InputError};
use pubapi_sdk_ext::fleet::{FleetError, FleetErrorKind};
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
    /// `audit export` stopped before the daily budget would run out: the next run resumes.
    Budget = 6,
    /// Ctrl-C.
    Interrupted = 130,
    /// Whoever read stdout stopped reading (`pubapi … | head -1`): the command ends quietly,
    /// as done.
    ReaderGone = 0,
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
    /// The API refused this user (a 403 no scope, feature or report right explains): the
    /// hint depends on whether the command acts as another user ([`Failure::acting_as`]).
    pub user_refused: bool,
}

impl Failure {
    /// A failure with `exit` and `message`, no hint.
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
            hint: None,
            user_refused: false,
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

    /// A write to stdout failed: quietly done when its reader went away (EPIPE), else a
    /// failure naming stdout.
    pub fn stdout(error: &std::io::Error) -> Failure {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::new(Exit::ReaderGone, "stdout closed")
        } else {
            Failure::failed(format!("cannot write to stdout: {error}"))
        }
    }

    /// The same failure for a command acting as `who` (`--act-as` or a profile's `act_as`):
    /// a user refusal then says that user may lack the right or not exist, rather than
    /// suggesting `--act-as`.
    pub fn acting_as(mut self, who: Option<&str>) -> Failure {
        if let (true, Some(who)) = (self.user_refused, who) {
            self.hint = Some(format!(
                "the command acts as {who} (--act-as, or the profile's act_as): that user may \
                 not do this, or there is no such user in the domain; without it, the token's \
                 own user acts"
            ));
        }
        self
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

/// A duration as a person reads it: `3h 21m 47s`, `2m`, `45s`, `2d 4h` (at most the three
/// largest units, none that is zero); below a second, `0s`.
pub fn human(duration: Duration) -> String {
    let secs = duration.as_secs();
    let units = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
    ];
    let first = units.iter().position(|(n, _)| *n > 0);
    let Some(first) = first else {
        return "0s".into();
    };
    units[first..]
        .iter()
        .take(3)
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The SDK's message with its durations in seconds (`resets in 12107s`, `retry after 90s`)
/// as a person reads them.
fn readable(message: String, error: &Error) -> String {
    let seconds = |prefix: &str, duration: &Duration| {
        (
            format!("{prefix} {}s", duration.as_secs()),
            format!("{prefix} {}", human(*duration)),
        )
    };
    let replaced = match error {
        Error::QuotaExhausted {
            resets_in: Some(after),
            ..
        } => Some(seconds("resets in", after)),
        Error::Throttled {
            retry_after: Some(after),
            ..
        } => Some(seconds("retry after", after)),
        _ => None,
    };
    match replaced {
        Some((sdk, person)) => message.replacen(&sdk, &person, 1),
        None => message,
    }
}

/// A checkpoint store's error in a CLI user's words (the SDK's say "fleet store").
pub fn checkpoint_words(error: &FleetError) -> String {
    match error.kind {
        FleetErrorKind::Corrupt => format!("the checkpoint file is damaged: {}", error.message),
        FleetErrorKind::LeaseLost => format!(
            "another process took the checkpoint file over: {}",
            error.message
        ),
        _ => format!("cannot use the checkpoint file: {}", error.message),
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        let message = match &error {
            Error::Checkpoint(e) => checkpoint_words(e),
            // What is wrong with the input, not only which input (a path value's problem).
            Error::InvalidInput(input) => match std::error::Error::source(input) {
                Some(why) => format!("{input}: {why}; nothing was sent"),
                None => error.to_string(),
            },
            _ => readable(error.to_string(), &error),
        };
        let user_refused = matches!(
            &error,
            Error::Forbidden {
                reason: ForbiddenReason::Other,
                ..
            }
        );
        let (exit, hint) = exit_and_hint(&error);
        Failure {
            exit,
            message,
            hint,
            user_refused,
        }
    }
}

/// The exit code an SDK error ends the command with, and what the person can do about it.
fn exit_and_hint(error: &Error) -> (Exit, Option<String>) {
    match error {
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
                _ => "this user may not do this; --act-as (admin tokens) acts as another".into(),
            }),
        ),
        Error::NotFound(_) => (
            Exit::Api,
            Some("check the id or path; the list commands show what exists".into()),
        ),
        Error::Throttled { retry_after, .. } => (
            Exit::Quota,
            Some(match retry_after {
                Some(after) => format!("try again in {}", human(*after)),
                None => "try again in a minute".into(),
            }),
        ),
        Error::QuotaExhausted { resets_in, .. } => (
            Exit::Quota,
            Some(match resets_in {
                Some(after) => format!(
                    "the budget frees up in {}; `pubapi quota` shows what is left",
                    human(*after)
                ),
                None => "`pubapi quota` shows what is left".into(),
            }),
        ),
        Error::Transport(_) | Error::Timeout { .. } => (
            Exit::Unreachable,
            Some("check PUBAPI_DOMAIN (or PUBAPI_BASE_URL) and the network, then try again".into()),
        ),
        Error::Removed { .. } => (Exit::Api, None),
        // The call was sent once; its retry found no token (a renewal that failed), or a
        // token paced by another client with other limits.
        Error::RetryNotSent { error, .. } => (
            Exit::Api,
            match **error {
                InputError::Token(_) => Some(
                    "the token could not be renewed for a retry: check PUBAPI_TOKEN or the \
                         profile's sign-in, then try again"
                        .into(),
                ),
                _ => None,
            },
        ),
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
    }
}

impl<E> From<WaitError<E>> for Failure
where
    E: Into<Failure> + fmt::Display,
{
    fn from(error: WaitError<E>) -> Failure {
        match error {
            WaitError::Failed { error, started, .. } => {
                let mut failure: Failure = error.into();
                // What was asked or made, and paid for, before the poll failed.
                if let Some(started) = started {
                    failure
                        .message
                        .push_str(&format!(" (after starting {started})"));
                }
                failure
            }
            WaitError::TimedOut {
                polls,
                waited,
                started,
                ..
            } => {
                let mut message = format!("no answer after {polls} polls in {}", human(waited));
                // The ids of what is still running: the way to its answer, already paid for.
                if let Some(started) = started {
                    message.push_str(&format!("; {started} may still finish"));
                }
                Failure::new(Exit::Unreachable, message)
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_that_could_not_get_a_token_is_an_api_failure_with_the_token_hint() {
        let request_id = "0190f0c2-7d3a-7b4e-8f00-000000000001".parse().unwrap();
        let failure = Failure::from(Error::RetryNotSent {
            error: Box::new(InputError::Token(pubapi_sdk_ext::token::TokenError::Empty)),
            request_id,
        });
        assert_eq!(failure.exit as u8, Exit::Api as u8);
        assert!(
            failure
                .message
                .contains("0190f0c2-7d3a-7b4e-8f00-000000000001"),
            "{failure}"
        );
        let hint = failure.hint.expect("a hint");
        assert!(hint.contains("PUBAPI_TOKEN"), "{hint}");
    }

    #[test]
    fn durations_read_as_hours_minutes_and_seconds() {
        let secs = Duration::from_secs;
        for (duration, shown) in [
            (secs(12_107), "3h 21m 47s"),
            (secs(120), "2m"),
            (secs(45), "45s"),
            (secs(3600 + 5), "1h 5s"),
            (secs(2 * 86_400 + 4 * 3600 + 59), "2d 4h"),
            (Duration::from_millis(300), "0s"),
        ] {
            assert_eq!(human(duration), shown, "{duration:?}");
        }
    }
}
