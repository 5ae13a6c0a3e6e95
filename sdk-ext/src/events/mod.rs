//! The events API's machinery: queries, typed events, and the resumable stream of change
//! events that `client.events().stream(..)` ([`crate::api::Events`]) starts.
//!
//! ```no_run
//! use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamNotice, StreamStart};
//! use pubapi_sdk_ext::prelude::*; // StreamExt::next
//!
//! # async fn run(client: pubapi_sdk_ext::Client, saved: Option<i64>) -> Result<(), pubapi_sdk_ext::Error> {
//! // Resume after the last event processed, or start at the current end of the stream.
//! let start = saved.map_or(StreamStart::Latest, StreamStart::After);
//! let mut events = client.events().stream(EventsVersion::V2).start(start).build();
//! while let Some(item) = events.next().await {
//!     match item? {
//!         StreamItem::Event(event) => println!("{:?} {:?}", event.kind(), event.data()),
//!         // An event without the fields every event has: as sent, and the stream goes on.
//!         StreamItem::Undecodable(event) => eprintln!("unreadable: {}", event.raw),
//!         StreamItem::Notice(StreamNotice::MayHaveMissed { cursor, oldest }) => {
//!             eprintln!("events after {cursor} and before {oldest} are gone: reconcile");
//!         }
//!         // Other notices, and items of a later version of the SDK.
//!         _ => {}
//!     }
//!     // Save `events.checkpoint()` after processing: resuming from it delivers each event
//!     // once, with no gap.
//! }
//! # Ok(()) }
//! ```

mod backfill;
mod data;
mod query;
mod stream;
mod window;

pub(crate) use backfill::backfill;
pub use data::{
    FileSystemData, PermissionChangeEvent, PollingEvent, PollingEventData, UndecodableEvent,
};
pub use pubapi_sdk::types::{ActionSource, PollingEventAction, PollingEventType};
pub use query::{EventQuery, EventsVersion, Suppress};
pub use stream::{EventStream, EventStreamBuilder, StreamItem, StreamNotice, StreamStart};

use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use crate::time::TimeError;
use pubapi_sdk::types::{EventPage, EventsCursor};

/// Typed reads of an [`EventsCursor`] (the generated type keeps `timestamp` as sent).
pub trait EventsCursorExt {
    /// The cursor's ISO 8601 `timestamp` (the service's current time) as an instant; `None`
    /// when the body has none.
    ///
    /// # Errors
    /// [`TimeError`] naming `timestamp` and its text when it is not an ISO 8601 instant.
    fn timestamp_at(&self) -> Result<Option<jiff::Timestamp>, TimeError>;
}

impl EventsCursorExt for EventsCursor {
    fn timestamp_at(&self) -> Result<Option<jiff::Timestamp>, TimeError> {
        crate::time::optional_instant("timestamp", self.timestamp.as_deref())
    }
}

/// `GET /v1/events/cursor`: the ids of the newest and oldest stored events.
pub(crate) async fn events_cursor(client: &Client) -> Result<EventsCursor, Error> {
    Ok(client.sdk().get_events_cursor().send().await?.into_inner())
}

/// One page of `GET /v1/events` or `/v2/events`; `None` when nothing follows the cursor
/// (the API's `204 No Content`).
pub(crate) async fn events_page(
    client: &Client,
    version: EventsVersion,
    query: &EventQuery,
) -> Result<Option<EventPage>, Error> {
    query.validate()?;
    // The v1 and v2 builders are distinct generated types with the same setters.
    macro_rules! send_with_query {
        ($call:expr) => {{
            let mut call = $call.id(query.id);
            if let Some(count) = query.count_param() {
                call = call.count(count);
            }
            if let Some(folder) = &query.folder {
                call = call.folder(folder.clone());
            }
            if let Some(suppress) = query.suppress {
                call = call.suppress(suppress.as_sdk());
            }
            if let Some(types) = query.type_param() {
                call = call.type_(types);
            }
            if query.reverse {
                call = call.reverse(1i64);
            }
            call.send().await
        }};
    }
    let sent = match version {
        EventsVersion::V1 => send_with_query!(client.sdk().list_events_v1()),
        EventsVersion::V2 => send_with_query!(client.sdk().list_events_v2()),
    };
    Ok(sent?.into_inner())
}
