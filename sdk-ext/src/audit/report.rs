//! Finished audit reports: JSON events in pages (typed once from the page bytes, resumable,
//! budget-aware), CSV streamed as bytes or rows, deletion.

use super::csv::CsvReport;
use super::job::{create_audit_report, wait_for_audit_job};
use super::{AuditEvent, AuditJob, AuditRequest, AuditWait, ReportLocation};
use crate::Client;
use crate::error::Error;
use crate::limits::LimitClass;
use crate::prelude::*;
use crate::waiter::{Started, WaitError};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{AuditFormat, AuditReportKind};

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

impl ReadError {
    /// The server's answer that stopped the read (a 404, a quota), when it was one.
    pub fn api_error(&self) -> Option<&crate::error::ApiError> {
        self.error.api_error()
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

/// The page as sent, its events left as raw JSON slices of the body: the way back when a
/// page's events do not all fit its kind's type.
#[derive(serde::Deserialize)]
struct RawPage<'a> {
    total_count: Option<i64>,
    offset: Option<i64>,
    #[serde(borrow, default)]
    events: Vec<&'a serde_json::value::RawValue>,
}

/// The page as sent, every event decoded straight into `T`.
#[derive(serde::Deserialize)]
#[serde(bound = "T: serde::de::DeserializeOwned")]
struct TypedPage<T> {
    total_count: Option<i64>,
    offset: Option<i64>,
    #[serde(default)]
    events: Vec<T>,
}

/// The events of a decoded page, handed out one at a time (as [`AuditEvent`]s, or as sent).
type PageEvents<T> = Box<dyn ExactSizeIterator<Item = T> + Send>;

/// One event of a JSON report as sent: its JSON text, byte for byte.
pub type EventAsSent = Box<serde_json::value::RawValue>;

/// An event as sent, on one line (without a line break at its end), for NDJSON and other
/// line-oriented output: a line break in JSON text can only be whitespace between tokens (one
/// inside a string is escaped), so it becomes a space; the separators some readers also split
/// lines at (U+0085, U+2028, U+2029) can only be inside strings, where they are written as
/// escapes. Every field stays as sent.
pub fn one_line(event: &serde_json::value::RawValue) -> String {
    let json = event.get();
    let mut line = String::with_capacity(json.len() + 1);
    for c in json.chars() {
        match c {
            '\n' | '\r' => line.push(' '),
            '\u{85}' | '\u{2028}' | '\u{2029}' => line.push_str(&format!("\\u{:04x}", c as u32)),
            c => line.push(c),
        }
    }
    line
}

/// A page decoded from its body: the events are kept in their kind's own type (no bigger than
/// the struct a hand-written client would use) and become [`AuditEvent`]s as they are taken;
/// or kept as sent.
struct DecodedPage<T = AuditEvent> {
    total_count: Option<u64>,
    offset: Option<u64>,
    events: PageEvents<T>,
}

/// How a page's body becomes its events.
type Decode<T> = fn(AuditReportKind, &[u8]) -> Result<DecodedPage<T>, Error>;

impl DecodedPage<EventAsSent> {
    /// The page's events as sent: each event's JSON text copied out of the body.
    fn as_sent(_: AuditReportKind, body: &[u8]) -> Result<DecodedPage<EventAsSent>, Error> {
        let page: RawPage<'_> = Error::decode_slice(body)?;
        let events: Vec<EventAsSent> = page.events.into_iter().map(|e| e.to_owned()).collect();
        Ok(DecodedPage {
            total_count: count(page.total_count),
            offset: count(page.offset),
            events: Box::new(events.into_iter()),
        })
    }
}

impl DecodedPage {
    /// Decodes a page body in one pass, each event straight into the type of `kind`. When
    /// one event does not fit (or the body is not a page), the body is read again the way
    /// that keeps each misfit as [`AuditEvent::Other`] or names the error's path: a pass
    /// that succeeds gives the same events that way would.
    fn decode(kind: AuditReportKind, body: &[u8]) -> Result<DecodedPage, Error> {
        fn typed<T>(body: &[u8], wrap: fn(T) -> AuditEvent) -> Option<DecodedPage>
        where
            T: serde::de::DeserializeOwned + Send + 'static,
        {
            let page: TypedPage<T> = serde_json::from_slice(body).ok()?;
            Some(DecodedPage {
                total_count: count(page.total_count),
                offset: count(page.offset),
                events: Box::new(page.events.into_iter().map(wrap)),
            })
        }
        let one_pass = match kind {
            AuditReportKind::Logins => typed(body, AuditEvent::Logins),
            AuditReportKind::Files => typed(body, AuditEvent::Files),
            AuditReportKind::Permissions => typed(body, AuditEvent::Permissions),
            AuditReportKind::Users => typed(body, AuditEvent::Users),
            AuditReportKind::Groups => typed(body, AuditEvent::Groups),
            AuditReportKind::WorkgroupSettings => typed(body, AuditEvent::WorkgroupSettings),
            _ => typed(body, AuditEvent::Other),
        };
        if let Some(page) = one_pass {
            return Ok(page);
        }
        let page: RawPage<'_> = Error::decode_slice(body)?;
        let events: Vec<AuditEvent> = page
            .events
            .into_iter()
            .map(|raw| AuditEvent::from_raw(kind, raw.get()))
            .collect();
        Ok(DecodedPage {
            total_count: count(page.total_count),
            offset: count(page.offset),
            events: Box::new(events.into_iter()),
        })
    }
}

/// A page's `total_count` or `offset` as a count (`None` when absent or negative).
fn count(value: Option<i64>) -> Option<u64> {
    value.and_then(|v| u64::try_from(v).ok())
}

impl ReportPage {
    /// Decodes a page body (`{total_count, offset, count, events}`): each event straight from
    /// its bytes into the type of `kind`, for a page fetched some other way.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the JSON path when the body is not a report page.
    pub fn decode(kind: AuditReportKind, body: &[u8]) -> Result<ReportPage, Error> {
        let page = DecodedPage::decode(kind, body)?;
        Ok(ReportPage {
            total_count: page.total_count,
            offset: page.offset,
            events: page.events.collect(),
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
    let page = fetch_page(client, at, offset, count, DecodedPage::decode).await?;
    Ok(ReportPage {
        total_count: page.total_count,
        offset: page.offset,
        events: page.events.collect(),
    })
}

/// Fetches and decodes one page; its body is dropped before the events are handed out.
async fn fetch_page<T>(
    client: &Client,
    at: &ReportLocation,
    offset: u64,
    count: u64,
    decode: Decode<T>,
) -> Result<DecodedPage<T>, Error> {
    check_window(offset, count)?;
    let query = [("offset", offset), ("count", count.max(1))];
    let response = audit_report_get(client, at, "application/json", &query).await?;
    let body = read_capped(response, MAX_PAGE_BYTES).await?;
    decode(at.kind, &body)
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
        request_id: None,
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
    report_events(client, at, read, DecodedPage::decode)
}

/// [`audit_report_events`], each event as sent.
pub(crate) fn audit_report_events_as_sent(
    client: &Client,
    at: ReportLocation,
    read: ReportRead,
) -> BoxStream<'static, Result<EventAsSent, ReadError>> {
    report_events(client, at, read, DecodedPage::as_sent)
}

fn report_events<T: Send + 'static>(
    client: &Client,
    at: ReportLocation,
    read: ReportRead,
    decode: Decode<T>,
) -> BoxStream<'static, Result<T, ReadError>> {
    if let Err(error) = read.check() {
        let refused = ReadError {
            resume_at: read.offset,
            error,
        };
        return futures_util::stream::once(async move { Err(refused) }).boxed();
    }
    ReportEvents {
        client: client.clone(),
        at,
        page_size: read.page_size.max(1),
        offset: read.offset,
        total: None,
        page: Box::new(std::iter::empty()),
        fetching: None,
        done: false,
        decode,
    }
    .boxed()
}

/// The stream of [`audit_report_events`]: an event of the page in hand is handed out at
/// once; when the page is used up it is dropped, and the next one fetched.
struct ReportEvents<T> {
    client: Client,
    at: ReportLocation,
    page_size: u64,
    /// The index of the first event of the next page.
    offset: u64,
    total: Option<u64>,
    /// The events of the page in hand not yet handed out.
    page: PageEvents<T>,
    fetching: Option<BoxFuture<'static, Result<DecodedPage<T>, Error>>>,
    done: bool,
    decode: Decode<T>,
}

impl<T> ReportEvents<T> {
    /// Takes in a fetched page: its events, or the error that ends the read.
    fn take(&mut self, page: Result<DecodedPage<T>, Error>) -> Result<(), ReadError> {
        let fail = |s: &mut Self, error| {
            s.done = true;
            Err(ReadError {
                resume_at: s.offset,
                error,
            })
        };
        let page = match page {
            Ok(page) => page,
            Err(error) => return fail(self, error),
        };
        self.total = page.total_count;
        let delivered = page.events.len() as u64;
        let short_of_total = self.total.is_some_and(|total| self.offset < total);
        let problem = if page.offset.is_some_and(|o| o != self.offset) {
            Some(format!(
                "asked for events from {} and got a page from {:?}",
                self.offset, page.offset
            ))
        } else if delivered == 0 && short_of_total {
            Some(format!(
                "an empty page at event {} of {:?}",
                self.offset, self.total
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            let error = Error::Decode {
                path: "events".into(),
                message,
                body: Default::default(),
                request_id: None,
            };
            return fail(self, error);
        }
        // An empty page ends the read; without a total, so does a short one.
        self.done = delivered == 0 || (self.total.is_none() && delivered < self.page_size);
        self.offset = self.offset.saturating_add(delivered);
        self.page = page.events;
        Ok(())
    }
}

impl<T: Send + 'static> futures_util::Stream for ReportEvents<T> {
    type Item = Result<T, ReadError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if let Some(event) = this.page.next() {
                return Poll::Ready(Some(Ok(event)));
            }
            let fetching = match &mut this.fetching {
                Some(fetching) => fetching,
                None => {
                    let finished = this.total.is_some_and(|total| this.offset >= total);
                    if this.done || finished {
                        return Poll::Ready(None);
                    }
                    // The used-up page goes before the next one comes.
                    this.page = Box::new(std::iter::empty());
                    let (client, at) = (this.client.clone(), this.at.clone());
                    let (offset, count, decode) = (this.offset, this.page_size, this.decode);
                    this.fetching.insert(Box::pin(async move {
                        fetch_page(&client, &at, offset, count, decode).await
                    }))
                }
            };
            let page = std::task::ready!(fetching.as_mut().poll(cx));
            this.fetching = None;
            if let Err(error) = this.take(page) {
                return Poll::Ready(Some(Err(error)));
            }
        }
    }
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
        .map_err(WaitError::before_waiting)?;
    let location = match wait_for_audit_job(client, &job, how).await {
        Ok(location) => location,
        Err(error) => {
            let started = Started::AuditJob {
                id: job.id,
                kind: job.kind,
                format: job.format,
            };
            return Err(error.after_starting(started));
        }
    };
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
                request_id: None,
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

    #[test]
    fn an_event_is_one_line_of_ndjson_whatever_whitespace_it_came_with() {
        let sent = "{\"a\": \"x\\ny\u{2028}z\u{85}\",\r\n  \"b\": [1,\n2]}";
        let raw = serde_json::value::RawValue::from_string(sent.to_string()).unwrap();
        let text = one_line(&raw);
        assert_eq!(text.lines().count(), 1);
        assert!(!text.contains(['\u{85}', '\u{2028}', '\u{2029}', '\r']));
        assert!(!text.ends_with('\n'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(sent).unwrap()
        );
    }

    #[test]
    fn one_event_that_does_not_fit_stays_other_as_sent_and_the_rest_are_typed() {
        let body = br#"{"total_count": 3, "offset": 0, "events": [
            {"username": "alice", "user_id": 1},
            {"username": "bob", "user_id": "two", "extra": {"a": [null, 1.5]}},
            {"username": "carol", "user_id": 3}]}"#;
        let page = ReportPage::decode(AuditReportKind::Logins, body).unwrap();
        assert!(matches!(&page.events[0], AuditEvent::Logins(l) if l.user_id == Some(1)));
        let sent = serde_json::json!({"username": "bob", "user_id": "two",
                                      "extra": {"a": [null, 1.5]}});
        assert_eq!(
            page.events[1],
            AuditEvent::Other(sent.as_object().unwrap().clone())
        );
        assert!(matches!(&page.events[2], AuditEvent::Logins(l) if l.user_id == Some(3)));
    }

    #[test]
    fn a_body_that_is_not_a_page_is_a_decode_error_naming_the_path() {
        let error =
            ReportPage::decode(AuditReportKind::Logins, br#"{"events": {"a": 1}}"#).unwrap_err();
        assert!(
            matches!(&error, Error::Decode { path, .. } if path == "events"),
            "{error:?}"
        );
    }

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
        fn a_page_decodes_as_each_event_alone_would_misfits_kept_as_sent(
            kind in proptest::sample::select(&[
                AuditReportKind::Logins, AuditReportKind::Permissions, AuditReportKind::Etmf,
            ][..]),
            events in proptest::collection::vec(prop_oneof![
                4 => (any::<i64>(), "[a-z\"\\\\]{0,6}").prop_map(|(id, name)| {
                    serde_json::json!({"user_id": id, "username": name, "change": "+Editor"})
                }),
                1 => Just(serde_json::json!({"user_id": "seven", "username": 7})),
                1 => Just(serde_json::json!([1, 2])),
                1 => Just(serde_json::json!(null)),
            ], 0..12),
            offset in proptest::option::of(any::<i64>()),
        ) {
            let body = serde_json::json!({"total_count": events.len(), "offset": offset,
                                          "events": events}).to_string();
            let page = ReportPage::decode(kind, body.as_bytes()).unwrap();
            let one_by_one: Vec<AuditEvent> = events
                .iter()
                .map(|e| AuditEvent::from_raw(kind, &e.to_string()))
                .collect();
            prop_assert_eq!(page.events, one_by_one);
            prop_assert_eq!(page.offset, offset.and_then(|o| u64::try_from(o).ok()));
            prop_assert_eq!(page.total_count, Some(events.len() as u64));
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
