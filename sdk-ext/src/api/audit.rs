//! The audit handle, `client.audit()`: every operation of audit reports v1. The jobs, the
//! waits, the page and CSV readers it calls into are in [`crate::audit`].

use crate::Client;
use crate::audit::{
    self, AuditEvent, AuditJob, AuditRequest, AuditWait, CsvReport, EventAsSent, FinishedReport,
    JobState, ReadError, ReadPlan, ReportLocation, ReportPage, ReportRead,
};
use crate::error::Error;
use crate::waiter::WaitError;
use futures_util::stream::BoxStream;

/// Audit reports v1: `client.audit()`.
#[derive(Debug, Clone, Copy)]
pub struct Audit<'a> {
    pub(crate) client: &'a Client,
}

impl Audit<'_> {
    /// Creates a report job (`POST /v1/audit/<kind>`, 202) after validating the request;
    /// nothing is sent when validation fails.
    pub async fn create(&self, request: impl Into<AuditRequest>) -> Result<AuditJob, Error> {
        audit::create_audit_report(self.client, request).await
    }

    /// Polls a job once (`GET /v1/audit/jobs/{id}`); 303 becomes [`JobState::Completed`]
    /// with the report taken from `Location`, which is never followed automatically.
    pub async fn job_state(&self, job_id: &str) -> Result<JobState, Error> {
        audit::audit_job_state(self.client, job_id).await
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
        audit::wait_for_audit_job(self.client, job, how).await
    }

    /// One page of a JSON report: events `offset..offset + count`, typed by the report kind.
    pub async fn page(
        &self,
        at: &ReportLocation,
        offset: u64,
        count: u64,
    ) -> Result<ReportPage, Error> {
        audit::audit_report_page(self.client, at, offset, count).await
    }

    /// What reading the report with `read` will cost: one call (a page of one event) to
    /// learn its `total_count`, then the arithmetic against today's budget.
    pub async fn plan(&self, at: &ReportLocation, read: ReportRead) -> Result<ReadPlan, Error> {
        audit::audit_report_plan(self.client, at, read).await
    }

    /// The events of a JSON report as a stream (`Unpin`), fetched `read.page_size` at a time
    /// from `read.offset`, so a report of any size is read with one page in memory. An error
    /// ends the stream and says where to resume.
    pub fn events(
        &self,
        at: ReportLocation,
        read: ReportRead,
    ) -> BoxStream<'static, Result<AuditEvent, ReadError>> {
        audit::audit_report_events(self.client, at, read)
    }

    /// [`Audit::events`], each event as sent: its JSON text, byte for byte, with every field
    /// the server sent (the typed events keep only the fields the reference shows). The way
    /// to copy a report elsewhere without losing anything; serializing one writes its text.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::audit::{ReportLocation, ReportRead};
    /// use pubapi_sdk_ext::prelude::*;
    /// # async fn run(client: pubapi_sdk_ext::Client, at: ReportLocation) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut events = client.audit().events_as_sent(at, ReportRead::default());
    /// while let Some(event) = events.next().await {
    ///     println!("{}", event?.get());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn events_as_sent(
        &self,
        at: ReportLocation,
        read: ReportRead,
    ) -> BoxStream<'static, Result<EventAsSent, ReadError>> {
        audit::audit_report_events_as_sent(self.client, at, read)
    }

    /// Starts downloading a CSV report (`Accept: text/csv`).
    pub async fn csv(&self, at: &ReportLocation) -> Result<CsvReport, Error> {
        audit::audit_report_csv(self.client, at).await
    }

    /// Deletes a finished report (`DELETE /v1/audit/{type}/{id}`, 204); later reads get 404.
    pub async fn remove(&self, at: &ReportLocation) -> Result<(), Error> {
        audit::remove_audit_report(self.client, at).await
    }

    /// Creates the report, waits for it (polling no more often than every 2 minutes) and
    /// returns the finished report: the whole dance in one call. An error after the job was
    /// made keeps the job ([`WaitError::started`]): after a timeout or a failed poll, wait for
    /// it again with [`Audit::wait`] rather than make another.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::audit::AuditWait;
    /// use pubapi_sdk_ext::prelude::*; // StreamExt::next
    /// use pubapi_sdk_ext::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
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
        audit::run_audit_report(self.client, request, how).await
    }
}
