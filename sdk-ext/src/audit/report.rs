//! Finished audit reports: JSON events in pages, CSV streamed, deletion.

use super::{AuditEvent, AuditJob, AuditRequest, AuditWait, ReportLocation};
use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use crate::waiter::WaitError;
use futures_util::Stream;
use pubapi_sdk::types::{AuditFormat, AuditReport};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The default number of events fetched per page of a JSON report.
pub const DEFAULT_PAGE_SIZE: u64 = 1000;

/// A CSV report being downloaded: the body is read chunk by chunk, never whole.
#[derive(Debug)]
pub struct CsvReport {
    response: reqwest::Response,
}

impl CsvReport {
    /// Copies the CSV bytes to `writer` as they arrive and returns how many were written.
    ///
    /// # Errors
    /// [`CsvError::Api`] when the download breaks, [`CsvError::Write`] when the writer
    /// fails.
    pub async fn copy_to<W: AsyncWrite + Unpin>(mut self, writer: &mut W) -> Result<u64, CsvError> {
        let mut written = 0u64;
        while let Some(chunk) = self
            .response
            .chunk()
            .await
            .map_err(|e| CsvError::Api(Error::Transport(e)))?
        {
            writer.write_all(&chunk).await.map_err(CsvError::Write)?;
            written += chunk.len() as u64;
        }
        writer.flush().await.map_err(CsvError::Write)?;
        Ok(written)
    }
}

/// Why a CSV download stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum CsvError {
    /// The API or the connection failed.
    Api(Error),
    /// The writer failed.
    Write(std::io::Error),
}

impl std::fmt::Display for CsvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CsvError::Api(e) => write!(f, "csv download failed: {e}"),
            CsvError::Write(e) => write!(f, "csv write failed: {e}"),
        }
    }
}

impl std::error::Error for CsvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CsvError::Api(e) => Some(e),
            CsvError::Write(e) => Some(e),
        }
    }
}

impl Client {
    /// One page of a JSON report: events `offset..offset + count`.
    pub async fn audit_report_page(
        &self,
        at: &ReportLocation,
        offset: u64,
        count: u64,
    ) -> Result<AuditReport, Error> {
        self.get_audit_report()
            .type_(at.kind)
            .id(at.id.clone())
            .offset(offset)
            .count(count)
            .send()
            .typed()
            .await
            .map(|page| page.into_inner())
    }

    /// The events of a JSON report as a stream, fetched `page_size` at a time with
    /// `offset`/`count`, so a report of any size is read with one page in memory.
    pub fn audit_report_events(
        &self,
        at: ReportLocation,
        page_size: u64,
    ) -> impl Stream<Item = Result<AuditEvent, Error>> + Send + 'static {
        struct Pages {
            client: Client,
            at: ReportLocation,
            page_size: u64,
            offset: u64,
            total: Option<u64>,
            buffer: VecDeque<serde_json::Map<String, serde_json::Value>>,
            done: bool,
        }
        let state = Pages {
            client: self.clone(),
            at,
            page_size: page_size.max(1),
            offset: 0,
            total: None,
            buffer: VecDeque::new(),
            done: false,
        };
        futures_util::stream::unfold(state, |mut s| async move {
            loop {
                if let Some(raw) = s.buffer.pop_front() {
                    let event = AuditEvent::from_json(s.at.kind, raw);
                    return Some((Ok(event), s));
                }
                let finished = s.total.is_some_and(|total| s.offset >= total);
                if s.done || finished {
                    return None;
                }
                match s
                    .client
                    .audit_report_page(&s.at, s.offset, s.page_size)
                    .await
                {
                    Ok(page) => {
                        s.total = page.total_count.and_then(|t| u64::try_from(t).ok());
                        if page.events.is_empty() {
                            s.done = true;
                        }
                        s.offset += page.events.len() as u64;
                        s.buffer.extend(page.events);
                    }
                    Err(e) => {
                        s.done = true;
                        return Some((Err(e), s));
                    }
                }
            }
        })
    }

    /// Starts downloading a CSV report (`Accept: text/csv`).
    pub async fn audit_report_csv(&self, at: &ReportLocation) -> Result<CsvReport, Error> {
        let operation =
            pubapi_sdk::operations::find("getAuditReport").expect("the spec has getAuditReport");
        let id = crate::path::encode_segment(&at.id)
            .map_err(|e| Error::InvalidInput(crate::error::InputError::Path(e)))?;
        let url = format!("{}/v1/audit/{}/{id}", self.base_url(), at.kind);
        let request = self
            .http()
            .get(url)
            .header(http::header::ACCEPT, "text/csv")
            .build()
            .map_err(Error::Transport)?;
        let response = self
            .execute(request, operation)
            .await
            .map_err(Error::Transport)?;
        if !response.status().is_success() {
            return Err(Error::from_http_response(response).await);
        }
        Ok(CsvReport { response })
    }

    /// Deletes a finished report (`DELETE /v1/audit/{type}/{id}`, 204); later reads get 404.
    pub async fn remove_audit_report(&self, at: &ReportLocation) -> Result<(), Error> {
        self.delete_audit_report()
            .type_(at.kind)
            .id(at.id.clone())
            .send()
            .typed()
            .await
            .map(|_| ())
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
    /// let report = client
    ///     .run_audit_report(
    ///         LoginsAuditRequest {
    ///             format: AuditFormat::Json,
    ///             date_start: "2026-01-01".into(),
    ///             date_end: "2026-02-01".into(),
    ///             events: vec![LoginEvent::FailedAttempts],
    ///             access_points: vec![],
    ///             users: vec![],
    ///             suppress_emails: true,
    ///         },
    ///         AuditWait::default(),
    ///     )
    ///     .await?;
    /// let mut events = Box::pin(report.events());
    /// while let Some(event) = events.next().await {
    ///     println!("{:?}", event?);
    /// }
    /// report.delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn run_audit_report(
        &self,
        request: impl Into<AuditRequest>,
        how: AuditWait,
    ) -> Result<FinishedReport, WaitError<Error>> {
        let job = self
            .create_audit_report(request)
            .await
            .map_err(|error| WaitError::Failed {
                error,
                polls: 0,
                waited: Duration::ZERO,
            })?;
        let location = self.wait_for_audit_job(&job, how).await?;
        Ok(FinishedReport {
            client: self.clone(),
            job,
            location,
        })
    }
}

/// A report that is ready, from [`Client::run_audit_report`].
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

    /// The events of a JSON report, in pages of [`DEFAULT_PAGE_SIZE`].
    pub fn events(&self) -> impl Stream<Item = Result<AuditEvent, Error>> + Send + 'static {
        self.client
            .audit_report_events(self.location.clone(), DEFAULT_PAGE_SIZE)
    }

    /// The body of a CSV report, to stream into a writer.
    pub async fn csv(&self) -> Result<CsvReport, Error> {
        self.client.audit_report_csv(&self.location).await
    }

    /// Deletes the report.
    pub async fn delete(&self) -> Result<(), Error> {
        self.client.remove_audit_report(&self.location).await
    }
}
