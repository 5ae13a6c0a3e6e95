//! The events handle of the blocking client, and the resumable event stream as an iterator.

use super::{Client, Iter, Refused, Runtime};
use crate::error::Error;
use crate::events::{EventQuery, EventStreamBuilder, EventsVersion, PollingEvent, StreamItem};
use crate::fleet::FleetError;
use futures_util::StreamExt;
use pubapi_sdk::types::{EventPage, EventsCursor};
use std::sync::Arc;

blocking_handle! {
    /// The events API: `client.events()`, for the cursor, single pages, the resumable stream
    /// ([`Events::stream`]) and the backfill ([`Events::backfill`]) (see [`crate::api::Events`]).
    Events = events {
        /// `GET /v1/events/cursor`: the ids of the newest and oldest stored events.
        fn cursor(&self) -> Result<EventsCursor, Error> => call;

        /// One page of `GET /v1/events` or `/v2/events`; `None` when nothing follows the cursor.
        /// The query is checked before sending.
        fn page(
            &self,
            version: EventsVersion,
            query: &EventQuery,
        ) -> Result<Option<EventPage>, Error> => call;

        /// Walks the events list backwards from `from` (inclusive) to the oldest stored event,
        /// newest first, one event at a time (see [`crate::api::Events::backfill`]).
        fn backfill(&self, version: EventsVersion, from: i64) -> Iter<PollingEvent, Error> => iter;
    }
}

impl Events<'_> {
    /// A resumable stream of the `version` events list, to set up and `build()` into an
    /// [`Iterator`] (see [`crate::api::Events::stream`]).
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamStart};
    ///
    /// # fn run(client: pubapi_sdk_ext::blocking::Client, saved: Option<i64>) -> Result<(), pubapi_sdk_ext::Error> {
    /// let start = saved.map_or(StreamStart::Latest, StreamStart::After);
    /// let events = client.events().stream(EventsVersion::V2).start(start).build();
    /// for item in events {
    ///     if let StreamItem::Event(event) = item? {
    ///         println!("{:?} {:?}", event.kind(), event.action());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, version: EventsVersion) -> EventStreamBuilder<Client> {
        EventStreamBuilder::new(self.client.clone(), version)
    }
}

/// The blocking client's stream: built with `client.events().stream(version)` and the
/// settings of [`EventStreamBuilder`], it reads as an iterator.
impl EventStreamBuilder<Client> {
    /// The stream, as an [`Iterator`] on the blocking client. Building it sends nothing.
    #[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
    pub fn build(self) -> EventStream {
        let runtime = self.client().runtime.clone();
        EventStream {
            inner: Some(self.map_client(|client| client.inner).build()),
            runtime,
        }
    }
}

/// A resumable stream of polling events read as an iterator, from
/// `client.events().stream(version)...build()` ([`Events::stream`]) (see [`crate::events::EventStream`] for what it
/// hands out and when it ends).
///
/// Each `next()` blocks until the next item; once the stream has caught up
/// ([`StreamNotice::CaughtUp`](crate::events::StreamNotice::CaughtUp)) the next call sleeps
/// the polling interval (5 minutes or more) first. Called inside an async runtime it hands
/// out [`Error::InAsyncContext`] once and ends.
pub struct EventStream {
    /// `None` once refused or released.
    inner: Option<crate::events::EventStream>,
    runtime: Arc<Runtime>,
}

debug_inner!(EventStream, "blocking::EventStream");

impl EventStream {
    /// Every id up to this one has been delivered or skipped by the filters: save it after
    /// processing an item and resume with
    /// [`StreamStart::After`](crate::events::StreamStart::After). `None` before the first
    /// item.
    pub fn checkpoint(&self) -> Option<i64> {
        self.inner
            .as_ref()
            .and_then(crate::events::EventStream::checkpoint)
    }

    /// The fencing token of the stream's lease while this stream holds it.
    pub fn lease_token(&self) -> Option<u64> {
        self.inner
            .as_ref()
            .and_then(crate::events::EventStream::lease_token)
    }

    /// Saves [`EventStream::checkpoint`] in the builder's checkpoint store, fenced by the
    /// stream's lease (see [`crate::events::EventStream::save_checkpoint`]).
    ///
    /// # Errors
    /// [`FleetError`] when the store fails or the lease was lost; inside an async runtime,
    /// one of kind [`Unavailable`](crate::fleet::FleetErrorKind::Unavailable) that says so,
    /// with nothing saved.
    pub fn save_checkpoint(&self) -> Result<(), FleetError> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        self.runtime.call(inner.save_checkpoint())
    }

    /// Gives the stream's lease up and ends the stream (see
    /// [`crate::events::EventStream::release`]).
    ///
    /// # Errors
    /// [`FleetError`] when the store could not be told (or, inside an async runtime, was not
    /// asked); the lease then runs out by itself.
    pub fn release(mut self) -> Result<(), FleetError> {
        match self.inner.take() {
            Some(inner) => self.runtime.call(inner.release()),
            None => Ok(()),
        }
    }
}

/// Errors are items and the stream goes on after them; it ends only after an error no later
/// poll can mend (see [`crate::events::EventStream`]).
impl Iterator for EventStream {
    type Item = Result<StreamItem, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        match self.runtime.block_on(inner.next()) {
            Some(item) => item,
            None => {
                // Dropped in its runtime, so the lease is given up there.
                let refused = self.inner.take();
                self.runtime.enter(|| drop(refused));
                Some(Err(Error::in_async_context(0)))
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        // The async stream gives its lease up in the background of the runtime it is
        // dropped in: this one, whose worker keeps running.
        let inner = self.inner.take();
        self.runtime.enter(|| drop(inner));
    }
}
