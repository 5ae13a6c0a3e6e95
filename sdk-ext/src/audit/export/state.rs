//! The state file (the days done and the day's pending job) and the lock that keeps one
//! run at a time: read and checked at the start of a run, written (to a temporary file,
//! synced, renamed) after each day and whenever a day's job is recorded.

use super::files::{ReadSoFar, sync_dir};
use super::{DailyExport, DayError, ExportDay, ExportError, ExportFormat, Start};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// The marker and version of the state file's format.
const STATE_VERSION: u32 = 1;

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

/// A day's report job, recorded before waiting for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct PendingJob {
    pub(super) id: String,
    /// The runs that have waited for it (since its report's read last got further): after
    /// [`PendingJob::MAX_RUNS`] a new job is made (a job the platform failed still reads as
    /// running).
    pub(super) runs: u32,
    /// How far a run that stopped part way through reading the job's NDJSON report got: the
    /// next run reads on from there, into the day's `.part` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) read: Option<ReadSoFar>,
}

impl PendingJob {
    pub(super) const MAX_RUNS: u32 = 3;
}

/// The OS lock on `<state>.lock`, held while the value lives.
#[derive(Debug)]
pub(super) struct Lock {
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
    pub(super) fn lock(&self) -> Result<Lock, ExportError> {
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
    pub(super) fn load_or_start(
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
        let job = state.job.clone();
        self.check_is_mine(state, since)?;
        Ok((since, next, false, job))
    }

    /// Refuses a state file of another export: another kind, format, filters or start day.
    fn check_is_mine(&self, state: State, since: ExportDay) -> Result<(), ExportError> {
        let path = &self.state_file;
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
        if ExportFormat::from_name(&state.format) != Some(self.settings.format) {
            return mismatch("format", state.format, self.settings.format.to_string());
        }
        if state.filters != self.settings.filters {
            return mismatch(
                "filters",
                Value::Object(state.filters).to_string(),
                Value::Object(self.settings.filters.clone()).to_string(),
            );
        }
        if let Start::Since(asked) = self.start
            && asked != since
        {
            return mismatch("since", since.to_string(), asked.to_string());
        }
        Ok(())
    }

    fn state_of(&self, since: ExportDay, next: ExportDay) -> State {
        State {
            pubapi_audit_export: STATE_VERSION,
            kind: self.kind.to_string(),
            format: self.settings.format.to_string(),
            filters: self.settings.filters.clone(),
            since: since.to_string(),
            next_day: next.to_string(),
            job: None,
        }
    }

    /// Records `next` as the first day not yet written (no job pending).
    pub(super) fn save_progress(
        &self,
        since: ExportDay,
        next: ExportDay,
    ) -> Result<(), ExportError> {
        self.save_state(&self.state_of(since, next))
    }

    fn save_state(&self, state: &State) -> Result<(), ExportError> {
        self.write_state(state).map_err(|error| ExportError::Io {
            path: self.state_file.clone(),
            error,
        })
    }

    /// Records `job` as the report job of `day`, the first day not yet written.
    pub(super) fn record_job(
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
}
