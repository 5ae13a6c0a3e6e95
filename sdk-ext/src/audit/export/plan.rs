//! The plan of an export: its builder and settings ([`DailyExportBuilder`]), the formats it
//! writes ([`ExportFormat`]), where it starts ([`Start`]), the names of its files, and the
//! request each day is asked with.

use super::{DailyExport, ExportDay, ExportError};
use crate::Client;
use crate::audit::{AuditRequest, AuditWait, DEFAULT_PAGE_SIZE, ReportRead};
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use serde_json::{Map, Value, json};
use std::fmt;
use std::path::PathBuf;

/// The format of the files an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// The platform's CSV as it is sent (title row, header, rows): `.csv`.
    Csv,
    /// The platform's CSV without its title row (`This report reflects activity up to …`),
    /// so that the header is the first line: `.csv`, every other byte as sent. A folder
    /// holds one or the other (its claim says which).
    CsvWithoutTitle,
    /// A JSON report read page by page, one event a line: `.ndjson`.
    Ndjson,
}

impl ExportFormat {
    /// The file extension (`csv`, `ndjson`).
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Csv | ExportFormat::CsvWithoutTitle => "csv",
            ExportFormat::Ndjson => "ndjson",
        }
    }

    /// The name in the state file and the folder's claim (`csv`, `csv-without-title`,
    /// `ndjson`).
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::CsvWithoutTitle => "csv-without-title",
            ExportFormat::Ndjson => "ndjson",
        }
    }

    /// The format asked of the API.
    pub fn api_format(self) -> AuditFormat {
        match self {
            ExportFormat::Csv | ExportFormat::CsvWithoutTitle => AuditFormat::Csv,
            ExportFormat::Ndjson => AuditFormat::Json,
        }
    }

    pub(super) fn from_name(name: &str) -> Option<ExportFormat> {
        [
            ExportFormat::Csv,
            ExportFormat::CsvWithoutTitle,
            ExportFormat::Ndjson,
        ]
        .into_iter()
        .find(|format| format.name() == name)
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    settings: Settings,
}

/// The settings of an export that have a default, as the builder sets them and the export
/// keeps them.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) format: ExportFormat,
    pub(super) filters: Map<String, Value>,
    pub(super) wait: AuditWait,
    pub(super) calls_per_day: u32,
    pub(super) page_size: u64,
    pub(super) keep_reports: bool,
    pub(super) max_days: Option<u32>,
    pub(super) until: Option<ExportDay>,
    pub(super) on_day: super::DayObserver,
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
        self.settings.format = format;
        self
    }

    /// The kind's filters, as the fields of its request body besides `format`, `date_start`
    /// and `date_end` (for logins, `{"events": ["failed_attempts"]}`). They are typed and
    /// checked by the SDK at [`build`](Self::build), and kept in the state file.
    pub fn filters(mut self, filters: Map<String, Value>) -> Self {
        self.settings.filters = filters;
        self
    }

    /// How to wait for each day's job (default [`AuditWait::default`]).
    pub fn wait(mut self, wait: AuditWait) -> Self {
        self.settings.wait = wait;
        self
    }

    /// The calls one day is expected to take, compared with the budget left before the day
    /// starts (default [`DailyExport::DEFAULT_CALLS_PER_DAY`]: the job's creation, 3 polls,
    /// one read and the report's deletion). Raise it for jobs that take long or JSON
    /// reports of many pages.
    pub fn calls_per_day(mut self, calls: u32) -> Self {
        self.settings.calls_per_day = calls.max(1);
        self
    }

    /// Events per call when an NDJSON day is read (default [`DEFAULT_PAGE_SIZE`], the SDK's
    /// page for reports, whose pages are held in memory one at a time; at least 1). A CSV
    /// day is one download whatever this says. Smaller pages take more calls a day: raise
    /// [`calls_per_day`](Self::calls_per_day) to match.
    pub fn page_size(mut self, events: u64) -> Self {
        self.settings.page_size = events.max(1);
        self
    }

    /// Keep each day's report on the platform after its file is written (default: delete
    /// it, one call).
    pub fn keep_reports(mut self, keep: bool) -> Self {
        self.settings.keep_reports = keep;
        self
    }

    /// Write at most this many days in one run (default: every whole day).
    pub fn max_days(mut self, days: u32) -> Self {
        self.settings.max_days = Some(days);
        self
    }

    /// The last day to export (default: the last day that has ended by the server's clock):
    /// for an export of exactly a range. A run past it writes nothing and says the export is
    /// up to date; a later day than the server's last whole day waits for that day to end.
    pub fn until(mut self, day: ExportDay) -> Self {
        self.settings.until = Some(day);
        self
    }

    /// Tells `observer` each day written, as soon as it is in place and recorded (the days
    /// found already in place are in [`ExportSummary::already_there`](super::ExportSummary)).
    pub fn on_day(mut self, observer: super::DayObserver) -> Self {
        self.settings.on_day = observer;
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
            settings: self.settings,
        };
        let read = ReportRead {
            page_size: export.settings.page_size,
            offset: 0,
        };
        read.check().map_err(ExportError::InvalidRequest)?;
        export.request(ExportDay::from_unix_days(20_000))?;
        Ok(export)
    }
}

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
            settings: Settings {
                format: ExportFormat::Csv,
                filters: Map::new(),
                wait: AuditWait::default(),
                calls_per_day: Self::DEFAULT_CALLS_PER_DAY,
                page_size: DEFAULT_PAGE_SIZE,
                keep_reports: false,
                max_days: None,
                until: None,
                on_day: super::DayObserver::default(),
            },
        }
    }

    /// The file name of `day`: `<kind>-YYYY-MM-DD.<ext>`.
    pub fn file_name(&self, day: ExportDay) -> String {
        format!("{}-{day}.{}", self.kind, self.settings.format.extension())
    }

    /// The lock file: `<state>.lock`.
    pub fn lock_path(&self) -> PathBuf {
        let mut path = self.state_file.clone().into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }

    /// The request for `day`: from its midnight to the next (UTC), or, for a kind whose API
    /// ignores the time of day, the same-day range `day` to `day` (a plain-date `date_end`
    /// is the last day covered).
    pub(super) fn request(&self, day: ExportDay) -> Result<AuditRequest, ExportError> {
        let mut body = self.settings.filters.clone();
        body.insert(
            "format".into(),
            json!(self.settings.format.api_format().to_string()),
        );
        let (start, end) = if pubapi_sdk::audit_kinds::of(self.kind).ignores_time() {
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
}
