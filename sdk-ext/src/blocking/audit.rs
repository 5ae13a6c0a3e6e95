//! The audit handle of the blocking client: jobs, waits, report pages as an iterator, CSV
//! downloads written to a [`std::io::Write`] or read row by row.

use super::{Client, Iter, Refused, Runtime};
use crate::audit::{
    AuditEvent, AuditJob, AuditRequest, AuditWait, CsvError, CsvRecord, CsvRow, EventAsSent,
    JobState, ReadError, ReadPlan, ReportLocation, ReportPage, ReportRead,
};
use crate::error::Error;
use crate::waiter::WaitError;
use pubapi_sdk::types::AuditFormat;
use std::sync::Arc;

/// The events of a JSON report from `read.offset` on, one at a time.
fn report_events(
    client: &Client,
    at: ReportLocation,
    read: ReportRead,
) -> Iter<AuditEvent, ReadError> {
    let stream = client.inner.audit().events(at, read);
    Iter::new(stream, client.runtime.clone(), read.offset)
}

fn csv_report(client: &Client, at: &ReportLocation) -> Result<CsvReport, Error> {
    let inner = client.call(client.inner.audit().csv(at))?;
    Ok(CsvReport {
        inner,
        runtime: client.runtime.clone(),
    })
}

blocking_handle! {
    /// Audit reports v1: `client.audit()` (see [`crate::api::Audit`]).
    Audit = audit {
        /// Creates a report job after validating the request; nothing is sent when validation
        /// fails.
        fn create(&self, request: impl Into<AuditRequest>) -> Result<AuditJob, Error> => call;

        /// Polls a job once.
        fn job_state(&self, job_id: &str) -> Result<JobState, Error> => call;

        /// Blocks until `job` completes, polling no more often than every 2 minutes, within
        /// `how.deadline` (see [`crate::api::Audit::wait`]).
        fn wait(
            &self,
            job: &AuditJob,
            how: AuditWait,
        ) -> Result<ReportLocation, WaitError<Error>> => call;

        /// One page of a JSON report: events `offset..offset + count`.
        fn page(
            &self,
            at: &ReportLocation,
            offset: u64,
            count: u64,
        ) -> Result<ReportPage, Error> => call;

        /// What reading the report with `read` will cost against today's budget.
        fn plan(&self, at: &ReportLocation, read: ReportRead) -> Result<ReadPlan, Error> => call;

        /// Deletes a finished report.
        fn remove(&self, at: &ReportLocation) -> Result<(), Error> => call;
    }
}

/// The reads of the audit handle that start where they resume, and the calls that wrap what
/// they get in a blocking type.
impl Audit<'_> {
    /// The events of a JSON report, one at a time, fetched `read.page_size` at a time from
    /// `read.offset` (one page in memory). An error ends the iterator and says where to
    /// resume.
    pub fn events(&self, at: ReportLocation, read: ReportRead) -> Iter<AuditEvent, ReadError> {
        report_events(self.client, at, read)
    }

    /// [`Audit::events`], each event as sent (see [`crate::api::Audit::events_as_sent`]).
    pub fn events_as_sent(
        &self,
        at: ReportLocation,
        read: ReportRead,
    ) -> Iter<EventAsSent, ReadError> {
        let stream = self.client.inner.audit().events_as_sent(at, read);
        Iter::new(stream, self.client.runtime.clone(), read.offset)
    }

    /// Starts downloading a CSV report (`Accept: text/csv`).
    pub fn csv(&self, at: &ReportLocation) -> Result<CsvReport, Error> {
        csv_report(self.client, at)
    }

    /// Creates the report and blocks until it is ready (see [`crate::api::Audit::run`]).
    ///
    /// ```no_run
    /// use pubapi_sdk::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
    /// use pubapi_sdk_ext::audit::AuditWait;
    ///
    /// # fn run(client: pubapi_sdk_ext::blocking::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let request = LoginsAuditRequest::new(
    ///     "2026-01-01",
    ///     "2026-02-01",
    ///     AuditFormat::Json,
    ///     [LoginEvent::FailedAttempts],
    /// )?;
    /// let report = client.audit().run(request, AuditWait::default())?;
    /// for event in report.events() {
    ///     println!("{:?}", event?);
    /// }
    /// report.delete()?;
    /// # Ok(()) }
    /// ```
    pub fn run(
        &self,
        request: impl Into<AuditRequest>,
        how: AuditWait,
    ) -> Result<FinishedReport, WaitError<Error>> {
        let report = self
            .client
            .call(self.client.inner.audit().run(request, how))?;
        Ok(FinishedReport {
            client: self.client.clone(),
            job: report.job,
            location: report.location,
        })
    }
}

/// A report that is ready, from [`Audit::run`] (see [`crate::audit::FinishedReport`]).
#[derive(Debug, Clone)]
pub struct FinishedReport {
    client: Client,
    /// The job that produced it.
    pub job: AuditJob,
    /// Where it is.
    pub location: ReportLocation,
}

impl FinishedReport {
    /// The format the job asked for.
    pub fn format(&self) -> AuditFormat {
        self.job.format
    }

    /// The events of a JSON report, one at a time.
    pub fn events(&self) -> Iter<AuditEvent, ReadError> {
        self.events_with(ReportRead::default())
    }

    /// The events from `read.offset` on, in pages of `read.page_size`. A CSV report ends
    /// them at once with [`Error::InvalidInput`] on `format`, nothing sent.
    pub fn events_with(&self, read: ReportRead) -> Iter<AuditEvent, ReadError> {
        let stream = self.report().events_with(read);
        Iter::new(stream, self.client.runtime.clone(), read.offset)
    }

    /// What reading its events will cost against today's budget ([`Error::InvalidInput`] on
    /// `format` for a CSV report, nothing sent).
    pub fn plan(&self, read: ReportRead) -> Result<ReadPlan, Error> {
        self.client.call(self.report().plan(read))
    }

    /// The body of a CSV report, to copy into a writer or read row by row. A JSON report is
    /// refused before sending ([`Error::InvalidInput`] on `format`).
    pub fn csv(&self) -> Result<CsvReport, Error> {
        let inner = self.client.call(self.report().csv())?;
        Ok(CsvReport {
            inner,
            runtime: self.client.runtime.clone(),
        })
    }

    /// The async report this one reads through: the checks are made there, once.
    fn report(&self) -> crate::audit::FinishedReport {
        crate::audit::FinishedReport::new(
            self.client.inner.clone(),
            self.job.clone(),
            self.location.clone(),
        )
    }

    /// Deletes the report.
    pub fn delete(&self) -> Result<(), Error> {
        self.client.audit().remove(&self.location)
    }
}

/// A CSV report being downloaded (see [`crate::audit::CsvReport`]): read chunk by chunk,
/// never whole.
pub struct CsvReport {
    inner: crate::audit::CsvReport,
    runtime: Arc<Runtime>,
}

debug_inner!(CsvReport, "CsvReport");

impl CsvReport {
    /// Copies the CSV bytes to `writer` as they arrive and returns how many were written.
    ///
    /// # Errors
    /// [`CsvError::Broken`] (with the bytes received) when the download breaks,
    /// [`CsvError::Write`] when the writer fails.
    pub fn copy_to<W: std::io::Write>(mut self, writer: &mut W) -> Result<u64, CsvError> {
        let mut written = 0u64;
        loop {
            let chunk = self
                .runtime
                .block_on(self.inner.chunk())
                .unwrap_or_else(|| Err(CsvError::in_async_context(written)))?;
            let Some(chunk) = chunk else { break };
            writer.write_all(&chunk).map_err(CsvError::Write)?;
            written += chunk.len() as u64;
        }
        writer.flush().map_err(CsvError::Write)?;
        Ok(written)
    }

    /// The rows of the report, parsed as they arrive (flat memory), the platform's title
    /// row set apart and each row mapped to the header.
    pub fn rows(self) -> CsvRows {
        CsvRows {
            inner: self.inner.rows(),
            runtime: self.runtime,
            refused: false,
        }
    }
}

/// The rows of a CSV report as they arrive, one at a time: from [`CsvReport::rows`] (see
/// [`crate::audit::CsvRows`]).
pub struct CsvRows {
    inner: crate::audit::CsvRows,
    runtime: Arc<Runtime>,
    refused: bool,
}

debug_inner!(CsvRows, "CsvRows");

impl CsvRows {
    /// The title row, once the first row has been read (`None` when the report has none).
    pub fn title(&self) -> Option<&str> {
        self.inner.title()
    }

    /// The header, once the first row has been read.
    pub fn header(&self) -> Option<&[String]> {
        self.inner.header()
    }

    /// The next data row, read in place (see [`crate::audit::CsvRows::next_record`]): its
    /// fields borrow the reader's buffer until the next call; `None` at the end of the report.
    ///
    /// # Errors
    /// As the iterator's items.
    pub fn next_record(&mut self) -> Option<Result<CsvRecord<'_>, CsvError>> {
        read_row(&mut self.refused, &self.runtime, self.inner.next_record())
    }
}

/// Reads one row on `runtime`, unless `refused` before. Inside an async runtime, refuses
/// ([`CsvError::in_async_context`]) once, then ends.
fn read_row<T>(
    refused: &mut bool,
    runtime: &Runtime,
    read: impl Future<Output = Option<Result<T, CsvError>>>,
) -> Option<Result<T, CsvError>> {
    if *refused {
        return None;
    }
    match runtime.block_on(read) {
        Some(row) => row,
        None => {
            *refused = true;
            Some(Err(CsvError::in_async_context(0)))
        }
    }
}

/// Each item is a data row; `None` at the end of the report. An error
/// ([`CsvError::Broken`], [`CsvError::RowTooLarge`]) ends the rows.
impl Iterator for CsvRows {
    type Item = Result<CsvRow, CsvError>;

    fn next(&mut self) -> Option<Self::Item> {
        read_row(&mut self.refused, &self.runtime, self.inner.next())
    }
}
