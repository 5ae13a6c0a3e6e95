//! The events handle, `client.events()`: the cursor, single pages, and the two ways to walk
//! the events list, [`Events::stream`] forwards (resumable, see [`crate::events`]) and
//! [`Events::backfill`] backwards.

use crate::Client;
use crate::error::Error;
use crate::events::{self, EventQuery, EventStreamBuilder, EventsVersion, PollingEvent};
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{EventPage, EventsCursor};

/// The events API: `client.events()`, for the cursor, single pages, the resumable stream
/// forwards ([`Events::stream`]) and the walk backwards ([`Events::backfill`]).
#[derive(Debug, Clone, Copy)]
pub struct Events<'a> {
    pub(crate) client: &'a Client,
}

impl Events<'_> {
    /// `GET /v1/events/cursor`: the ids of the newest and oldest stored events.
    pub async fn cursor(&self) -> Result<EventsCursor, Error> {
        events::events_cursor(self.client).await
    }

    /// One page of `GET /v1/events` or `/v2/events`; `None` when nothing follows the cursor
    /// (the API's `204 No Content`). The query is checked before sending.
    pub async fn page(
        &self,
        version: EventsVersion,
        query: &EventQuery,
    ) -> Result<Option<EventPage>, Error> {
        events::events_page(self.client, version, query).await
    }

    /// A resumable stream of the `version` events list, to set up (where it starts, filters,
    /// a checkpoint store) and `build()`: see [`crate::events`] for what it hands out.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::events::{EventsVersion, PollingEventType, StreamItem, StreamStart};
    /// use pubapi_sdk_ext::prelude::*; // StreamExt::next
    ///
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), pubapi_sdk_ext::Error> {
    /// let mut events = client
    ///     .events()
    ///     .stream(EventsVersion::V2)
    ///     .start(StreamStart::Oldest)
    ///     .types([PollingEventType::PermissionChange])
    ///     .build();
    /// while let Some(item) = events.next().await {
    ///     if let StreamItem::Event(event) = item? {
    ///         println!("{:?}", event.id());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, version: EventsVersion) -> EventStreamBuilder {
        EventStreamBuilder::new(self.client.clone(), version)
    }

    /// Walks the events list backwards from `from` (inclusive) to the oldest stored event,
    /// newest first, in windows of 100 ids: for backfilling history before a stream's start.
    ///
    /// It reads the cursor first, so it starts at the newest stored event when `from` is
    /// above it and stops at the oldest; every window moves at least 100 ids down, so the
    /// walk ends after at most `(from - oldest) / 100 + 1` pages whatever the server answers.
    /// Each event is delivered once. An event that does not have the reference's shape (an
    /// `id` or `timestamp` missing) is an [`Error::Decode`] item in its place, naming it in
    /// the page (`events[3]`), and the walk goes on past it (one without an id comes after
    /// its window's events). Any other error ends the walk: resume with `from` one below the
    /// last id delivered.
    pub fn backfill(
        &self,
        version: EventsVersion,
        from: i64,
    ) -> BoxStream<'static, Result<PollingEvent, Error>> {
        events::backfill(self.client.clone(), version, from)
    }
}
