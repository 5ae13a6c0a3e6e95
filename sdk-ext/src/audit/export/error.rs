//! Why an export could not run ([`ExportError`]) or a day failed ([`DayError`]).

use super::ExportDay;
use crate::audit::{CsvError, ReadError};
use crate::error::{ApiError, Error};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Why an export could not run, or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// A required builder setting was not given (its name).
    Missing(&'static str),
    /// The filters do not make a valid request.
    InvalidRequest(Error),
    /// Another run holds the lock on the state file.
    Locked {
        /// The lock file.
        lock: PathBuf,
    },
    /// [`Start::SinceLast`](super::Start::SinceLast) and there is no state file.
    NoState {
        /// The state file.
        path: PathBuf,
    },
    /// The state file is empty.
    StateEmpty {
        /// The state file.
        path: PathBuf,
    },
    /// The state file is not an export state.
    StateCorrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The state file belongs to another export (kind, format, filters or start day).
    StateMismatch {
        /// The state file.
        path: PathBuf,
        /// `kind`, `format`, `filters` or `since`.
        field: &'static str,
        /// The value in the file.
        in_state: String,
        /// The value asked for.
        asked: String,
    },
    /// The out folder holds the days of an export of the same kind and format with other
    /// filters: this export would take them for its own. Give each set of filters a folder.
    OutDirClaimed {
        /// The folder's claim file, which names the filters it was claimed for.
        claim: PathBuf,
        /// The filters of the claim, as JSON.
        claimed: String,
        /// The filters of this export, as JSON.
        asked: String,
    },
    /// The out folder's claim file is not a claim (see [`ExportError::OutDirClaimed`]).
    ClaimCorrupt {
        /// The claim file.
        claim: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The out folder, the state file, the lock or a day file could not be read or written.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// Asking the server for its time failed.
    ServerTime(Error),
    /// The server's answer had no usable `Date` header, so which days have ended is unknown.
    NoServerDate,
    /// A day failed; no day file of it was written and the next run does it again (from the
    /// same report, when its job was made, and an NDJSON report from where this run
    /// stopped).
    Day {
        /// The day.
        day: ExportDay,
        /// Days written by this run before it.
        written: usize,
        /// What went wrong.
        error: DayError,
    },
}

/// Why one day failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum DayError {
    /// Creating the job, polling it, or starting the read failed.
    Api(Error),
    /// The job did not finish within the wait's deadline.
    TimedOut {
        /// Polls made.
        polls: u32,
        /// Time waited.
        waited: Duration,
    },
    /// The CSV download broke.
    Download(CsvError),
    /// Reading the JSON report's pages failed.
    Read(ReadError),
    /// Writing the day's temporary file failed.
    Write(std::io::Error),
    /// Recording the day's job in the state file failed.
    State {
        /// The state file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Missing(what) => write!(f, "the export needs its {what}"),
            ExportError::InvalidRequest(_) => f.write_str("the export's request is invalid"),
            ExportError::Locked { lock } => write!(
                f,
                "another export is running with this state file (lock {})",
                lock.display()
            ),
            ExportError::NoState { path } => write!(
                f,
                "no state file {}: the first run needs a start day",
                path.display()
            ),
            ExportError::StateEmpty { path } => {
                write!(f, "the state file {} is empty", path.display())
            }
            ExportError::StateCorrupt { path, problem } => write!(
                f,
                "the state file {} is not an audit export state: {problem}",
                path.display()
            ),
            ExportError::StateMismatch {
                path,
                field,
                in_state,
                asked,
            } => write!(
                f,
                "the state file {} is for {field} {in_state}, not {asked}",
                path.display()
            ),
            ExportError::OutDirClaimed {
                claim,
                claimed,
                asked,
            } => write!(
                f,
                "the out folder holds the days of an export with filters {claimed} ({}), \
                 not {asked}: give each set of filters its own folder",
                claim.display()
            ),
            ExportError::ClaimCorrupt { claim, problem } => write!(
                f,
                "the out folder's claim {} is not an export's claim: {problem}",
                claim.display()
            ),
            ExportError::Io { path, .. } => write!(f, "cannot use {}", path.display()),
            ExportError::ServerTime(_) => f.write_str("cannot learn the server's time"),
            ExportError::NoServerDate => {
                f.write_str("the server's answer has no Date: which days have ended is unknown")
            }
            ExportError::Day { day, .. } => {
                write!(
                    f,
                    "the export of {day} failed; its day file was not written"
                )
            }
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::InvalidRequest(e) | ExportError::ServerTime(e) => Some(e),
            ExportError::Io { error, .. } => Some(error),
            ExportError::Day { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for DayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DayError::Api(e) => write!(f, "{e}"),
            DayError::TimedOut { polls, waited } => write!(
                f,
                "the job did not finish in {} ({polls} polls)",
                crate::time::HumanDuration(*waited)
            ),
            DayError::Download(e) => write!(f, "{e}"),
            DayError::Read(e) => write!(f, "{e}"),
            DayError::Write(e) => write!(f, "cannot write the day's file: {e}"),
            DayError::State { path, error } => write!(
                f,
                "cannot record the day's job in {}: {error}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for DayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DayError::Api(e) => e.source(),
            DayError::TimedOut { .. } => None,
            DayError::Download(e) => e.source(),
            DayError::Read(e) => Some(&e.error),
            DayError::Write(e) | DayError::State { error: e, .. } => Some(e),
        }
    }
}

impl ExportError {
    /// The server's answer behind the error: a refused request, the server time's call, or
    /// a day's job, poll or read (see [`DayError::api_error`]); none for the export's own
    /// files and settings.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            ExportError::InvalidRequest(e) | ExportError::ServerTime(e) => e.api_error(),
            ExportError::Day { error, .. } => error.api_error(),
            _ => None,
        }
    }
}

impl DayError {
    /// The server's answer that failed the day: the job's creation or poll, the CSV download
    /// or the JSON report's read; none for a timeout or a file that could not be written.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            DayError::Api(e) => e.api_error(),
            DayError::Download(e) => e.api_error(),
            DayError::Read(e) => e.api_error(),
            DayError::TimedOut { .. } | DayError::Write(_) | DayError::State { .. } => None,
        }
    }

    /// Whether the report read failed because the platform no longer has it (404).
    pub(super) fn report_gone(&self) -> bool {
        matches!(
            self,
            DayError::Api(Error::NotFound(_))
                | DayError::Download(CsvError::Api(Error::NotFound(_)))
                | DayError::Read(ReadError {
                    error: Error::NotFound(_),
                    ..
                })
        )
    }

    /// The platform's "quota used up" behind this error, if that is what it is.
    pub(super) fn quota_exhausted(&self) -> Option<Option<Duration>> {
        let error = match self {
            DayError::Api(e) => e,
            DayError::Download(CsvError::Api(e) | CsvError::Broken { error: e, .. }) => e,
            DayError::Read(e) => &e.error,
            _ => return None,
        };
        match error {
            Error::QuotaExhausted { resets_in, .. } => Some(*resets_in),
            _ => None,
        }
    }
}
