//! Audit reports v1: typed, validated requests for the 14 report kinds; jobs polled no more
//! often than every 2 minutes; JSON reports read page by page; CSV reports streamed.
//!
//! `client.audit()` reaches every audit operation; [`Audit::run`] is the one-call version.
//! [`DailyExport`] writes one file per whole UTC day, run after run (see [`export`]).

mod csv;
mod event;
pub mod export;
mod job;
mod report;

pub use crate::audit_date::AuditDate;
pub use crate::audit_request::{AssigneeScope, AuditRequest};
pub use csv::{CsvError, CsvReport, CsvRow, CsvRows, MAX_FIELDS, MAX_ROW_BYTES};
pub use event::{AuditEvent, RoleChange};
pub use export::{
    BudgetStop, DailyExport, DailyExportBuilder, DayError, ExportDay, ExportError, ExportFormat,
    ExportSummary, Start, WrittenDay,
};
pub use job::{AuditJob, AuditWait, JobObserver, JobState, ReportLocation};
pub use report::{
    DEFAULT_PAGE_SIZE, FinishedReport, MAX_PAGE_BYTES, ReadError, ReadPlan, ReportPage, ReportRead,
};

use crate::Client;
use crate::error::Error;
use crate::waiter::WaitError;
use futures_util::stream::BoxStream;

/// Audit reports v1: `client.audit()`.
#[derive(Debug, Clone, Copy)]
pub struct Audit<'a> {
    client: &'a Client,
}

impl Client {
    /// The audit report endpoints.
    pub fn audit(&self) -> Audit<'_> {
        Audit { client: self }
    }
}

impl Audit<'_> {
    /// Creates a report job (`POST /v1/audit/<kind>`, 202) after validating the request;
    /// nothing is sent when validation fails.
    pub async fn create(&self, request: impl Into<AuditRequest>) -> Result<AuditJob, Error> {
        self.client.create_audit_report(request).await
    }

    /// Polls a job once (`GET /v1/audit/jobs/{id}`); 303 becomes [`JobState::Completed`]
    /// with the report taken from `Location`, which is never followed automatically.
    pub async fn job_state(&self, job_id: &str) -> Result<JobState, Error> {
        self.client.audit_job_state(job_id).await
    }

    /// Polls `job` until it completes, no more often than every 2 minutes (from one answer
    /// to the next request), within `how.deadline`, telling `how.on_status` each poll's
    /// state; the error says how long it waited and how many polls it made. Dropping the
    /// future cancels the wait.
    pub async fn wait(
        &self,
        job: &AuditJob,
        how: AuditWait,
    ) -> Result<ReportLocation, WaitError<Error>> {
        self.client.wait_for_audit_job(job, how).await
    }

    /// One page of a JSON report: events `offset..offset + count`, typed by the report kind.
    pub async fn page(
        &self,
        at: &ReportLocation,
        offset: u64,
        count: u64,
    ) -> Result<ReportPage, Error> {
        self.client.audit_report_page(at, offset, count).await
    }

    /// What reading the report with `read` will cost: one call (a page of one event) to
    /// learn its `total_count`, then the arithmetic against today's budget.
    pub async fn plan(&self, at: &ReportLocation, read: ReportRead) -> Result<ReadPlan, Error> {
        self.client.audit_report_plan(at, read).await
    }

    /// The events of a JSON report as a stream (`Unpin`), fetched `read.page_size` at a time
    /// from `read.offset`, so a report of any size is read with one page in memory. An error
    /// ends the stream and says where to resume.
    pub fn events(
        &self,
        at: ReportLocation,
        read: ReportRead,
    ) -> BoxStream<'static, Result<AuditEvent, ReadError>> {
        self.client.audit_report_events(at, read)
    }

    /// Starts downloading a CSV report (`Accept: text/csv`).
    pub async fn csv(&self, at: &ReportLocation) -> Result<CsvReport, Error> {
        self.client.audit_report_csv(at).await
    }

    /// Deletes a finished report (`DELETE /v1/audit/{type}/{id}`, 204); later reads get 404.
    pub async fn remove(&self, at: &ReportLocation) -> Result<(), Error> {
        self.client.remove_audit_report(at).await
    }

    /// Creates the report, waits for it (polling no more often than every 2 minutes) and
    /// returns the finished report: the whole dance in one call.
    ///
    /// ```no_run
    /// use futures_util::StreamExt;
    /// use pubapi_sdk::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
    /// use pubapi_sdk_ext::audit::AuditWait;
    ///
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let request = LoginsAuditRequest::new(
    ///     "2026-01-01",
    ///     "2026-02-01",
    ///     AuditFormat::Json,
    ///     [LoginEvent::FailedAttempts],
    /// )?;
    /// let report = client.audit().run(request, AuditWait::default()).await?;
    /// let mut events = report.events();
    /// while let Some(event) = events.next().await {
    ///     println!("{:?}", event?);
    /// }
    /// report.delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn run(
        &self,
        request: impl Into<AuditRequest>,
        how: AuditWait,
    ) -> Result<FinishedReport, WaitError<Error>> {
        self.client.run_audit_report(request, how).await
    }
}
