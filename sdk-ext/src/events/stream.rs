//! A resumable stream of polling events.

use super::{EventQuery, EventsVersion, PollingEvent, Suppress};
use crate::Client;
use crate::error::Error;
use futures_util::Stream;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// Where a stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStart {
    /// After the newest stored event (`GET /v1/events/cursor`): only what happens from now.
    Latest,
    /// After the oldest stored event still kept: everything the platform keeps.
    Oldest,
    /// After a saved event id (a checkpoint): resumes with no loss and no duplicates.
    After(i64),
}

/// Something the stream says besides events.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamNotice {
    /// The cursor was below the oldest stored event (the stream keeps the latest 500,000
    /// events and at most 30 days), so the platform restarted from the oldest: the events
    /// after `cursor` and before `oldest` may have been missed.
    MayHaveMissed {
        /// The cursor the stream asked from.
        cursor: i64,
        /// The oldest id the platform still has.
        oldest: i64,
    },
    /// Nothing follows the cursor (the API's 204); the stream waits before polling again.
    CaughtUp {
        /// How long until the next poll.
        next_poll_in: Duration,
    },
}

/// One item of an [`EventStream`].
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// An event; after it, [`EventStream::checkpoint`] is its id.
    Event(Box<PollingEvent>),
    /// A notice.
    Notice(StreamNotice),
}

/// Builds an [`EventStream`]; see [`EventStream::builder`].
#[derive(Debug, Clone)]
pub struct EventStreamBuilder {
    version: EventsVersion,
    start: StreamStart,
    query: EventQuery,
    poll_interval: Duration,
}

impl EventStreamBuilder {
    /// Where to start (default: [`StreamStart::Latest`]).
    pub fn start(mut self, start: StreamStart) -> Self {
        self.start = start;
        self
    }

    /// Only events at this path and below.
    pub fn folder(mut self, folder: impl Into<String>) -> Self {
        self.query.folder = Some(folder.into());
        self
    }

    /// Drop events of the current application or user.
    pub fn suppress(mut self, suppress: Suppress) -> Self {
        self.query.suppress = Some(suppress);
        self
    }

    /// Only these event types (`file_system`, `note`, `permission_change`).
    pub fn types<I: IntoIterator<Item = S>, S: Into<String>>(mut self, types: I) -> Self {
        self.query.types = types.into_iter().map(Into::into).collect();
        self
    }

    /// Page size, 1 to 100 (default 100, the largest the API serves).
    pub fn page_size(mut self, count: u8) -> Self {
        self.query.count = Some(count);
        self
    }

    /// How long to wait after catching up before polling again. The reference asks for 5
    /// minutes or more; shorter values are raised to [`EventStream::MIN_POLL_INTERVAL`].
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(EventStream::MIN_POLL_INTERVAL);
        self
    }

    /// The stream, reading through `client`.
    pub fn build(self, client: Client) -> EventStream {
        EventStream {
            client,
            version: self.version,
            start: Some(self.start),
            query: self.query,
            poll_interval: self.poll_interval,
            cursor: None,
            buffer: VecDeque::new(),
            next_poll: None,
            caught_up: false,
        }
    }
}

/// A stream of polling events that pages with up to 100 events, treats 204 as caught up and
/// then waits at least 5 minutes, and exposes the last delivered id after every event so a
/// caller can checkpoint and resume with no loss and no duplicates.
#[derive(Debug)]
pub struct EventStream {
    client: Client,
    version: EventsVersion,
    start: Option<StreamStart>,
    query: EventQuery,
    poll_interval: Duration,
    cursor: Option<i64>,
    buffer: VecDeque<PollingEvent>,
    next_poll: Option<Instant>,
    /// The last page was partial: say so once its events are delivered.
    caught_up: bool,
}

impl EventStream {
    /// The reference's minimum polling interval.
    pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(5 * 60);

    /// Starts building a stream of the `version` events list.
    pub fn builder(version: EventsVersion) -> EventStreamBuilder {
        EventStreamBuilder {
            version,
            start: StreamStart::Latest,
            query: EventQuery::after(0),
            poll_interval: Self::MIN_POLL_INTERVAL,
        }
    }

    /// The id of the last event delivered (or the start cursor before the first one): save
    /// it after processing an event and resume with [`StreamStart::After`].
    pub fn checkpoint(&self) -> Option<i64> {
        self.cursor
    }

    /// The next item; `None` never comes (the stream polls forever), errors are items and
    /// the stream goes on after them at the next poll.
    pub async fn next(&mut self) -> Option<Result<StreamItem, Error>> {
        if let Some(event) = self.buffer.pop_front() {
            if let Some(id) = event.id() {
                self.cursor = Some(id);
            }
            return Some(Ok(StreamItem::Event(Box::new(event))));
        }
        if std::mem::take(&mut self.caught_up) {
            return Some(Ok(StreamItem::Notice(StreamNotice::CaughtUp {
                next_poll_in: self.poll_interval,
            })));
        }
        if let Some(start) = self.start {
            match self.resolve(start).await {
                Ok(cursor) => {
                    self.cursor = Some(cursor);
                    self.start = None;
                }
                Err(e) => return Some(Err(e)),
            }
        }
        if let Some(at) = self.next_poll.take() {
            tokio::time::sleep_until(at).await;
        }
        let cursor = self.cursor.unwrap_or_default();
        let query = EventQuery {
            id: cursor,
            ..self.query.clone()
        };
        let page = match self.client.events_page(self.version, &query).await {
            Ok(page) => page,
            Err(e) => {
                self.next_poll = Some(Instant::now() + self.poll_interval);
                return Some(Err(e));
            }
        };
        let Some(page) = page.filter(|p| !p.events.is_empty()) else {
            self.next_poll = Some(Instant::now() + self.poll_interval);
            return Some(Ok(StreamItem::Notice(StreamNotice::CaughtUp {
                next_poll_in: self.poll_interval,
            })));
        };
        let full = page.events.len() >= usize::from(query.count.unwrap_or(50));
        if !full {
            self.next_poll = Some(Instant::now() + self.poll_interval);
            self.caught_up = true;
        }
        let mut events: Vec<PollingEvent> = page
            .events
            .into_iter()
            .map(PollingEvent::from)
            .filter(|e| e.id().is_none_or(|id| id > cursor))
            .collect();
        events.sort_by_key(|e| e.id());
        let first = events.first().and_then(PollingEvent::id);
        self.buffer.extend(events);
        match (page.oldest_id, first) {
            (Some(oldest), Some(first)) if cursor + 1 < oldest && first >= oldest => {
                Some(Ok(StreamItem::Notice(StreamNotice::MayHaveMissed {
                    cursor,
                    oldest,
                })))
            }
            _ => Box::pin(self.next()).await,
        }
    }

    /// The stream as a [`futures_util::Stream`].
    pub fn into_stream(self) -> impl Stream<Item = Result<StreamItem, Error>> {
        futures_util::stream::unfold(self, |mut stream| async move {
            let item = stream.next().await?;
            Some((item, stream))
        })
    }

    async fn resolve(&self, start: StreamStart) -> Result<i64, Error> {
        match start {
            StreamStart::After(id) => Ok(id),
            StreamStart::Latest | StreamStart::Oldest => {
                let cursor = self.client.events_cursor().await?;
                let id = match start {
                    StreamStart::Latest => cursor.latest_event_id,
                    _ => cursor.oldest_event_id.map(|oldest| oldest - 1),
                };
                Ok(id.unwrap_or_default())
            }
        }
    }
}

/// Walks the events list backwards from `from` (inclusive) to the oldest stored event, in
/// pages of up to 100, newest first: for backfilling history before a stream's start.
pub fn backfill(
    client: Client,
    version: EventsVersion,
    from: i64,
) -> impl Stream<Item = Result<PollingEvent, Error>> {
    let state = (client, Some(from), VecDeque::<PollingEvent>::new());
    futures_util::stream::unfold(state, move |(client, next_id, mut buffer)| async move {
        if let Some(event) = buffer.pop_front() {
            return Some((Ok(event), (client, next_id, buffer)));
        }
        let id = next_id.filter(|id| *id > 0)?;
        let query = EventQuery {
            reverse: true,
            ..EventQuery::after(id)
        };
        match client.events_page(version, &query).await {
            Ok(Some(page)) if !page.events.is_empty() => {
                let mut events: Vec<PollingEvent> =
                    page.events.into_iter().map(PollingEvent::from).collect();
                events.sort_by_key(|e| std::cmp::Reverse(e.id()));
                let lowest = events.last().and_then(PollingEvent::id);
                let done = match (lowest, page.oldest_id) {
                    (Some(lowest), Some(oldest)) => lowest <= oldest,
                    (Some(_), None) => false,
                    (None, _) => true,
                };
                let next = if done { None } else { lowest.map(|l| l - 1) };
                buffer.extend(events);
                buffer
                    .pop_front()
                    .map(|event| (Ok(event), (client, next, buffer)))
            }
            Ok(_) => None,
            Err(e) => Some((Err(e), (client, None, buffer))),
        }
    })
}
