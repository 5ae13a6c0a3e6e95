//! The backfill: a walk from an id down to the oldest stored event, newest first, one reverse
//! window at a time (its pages read like the stream's, [`super::window`]).

use super::window::{Entry, read_leniently};
use super::{EventQuery, EventsVersion, PollingEvent};
use crate::Client;
use crate::error::Error;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use std::collections::VecDeque;

/// The walk of [`Events::backfill`](crate::api::Events::backfill).
pub(crate) fn backfill(
    client: Client,
    version: EventsVersion,
    from: i64,
) -> BoxStream<'static, Result<PollingEvent, Error>> {
    let state = Walk {
        client,
        next: None,
        floor: i64::MIN,
        buffer: VecDeque::new(),
        done: false,
    };
    futures_util::stream::unfold(state, move |mut walk| async move {
        loop {
            if let Some(item) = walk.buffer.pop_front() {
                return Some((item, walk));
            }
            if walk.done {
                return None;
            }
            let top = match walk.top(from).await {
                Ok(top) => top,
                Err(e) => {
                    walk.done = true;
                    return Some((Err(e), walk));
                }
            };
            if top < walk.floor {
                return None;
            }
            let query = EventQuery {
                reverse: true,
                ..EventQuery::after(top)
            };
            match read_page(&walk.client, version, &query).await {
                Ok(Some(page)) => walk.take_page(top, query.page_size(), page),
                Ok(None) => walk.done = true,
                Err(e) => {
                    walk.done = true;
                    return Some((Err(e), walk));
                }
            }
        }
    })
    .boxed()
}

/// Where a backfill is.
struct Walk {
    client: Client,
    /// The next window ends here (inclusive); `None` before the cursor is read.
    next: Option<i64>,
    /// The oldest stored id: the walk ends below it.
    floor: i64,
    buffer: VecDeque<Result<PollingEvent, Error>>,
    done: bool,
}

/// A reverse page as read: its `oldest_id`, its events (each read or kept as sent) and, when
/// it was read event by event, its body (for the errors of the events that did not read).
type Page = (Option<i64>, Vec<Entry>, Bytes);

/// One reverse page; `None` when the server has nothing there.
async fn read_page(
    client: &Client,
    version: EventsVersion,
    query: &EventQuery,
) -> Result<Option<Page>, Error> {
    match super::events_page(client, version, query).await {
        Ok(Some(page)) => {
            let events = page.events.into_iter();
            let entries = events.map(|e| Entry::Event(e.into())).collect();
            Ok(Some((page.oldest_id, entries, Bytes::new())))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            // A page that has its shape, whose events do not all: read event by event, and
            // an event that does not read is an error item in its place (the walk goes on
            // past it).
            let lenient = match &e {
                Error::Decode { body, .. } => {
                    read_leniently(body).map(|read| (read, body.0.clone()))
                }
                _ => None,
            };
            let Some(((shell, entries), body)) = lenient else {
                return Err(e);
            };
            Ok(Some((shell.oldest_id, entries, body)))
        }
    }
}

impl Walk {
    /// Where the next window ends: below the last one, or, first, `from` (at most the newest
    /// stored id, read with the oldest from the events cursor).
    async fn top(&mut self, from: i64) -> Result<i64, Error> {
        if let Some(top) = self.next {
            return Ok(top);
        }
        let cursor = super::events_cursor(&self.client).await?;
        self.floor = cursor.oldest_event_id;
        Ok(from.min(cursor.latest_event_id))
    }

    /// Buffers the events of the window of `count` ids ending at `top`, newest first, and
    /// moves below them.
    fn take_page(&mut self, top: i64, count: i64, (oldest_id, entries, body): Page) {
        let bottom = top.saturating_sub(count - 1);
        let mut events: Vec<(usize, Entry)> = entries
            .into_iter()
            .enumerate()
            .filter(|(_, e)| e.id().is_none_or(|id| id <= top))
            .collect();
        // Newest first; events without an id after the others, in the page's order (a key
        // of their own: sharing `i64::MIN`'s, they would part two copies of that id).
        events.sort_by_key(|(_, e)| (e.id().is_none(), std::cmp::Reverse(e.id())));
        events.dedup_by(|(_, a), (_, b)| a.id().is_some() && a.id() == b.id());
        let lowest = events.iter().filter_map(|(_, e)| e.id()).min();
        let reached_oldest =
            bottom <= self.floor || oldest_id.is_some_and(|oldest| oldest > bottom);
        // The next window ends below every id delivered so far; there is none below
        // `i64::MIN` (saturating there would read it again).
        let below = lowest.map_or(bottom, |lowest| lowest.min(bottom));
        let next = below.checked_sub(1);
        self.done = reached_oldest || next.is_none();
        self.next = next;
        self.buffer
            .extend(events.into_iter().map(|(at, entry)| match entry {
                Entry::Event(event) => Ok(event),
                Entry::Undecodable(event) => Err(Error::Decode {
                    path: format!("events[{at}]"),
                    message: event.error,
                    body: body.clone().into(),
                    request_id: None,
                }),
            }));
    }
}
