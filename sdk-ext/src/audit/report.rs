//! Finished audit reports: JSON events in pages (typed once from the page bytes, resumable,
//! budget-aware), CSV streamed as bytes or rows, deletion.

use super::csv::CsvReport;
use super::job::{create_audit_report, wait_for_audit_job};
use super::{AuditEvent, AuditJob, AuditRequest, AuditWait, ReportLocation};
use crate::Client;
use crate::error::Error;
use crate::limits::LimitClass;
use crate::prelude::*;
use crate::waiter::WaitError;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use std::collections::VecDeque;
use std::time::Duration;

/// The default number of events fetched per page of a JSON report: 10,000 events are a few
/// megabytes of JSON, and a 1,000,000-event report takes 100 calls, a tenth of the default
/// daily budget (pages of 1,000 took all of it).
pub const DEFAULT_PAGE_SIZE: u64 = 10_000;

/// The largest body of one JSON report page the SDK reads into memory; a larger page ends
/// the read with [`Error::Decode`] (ask for smaller pages).
pub const MAX_PAGE_BYTES: usize = 64 << 20;

/// How to read the events of a JSON report: page size and where to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportRead {
    /// Events per call (default [`DEFAULT_PAGE_SIZE`]; at least 1).
    pub page_size: u64,
    /// The 0-based index of the first event to read (default 0): the `resume_at` of a
    /// [`ReadError`] continues an interrupted read.
    pub offset: u64,
}

impl Default for ReportRead {
    fn default() -> Self {
        ReportRead {
            page_size: DEFAULT_PAGE_SIZE,
            offset: 0,
        }
    }
}

impl ReportRead {
    /// Refuses, before anything is sent, a read the report cannot answer: an `offset` or
    /// `page_size` above the spec's `maximum` for `getAuditReport`'s `offset` and `count`
    /// (`i64::MAX`: a page's `offset` and `total_count` are int64, so such a read could not
    /// even be decoded).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] on `offset` or `count`.
    pub fn check(&self) -> Result<(), Error> {
        check_window(self.offset, self.page_size)
    }

    /// Reads from `offset` on, in pages of [`DEFAULT_PAGE_SIZE`].
    pub fn from_offset(offset: u64) -> Self {
        ReportRead {
            offset,
            ..ReportRead::default()
        }
    }
}

/// What reading a JSON report will cost, from [`Audit::plan`](crate::api::Audit::plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPlan {
    /// The report's `total_count`.
    pub total_events: u64,
    /// Events left to read from the plan's offset.
    pub events_to_read: u64,
    /// Calls the read takes (pages of the plan's size).
    pub calls: u64,
    /// Calls left in today's general budget, as the client's pacer sees it (`None` without
    /// a daily budget).
    pub quota_left: Option<u32>,
}

impl ReadPlan {
    /// Whether today's budget covers the read.
    pub fn fits_today(&self) -> bool {
        self.quota_left
            .is_none_or(|left| u64::from(left) >= self.calls)
    }
}

/// Why reading a JSON report stopped, and where to resume.
#[derive(Debug)]
pub struct ReadError {
    /// The index of the first event not delivered: pass it to [`ReportRead::from_offset`]
    /// to continue with nothing lost and nothing repeated.
    pub resume_at: u64,
    /// What went wrong (for example [`Error::QuotaExhausted`] when the day's budget ran out).
    pub error: Error,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "report read stopped before event {}", self.resume_at)
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// One page of a JSON report, its events typed by the report kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportPage {
    /// `total_count`: events in the whole report.
    pub total_count: Option<u64>,
    /// `offset` of the first event of the page.
    pub offset: Option<u64>,
    /// The events, typed once from the page's bytes.
    pub events: Vec<AuditEvent>,
}

/// The page as sent: the events stay raw JSON slices of the body until typed.
#[derive(serde::Deserialize)]
struct RawPage<'a> {
    total_count: Option<i64>,
    offset: Option<i64>,
    #[serde(borrow, default)]
    events: Vec<&'a serde_json::value::RawValue>,
}

impl ReportPage {
    /// Decodes a page body (`{total_count, offset, count, events}`): each event straight from
    /// its bytes into the type of `kind`, for a page fetched some other way.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the JSON path when the body is not a report page.
    pub fn decode(kind: AuditReportKind, body: &[u8]) -> Result<ReportPage, Error> {
        let page: RawPage<'_> = Error::decode_slice(body)?;
        Ok(ReportPage {
            total_count: page.total_count.and_then(|t| u64::try_from(t).ok()),
            offset: page.offset.and_then(|o| u64::try_from(o).ok()),
            events: page
                .events
                .into_iter()
                .map(|raw| AuditEvent::from_raw(kind, raw.get()))
                .collect(),
        })
    }
}

/// The `offset` and `count` of a report read against the spec's bounds
/// (`pubapi_sdk::limits::GET_AUDIT_REPORT_*`).
fn check_window(offset: u64, count: u64) -> Result<(), Error> {
    use pubapi_sdk::limits::{GET_AUDIT_REPORT_COUNT_MAXIMUM, GET_AUDIT_REPORT_OFFSET_MAXIMUM};
    for (field, value, max) in [
        ("offset", offset, GET_AUDIT_REPORT_OFFSET_MAXIMUM),
        ("count", count, GET_AUDIT_REPORT_COUNT_MAXIMUM),
    ] {
        if i64::try_from(value).map_or(true, |value| value > max) {
            return Err(Error::invalid_input(
                field,
                format!("{value} is above {max}, the largest a report page can say"),
            ));
        }
    }
    Ok(())
}

/// One page of a JSON report: events `offset..offset + count`, typed by the report kind.
pub(crate) async fn audit_report_page(
    client: &Client,
    at: &ReportLocation,
    offset: u64,
    count: u64,
) -> Result<ReportPage, Error> {
    check_window(offset, count)?;
    let query = [("offset", offset), ("count", count.max(1))];
    let response = audit_report_get(client, at, "application/json", &query).await?;
    let body = read_capped(response, MAX_PAGE_BYTES).await?;
    ReportPage::decode(at.kind, &body)
}

/// What reading the report with `read` will cost: one call (a page of one event) to learn
/// its `total_count`, then the arithmetic against today's budget.
pub(crate) async fn audit_report_plan(
    client: &Client,
    at: &ReportLocation,
    read: ReportRead,
) -> Result<ReadPlan, Error> {
    read.check()?;
    let page = audit_report_page(client, at, 0, 1).await?;
    let total_events = page.total_count.ok_or_else(|| Error::Decode {
        path: "total_count".into(),
        message: "the report page does not say how many events the report has".into(),
        body: Default::default(),
    })?;
    let events_to_read = total_events.saturating_sub(read.offset);
    Ok(ReadPlan {
        total_events,
        events_to_read,
        calls: events_to_read.div_ceil(read.page_size.max(1)).max(1),
        quota_left: client.quota(LimitClass::General).remaining_today,
    })
}

/// The events of a JSON report as a stream, fetched `read.page_size` at a time with
/// `offset`/`count` from `read.offset`, so a report of any size is read with one page in
/// memory. An error ends the stream and says where to resume.
pub(crate) fn audit_report_events(
    client: &Client,
    at: ReportLocation,
    read: ReportRead,
) -> BoxStream<'static, Result<AuditEvent, ReadError>> {
    struct Pages {
        client: Client,
        at: ReportLocation,
        page_size: u64,
        offset: u64,
        total: Option<u64>,
        buffer: VecDeque<AuditEvent>,
        done: bool,
    }
    if let Err(error) = read.check() {
        let refused = ReadError {
            resume_at: read.offset,
            error,
        };
        return futures_util::stream::once(async move { Err(refused) }).boxed();
    }
    let state = Pages {
        client: client.clone(),
        at,
        page_size: read.page_size.max(1),
        offset: read.offset,
        total: None,
        buffer: VecDeque::new(),
        done: false,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.buffer.pop_front() {
                return Some((Ok(event), s));
            }
            let finished = s.total.is_some_and(|total| s.offset >= total);
            if s.done || finished {
                return None;
            }
            match audit_report_page(&s.client, &s.at, s.offset, s.page_size).await {
                Ok(page) => {
                    s.total = page.total_count;
                    let delivered = page.events.len() as u64;
                    let short_of_total = s.total.is_some_and(|total| s.offset < total);
                    let problem = if page.offset.is_some_and(|o| o != s.offset) {
                        Some(format!(
                            "asked for events from {} and got a page from {:?}",
                            s.offset, page.offset
                        ))
                    } else if delivered == 0 && short_of_total {
                        Some(format!(
                            "an empty page at event {} of {:?}",
                            s.offset, s.total
                        ))
                    } else {
                        None
                    };
                    if let Some(message) = problem {
                        s.done = true;
                        let error = Error::Decode {
                            path: "events".into(),
                            message,
                            body: Default::default(),
                        };
                        let resume_at = s.offset;
                        return Some((Err(ReadError { resume_at, error }), s));
                    }
                    // An empty page ends the read; without a total, so does a short one.
                    s.done = delivered == 0 || (s.total.is_none() && delivered < s.page_size);
                    s.offset = s.offset.saturating_add(delivered);
                    s.buffer.extend(page.events);
                }
                Err(error) => {
                    s.done = true;
                    let resume_at = s.offset;
                    return Some((Err(ReadError { resume_at, error }), s));
                }
            }
        }
    })
    .boxed()
}

/// Starts downloading a CSV report (`Accept: text/csv`).
pub(crate) async fn audit_report_csv(
    client: &Client,
    at: &ReportLocation,
) -> Result<CsvReport, Error> {
    let response = audit_report_get(client, at, "text/csv", &[]).await?;
    Ok(CsvReport::from_response(response))
}

/// `GET /v1/audit/{type}/{id}` with `accept`, through the client's policy.
async fn audit_report_get(
    client: &Client,
    at: &ReportLocation,
    accept: &'static str,
    query: &[(&str, u64)],
) -> Result<reqwest::Response, Error> {
    let operation = pubapi_sdk::operations::find(pubapi_sdk::operations::id::GET_AUDIT_REPORT)
        .expect("the spec has getAuditReport");
    let id = crate::path::encode_segment(&at.id).map_err(|error| {
        Error::InvalidInput(crate::error::InputError::PathValue {
            operation: operation.id,
            parameter: "id",
            error,
        })
    })?;
    let url = format!("{}/v1/audit/{}/{id}", client.base_url(), at.kind);
    let request = client
        .http()
        .get(url)
        .query(query)
        .header(http::header::ACCEPT, accept)
        .build()
        .map_err(Error::from)?;
    let response = client
        .execute(request, operation)
        .await
        .map_err(Error::from)?;
    if !response.status().is_success() {
        return Err(Error::from_http_response(response).await);
    }
    Ok(response)
}

/// Deletes a finished report (`DELETE /v1/audit/{type}/{id}`, 204); later reads get 404.
pub(crate) async fn remove_audit_report(client: &Client, at: &ReportLocation) -> Result<(), Error> {
    client
        .sdk()
        .delete_audit_report()
        .type_(at.kind)
        .id(at.id.clone())
        .send()
        .await?;
    Ok(())
}

/// Creates the report, waits for it and returns the finished report
/// ([`Audit::run`](crate::api::Audit::run)).
pub(crate) async fn run_audit_report(
    client: &Client,
    request: impl Into<AuditRequest>,
    how: AuditWait,
) -> Result<FinishedReport, WaitError<Error>> {
    let job = create_audit_report(client, request)
        .await
        .map_err(|error| WaitError::Failed {
            error,
            polls: 0,
            waited: Duration::ZERO,
        })?;
    let location = wait_for_audit_job(client, &job, how).await?;
    Ok(FinishedReport {
        client: client.clone(),
        job,
        location,
    })
}

/// A report that is ready, from [`Audit::run`](crate::api::Audit::run).
#[derive(Debug, Clone)]
pub struct FinishedReport {
    client: Client,
    /// The job that produced it.
    pub job: AuditJob,
    /// Where it is.
    pub location: ReportLocation,
}

impl FinishedReport {
    /// The report `job` made, at `location`, read through `client`.
    #[cfg(feature = "blocking")]
    pub(crate) fn new(client: Client, job: AuditJob, location: ReportLocation) -> Self {
        FinishedReport {
            client,
            job,
            location,
        }
    }

    /// The format the job asked for.
    pub fn format(&self) -> AuditFormat {
        self.job.format
    }

    /// Refuses, before sending, to read the report in another format than its job asked
    /// for ([`Error::InvalidInput`] on `format`).
    fn check_format(&self, reading: AuditFormat) -> Result<(), Error> {
        if self.job.format == reading {
            return Ok(());
        }
        let how = match self.job.format {
            AuditFormat::Csv => "csv()",
            AuditFormat::Json => "events()",
        };
        Err(Error::invalid_input(
            "format",
            format!(
                "the job asked for a {} report, not {}: read it with {how}",
                self.job.format, reading
            ),
        ))
    }

    /// The events of a JSON report, in pages of [`DEFAULT_PAGE_SIZE`]. A CSV report ends the
    /// stream at once with [`Error::InvalidInput`] on `format`, nothing sent.
    pub fn events(&self) -> BoxStream<'static, Result<AuditEvent, ReadError>> {
        self.events_with(ReportRead::default())
    }

    /// The events from `read.offset` on, in pages of `read.page_size`. A CSV report ends the
    /// stream at once with [`Error::InvalidInput`] on `format`, nothing sent.
    pub fn events_with(
        &self,
        read: ReportRead,
    ) -> BoxStream<'static, Result<AuditEvent, ReadError>> {
        if let Err(error) = self.check_format(AuditFormat::Json) {
            let refused = ReadError {
                resume_at: read.offset,
                error,
            };
            return futures_util::stream::once(async move { Err(refused) }).boxed();
        }
        audit_report_events(&self.client, self.location.clone(), read)
    }

    /// What reading its events will cost against today's budget ([`Error::InvalidInput`] on
    /// `format` for a CSV report, nothing sent).
    pub async fn plan(&self, read: ReportRead) -> Result<ReadPlan, Error> {
        self.check_format(AuditFormat::Json)?;
        audit_report_plan(&self.client, &self.location, read).await
    }

    /// The body of a CSV report, to stream into a writer. A JSON report is refused before
    /// sending ([`Error::InvalidInput`] on `format`); a response that is not CSV (its
    /// `Content-Type`) ends the first read with [`super::CsvError::NotCsv`].
    pub async fn csv(&self) -> Result<CsvReport, Error> {
        self.check_format(AuditFormat::Csv)?;
        audit_report_csv(&self.client, &self.location).await
    }

    /// Deletes the report.
    pub async fn delete(&self) -> Result<(), Error> {
        remove_audit_report(&self.client, &self.location).await
    }
}

/// Reads a body of at most `cap` bytes; a longer one is refused, not cut.
async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, Error> {
    let announced = response.content_length().unwrap_or(0);
    let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(cap).min(cap));
    while let Some(chunk) = response.chunk().await.map_err(Error::from)? {
        if body.len() + chunk.len() > cap {
            return Err(Error::Decode {
                path: "events".into(),
                message: format!("the page body exceeds {cap} bytes: read smaller pages"),
                body: Default::default(),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn any_page_body_decodes_or_is_refused_without_a_panic(
            body in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..400),
                "\\{\"total_count\": ?-?[0-9]{0,20}, \"events\": \\[(\\{\"user_id\": ?-?[0-9]{1,22}\\}|\\[\\]|null|1|\"x\"|,){0,20}\\]\\}"
                    .prop_map(String::into_bytes),
            ],
        ) {
            let _ = ReportPage::decode(AuditReportKind::Logins, &body);
        }

        #[test]
        fn every_event_of_a_page_is_kept(ids in proptest::collection::vec(any::<i64>(), 0..50)) {
            let events: Vec<_> = ids.iter().map(|id| serde_json::json!({"user_id": id})).collect();
            let body = serde_json::json!({"total_count": ids.len(), "events": events}).to_string();
            let page = ReportPage::decode(AuditReportKind::Logins, body.as_bytes()).unwrap();
            let decoded: Vec<i64> = page
                .events
                .iter()
                .map(|e| match e {
                    AuditEvent::Logins(l) => l.user_id.unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect();
            prop_assert_eq!(decoded, ids);
        }
    }
}
