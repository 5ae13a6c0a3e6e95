//! Audit exports that run for years: one file per whole UTC day, the days done kept in a
//! state file, resumable, within the daily budget.
//!
//! A [`DailyExport`] writes `<kind>-YYYY-MM-DD.<csv|ndjson>` into a folder for every UTC day
//! from its start up to the last day that has ended by the **server's** clock (the `Date` of
//! its answer to one `GET /v1/whoami` at the start of each run; that call also tells the
//! gateway's counters). Its state file remembers the first day not yet written, so a run
//! from cron each night writes the days since the last one: never a day twice, never a gap.
//!
//! - **A day at a time, whole or not at all**: a day's report is created, waited for and
//!   downloaded into a temporary file beside its target (`.<name>.<job>.part`), synced, and renamed
//!   into place; only then does the state move past the day (written to a temporary file and
//!   renamed too). A day that fails leaves no day file behind and is done again by the next
//!   run. An NDJSON day whose read stops part way (the quota used up, a page that failed)
//!   keeps what it read: the `.part` file is synced and how far it got is recorded with the
//!   day's job, so the next run reads on from there ([`DailyExportBuilder::page_size`]
//!   events a call). A day too big for one day's budget is read over as many runs as it
//!   takes.
//! - **One report per day**: the day's job is recorded in the state file before it is
//!   waited for, and stays there until the day is written. A run that times out waiting
//!   (a report slower than [`DailyExportBuilder::wait`] allows), stops for the budget, is
//!   killed, or fails to download leaves it to the next run, which reads that report
//!   instead of making another; a job the platform no longer knows (404), or one waited
//!   for by three runs already (a failed job still reads as running; a run whose read of
//!   the report got further starts the count again), is made again, and so is one whose
//!   report is gone when it is read.
//! - **The budget**: before each day the run compares what the day needs
//!   ([`DailyExportBuilder::calls_per_day`]: create, polls, read, delete) with what is left
//!   today (the lower of the client's own count and the gateway's counters). When it would
//!   not fit, or when the platform answers that the quota is used up in the middle of a day,
//!   the run stops cleanly and says so in [`ExportSummary::stopped`]: the next run resumes
//!   at that day.
//! - **One folder, one set of filters**: the days of a kind and format are named by their
//!   date only, so the first run in a folder claims the folder for its filters
//!   (`.pubapi-export-<kind>-<csv|ndjson>.json`), and an export of the same kind and format
//!   with other filters is refused there ([`ExportError::OutDirClaimed`]) before any call:
//!   it would take the other export's days for its own. Exports with the same filters may
//!   share a folder (their days are the same).
//! - **One run at a time**: a run holds an OS lock on `<state>.lock` (free again when the
//!   process ends, however it ends); a second run fails at once with
//!   [`ExportError::Locked`].
//! - **The state file is trusted or refused**: an empty or unreadable one is an error
//!   ([`ExportError::StateEmpty`], [`ExportError::StateCorrupt`]), never a reason to start
//!   over. [`Start::Since`] with an existing state file continues it when the file started
//!   on the same day for the same kind, format and filters, and is refused
//!   ([`ExportError::StateMismatch`]) otherwise; [`Start::SinceLast`] needs the file.
//!
//! Day boundaries: every kind of the 14 is exported by day. A day `D` is asked for as
//! `date_start = DT00:00:00Z`, `date_end = (D+1)T00:00:00Z`. The reference does not say
//! whether `date_end` is inclusive, so an event at exactly midnight may be in two files; none
//! is lost. The kinds whose API ignores the time of day (files, permissions, users, groups,
//! workgroup-settings) are asked for the same-day range `date_start = date_end = D`: a
//! plain-date `date_end` is the last day covered, so that range reads exactly day `D`.
//!
//! ```no_run
//! use pubapi_sdk::types::AuditReportKind;
//! use pubapi_sdk_ext::audit::{DailyExport, ExportFormat, Start};
//!
//! # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let export = DailyExport::builder(&client, AuditReportKind::Logins)
//!     .start(Start::SinceLast)
//!     .state_file("/var/lib/audit/logins.state")
//!     .out_dir("/var/lib/audit/logins")
//!     .format(ExportFormat::Csv)
//!     .build()?;
//! let summary = export.run().await?;
//! if let Some(stop) = &summary.stopped {
//!     eprintln!("{stop}");
//! }
//! # Ok(()) }
//! ```

use super::{
    AuditJob, AuditRequest, AuditWait, CsvError, DEFAULT_PAGE_SIZE, ReadError, ReportLocation,
    ReportRead,
};
use crate::Client;
use crate::error::{ApiError, Error};
use crate::limits::LimitClass;
use crate::prelude::*;
use crate::waiter::WaitError;
use futures_util::StreamExt;
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use serde_json::{Map, Value, json};
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const DAY_MS: i64 = 86_400_000;

/// The marker and version of the state file's format.
const STATE_VERSION: u32 = 1;

/// The version of the out folder's claim file's format.
const CLAIM_VERSION: u32 = 1;

/// One UTC calendar day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExportDay {
    /// Days since 1970-01-01.
    days: i64,
}

impl ExportDay {
    /// The day `YYYY-MM-DD`; `None` when `text` is not a real date in that form.
    pub fn parse(text: &str) -> Option<ExportDay> {
        // Checked by the SDK's date parser first: `YYYY-MM-DD`, a real date, no time.
        super::AuditDate::parse(text).filter(|d| !d.has_time())?;
        let (y, m, d) = (
            text[0..4].parse::<i64>().ok()?,
            text[5..7].parse::<u32>().ok()?,
            text[8..10].parse::<u32>().ok()?,
        );
        Some(ExportDay {
            days: days_from_civil(y, m, d),
        })
    }

    /// The UTC day that contains `epoch_ms`.
    pub fn containing(epoch_ms: i64) -> ExportDay {
        ExportDay {
            days: epoch_ms.div_euclid(DAY_MS),
        }
    }

    /// The day after.
    pub fn next(self) -> ExportDay {
        ExportDay {
            days: self.days + 1,
        }
    }

    /// Its first instant, epoch milliseconds.
    pub fn start_ms(self) -> i64 {
        self.days * DAY_MS
    }

    /// The instant it ends (the next day's midnight), epoch milliseconds.
    pub fn end_ms(self) -> i64 {
        self.start_ms() + DAY_MS
    }
}

impl fmt::Display for ExportDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days(self.days);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// The format of the files an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// The platform's CSV as it is sent (title row, header, rows): `.csv`.
    Csv,
    /// A JSON report read page by page, one event a line: `.ndjson`.
    Ndjson,
}

impl ExportFormat {
    /// The file extension (`csv`, `ndjson`), also the name in the state file.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Ndjson => "ndjson",
        }
    }

    /// The format asked of the API.
    pub fn api_format(self) -> AuditFormat {
        match self {
            ExportFormat::Csv => AuditFormat::Csv,
            ExportFormat::Ndjson => AuditFormat::Json,
        }
    }

    fn from_name(name: &str) -> Option<ExportFormat> {
        match name {
            "csv" => Some(ExportFormat::Csv),
            "ndjson" => Some(ExportFormat::Ndjson),
            _ => None,
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// Where an export starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// From this day: a new state file, or one that started on the same day for the same
    /// kind, format and filters (then the same as [`Start::SinceLast`]).
    Since(ExportDay),
    /// From the first day the state file does not have; the file must exist.
    SinceLast,
}

/// Builds a [`DailyExport`]: from [`DailyExport::builder`].
#[derive(Debug, Clone)]
pub struct DailyExportBuilder {
    client: Client,
    kind: AuditReportKind,
    start: Option<Start>,
    state_file: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    format: ExportFormat,
    filters: Map<String, Value>,
    wait: AuditWait,
    calls_per_day: u32,
    page_size: u64,
    keep_reports: bool,
    max_days: Option<u32>,
}

impl DailyExportBuilder {
    /// Where to start (required).
    pub fn start(mut self, start: Start) -> Self {
        self.start = Some(start);
        self
    }

    /// The state file (required): which days are done. Its lock is `<file>.lock`.
    pub fn state_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.state_file = Some(path.into());
        self
    }

    /// The folder the day files go to (required; it must exist).
    pub fn out_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(path.into());
        self
    }

    /// The files' format (default [`ExportFormat::Csv`]).
    pub fn format(mut self, format: ExportFormat) -> Self {
        self.format = format;
        self
    }

    /// The kind's filters, as the fields of its request body besides `format`, `date_start`
    /// and `date_end` (for logins, `{"events": ["failed_attempts"]}`). They are typed and
    /// checked by the SDK at [`build`](Self::build), and kept in the state file.
    pub fn filters(mut self, filters: Map<String, Value>) -> Self {
        self.filters = filters;
        self
    }

    /// How to wait for each day's job (default [`AuditWait::default`]).
    pub fn wait(mut self, wait: AuditWait) -> Self {
        self.wait = wait;
        self
    }

    /// The calls one day is expected to take, compared with the budget left before the day
    /// starts (default [`DailyExport::DEFAULT_CALLS_PER_DAY`]: the job's creation, 3 polls,
    /// one read and the report's deletion). Raise it for jobs that take long or JSON
    /// reports of many pages.
    pub fn calls_per_day(mut self, calls: u32) -> Self {
        self.calls_per_day = calls.max(1);
        self
    }

    /// Events per call when an NDJSON day is read (default [`DEFAULT_PAGE_SIZE`], the SDK's
    /// page for reports, whose pages are held in memory one at a time; at least 1). A CSV
    /// day is one download whatever this says. Smaller pages take more calls a day: raise
    /// [`calls_per_day`](Self::calls_per_day) to match.
    pub fn page_size(mut self, events: u64) -> Self {
        self.page_size = events.max(1);
        self
    }

    /// Keep each day's report on the platform after its file is written (default: delete
    /// it, one call).
    pub fn keep_reports(mut self, keep: bool) -> Self {
        self.keep_reports = keep;
        self
    }

    /// Write at most this many days in one run (default: every whole day).
    pub fn max_days(mut self, days: u32) -> Self {
        self.max_days = Some(days);
        self
    }

    /// Checks the settings and the request they describe; nothing is sent or written.
    ///
    /// # Errors
    /// [`ExportError::Missing`] for a required setting not given,
    /// [`ExportError::InvalidRequest`] when the filters do not make a valid request, or the
    /// page size is above what the platform takes.
    pub fn build(self) -> Result<DailyExport, ExportError> {
        let start = self.start.ok_or(ExportError::Missing("start"))?;
        let state_file = self.state_file.ok_or(ExportError::Missing("state_file"))?;
        let out_dir = self.out_dir.ok_or(ExportError::Missing("out_dir"))?;
        let export = DailyExport {
            client: self.client,
            kind: self.kind,
            start,
            state_file,
            out_dir,
            format: self.format,
            filters: self.filters,
            wait: self.wait,
            calls_per_day: self.calls_per_day,
            page_size: self.page_size,
            keep_reports: self.keep_reports,
            max_days: self.max_days,
        };
        let read = ReportRead {
            page_size: export.page_size,
            offset: 0,
        };
        read.check().map_err(ExportError::InvalidRequest)?;
        export.request(ExportDay { days: 20_000 })?;
        Ok(export)
    }
}

/// A daily audit export: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct DailyExport {
    client: Client,
    kind: AuditReportKind,
    start: Start,
    state_file: PathBuf,
    out_dir: PathBuf,
    format: ExportFormat,
    filters: Map<String, Value>,
    wait: AuditWait,
    calls_per_day: u32,
    page_size: u64,
    keep_reports: bool,
    max_days: Option<u32>,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// The days written, in order.
    pub written: Vec<WrittenDay>,
    /// Days whose file was already in the folder (a run that ended between the rename and
    /// the state's update): the state moved past them without fetching them again.
    pub already_there: Vec<ExportDay>,
    /// Why the run stopped before the last whole day, if it did for the budget.
    pub stopped: Option<BudgetStop>,
    /// The first day not yet written: where the next run starts.
    pub next_day: ExportDay,
    /// The server's day when the run started (the last whole day is the one before);
    /// `None` when the budget was used up before the server could be asked.
    pub server_today: Option<ExportDay>,
    /// Reports that could not be deleted after their file was written (they stay on the
    /// platform until deleted).
    pub reports_left: Vec<ReportLocation>,
}

/// One day written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenDay {
    /// The day.
    pub day: ExportDay,
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The run stopped before `day` for the daily budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetStop {
    /// The day not started (or started and given up: no day file of it was written; its job,
    /// if one was made, is read by the next run, which reads an NDJSON report on from where
    /// this run stopped).
    pub day: ExportDay,
    /// The calls a day is expected to take.
    pub needed: u32,
    /// The calls left today when the run stopped (0 when the platform answered that the
    /// quota is used up).
    pub left: u32,
    /// When the budget frees up, when known.
    pub resets_in: Option<Duration>,
}

impl fmt::Display for BudgetStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stopped before {} for the daily budget: a day needs about {} calls and {} are left",
            self.day, self.needed, self.left
        )
    }
}

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
    /// [`Start::SinceLast`] and there is no state file.
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
    fn report_gone(&self) -> bool {
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
    fn quota_exhausted(&self) -> Option<Option<Duration>> {
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

/// The state file's content.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct State {
    /// Marks the file as an export state, and its format's version.
    pubapi_audit_export: u32,
    kind: String,
    format: String,
    filters: Map<String, Value>,
    /// The first day of the export.
    since: String,
    /// The first day not yet written.
    next_day: String,
    /// The report job made for `next_day` and not yet written: a later run waits for it
    /// (and reads it) instead of making another, so a report slower than one run's wait is
    /// not made again and again, nor left behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    job: Option<PendingJob>,
}

/// The out folder's claim file: which filters its days of one kind and format are made with.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Claim {
    /// Marks the file as a claim, and its format's version.
    pubapi_audit_export_folder: u32,
    kind: String,
    format: String,
    filters: Map<String, Value>,
}

/// A day's report job, recorded before waiting for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct PendingJob {
    id: String,
    /// The runs that have waited for it (since its report's read last got further): after
    /// [`PendingJob::MAX_RUNS`] a new job is made (a job the platform failed still reads as
    /// running).
    runs: u32,
    /// How far a run that stopped part way through reading the job's NDJSON report got: the
    /// next run reads on from there, into the day's `.part` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    read: Option<ReadSoFar>,
}

/// What an NDJSON day's `.part` file holds: the report's first `events` events, in its
/// first `bytes` bytes (synced before this was recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct ReadSoFar {
    events: u64,
    bytes: u64,
}

impl PendingJob {
    const MAX_RUNS: u32 = 3;
}

/// What one day came to.
#[derive(Debug)]
enum Step {
    /// Written; the report when it could not be deleted.
    Written(WrittenDay, Option<ReportLocation>),
    /// Its file was already in the folder.
    AlreadyThere,
    /// Not done, for the budget.
    Stopped(BudgetStop),
}

/// The OS lock on `<state>.lock`, held while the value lives.
#[derive(Debug)]
struct Lock {
    file: Option<File>,
    path: PathBuf,
}

impl Drop for Lock {
    /// Removes the lock file while still holding it (a run that locks checks that the path
    /// still names the file it locked), so nothing is left beside the state file; where it
    /// cannot be removed it stays, empty of meaning.
    fn drop(&mut self) {
        if cfg!(unix) {
            let _ = std::fs::remove_file(&self.path);
        }
        drop(self.file.take());
    }
}

/// The largest state file read (its filters, a job and a read offset take a few KiB): a
/// larger one is refused as corrupt before it is read, before anything is sent.
const MAX_STATE_LEN: u64 = 1024 * 1024;

impl DailyExport {
    /// The calls a day is expected to take by default: create, 3 polls, read, delete.
    pub const DEFAULT_CALLS_PER_DAY: u32 = 6;

    /// An export of `kind` through `client`: set where it starts, its state file and its
    /// folder, then [`build`](DailyExportBuilder::build).
    pub fn builder(client: &Client, kind: AuditReportKind) -> DailyExportBuilder {
        DailyExportBuilder {
            client: client.clone(),
            kind,
            start: None,
            state_file: None,
            out_dir: None,
            format: ExportFormat::Csv,
            filters: Map::new(),
            wait: AuditWait::default(),
            calls_per_day: Self::DEFAULT_CALLS_PER_DAY,
            page_size: DEFAULT_PAGE_SIZE,
            keep_reports: false,
            max_days: None,
        }
    }

    /// The file name of `day`: `<kind>-YYYY-MM-DD.<ext>`.
    pub fn file_name(&self, day: ExportDay) -> String {
        format!("{}-{day}.{}", self.kind, self.format.extension())
    }

    /// The lock file: `<state>.lock`.
    pub fn lock_path(&self) -> PathBuf {
        let mut path = self.state_file.clone().into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }

    /// Writes every whole day not yet written, in order, and returns what it did. A stop for
    /// the budget is a summary with [`ExportSummary::stopped`], not an error.
    ///
    /// # Errors
    /// See [`ExportError`]: the lock, the state file, the server's time, or a day that
    /// failed (the days before it are written and recorded).
    pub async fn run(&self) -> Result<ExportSummary, ExportError> {
        let _lock = self.lock()?;
        if !self.out_dir.is_dir() {
            return Err(ExportError::Io {
                path: self.out_dir.clone(),
                error: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the out folder does not exist",
                ),
            });
        }
        let (since, mut next, new, mut pending) = self.load_or_start()?;
        self.claim_out_dir().await?;
        let mut summary = ExportSummary {
            written: Vec::new(),
            already_there: Vec::new(),
            stopped: None,
            next_day: next,
            server_today: None,
            reports_left: Vec::new(),
        };
        let now_ms = match self.server_now().await {
            Ok(now_ms) => now_ms,
            Err(ExportError::ServerTime(Error::QuotaExhausted { resets_in, .. })) => {
                summary.stopped = Some(BudgetStop {
                    day: next,
                    needed: self.calls_per_day,
                    left: 0,
                    resets_in,
                });
                return Ok(summary);
            }
            Err(other) => return Err(other),
        };
        summary.server_today = Some(ExportDay::containing(now_ms));
        if new {
            // Written before any day, so that the next run can continue with `SinceLast`.
            self.save_state(&self.state_of(since, next))?;
        }
        let mut done = 0u32;
        while next.end_ms() <= now_ms && self.max_days.is_none_or(|max| done < max) {
            match self.step(since, next, pending.take()).await {
                Ok(Step::Written(day, left)) => {
                    summary.written.push(day);
                    summary.reports_left.extend(left);
                }
                Ok(Step::AlreadyThere) => summary.already_there.push(next),
                Ok(Step::Stopped(stop)) => {
                    summary.stopped = Some(stop);
                    break;
                }
                Err(error) => {
                    return Err(ExportError::Day {
                        day: next,
                        written: summary.written.len(),
                        error,
                    });
                }
            }
            next = next.next();
            // A day is recorded only once its file is in place: a run that ends between the
            // two finds the file next time (`Step::AlreadyThere`).
            self.save_state(&self.state_of(since, next))?;
            summary.next_day = next;
            done += 1;
        }
        Ok(summary)
    }

    /// One day: its file already there, or the budget checked and the day exported, or a
    /// stop for the budget (before the day, or when the platform says the quota is used up).
    async fn step(
        &self,
        since: ExportDay,
        day: ExportDay,
        pending: Option<PendingJob>,
    ) -> Result<Step, DayError> {
        let target = self.out_dir.join(self.file_name(day));
        if target.exists() {
            // Written by a run that ended before it deleted the report.
            if let Some(job) = &pending {
                self.forget(job).await;
            }
            // Only a whole day is renamed into place: the state missed the update.
            remove_parts_of(&target);
            return Ok(Step::AlreadyThere);
        }
        let stop = |left, resets_in| {
            Ok(Step::Stopped(BudgetStop {
                day,
                needed: self.calls_per_day,
                left,
                resets_in,
            }))
        };
        if let Some(left) = self.budget_left()
            && left < self.calls_per_day
        {
            return stop(left, None);
        }
        match self.export_day(since, day, &target, pending).await {
            Ok((bytes, left)) => Ok(Step::Written(
                WrittenDay {
                    day,
                    path: target,
                    bytes,
                },
                left,
            )),
            Err(error) => match error.quota_exhausted() {
                Some(resets_in) => stop(0, resets_in),
                None => Err(error),
            },
        }
    }

    /// The request for `day`: from its midnight to the next (UTC), or, for a kind whose API
    /// ignores the time of day, the same-day range `day` to `day` (a plain-date `date_end`
    /// is the last day covered).
    fn request(&self, day: ExportDay) -> Result<AuditRequest, ExportError> {
        let mut body = self.filters.clone();
        body.insert("format".into(), json!(self.format.api_format().to_string()));
        let (start, end) = if crate::audit_request::kind_ignores_time(self.kind) {
            (day.to_string(), day.to_string())
        } else {
            (
                format!("{day}T00:00:00Z"),
                format!("{}T00:00:00Z", day.next()),
            )
        };
        body.insert("date_start".into(), json!(start));
        body.insert("date_end".into(), json!(end));
        let request = AuditRequest::from_json(self.kind, Value::Object(body))
            .map_err(ExportError::InvalidRequest)?;
        request.validate().map_err(ExportError::InvalidRequest)?;
        Ok(request)
    }

    fn lock(&self) -> Result<Lock, ExportError> {
        let lock = self.lock_path();
        let io = |error| ExportError::Io {
            path: lock.clone(),
            error,
        };
        match crate::fleet::file::lock_at(&lock).map_err(io)? {
            Some(file) => Ok(Lock {
                file: Some(file),
                path: lock,
            }),
            None => Err(ExportError::Locked { lock }),
        }
    }

    /// The export's first day, the first day to write, and whether the state is new: from
    /// the state file, or a new state from the start day.
    fn load_or_start(
        &self,
    ) -> Result<(ExportDay, ExportDay, bool, Option<PendingJob>), ExportError> {
        let path = &self.state_file;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.len() > MAX_STATE_LEN
        {
            return Err(ExportError::StateCorrupt {
                path: path.clone(),
                problem: format!(
                    "it holds {} bytes, more than a state file ({MAX_STATE_LEN} at most)",
                    meta.len()
                ),
            });
        }
        let text = match std::fs::read(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(ExportError::Io {
                    path: path.clone(),
                    error,
                });
            }
        };
        let Some(text) = text else {
            return match self.start {
                Start::SinceLast => Err(ExportError::NoState { path: path.clone() }),
                // Written once the server has answered (see `run`).
                Start::Since(day) => Ok((day, day, true, None)),
            };
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            return Err(ExportError::StateEmpty { path: path.clone() });
        }
        let corrupt = |problem: String| ExportError::StateCorrupt {
            path: path.clone(),
            problem,
        };
        let state: State = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
        if state.pubapi_audit_export != STATE_VERSION {
            return Err(corrupt(format!(
                "version {} is not {STATE_VERSION}",
                state.pubapi_audit_export
            )));
        }
        let day = |field: &str, text: &str| {
            ExportDay::parse(text).ok_or_else(|| corrupt(format!("{field} {text:?} is not a day")))
        };
        let since = day("since", &state.since)?;
        let next = day("next_day", &state.next_day)?;
        if next < since {
            return Err(corrupt(format!("next_day {next} is before since {since}")));
        }
        let mismatch = |field, in_state: String, asked: String| {
            Err(ExportError::StateMismatch {
                path: path.clone(),
                field,
                in_state,
                asked,
            })
        };
        if state.kind != self.kind.to_string() {
            return mismatch("kind", state.kind, self.kind.to_string());
        }
        if ExportFormat::from_name(&state.format) != Some(self.format) {
            return mismatch("format", state.format, self.format.to_string());
        }
        if state.filters != self.filters {
            return mismatch(
                "filters",
                Value::Object(state.filters).to_string(),
                Value::Object(self.filters.clone()).to_string(),
            );
        }
        if let Start::Since(asked) = self.start
            && asked != since
        {
            return mismatch("since", since.to_string(), asked.to_string());
        }
        Ok((since, next, false, state.job))
    }

    /// The out folder's claim file (see [`ExportError::OutDirClaimed`]).
    pub fn claim_path(&self) -> PathBuf {
        self.out_dir.join(format!(
            ".pubapi-export-{}-{}.json",
            self.kind,
            self.format.extension()
        ))
    }

    /// Claims the out folder for this export's filters, or checks that it was claimed for
    /// them.
    async fn claim_out_dir(&self) -> Result<(), ExportError> {
        let claim = self.claim_path();
        let io = |error| ExportError::Io {
            path: claim.clone(),
            error,
        };
        let mut text = match std::fs::read(&claim) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mine = Claim {
                    pubapi_audit_export_folder: CLAIM_VERSION,
                    kind: self.kind.to_string(),
                    format: self.format.to_string(),
                    filters: self.filters.clone(),
                };
                let mut bytes = serde_json::to_vec_pretty(&mine).map_err(|e| io(e.into()))?;
                bytes.push(b'\n');
                if put_claim(&claim, &bytes).map_err(io)? {
                    sync_dir(Some(&self.out_dir));
                    self.warn_of_days_before_the_claim();
                    return Ok(());
                }
                // Another run claimed the folder meanwhile.
                std::fs::read(&claim).map_err(io)?
            }
            Err(error) => return Err(io(error)),
        };
        if serde_json::from_slice::<Claim>(&text).is_err() {
            // A claim made in place (see `put_claim`) may be read before it is whole.
            tokio::time::sleep(Duration::from_millis(200)).await;
            text = std::fs::read(&claim).map_err(io)?;
        }
        let corrupt = |problem: String| ExportError::ClaimCorrupt {
            claim: claim.clone(),
            problem,
        };
        let theirs: Claim = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
        if theirs.pubapi_audit_export_folder != CLAIM_VERSION {
            return Err(corrupt(format!(
                "version {} is not {CLAIM_VERSION}",
                theirs.pubapi_audit_export_folder
            )));
        }
        if theirs.kind != self.kind.to_string()
            || ExportFormat::from_name(&theirs.format) != Some(self.format)
        {
            return Err(corrupt(format!(
                "it is the claim of {} {} exports",
                theirs.kind, theirs.format
            )));
        }
        if theirs.filters != self.filters {
            return Err(ExportError::OutDirClaimed {
                claim,
                claimed: Value::Object(theirs.filters).to_string(),
                asked: Value::Object(self.filters.clone()).to_string(),
            });
        }
        Ok(())
    }

    /// Says so when a folder just claimed already holds days of this kind and format
    /// (written before claims existed): they are taken as this export's.
    fn warn_of_days_before_the_claim(&self) {
        let (prefix, suffix) = (
            format!("{}-", self.kind),
            format!(".{}", self.format.extension()),
        );
        let Ok(entries) = std::fs::read_dir(&self.out_dir) else {
            return;
        };
        let days = entries
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.starts_with(&prefix) && name.ends_with(&suffix)
            })
            .count();
        if days > 0 {
            tracing::warn!(
                folder = %self.out_dir.display(),
                days,
                "claimed an out folder that already holds days of this kind and format: they are taken as this export's"
            );
        }
    }

    fn state_of(&self, since: ExportDay, next: ExportDay) -> State {
        State {
            pubapi_audit_export: STATE_VERSION,
            kind: self.kind.to_string(),
            format: self.format.to_string(),
            filters: self.filters.clone(),
            since: since.to_string(),
            next_day: next.to_string(),
            job: None,
        }
    }

    fn save_state(&self, state: &State) -> Result<(), ExportError> {
        self.write_state(state).map_err(|error| ExportError::Io {
            path: self.state_file.clone(),
            error,
        })
    }

    /// Records `job` as the report job of `day`, the first day not yet written.
    fn record_job(
        &self,
        since: ExportDay,
        day: ExportDay,
        job: &PendingJob,
    ) -> Result<(), DayError> {
        let state = State {
            job: Some(job.clone()),
            ..self.state_of(since, day)
        };
        self.write_state(&state).map_err(|error| DayError::State {
            path: self.state_file.clone(),
            error,
        })
    }

    /// Writes the state to a temporary file beside it, synced, then renamed over it.
    fn write_state(&self, state: &State) -> std::io::Result<()> {
        let path = &self.state_file;
        let mut temporary = path.clone().into_os_string();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let mut bytes = serde_json::to_vec_pretty(state)?;
        bytes.push(b'\n');
        let mut file = File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)?;
        sync_dir(path.parent());
        Ok(())
    }

    /// The server's time, from the `Date` of its answer to `GET /v1/whoami` (which also
    /// brings the gateway's counters).
    async fn server_now(&self) -> Result<i64, ExportError> {
        let answer = self
            .client
            .sdk()
            .whoami()
            .send()
            .await
            .map_err(|e| ExportError::ServerTime(Error::from(e)))?;
        let date = answer
            .headers()
            .get(http::header::DATE)
            .and_then(|d| d.to_str().ok())
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .ok_or(ExportError::NoServerDate)?;
        let ms = date
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| ExportError::NoServerDate)?
            .as_millis();
        i64::try_from(ms).map_err(|_| ExportError::NoServerDate)
    }

    /// The calls left today: the lower of the client's own count and the gateway's
    /// counters; `None` when neither has a daily budget.
    fn budget_left(&self) -> Option<u32> {
        let quota = self.client.quota(LimitClass::General);
        let gateway = quota
            .server
            .and_then(|s| Some(s.quota_allotted?.saturating_sub(s.quota_current?)));
        match (quota.remaining_today, gateway) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Exports one day into `target`: the bytes written, and the report when it could not
    /// be deleted afterwards.
    ///
    /// The job is recorded in the state file (with `since`) before it is waited for, and
    /// stays recorded until the day is written: a run that times out, is stopped or fails to
    /// download leaves it to the next run (`pending`), which reads that report instead of
    /// making another.
    async fn export_day(
        &self,
        since: ExportDay,
        day: ExportDay,
        target: &Path,
        pending: Option<PendingJob>,
    ) -> Result<(u64, Option<ReportLocation>), DayError> {
        let audit = self.client.audit();
        let waited = |job: PendingJob| async move {
            self.record_job(since, day, &job)?;
            let asked = AuditJob {
                id: job.id.clone(),
                kind: self.kind,
                format: self.format.api_format(),
            };
            Ok::<_, DayError>((job, audit.wait(&asked, self.wait.clone()).await))
        };
        let resumed = match pending {
            Some(job) if job.runs < PendingJob::MAX_RUNS => {
                let runs = job.runs + 1;
                match waited(PendingJob { runs, ..job }).await? {
                    // Gone (expired, deleted): made again below.
                    (
                        _,
                        Err(WaitError::Failed {
                            error: Error::NotFound(_),
                            ..
                        }),
                    ) => None,
                    other => Some(other),
                }
            }
            // Waited for in vain: its report, if it ever came, goes before another is made.
            Some(job) => {
                self.forget(&job).await;
                None
            }
            None => None,
        };
        // Whether the report read below is an earlier run's job's (not one made now).
        let from_earlier_run = resumed.is_some();
        let (job, outcome) = match resumed {
            Some(resumed) => resumed,
            None => {
                // Checked at `build` for another day: only a day out of the dates' range
                // fails here.
                let request = self.request(day).map_err(|e| match e {
                    ExportError::InvalidRequest(e) => DayError::Api(e),
                    other => DayError::Api(Error::invalid_input("date_start", other.to_string())),
                })?;
                let job = audit.create(request).await.map_err(DayError::Api)?;
                waited(PendingJob {
                    id: job.id,
                    runs: 1,
                    read: None,
                })
                .await?
            }
        };
        let at = outcome.map_err(|e| match e {
            WaitError::Failed { error, .. } => DayError::Api(error),
            WaitError::TimedOut { polls, waited, .. } => DayError::TimedOut { polls, waited },
        })?;
        // A download that fails keeps the report for the next run (the job stays recorded),
        // unless the report of a job recorded by an earlier run is gone (expired, deleted):
        // that job is made again at once, once (the new job is not an earlier run's).
        // What a read that stops part way got is recorded with the job, for the next run. A
        // read that got further starts the job's count of runs again: only a report whose
        // read is stuck is made again after `MAX_RUNS`, and a day too big for one day's
        // budget is read over as many runs as it takes.
        let keep = |read: ReadSoFar| {
            let further = read.events > job.read.map_or(0, |before| before.events);
            let job = PendingJob {
                runs: if further { 0 } else { job.runs },
                read: Some(read),
                ..job.clone()
            };
            self.record_job(since, day, &job)
        };
        let bytes = match self.download(&at, target, job.read, keep).await {
            Ok(bytes) => bytes,
            Err(error) if from_earlier_run && error.report_gone() => {
                tracing::debug!(report = %at.id, "the recorded job's report is gone: made again");
                return Box::pin(self.export_day(since, day, target, None)).await;
            }
            Err(error) => return Err(error),
        };
        let left = if self.keep_reports {
            None
        } else {
            match audit.remove(&at).await {
                Ok(()) => None,
                Err(error) => {
                    tracing::warn!(report = %at.id, %error, "the day's report was not deleted");
                    Some(at)
                }
            }
        };
        Ok((bytes, left))
    }

    /// Deletes the report of a recorded job that will not be read (unless reports are kept):
    /// best effort, as a job still running has no report to delete.
    async fn forget(&self, job: &PendingJob) {
        if self.keep_reports {
            return;
        }
        let at = ReportLocation {
            kind: self.kind,
            id: job.id.clone(),
        };
        if let Err(error) = self.client.audit().remove(&at).await {
            tracing::debug!(report = %at.id, %error, "a recorded job's report was not deleted");
        }
    }

    /// Downloads the report into a temporary file, synced and renamed to `target`.
    ///
    /// An NDJSON report is read from `read_so_far` on when the temporary file still holds
    /// it; a read that stops part way keeps the file, synced, and tells `keep` how far it
    /// got.
    async fn download(
        &self,
        at: &ReportLocation,
        target: &Path,
        read_so_far: Option<ReadSoFar>,
        keep: impl FnOnce(ReadSoFar) -> Result<(), DayError>,
    ) -> Result<u64, DayError> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Named by the job too: a part file is read on only by a run of its own job (another
        // export of the same filters may share the folder).
        let part = PartFile {
            path: target.with_file_name(format!(".{name}.{}.part", file_safe(&at.id))),
            done: false,
        };
        let bytes = match self.format {
            ExportFormat::Csv => {
                let mut file = tokio::fs::File::create(&part.path)
                    .await
                    .map_err(DayError::Write)?;
                let report = self.client.audit().csv(at).await.map_err(DayError::Api)?;
                let bytes = report.copy_to(&mut file).await.map_err(|e| match e {
                    CsvError::Write(e) => DayError::Write(e),
                    other => DayError::Download(other),
                })?;
                file.sync_all().await.map_err(DayError::Write)?;
                bytes
            }
            ExportFormat::Ndjson => {
                let (mut file, mut so_far) = open_part(&part.path, read_so_far).await?;
                let read = ReportRead {
                    page_size: self.page_size,
                    offset: so_far.events,
                };
                // As sent: every field the server sent, in its order and spelling.
                let mut events = self.client.audit().events_as_sent(at.clone(), read);
                let mut writer = tokio::io::BufWriter::new(&mut file);
                let stopped = loop {
                    let event = match events.next().await {
                        Some(Ok(event)) => event,
                        Some(Err(error)) => break Some(error),
                        None => break None,
                    };
                    let mut line = super::one_line(&event).into_bytes();
                    line.push(b'\n');
                    writer.write_all(&line).await.map_err(DayError::Write)?;
                    so_far.bytes += line.len() as u64;
                };
                writer.flush().await.map_err(DayError::Write)?;
                file.sync_all().await.map_err(DayError::Write)?;
                if let Some(error) = stopped {
                    // Every event before `resume_at` is in the file: the next run reads on.
                    so_far.events = error.resume_at;
                    keep(so_far)?;
                    part.keep();
                    return Err(DayError::Read(error));
                }
                so_far.bytes
            }
        };
        part.commit(target).map_err(DayError::Write)?;
        sync_dir(target.parent());
        remove_parts_of(target);
        Ok(bytes)
    }
}

/// `id` as part of a file name: ASCII letters, digits, `-` and `_` as they are, every other
/// byte as `%XX` (a server's id never names another folder); an id that would take more than
/// [`MAX_ID_IN_NAME`] bytes so is named by its SHA-256 instead (file names end at 255 bytes).
fn file_safe(id: &str) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    const ESCAPED: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_');
    let mut safe = utf8_percent_encode(id, ESCAPED).to_string();
    if safe.len() > MAX_ID_IN_NAME {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(id.as_bytes());
        safe = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        safe.insert_str(0, "sha256-");
    }
    safe
}

/// The most bytes of a job id in a part file's name: with the day file's name (at most 50
/// bytes) and the dots, a name stays well within the 255 bytes a file name may have.
const MAX_ID_IN_NAME: usize = 80;

/// Removes the part files of `target`'s day left by jobs whose reads will not go on (the day
/// is in place): best effort.
fn remove_parts_of(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&prefix) && file.ends_with(".part") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Opens an NDJSON day's `.part` file to write on after `read_so_far`, or anew (from the
/// report's first event) when there is nothing to read on from or the file no longer holds
/// it.
async fn open_part(
    path: &Path,
    read_so_far: Option<ReadSoFar>,
) -> Result<(tokio::fs::File, ReadSoFar), DayError> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    if let Some(so_far) = read_so_far {
        match tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .await
        {
            Ok(mut file) => {
                let len = file.metadata().await.map_err(DayError::Write)?.len();
                // The recorded bytes end with a whole line.
                let mut last = [b'\n'];
                if so_far.bytes > 0 && len >= so_far.bytes {
                    file.seek(std::io::SeekFrom::Start(so_far.bytes - 1))
                        .await
                        .map_err(DayError::Write)?;
                    file.read_exact(&mut last).await.map_err(DayError::Write)?;
                }
                if len >= so_far.bytes && last == [b'\n'] {
                    // Bytes past the record were written by a run that stopped before it
                    // recorded them.
                    file.set_len(so_far.bytes).await.map_err(DayError::Write)?;
                    file.seek(std::io::SeekFrom::End(0))
                        .await
                        .map_err(DayError::Write)?;
                    return Ok((file, so_far));
                }
                tracing::warn!(
                    path = %path.display(),
                    recorded = so_far.bytes,
                    len,
                    "the day's part file does not hold what was recorded: the day is read from its start"
                );
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    path = %path.display(),
                    "the day's part file is gone: the day is read from its start"
                );
            }
            Err(error) => return Err(DayError::Write(error)),
        }
    }
    let file = tokio::fs::File::create(path)
        .await
        .map_err(DayError::Write)?;
    Ok((file, ReadSoFar::default()))
}

/// A day's temporary file, removed unless renamed into place or kept for the next run.
struct PartFile {
    path: PathBuf,
    done: bool,
}

impl PartFile {
    /// Renames the file to `target`. A file removed meanwhile by another export of the same
    /// filters, which put the day in place itself ([`remove_parts_of`]), is that day written.
    fn commit(mut self, target: &Path) -> std::io::Result<()> {
        match std::fs::rename(&self.path, target) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && target.exists() => {}
            other => other?,
        }
        self.done = true;
        Ok(())
    }

    /// Left where it is: the state file records what it holds.
    fn keep(mut self) {
        self.done = true;
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Puts `bytes` at `claim` unless a claim is there: `Ok(true)` when this run's claim is now
/// there, `Ok(false)` when another run's was first.
///
/// The claim is written whole under a name of this run's own and linked into place, so that
/// of two runs claiming at once one wins and the other reads a whole claim. On a filesystem
/// without hard links (FAT, some network mounts) it is created in place instead, where a run
/// reading at that moment may find it short (it reads once more).
fn put_claim(claim: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    use std::io::ErrorKind::AlreadyExists;
    let (temporary, mut file) = loop {
        let mut name = claim.as_os_str().to_owned();
        let tag = crate::rng::SplitMix64::from_entropy().next_u64();
        name.push(format!(".{tag:016x}.tmp"));
        match File::options().write(true).create_new(true).open(&name) {
            Ok(file) => break (PathBuf::from(name), file),
            Err(e) if e.kind() == AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    let linked = written.and_then(|()| std::fs::hard_link(&temporary, claim));
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == AlreadyExists => Ok(false),
        Err(_) => {
            let mut file = match File::options().write(true).create_new(true).open(claim) {
                Ok(file) => file,
                Err(e) if e.kind() == AlreadyExists => return Ok(false),
                Err(e) => return Err(e),
            };
            let written = file.write_all(bytes).and_then(|()| file.sync_all());
            if written.is_err() {
                let _ = std::fs::remove_file(claim);
            }
            written.map(|()| true)
        }
    }
}

/// Makes a rename in `dir` durable (best effort: not every platform syncs a folder).
fn sync_dir(dir: Option<&Path>) {
    let dir = match dir {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_runs_claiming_a_folder_at_once_one_wins_and_no_temporary_file_is_left() {
        let dir = std::env::temp_dir().join(format!("pubapi-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let claim = dir.join(".pubapi-export-logins-csv.json");
        let won: Vec<bool> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..8u8)
                .map(|run| {
                    let claim = &claim;
                    scope.spawn(move || put_claim(claim, &[b'0' + run; 4096]).unwrap())
                })
                .collect();
            runs.into_iter().map(|run| run.join().unwrap()).collect()
        });
        assert_eq!(won.iter().filter(|won| **won).count(), 1, "{won:?}");
        let winner = b'0' + won.iter().position(|won| *won).unwrap() as u8;
        assert_eq!(std::fs::read(&claim).unwrap(), [winner; 4096]);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [claim.file_name().unwrap()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_job_id_in_a_part_files_name_names_no_other_folder() {
        for (id, name) in [
            ("j-17_a", "j-17_a"),
            ("../x", "%2E%2E%2Fx"),
            ("a/b\\c", "a%2Fb%5Cc"),
            ("é", "%C3%A9"),
        ] {
            assert_eq!(file_safe(id), name);
        }
        // A long id is named by its digest: one name for one id, within the bound.
        let long = "j".repeat(300);
        let name = file_safe(&long);
        assert_eq!(name.len(), "sha256-".len() + 64);
        assert!(name.len() <= MAX_ID_IN_NAME, "{name}");
        assert_eq!(name, file_safe(&long));
        assert_ne!(name, file_safe(&"j".repeat(301)));
        assert_eq!(file_safe(&"j".repeat(80)).len(), 80);
    }

    #[test]
    fn a_day_in_place_takes_its_days_part_files_of_every_job_and_no_other_file() {
        let dir = std::env::temp_dir().join(format!("pubapi-parts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("quality-docs-2026-03-09.csv");
        std::fs::write(&target, "the day").unwrap();
        let gone = [
            ".quality-docs-2026-03-09.csv.j1.part",
            ".quality-docs-2026-03-09.csv.part",
        ];
        let kept = [
            ".quality-docs-categories-2026-03-09.csv.j1.part",
            ".quality-docs-2026-03-10.csv.j1.part",
            ".quality-docs-2026-03-09.ndjson.j1.part",
            ".quality-docs-2026-03-09.csv.j1.tmp",
            "quality-docs-2026-03-09.csv",
        ];
        for name in gone.iter().chain(&kept[..4]) {
            std::fs::write(dir.join(name), "part").unwrap();
        }
        remove_parts_of(&target);
        for name in gone {
            assert!(!dir.join(name).exists(), "{name}");
        }
        for name in kept {
            assert!(dir.join(name).exists(), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn days_print_and_parse_back() {
        for text in [
            "1970-01-01",
            "2024-02-29",
            "2026-03-10",
            "2026-12-31",
            "9999-12-31",
        ] {
            let day = ExportDay::parse(text).unwrap();
            assert_eq!(day.to_string(), text);
            assert_eq!(ExportDay::containing(day.start_ms()), day);
            assert_eq!(ExportDay::containing(day.end_ms() - 1), day);
            assert_eq!(ExportDay::containing(day.end_ms()), day.next());
        }
        assert_eq!(ExportDay::parse("2026-02-29"), None);
        assert_eq!(ExportDay::parse("2026-03-10T00:00:00Z"), None);
        assert_eq!(ExportDay::parse("2026-3-1"), None);
        assert_eq!(
            ExportDay::parse("2026-12-31").unwrap().next().to_string(),
            "2027-01-01"
        );
    }
}
