//! Audit exports that run for years: one file per whole UTC day, the days done kept in a
//! state file, resumable, within the daily budget.
//!
//! A [`DailyExport`] writes `<kind>-YYYY-MM-DD.<csv|ndjson>` into a folder for every UTC day
//! from its start up to the last day that has ended by the **server's** clock (or up to
//! [`DailyExportBuilder::until`]) (the `Date` of
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

//! How the parts fit: [`DailyExport::run`] (here) takes the lock and the state (`state`),
//! claims the folder (`claim`), asks the server's day (`fetch`), then steps day by day
//! (`ExportDay`, in `day`): each day's report is made, waited for and deleted in `fetch`,
//! downloaded into its `.part` file and renamed in `files`, and recorded in `state`. The
//! builder, the formats and each day's request are in `plan`; the errors in `error`.
//! Uses go one way: `day` ← `error` ← `plan` ← `files` ← `state`, `claim` ← `fetch` ← here.
//! The export calls the audit functions of [`crate::audit`] (the layer `client.audit()`
//! calls into), never the handle: nothing `api/` builds on reaches back into `api/`.

mod claim;
mod day;
mod error;
mod fetch;
mod files;
mod plan;
mod state;

pub use day::ExportDay;
pub use error::{DayError, ExportError};
pub use plan::{DailyExportBuilder, ExportFormat, Start};

crate::waiter::observer! {
    /// A function told each day an export writes, once its file is in place and the state
    /// file has moved past it (see [`DailyExportBuilder::on_day`]): to count, convert or ship
    /// the day while the export goes on to the next.
    ///
    /// Two observers are equal when they are the same function (or both none).
    pub struct DayObserver(&WrittenDay);
}

use super::ReportLocation;
use crate::Client;
use crate::error::Error;
use files::remove_parts_of;
use plan::Settings;
use pubapi_sdk::types::AuditReportKind;
use state::PendingJob;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
/// A daily audit export: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct DailyExport {
    client: Client,
    kind: AuditReportKind,
    start: Start,
    state_file: PathBuf,
    out_dir: PathBuf,
    settings: Settings,
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

impl DailyExport {
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
                    needed: self.settings.calls_per_day,
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
            self.save_progress(since, next)?;
        }
        let mut done = 0u32;
        while next.end_ms() <= now_ms
            && self.settings.max_days.is_none_or(|max| done < max)
            && self.settings.until.is_none_or(|until| next <= until)
        {
            let mut written = None;
            match self.step(since, next, pending.take()).await {
                Ok(Step::Written(day, left)) => {
                    written = Some(day);
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
            self.save_progress(since, next)?;
            if let Some(day) = written {
                self.settings.on_day.tell(&day);
                summary.written.push(day);
            }
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
                needed: self.settings.calls_per_day,
                left,
                resets_in,
            }))
        };
        if let Some(left) = self.budget_left()
            && left < self.settings.calls_per_day
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
}
