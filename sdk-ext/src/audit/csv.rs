//! A CSV audit report as it downloads ([`CsvReport`]): its bytes, or its rows parsed as the
//! body arrives ([`CsvRows`]).
//!
//! The platform's CSV starts with a title row ("This report reflects activity up to …")
//! before the header; the reference shows the logins columns (`Username, Event, IP Address,
//! Access, Time`). [`CsvRows`] sets the title apart, maps every row to the header and keeps one
//! row in memory at a time, with a cap on a row's size so a hostile body cannot grow memory
//! without bound. Parsing is RFC 4180 (quotes, doubled quotes, newlines inside quotes) by
//! `csv-core`.

use crate::error::Error;
use bytes::Bytes;
use std::sync::Arc;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The largest row (the bytes of its fields) [`CsvRows`] holds.
pub const MAX_ROW_BYTES: usize = 16 << 20;

/// The most fields of one row [`CsvRows`] holds.
pub const MAX_FIELDS: usize = 65_536;

/// The start of the platform's title row.
const TITLE_PREFIX: &str = "This report";

/// A CSV report being downloaded: the body is read chunk by chunk, never whole, and each
/// read waits at most the client's attempt timeout, so a report of any size downloads while
/// data flows.
#[derive(Debug)]
pub struct CsvReport {
    response: reqwest::Response,
    received: u64,
    /// Whether the `Content-Type` has been checked (on the first read of the body).
    checked: bool,
}

/// Whether a `Content-Type` can carry a CSV body: `text/csv` and its aliases, and the generic
/// `text/plain` and `application/octet-stream`. JSON, HTML (an error or login page) and
/// anything else cannot.
fn is_csv_content_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "text/csv"
            | "application/csv"
            | "text/comma-separated-values"
            | "application/vnd.ms-excel"
            | "text/plain"
            | "application/octet-stream"
    )
}

impl CsvReport {
    /// Copies the CSV bytes to `writer` as they arrive and returns how many were written.
    ///
    /// # Errors
    /// [`CsvError::Broken`] (with the bytes received) when the download breaks,
    /// [`CsvError::Write`] when the writer fails.
    pub async fn copy_to<W: AsyncWrite + Unpin>(mut self, writer: &mut W) -> Result<u64, CsvError> {
        while let Some(chunk) = self.chunk().await? {
            writer.write_all(&chunk).await.map_err(CsvError::Write)?;
        }
        writer.flush().await.map_err(CsvError::Write)?;
        Ok(self.received)
    }

    /// [`CsvReport::copy_to`] without the platform's title row: the header comes first, and
    /// every byte after the title's line is copied as sent. Returns the bytes written. A
    /// report whose first line is not a title is copied whole.
    ///
    /// # Errors
    /// As [`CsvReport::copy_to`].
    pub async fn copy_without_title_to<W: AsyncWrite + Unpin>(
        mut self,
        writer: &mut W,
    ) -> Result<u64, CsvError> {
        // The first line is held until it ends (at most a row's size), then dropped when it
        // is the title.
        let mut first: Option<Vec<u8>> = Some(Vec::new());
        let mut written = 0u64;
        while let Some(chunk) = self.chunk().await? {
            let rest: &[u8] = match first.as_mut() {
                None => &chunk,
                Some(held) => {
                    let end = chunk.iter().position(|b| *b == b'\n');
                    held.extend_from_slice(&chunk[..end.map_or(chunk.len(), |at| at + 1)]);
                    if end.is_none() && held.len() <= MAX_ROW_BYTES {
                        continue;
                    }
                    let line = first.take().unwrap_or_default();
                    if !is_title_line(&line) {
                        writer.write_all(&line).await.map_err(CsvError::Write)?;
                        written += line.len() as u64;
                    }
                    &chunk[end.map_or(chunk.len(), |at| at + 1)..]
                }
            };
            writer.write_all(rest).await.map_err(CsvError::Write)?;
            written += rest.len() as u64;
        }
        if let Some(line) = first.filter(|line| !is_title_line(line)) {
            writer.write_all(&line).await.map_err(CsvError::Write)?;
            written += line.len() as u64;
        }
        writer.flush().await.map_err(CsvError::Write)?;
        Ok(written)
    }

    /// The rows of the report, parsed as they arrive (flat memory), the platform's title
    /// row set apart and each row mapped to the header.
    pub fn rows(self) -> CsvRows {
        CsvRows::new(self)
    }

    /// A CSV report read from a response the caller already has (for example a report
    /// fetched through [`Client::sdk`](crate::Client::sdk), or one built in a test).
    pub fn from_response(response: reqwest::Response) -> Self {
        CsvReport {
            response,
            received: 0,
            checked: false,
        }
    }

    /// The response's `Content-Type`, as sent (`None` when there is none or it is not text).
    pub fn content_type(&self) -> Option<&str> {
        self.response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }

    /// The next chunk of the body; before the first, the `Content-Type` is checked (a body
    /// without one is read as CSV).
    pub(crate) async fn chunk(&mut self) -> Result<Option<bytes::Bytes>, CsvError> {
        if !self.checked {
            self.checked = true;
            let sent = self
                .response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            if let Some(content_type) = sent.filter(|ct| !is_csv_content_type(ct)) {
                return Err(CsvError::NotCsv { content_type });
            }
        }
        match self.response.chunk().await {
            Ok(chunk) => {
                self.received += chunk.as_ref().map_or(0, |c| c.len() as u64);
                Ok(chunk)
            }
            Err(error) => Err(CsvError::Broken {
                received: self.received,
                error: Error::from(error),
            }),
        }
    }
}

/// Why a CSV download stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum CsvError {
    /// The API refused the download before it started.
    Api(Error),
    /// The connection broke, or no data came within the attempt timeout, after `received`
    /// bytes: the file is incomplete.
    Broken {
        /// Bytes received before it broke.
        received: u64,
        /// What broke.
        error: Error,
    },
    /// A row is longer than [`super::MAX_ROW_BYTES`] or has more than
    /// [`super::MAX_FIELDS`] fields: not a report the SDK can hold in memory row by row.
    RowTooLarge {
        /// The 1-based number of the record.
        record: u64,
    },
    /// The writer failed.
    Write(std::io::Error),
    /// The response is not CSV: its `Content-Type` (for example `application/json`, or
    /// `text/html` from a proxy's error page) says so. Nothing was read or written.
    NotCsv {
        /// The `Content-Type` that came, as sent.
        content_type: String,
    },
}

impl std::fmt::Display for CsvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CsvError::Api(_) => f.write_str("csv download refused"),
            CsvError::Broken { received, .. } => {
                write!(
                    f,
                    "csv download broke after {received} bytes; the file is incomplete"
                )
            }
            CsvError::RowTooLarge { record } => write!(f, "csv record {record} is too large"),
            CsvError::Write(_) => f.write_str("csv write failed"),
            CsvError::NotCsv { content_type } => {
                write!(
                    f,
                    "expected a csv report, got content-type {content_type:?}"
                )
            }
        }
    }
}

impl std::error::Error for CsvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CsvError::Api(e) | CsvError::Broken { error: e, .. } => Some(e),
            CsvError::Write(e) => Some(e),
            CsvError::RowTooLarge { .. } | CsvError::NotCsv { .. } => None,
        }
    }
}

impl CsvError {
    /// The server's answer that refused the download ([`CsvError::Api`]), or that a broken
    /// download ended with; none for a local failure.
    pub fn api_error(&self) -> Option<&crate::error::ApiError> {
        match self {
            CsvError::Api(e) | CsvError::Broken { error: e, .. } => e.api_error(),
            CsvError::RowTooLarge { .. } | CsvError::Write(_) | CsvError::NotCsv { .. } => None,
        }
    }
}

/// One row of a CSV report, read in place: its fields are borrowed from the reader's buffer,
/// which the next row reuses (as the `csv` crate's `ByteRecord`). From
/// [`CsvRows::next_record`]; [`CsvRecord::to_owned`] keeps a copy ([`CsvRow`]).
#[derive(Debug, Clone, Copy)]
pub struct CsvRecord<'a> {
    header: &'a Arc<[String]>,
    bytes: &'a [u8],
    ends: &'a [usize],
}

impl<'a> CsvRecord<'a> {
    /// How many fields the row has.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the row has no fields.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The field at `index` as bytes, as they came.
    pub fn field_bytes(&self, index: usize) -> Option<&'a [u8]> {
        field_in(self.bytes, self.ends, index)
    }

    /// The field at `index` as text: borrowed, unless it is not UTF-8 (then each bad
    /// sequence is replaced by U+FFFD in a copy).
    pub fn field(&self, index: usize) -> Option<std::borrow::Cow<'a, str>> {
        self.field_bytes(index).map(String::from_utf8_lossy)
    }

    /// The value of the column named `column` (as in the header), if the row has it.
    pub fn get(&self, column: &str) -> Option<std::borrow::Cow<'a, str>> {
        let index = self.header.iter().position(|h| h == column)?;
        self.field(index)
    }

    /// The fields in column order, as bytes.
    pub fn iter_bytes(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let bytes = self.bytes;
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let field = bytes.get(start..end).unwrap_or_default();
            start = end;
            field
        })
    }

    /// The fields in column order, as text (see [`CsvRecord::field`]).
    pub fn iter(&self) -> impl Iterator<Item = std::borrow::Cow<'a, str>> + 'a {
        self.iter_bytes().map(String::from_utf8_lossy)
    }

    /// The header of the report.
    pub fn header(&self) -> &'a [String] {
        self.header
    }

    /// An owned copy of the row.
    pub fn to_owned(&self) -> CsvRow {
        CsvRow {
            header: self.header.clone(),
            fields: self.iter().map(std::borrow::Cow::into_owned).collect(),
        }
    }
}

/// One row of a CSV report, owned, with the header it belongs to: from [`CsvRows::next`], or
/// [`CsvRecord::to_owned`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRow {
    header: Arc<[String]>,
    fields: Vec<String>,
}

impl CsvRow {
    /// The value of the column named `column` (as in the header), if the row has it.
    pub fn get(&self, column: &str) -> Option<&str> {
        let index = self.header.iter().position(|h| h == column)?;
        self.fields.get(index).map(String::as_str)
    }

    /// The fields in column order.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// The header of the report.
    pub fn header(&self) -> &[String] {
        &self.header
    }
}

/// The rows of a CSV report as they arrive: from [`CsvReport::rows`].
#[derive(Debug)]
pub struct CsvRows {
    report: CsvReport,
    reader: csv_core::Reader,
    /// The chunk being read, and how much of it csv-core has taken.
    input: Bytes,
    read: usize,
    body_ended: bool,
    /// The start of the body has been read (and a byte order mark dropped).
    started: bool,
    records: u64,
    out: Vec<u8>,
    ends: Vec<usize>,
    /// How much of `out` and `ends` the row being read has filled, while it waits for the
    /// next chunk.
    row: (usize, usize),
    title: Option<String>,
    header: Option<Arc<[String]>>,
    finished: bool,
}

impl CsvRows {
    pub(crate) fn new(report: CsvReport) -> Self {
        CsvRows {
            report,
            reader: csv_core::Reader::new(),
            input: Bytes::new(),
            read: 0,
            body_ended: false,
            started: false,
            records: 0,
            out: vec![0; 4096],
            ends: vec![0; 64],
            row: (0, 0),
            title: None,
            header: None,
            finished: false,
        }
    }

    /// The title row, once the first row has been read (`None` when the report has none).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The header, once the first row has been read.
    pub fn header(&self) -> Option<&[String]> {
        self.header.as_deref()
    }

    /// The next data row, owned; `None` at the end of the report. [`CsvRows::next_record`]
    /// reads the same row in place, without a copy of its fields.
    ///
    /// # Errors
    /// [`CsvError::Broken`] when the download breaks (with the bytes received),
    /// [`CsvError::RowTooLarge`] for a row over [`MAX_ROW_BYTES`] or [`MAX_FIELDS`].
    pub async fn next(&mut self) -> Option<Result<CsvRow, CsvError>> {
        Some(self.next_record().await?.map(|record| record.to_owned()))
    }

    /// The next data row, read in place: its fields borrow the reader's buffer until the
    /// next call; `None` at the end of the report.
    ///
    /// # Errors
    /// As [`CsvRows::next`].
    ///
    /// ```no_run
    /// # use pubapi_sdk_ext::audit::ReportLocation;
    /// # async fn run(client: pubapi_sdk_ext::Client, location: &ReportLocation) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut rows = client.audit().csv(location).await?.rows();
    /// let mut failures = 0;
    /// while let Some(row) = rows.next_record().await {
    ///     if row?.get("Event").as_deref() == Some("Login failed") {
    ///         failures += 1;
    ///     }
    /// }
    /// # let _ = failures;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next_record(&mut self) -> Option<Result<CsvRecord<'_>, CsvError>> {
        // A data row whole in the chunk in hand is read without entering `record`'s future.
        // Anything else (the end, a row over the caps, the chunk used up) is left to
        // `record`, which meets it again in the same state.
        if self.started
            && !self.finished
            && self.header.is_some()
            && let Parsed::Record(fields) = self.parse()
        {
            return Some(Ok(CsvRecord {
                header: self.header.as_ref()?,
                bytes: &self.out,
                ends: &self.ends[..fields],
            }));
        }
        loop {
            let fields = match self.record().await {
                Ok(Some(fields)) => fields,
                Ok(None) => return None,
                Err(e) => {
                    self.finished = true;
                    return Some(Err(e));
                }
            };
            if self.header.is_none() {
                let owned: Vec<String> =
                    (0..fields).map(|i| self.field_of(i).into_owned()).collect();
                if self.records == 1 && is_title(&owned) {
                    self.title = owned.into_iter().next();
                } else {
                    self.header = Some(owned.into());
                }
                continue;
            }
            let header = self.header.as_ref()?;
            return Some(Ok(CsvRecord {
                header,
                bytes: &self.out,
                ends: &self.ends[..fields],
            }));
        }
    }

    /// The field `index` of the record just read, as text.
    fn field_of(&self, index: usize) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(field_in(&self.out, &self.ends, index).unwrap_or_default())
    }

    /// Reads the next record into `out` and `ends`, reading more of the body as needed, and
    /// says how many fields it has.
    async fn record(&mut self) -> Result<Option<usize>, CsvError> {
        if self.finished {
            return Ok(None);
        }
        if !self.started {
            self.start().await?;
        }
        loop {
            match self.parse() {
                Parsed::Record(fields) => return Ok(Some(fields)),
                Parsed::End => return Ok(None),
                Parsed::TooLarge => {
                    return Err(CsvError::RowTooLarge {
                        record: self.records + 1,
                    });
                }
                Parsed::NeedInput => match self.report.chunk().await? {
                    Some(chunk) => (self.input, self.read) = (chunk, 0),
                    None => self.body_ended = true,
                },
            }
        }
    }

    /// Reads the chunk in hand until a record ends, the report ends, or more of the body is
    /// needed. No await in here: the row's progress stays in locals while csv-core runs (an
    /// async loop keeps it in its future, written back to memory at every step), and is
    /// saved in `row` whenever it returns without a whole record (the chunk used up in the
    /// middle of a row, or a row over the caps), so that a second call goes on from where
    /// the first stopped. What it returns is small enough to come back in registers.
    #[inline]
    fn parse(&mut self) -> Parsed {
        let (mut out_len, mut ends_len) = self.row;
        loop {
            if self.read == self.input.len() && !self.body_ended {
                self.row = (out_len, ends_len);
                return Parsed::NeedInput;
            }
            let (result, read, written, ended) = self.reader.read_record(
                &self.input[self.read..],
                &mut self.out[out_len..],
                &mut self.ends[ends_len..],
            );
            self.read += read;
            out_len += written;
            ends_len += ended;
            match result {
                // With the body ended, the empty input is fed once more: csv-core then sees
                // the end.
                csv_core::ReadRecordResult::InputEmpty => {}
                csv_core::ReadRecordResult::OutputFull => {
                    if !grow(&mut self.out, MAX_ROW_BYTES) {
                        self.row = (out_len, ends_len);
                        return Parsed::TooLarge;
                    }
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    if !grow(&mut self.ends, MAX_FIELDS) {
                        self.row = (out_len, ends_len);
                        return Parsed::TooLarge;
                    }
                }
                csv_core::ReadRecordResult::Record => {
                    self.records += 1;
                    self.row = (0, 0);
                    return Parsed::Record(ends_len);
                }
                csv_core::ReadRecordResult::End => {
                    self.finished = true;
                    return Parsed::End;
                }
            }
        }
    }
}

/// Doubles `buffer` (zero-filled), up to `cap`; false when it already holds `cap`.
#[inline]
fn grow<T: Copy + Default>(buffer: &mut Vec<T>, cap: usize) -> bool {
    if buffer.len() >= cap {
        return false;
    }
    buffer.resize((buffer.len() * 2).min(cap), T::default());
    true
}

/// What [`CsvRows::parse`] got to in the chunk in hand.
enum Parsed {
    /// A record of this many fields is in `out` and `ends`.
    Record(usize),
    /// The report has no more records.
    End,
    /// The chunk is used up before the record ends: the next one is needed.
    NeedInput,
    /// The record is over [`MAX_ROW_BYTES`] or [`MAX_FIELDS`].
    TooLarge,
}

/// The bytes of field `index` of a record whose fields end at `ends` in `bytes`.
fn field_in<'a>(bytes: &'a [u8], ends: &[usize], index: usize) -> Option<&'a [u8]> {
    let end = *ends.get(index)?;
    let start = index.checked_sub(1).map_or(0, |i| ends[i]);
    bytes.get(start..end)
}

impl CsvRows {
    /// Reads the first three bytes of the body (or all of a shorter one) and drops a byte
    /// order mark, which csv-core would otherwise take for the end of the input when a
    /// chunk holds nothing else.
    async fn start(&mut self) -> Result<(), CsvError> {
        let mut head = Vec::new();
        while head.len() < 3 {
            match self.report.chunk().await? {
                Some(chunk) => head.extend_from_slice(&chunk),
                None => {
                    self.body_ended = true;
                    break;
                }
            }
        }
        let head = Bytes::from(head);
        self.input = match head.strip_prefix(b"\xEF\xBB\xBF") {
            Some(_) => head.slice(3..),
            None => head,
        };
        self.started = true;
        Ok(())
    }
}

/// The platform's title row: one field (trailing empty ones allowed) that starts with
/// [`TITLE_PREFIX`].
/// Whether a first line (its bytes, the line end included) is the platform's title row: one
/// field, unquoted, starting with the title's words (the same test as [`is_title`] on the
/// line's fields).
fn is_title_line(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\r', '\n']);
    let fields: Vec<String> = text.split(',').map(str::to_string).collect();
    !text.contains('"') && is_title(&fields)
}

fn is_title(fields: &[String]) -> bool {
    let filled = fields.iter().filter(|f| !f.is_empty()).count();
    filled == 1 && fields[0].trim_start().starts_with(TITLE_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A CSV report whose body arrives in the given chunks.
    fn report(chunks: Vec<Vec<u8>>) -> CsvReport {
        let stream = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
        );
        let response = http::Response::new(reqwest::Body::wrap_stream(stream));
        CsvReport::from_response(reqwest::Response::from(response))
    }

    fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for point in points.into_iter().chain([body.len()]) {
            chunks.push(body[start..point].to_vec());
            start = point;
        }
        chunks
    }

    proptest! {
        /// Cut anywhere, a report copies without its title row as its bytes after the title's
        /// line, and a report without one as all of its bytes.
        #[test]
        fn copy_without_title_drops_exactly_the_title_line(
            cuts in proptest::collection::vec(0usize..200, 0..6),
            titled in any::<bool>(),
        ) {
            let rest = b"Username,Event,IP Address,Access,Time\r\nadmin,logins,10.0.0.1,Web,\"2026-12-04T01:26:23Z\"\r\n";
            let title = b"This report reflects activity up to 12/6/26 23:59:59\r\n";
            let body: Vec<u8> = if titled { [&title[..], rest].concat() } else { rest.to_vec() };
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let mut out = Vec::new();
            let written = runtime
                .block_on(report(split(&body, &cuts)).copy_without_title_to(&mut out))
                .unwrap();
            prop_assert_eq!(&out[..], &rest[..]);
            prop_assert_eq!(written, rest.len() as u64);
        }
    }

    #[test]
    fn a_title_alone_copies_as_nothing_and_a_quoted_first_field_is_no_title() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (body, kept) in [
            (
                &b"This report reflects activity up to 12/6/26 23:59:59"[..],
                &b""[..],
            ),
            (
                b"\"This report\",x\r\n1,2\r\n",
                b"\"This report\",x\r\n1,2\r\n",
            ),
        ] {
            let mut out = Vec::new();
            runtime
                .block_on(report(vec![body.to_vec()]).copy_without_title_to(&mut out))
                .unwrap();
            assert_eq!(out, kept, "{}", String::from_utf8_lossy(body));
        }
    }

    fn quote(field: &str) -> String {
        format!("\"{}\"", field.replace('"', "\"\""))
    }

    async fn all_rows(mut rows: CsvRows) -> (Option<String>, Vec<Vec<String>>) {
        let mut out = Vec::new();
        while let Some(row) = rows.next().await {
            out.push(row.unwrap().fields().to_vec());
        }
        (rows.title().map(str::to_string), out)
    }

    #[test]
    fn a_byte_order_mark_split_across_chunks_is_dropped_and_a_padded_title_is_a_title() {
        let body = b"\xEF\xBB\xBFThis report reflects activity up to 1/31/26 23:59:59,,\r\nUsername,Event\r\nalice,login\r\n";
        for cut in 0..6 {
            let chunks = vec![Vec::new(), body[..cut].to_vec(), body[cut..].to_vec()];
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let (title, rows) = runtime.block_on(async {
                let mut rows = report(chunks).rows();
                let row = rows.next().await.unwrap().unwrap();
                (rows.title().map(str::to_string), row)
            });
            assert_eq!(
                title.as_deref(),
                Some("This report reflects activity up to 1/31/26 23:59:59"),
                "cut at {cut}"
            );
            assert_eq!(rows.get("Username"), Some("alice"), "cut at {cut}");
        }
    }

    #[test]
    fn a_record_lends_its_fields_in_place_and_gives_an_owned_copy_on_request() {
        let body = b"Username,Event\r\nalice,\"log,in\"\r\nb\xffb,logout\r\n".to_vec();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut rows = report(vec![body]).rows();
            let record = rows.next_record().await.unwrap().unwrap();
            assert!(matches!(
                record.get("Event"),
                Some(std::borrow::Cow::Borrowed("log,in"))
            ));
            assert_eq!(record.len(), 2);
            let owned = record.to_owned();
            assert_eq!(owned.fields(), ["alice", "log,in"]);
            let record = rows.next_record().await.unwrap().unwrap();
            // Not UTF-8: the bytes as they came, the text with a replacement character.
            assert_eq!(record.field_bytes(0), Some(&b"b\xffb"[..]));
            assert_eq!(record.field(0).as_deref(), Some("b\u{fffd}b"));
            assert_eq!(record.field(2), None);
            assert!(rows.next_record().await.is_none());
            assert_eq!(
                rows.header(),
                Some(&["Username".to_string(), "Event".into()][..])
            );
        });
    }

    /// Every field of every record read in place, as text.
    async fn all_records(mut rows: CsvRows) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        while let Some(record) = rows.next_record().await {
            out.push(record.unwrap().iter().map(|f| f.into_owned()).collect());
        }
        out
    }

    #[test]
    fn fields_cut_at_every_chunk_boundary_read_the_same_in_place() {
        // Quoted commas, doubled quotes, a newline inside quotes, CRLF, an empty field and
        // a last row without a newline: cut at every pair of points.
        let body = "Username,Event\r\n\"a,b\",\"say \"\"hi\"\"\"\r\n,\"two\nlines\"\r\nlast,row";
        let expected = vec![
            vec!["a,b".to_string(), "say \"hi\"".into()],
            vec![String::new(), "two\nlines".into()],
            vec!["last".into(), "row".into()],
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let bytes = body.as_bytes();
        for first in 0..=bytes.len() {
            for second in first..=bytes.len() {
                let chunks = split(bytes, &[first, second]);
                let records = runtime.block_on(all_records(report(chunks).rows()));
                assert_eq!(records, expected, "cut at {first} and {second}");
            }
        }
    }

    #[test]
    fn a_row_longer_than_the_buffer_arriving_in_small_chunks_reads_whole() {
        let long = "x".repeat(10_000);
        let body = format!("A,B\r\n{long},\"{long}\"\r\nend,end\r\n");
        let chunks: Vec<Vec<u8>> = body.as_bytes().chunks(7).map(<[u8]>::to_vec).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let records = runtime.block_on(all_records(report(chunks).rows()));
        assert_eq!(
            records,
            vec![vec![long.clone(), long], vec!["end".into(), "end".into()]]
        );
    }

    #[test]
    fn a_row_over_the_field_or_byte_cap_is_refused_naming_its_record() {
        let too_many_fields = ",".repeat(MAX_FIELDS);
        let too_many_bytes = "x".repeat(MAX_ROW_BYTES + 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // In chunks of 64 KiB the row over the cap waits for chunks; in one chunk it is read
        // whole from the chunk in hand, after a data row read the same way. A row after it
        // is never handed out.
        let cases = [&too_many_fields, &too_many_bytes]
            .into_iter()
            .flat_map(|row| [(row, 64 << 10), (row, usize::MAX)]);
        for (row, chunk) in cases {
            let body = format!("A,B\r\na,b\r\n{row}\r\nc,d\r\n").into_bytes();
            let chunks: Vec<Vec<u8>> = body.chunks(chunk).map(<[u8]>::to_vec).collect();
            runtime.block_on(async {
                let mut rows = report(chunks).rows();
                assert!(rows.next_record().await.unwrap().is_ok());
                match rows.next_record().await.unwrap() {
                    Err(CsvError::RowTooLarge { record: 3 }) => {}
                    // A record's fields only: its buffer is megabytes.
                    other => panic!("chunks of {chunk}: {:?}", other.map(|r| r.len())),
                }
                assert!(rows.next_record().await.is_none());
            });
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        #[test]
        fn rows_survive_any_chunking_and_round_trip(
            rows in proptest::collection::vec(
                proptest::collection::vec("[a-z ,\"\n\u{e9}]{0,8}", 3), 0..12),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
            title in any::<bool>(),
        ) {
            let mut body = String::new();
            if title {
                body.push_str("This report reflects activity up to 2026-01-01\r\n");
            }
            body.push_str("A,B,C\r\n");
            for row in &rows {
                let fields: Vec<String> = row.iter().map(|f| quote(f)).collect();
                body.push_str(&fields.join(","));
                body.push_str("\r\n");
            }
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let (seen_title, parsed) = runtime
                .block_on(all_rows(report(split(body.as_bytes(), &cuts)).rows()));
            prop_assert_eq!(seen_title.is_some(), title);
            prop_assert_eq!(parsed, rows);
        }

        #[test]
        fn any_bytes_end_without_a_panic(
            body in proptest::collection::vec(any::<u8>(), 0..2000),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let mut rows = report(split(&body, &cuts)).rows();
                let mut count = 0;
                while let Some(row) = rows.next().await {
                    count += 1;
                    if row.is_err() {
                        break;
                    }
                }
                // At most one row per byte, plus the last one without a newline.
                assert!(count <= body.len() + 1);
            });
        }
    }
}
