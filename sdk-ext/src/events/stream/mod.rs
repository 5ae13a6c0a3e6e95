//! A resumable stream of polling events.
//!
//! [`EventStream`] is what users hold: a [`Stream`] of [`StreamItem`]s built by
//! [`EventStreamBuilder`]. Between items it keeps its walker at home; to read the next item
//! it sends the walker away in a boxed future and takes it back with the item. The parts:
//!
//! - this module: the public types, the builder and the `Stream` impl;
//! - `walker`: the walker's state and its loop through windows of ids (each page read as a
//!   window, [`super::window`]);
//! - `checkpoint`: where a walk resumes (the store's checkpoint, or the start asked for) and
//!   [`EventStream::save_checkpoint`], with the memory the stream and its walker share to
//!   find out a store that lost what it held;
//! - `lease`: the stream's lease in a fleet (taking it, standing by, renewing it, losing and
//!   releasing it; [`EventStream::release`]).

mod checkpoint;
mod lease;
mod walker;

use super::{
    EventQuery, EventsVersion, PollingEvent, PollingEventType, Suppress, UndecodableEvent,
};
use crate::Client;
use crate::error::Error;
use crate::fleet::{CheckpointStore, Lease};
use checkpoint::Memory;
use futures_util::Stream;
use futures_util::future::BoxFuture;
use lease::LeaseWatch;
use std::sync::Arc;
use std::time::Duration;
use walker::Walker;

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
    /// Nothing follows the cursor (the API's 204, or a window that reached the newest event);
    /// the stream waits before polling again.
    CaughtUp {
        /// How long until the next poll.
        next_poll_in: Duration,
    },
    /// Several windows of ids in a row held no event that passed the filters; the checkpoint
    /// moved past them to `through` (save it, so a restart does not read them again).
    Skipped {
        /// The checkpoint now: every id up to it has been read.
        through: i64,
    },
    /// This consumer holds the stream's lease (see [`crate::fleet`]) and hands out its events
    /// from after `after`; said each time it takes the lease, before its first event.
    Consuming {
        /// The lease's fencing token: larger with every acquisition of the stream's lease.
        token: u64,
        /// The checkpoint it resumes after.
        after: i64,
        /// The previous holder's lease ran out instead of being released (it died or
        /// stalled): it may have handled the first event after `after` and stopped before
        /// saving it, so that event may be handed out a second time. Only that one, when
        /// every holder saves after each event.
        taken_over: bool,
    },
    /// Another consumer holds the stream's lease: this one stands by and tries again every
    /// `retry_in` (said once each time it starts standing by).
    StandingBy {
        /// How long until it tries again.
        retry_in: Duration,
    },
    /// The lease passed to another consumer (it was not renewed within the lease time, or a
    /// save was refused): nothing more is handed out, and the events read ahead are dropped,
    /// until this consumer holds it again and resumes from the saved checkpoint.
    LeaseLost {
        /// The token of the lease that was lost.
        token: u64,
    },
    /// The checkpoint store had lost the stream's checkpoint (a flush, a restart without
    /// persistence, a failover to a replica that had not received it): it held `found`, none
    /// or an older id than this consumer had seen or saved there. The stream goes on after
    /// `restored`, the newest checkpoint this consumer knew, and writes it again; nothing is
    /// skipped, and the events after `restored` that another holder handled without its saves
    /// reaching this consumer are handed out again. Also logged as a `tracing` warning.
    CheckpointLost {
        /// What the store held.
        found: Option<i64>,
        /// The checkpoint written again, which the stream resumes after.
        restored: i64,
    },
}

/// One item of an [`EventStream`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamItem {
    /// An event; after it, [`EventStream::checkpoint`] is its id.
    Event(Box<PollingEvent>),
    /// An event the SDK could not read (see [`UndecodableEvent`]), as sent, in its place: the
    /// stream goes on past it. After it, [`EventStream::checkpoint`] is its id when it has
    /// one. Also logged as a `tracing` warning.
    Undecodable(Box<UndecodableEvent>),
    /// A notice.
    Notice(StreamNotice),
}

/// Builds an [`EventStream`]: `client.events().stream(version)` ([`Events::stream`]), the
/// settings below, then `build()`. `C` is the client it reads through: the async
/// [`Client`], or the blocking one (feature `blocking`), whose `build()` gives an iterator.
///
/// [`Events::stream`]: crate::api::Events::stream
#[derive(Debug, Clone)]
pub struct EventStreamBuilder<C = Client> {
    client: C,
    version: EventsVersion,
    start: StreamStart,
    query: EventQuery,
    poll_interval: Duration,
    checkpoints: Option<(Arc<dyn CheckpointStore>, String)>,
}

impl<C> EventStreamBuilder<C> {
    /// A stream of the `version` events list read through `client`, from the latest event,
    /// polling at the reference's minimum interval.
    pub(crate) fn new(client: C, version: EventsVersion) -> Self {
        EventStreamBuilder {
            client,
            version,
            start: StreamStart::Latest,
            query: EventQuery::after(0),
            poll_interval: EventStream::MIN_POLL_INTERVAL,
            checkpoints: None,
        }
    }

    /// The client it reads through.
    #[cfg(feature = "blocking")]
    pub(crate) fn client(&self) -> &C {
        &self.client
    }

    /// The same settings, read through the client `to` makes of this one's.
    #[cfg(feature = "blocking")]
    pub(crate) fn map_client<D>(self, to: impl FnOnce(C) -> D) -> EventStreamBuilder<D> {
        EventStreamBuilder {
            client: to(self.client),
            version: self.version,
            start: self.start,
            query: self.query,
            poll_interval: self.poll_interval,
            checkpoints: self.checkpoints,
        }
    }

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

    /// Only these event types: [`PollingEventType::FileSystem`], [`PollingEventType::Note`],
    /// [`PollingEventType::PermissionChange`], typed so a name cannot be misspelt. A type the
    /// spec does not list yet is [`PollingEventType::Unknown`], checked to read as an event name
    /// before anything is sent ([`EventQuery::validate`](super::EventQuery::validate)).
    pub fn types(mut self, types: impl IntoIterator<Item = PollingEventType>) -> Self {
        self.query.types = types.into_iter().collect();
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

    /// Keeps the checkpoint in `store` under `name`: the stream starts after the saved
    /// checkpoint when there is one (whatever [`EventStreamBuilder::start`] says), and
    /// [`EventStream::save_checkpoint`] saves it. A file ([`crate::fleet::FileCheckpoints`])
    /// serves one process; a fleet's store (Redis) lets a restarted or moved consumer resume
    /// where the fleet left off.
    ///
    /// The store also makes this stream the only consumer of `name`: the stream takes the
    /// name's lease before reading, stands by while another consumer holds it, and hands out
    /// events only while it holds it ([`StreamNotice::Consuming`],
    /// [`StreamNotice::StandingBy`], [`StreamNotice::LeaseLost`]; see [`crate::fleet`]).
    pub fn checkpoints(mut self, store: Arc<dyn CheckpointStore>, name: impl Into<String>) -> Self {
        self.checkpoints = Some((store, name.into()));
        self
    }
}

impl EventStreamBuilder {
    /// The stream. Building it sends nothing: the first `next()` reads.
    pub fn build(self) -> EventStream {
        let store = self.checkpoints.clone();
        let memory = Arc::new(Memory::default());
        let walker = Walker::new(self, memory.clone());
        EventStream {
            walker: Some(Box::new(walker)),
            pending: std::sync::Mutex::new(None),
            checkpoint: None,
            store,
            lease: None,
            watch: None,
            memory,
        }
    }
}

/// The walker reading one item, handing itself back with it.
type Reading = BoxFuture<'static, (Box<Walker>, Option<Result<StreamItem, Error>>)>;

/// A stream of polling events.
///
/// Each page is a window of ids: with `count = N` the server answers the events in
/// `(cursor, cursor + N]` that pass the filters, and `latest_id` says where the window ended,
/// also when filters left it short or empty. The stream moves its cursor through windows by
/// `latest_id` (and by the ids it delivered), reads full windows back to back, and reports
/// [`StreamNotice::CaughtUp`] and waits the polling interval (5 minutes or more) only when the
/// server has nothing after the cursor: a 204, a window that ended before `N` ids, or a
/// `latest_id` that did not move. [`EventStream::checkpoint`] is exact after every item:
/// resuming from it with [`StreamStart::After`] loses nothing and repeats nothing.
///
/// A page whose events do not all have the shape the reference gives them (an `id` or
/// `timestamp` missing) is read event by event: those that do not are handed over as sent
/// ([`StreamItem::Undecodable`]) in their places, and the stream goes on past them instead
/// of failing at the same cursor at every poll. A page that is not a page stays an error.
///
/// It is a [`Stream`](crate::prelude::Stream) and `Unpin`:
/// `while let Some(item) = events.next().await` with
/// [`StreamExt`](crate::prelude::StreamExt) (in [`crate::prelude`]).
pub struct EventStream {
    /// The walker, home between items.
    walker: Option<Box<Walker>>,
    /// The walker, away reading the next item.
    /// Behind a mutex only ever reached through `&mut self` (never locked against another
    /// thread), so that the stream is `Sync` and `stream.save_checkpoint().await` can be
    /// awaited in a spawned task although the read in flight is not `Sync`.
    pending: std::sync::Mutex<Option<Reading>>,
    /// The walker's cursor after the last item handed out.
    checkpoint: Option<i64>,
    /// The builder's checkpoint store.
    store: Option<(Arc<dyn CheckpointStore>, String)>,
    /// The walker's lease after the last item handed out.
    lease: Option<Lease>,
    watch: Option<Arc<LeaseWatch>>,
    memory: Arc<Memory>,
}

impl EventStream {
    /// The read in flight, through `&mut self`: no lock is taken.
    fn pending(&mut self) -> &mut Option<Reading> {
        self.pending
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("checkpoint", &self.checkpoint)
            .field(
                "reading",
                &self
                    .pending
                    .lock()
                    .map_or(true, |pending| pending.is_some()),
            )
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// The reference's minimum polling interval.
    pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(5 * 60);

    /// How many windows in a row without a matching event the stream reads for one item
    /// before it hands out [`StreamNotice::Skipped`].
    pub const MAX_EMPTY_WINDOWS_PER_ITEM: u32 = 16;

    /// The longest wait before asking a checkpoint store that could not be reached again
    /// (the waits double from 1 s up to this, plus up to a tenth of jitter).
    pub const MAX_STORE_BACKOFF: Duration = Duration::from_secs(60);

    /// Every id up to this one has been delivered or skipped by the filters: save it after
    /// processing an item and resume with [`StreamStart::After`]. `None` before the first
    /// item.
    pub fn checkpoint(&self) -> Option<i64> {
        self.checkpoint
    }

    /// The fencing token of the stream's lease while this stream holds it (see
    /// [`crate::fleet`]); `None` without a checkpoint store, or while standing by.
    pub fn lease_token(&self) -> Option<u64> {
        self.lease.as_ref().map(|lease| lease.token)
    }
}

/// Errors are items and the stream goes on after them at the next poll; it ends only after
/// an error no later poll can mend (input the SDK refuses, such as an invalid folder path; a
/// query the server refuses with 400, such as an event type it does not know, as
/// [`Error::InvalidRequest`] with the server's codes and descriptions; or a cursor without the
/// id to start from), which was the item before the end.
impl Stream for EventStream {
    type Item = Result<StreamItem, Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        if self.pending().is_none() {
            if let Some(notice) = self.memory.next_reported() {
                return Poll::Ready(Some(Ok(StreamItem::Notice(notice))));
            }
            let Some(mut walker) = self.walker.take() else {
                return Poll::Ready(None);
            };
            *self.pending() = Some(Box::pin(async move {
                let item = walker.next().await;
                (walker, item)
            }));
        }
        let polled = match self.pending().as_mut() {
            Some(pending) => pending.as_mut().poll(cx),
            None => return Poll::Ready(None),
        };
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready((walker, item)) => {
                *self.pending() = None;
                self.checkpoint = walker.cursor;
                self.lease = walker.lease.clone();
                self.watch = walker.watch.clone();
                self.walker = Some(walker);
                Poll::Ready(item)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PollingEvent;
    use crate::events::backfill::backfill;
    use futures_util::StreamExt;
    use futures_util::stream::BoxStream;

    /// Every stream of the SDK is a `Stream + Unpin + Send`: `.next()` needs no `Box::pin`.
    #[test]
    fn the_sdks_streams_are_unpin() {
        fn stream<T: Stream + Unpin + Send>() {}
        stream::<EventStream>();
        stream::<BoxStream<'static, Result<PollingEvent, Error>>>();
        fn unpin<S: Stream + Unpin + Send>(_: &S) {}
        // Building a stream sends nothing: a client nobody listens for will do.
        let client = crate::Client::builder()
            .base_url("http://127.0.0.1:9/pubapi")
            .allow_plain_http()
            .token(crate::SecretToken::try_from("t").unwrap())
            .isolated_budget()
            .build()
            .unwrap();
        unpin(&backfill(client.clone(), EventsVersion::V2, 10));
        #[cfg(feature = "ai")]
        unpin(
            &client
                .search()
                .results(pubapi_sdk::types::HybridSearchRequest::new("q").unwrap()),
        );
        #[cfg(feature = "ai")]
        unpin(&client.knowledge_bases().list(Default::default()));
        #[cfg(feature = "audit")]
        unpin(&client.audit().events(
            crate::audit::ReportLocation {
                kind: pubapi_sdk::types::AuditReportKind::Logins,
                id: "r-1".into(),
            },
            crate::audit::ReportRead::default(),
        ));
        unpin(&client.events().stream(EventsVersion::V2).build());
    }

    /// Answers every request with the same status and body, counting the requests.
    #[derive(Debug)]
    struct Always(u16, &'static str, std::sync::atomic::AtomicUsize);

    impl crate::transport::Transport for Always {
        fn send<'a>(
            &'a self,
            _client: &'a reqwest::Client,
            _request: reqwest::Request,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, reqwest::Result<reqwest::Response>> {
            self.2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let response = http::Response::builder()
                .status(self.0)
                .header("content-type", "application/json")
                .body(self.1.as_bytes().to_vec())
                .unwrap();
            Box::pin(async move { Ok(reqwest::Response::from(response)) })
        }
    }

    /// The reference's `type` takes `file_system`, `note`, `permission_change`; a server that
    /// refuses another name with 400 refuses it at every poll.
    #[tokio::test(start_paused = true)]
    async fn a_400_ends_the_stream_with_the_servers_codes_and_descriptions() {
        let body = r#"{"Errors":[
            {"description":"`type` holds \"task\", not one of file_system, note, permission_change","code":"INVALID_VALUE"},
            {"description":"`suppress` must be app, user or none, not \"bot\"","code":"INVALID_VALUE"}]}"#;
        let transport = Arc::new(Always(400, body, Default::default()));
        let client = Client::builder()
            .isolated_budget()
            .base_url("http://sandbox.test/pubapi")
            .allow_plain_http()
            .token(crate::SecretToken::try_from("t").unwrap())
            .transport(transport.clone())
            .build()
            .unwrap();
        let mut stream = client
            .events()
            .stream(EventsVersion::V2)
            .start(StreamStart::After(7))
            .types([PollingEventType::Unknown("task".into())])
            .build();
        let error = match stream.next().await {
            Some(Err(Error::InvalidRequest(error))) => error,
            other => panic!("{other:?}"),
        };
        assert_eq!(error.status(), 400);
        let codes: Vec<_> = error.messages().iter().map(|m| m.code.as_deref()).collect();
        assert_eq!(codes, [Some("INVALID_VALUE"), Some("INVALID_VALUE")]);
        assert_eq!(
            error.messages()[1].description.as_deref(),
            Some("`suppress` must be app, user or none, not \"bot\"")
        );
        assert!(
            stream.next().await.is_none(),
            "not repeated every 5 minutes"
        );
        assert_eq!(stream.checkpoint(), Some(7), "the cursor did not move");
        assert_eq!(transport.2.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
