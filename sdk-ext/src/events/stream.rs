//! A resumable stream of polling events.

use super::{
    EventQuery, EventsVersion, PollingEvent, PollingEventType, Suppress, UndecodableEvent,
};
use crate::Client;
use crate::error::Error;
use crate::fleet::{Acquired, CheckpointStore, FleetError, FleetErrorKind, Lease};
use crate::rng::SplitMix64;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use std::collections::VecDeque;
use std::sync::Arc;
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
        let walker = Walker {
            memory: memory.clone(),
            client: self.client,
            version: self.version,
            start: Some(self.start),
            initial_start: self.start,
            query: self.query,
            poll_interval: self.poll_interval,
            checkpoints: self.checkpoints,
            cursor: None,
            buffer: VecDeque::new(),
            notices: VecDeque::new(),
            window_end: None,
            next_poll: None,
            caught_up: false,
            ended: false,
            lease: None,
            watch: None,
            renewal: None,
            announce: false,
            standing_by: false,
            next_try: None,
            store_failures: 0,
            jitter: SplitMix64::from_entropy(),
        };
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

/// What a stream and its walker both know of the store: the newest checkpoint seen there
/// (loaded, or saved by this stream), and notices a save has to say.
#[derive(Debug, Default)]
struct Memory(std::sync::Mutex<Remembered>);

#[derive(Debug, Default)]
struct Remembered {
    known: Option<i64>,
    reported: VecDeque<StreamNotice>,
}

impl Memory {
    fn lock(&self) -> std::sync::MutexGuard<'_, Remembered> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers that the store held `id`.
    fn seen(&self, id: i64) {
        let mut memory = self.lock();
        memory.known = Some(memory.known.map_or(id, |known| known.max(id)));
    }

    /// The newest checkpoint known, when the store holds `found` and that is behind it (the
    /// store lost what it held); logged as a warning.
    fn lost(&self, name: &str, found: Option<i64>) -> Option<i64> {
        let known = self.lock().known?;
        if found.is_some_and(|found| found >= known) {
            return None;
        }
        tracing::warn!(stream = %name, ?found, known, "the checkpoint store lost the stream's checkpoint: it is written again");
        Some(known)
    }
}

/// The walker reading one item, handing itself back with it.
type Reading = BoxFuture<'static, (Box<Walker>, Option<Result<StreamItem, Error>>)>;

/// The state an [`EventStream`] moves through windows with.
#[derive(Debug)]
struct Walker {
    /// Shared with the stream.
    memory: Arc<Memory>,
    client: Client,
    version: EventsVersion,
    start: Option<StreamStart>,
    /// Where to start when the store has no checkpoint (also after taking the lease again).
    initial_start: StreamStart,
    query: EventQuery,
    poll_interval: Duration,
    checkpoints: Option<(Arc<dyn CheckpointStore>, String)>,
    cursor: Option<i64>,
    buffer: VecDeque<Entry>,
    notices: VecDeque<StreamNotice>,
    /// Where the window of the buffered events ended: the cursor once they are delivered.
    window_end: Option<i64>,
    next_poll: Option<Instant>,
    /// The last window reached the newest event: say so once its events are delivered.
    caught_up: bool,
    /// An error ended the stream.
    ended: bool,
    /// The stream's lease, while held.
    lease: Option<Lease>,
    /// Until when the lease is held, kept by the renewal.
    watch: Option<Arc<LeaseWatch>>,
    /// The task renewing the lease.
    renewal: Option<tokio::task::AbortHandle>,
    /// Say [`StreamNotice::Consuming`] once the checkpoint is read.
    announce: bool,
    /// [`StreamNotice::StandingBy`] was said for this stand-by.
    standing_by: bool,
    /// When to ask for the lease again.
    next_try: Option<Instant>,
    /// Failures in a row of a store that could not be reached: the backoff's exponent.
    store_failures: u32,
    jitter: SplitMix64,
}

/// Until when a lease is held: set when it is taken, moved on by each renewal, cleared when
/// it is lost.
#[derive(Debug)]
struct LeaseWatch(std::sync::Mutex<Hold>);

#[derive(Debug, Clone, Copy)]
enum Hold {
    Until(Instant),
    UntilReleased,
    Lost,
}

impl LeaseWatch {
    fn hold(&self) -> std::sync::MutexGuard<'_, Hold> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn holds(&self) -> bool {
        match *self.hold() {
            Hold::Until(until) => Instant::now() < until,
            Hold::UntilReleased => true,
            Hold::Lost => false,
        }
    }

    /// Renewed: held until `until` (a lost lease stays lost).
    fn extend(&self, until: Instant) {
        let mut hold = self.hold();
        if let Hold::Until(before) = *hold {
            *hold = Hold::Until(before.max(until));
        }
    }

    fn lose(&self) {
        *self.hold() = Hold::Lost;
    }
}

/// Renews `lease` every third of its lease time while the stream lives. A renewal that fails
/// leaves the lease to run out (the stream stops handing out events then); one the store
/// refuses ends it at once.
fn spawn_renewal(
    store: Arc<dyn CheckpointStore>,
    lease: Lease,
    lease_time: Duration,
    watch: Arc<LeaseWatch>,
) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(lease_time / 3).await;
            let asked = Instant::now();
            match store.renew(&lease).await {
                Ok(true) => watch.extend(asked + lease_time),
                Ok(false) => {
                    tracing::warn!(stream = %lease.name, token = lease.token, "the event stream's lease ran out and was not renewed");
                    watch.lose();
                    return;
                }
                Err(error) => {
                    tracing::warn!(stream = %lease.name, token = lease.token, %error, "the event stream's lease was not renewed; trying again");
                }
            }
        }
    })
    .abort_handle()
}

impl Drop for Walker {
    fn drop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        // Released in the background when a runtime is there; otherwise the lease runs out
        // (a file lock ends with its store).
        if let (Some(lease), Some((store, _))) = (self.lease.take(), &self.checkpoints)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let store = store.clone();
            runtime.spawn(async move {
                let _ = store.release(&lease).await;
            });
        }
    }
}

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

    /// Saves [`EventStream::checkpoint`] in the store given to
    /// [`EventStreamBuilder::checkpoints`], fenced by the stream's lease (nothing to do
    /// without a store, while standing by, or before the first item). Call it after
    /// processing each item: then a consumer that dies leaves at most one event handled and
    /// not saved.
    ///
    /// A save that finds the store without the checkpoint this stream saw or saved there,
    /// or behind it (the store lost its data), writes it all the same and says
    /// [`StreamNotice::CheckpointLost`] next.
    ///
    /// # Errors
    /// [`FleetError`] when the store fails; the stream goes on, and the next save catches up.
    /// [`FleetErrorKind::LeaseLost`] when another consumer holds the stream now: the stream
    /// says [`StreamNotice::LeaseLost`] next and hands out nothing more until it holds it
    /// again.
    pub async fn save_checkpoint(&self) -> Result<(), FleetError> {
        let (Some((store, name)), Some(lease), Some(id)) =
            (&self.store, &self.lease, self.checkpoint)
        else {
            return Ok(());
        };
        match store.save(lease, id).await {
            Ok(found) => {
                if self.memory.lost(name, found).is_some() {
                    self.memory
                        .lock()
                        .reported
                        .push_back(StreamNotice::CheckpointLost {
                            found,
                            restored: id,
                        });
                }
                self.memory.seen(id);
                Ok(())
            }
            Err(e) => {
                if let Some(watch) = &self.watch
                    && e.kind == FleetErrorKind::LeaseLost
                {
                    watch.lose();
                }
                Err(e)
            }
        }
    }

    /// Gives the stream's lease up (a standby takes over at once, told that nothing was left
    /// unsaved) and ends the stream. Dropping the stream gives it up too, in the background.
    ///
    /// # Errors
    /// [`FleetError`] when the store could not be told; the lease then runs out by itself.
    pub async fn release(mut self) -> Result<(), FleetError> {
        // A walker away reading is dropped with its read, and gives its lease up on drop.
        *self.pending() = None;
        let Some(mut walker) = self.walker.take() else {
            return Ok(());
        };
        if let Some(renewal) = walker.renewal.take() {
            renewal.abort();
        }
        match (walker.lease.take(), &walker.checkpoints) {
            (Some(lease), Some((store, _))) => store.release(&lease).await,
            _ => Ok(()),
        }
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
            if let Some(notice) = self.memory.lock().reported.pop_front() {
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

impl Walker {
    /// The next item. Errors are items and the stream goes on after them at the next poll;
    /// `None` comes only after an error no later poll can mend (input the SDK refuses, such
    /// as an invalid folder path; a query the server refuses with 400, such as an event type
    /// it does not know, as [`Error::InvalidRequest`] with the server's codes and
    /// descriptions; or a cursor without the id to start from), which was the item before it.
    async fn next(&mut self) -> Option<Result<StreamItem, Error>> {
        let mut empty_windows = 0;
        loop {
            if self.ended {
                // An ended stream consumes nothing more: the stream is another's to take.
                if let (Some(lease), Some((store, _))) =
                    (self.lease.take(), self.checkpoints.clone())
                {
                    self.give_up_lease();
                    let _ = store.release(&lease).await;
                }
                return None;
            }
            if let Some(item) = self.keep_lease().await {
                return Some(item);
            }
            if let Some(notice) = self.notices.pop_front() {
                return Some(Ok(StreamItem::Notice(notice)));
            }
            if let Some(entry) = self.buffer.pop_front() {
                self.advance(entry.id());
                if self.buffer.is_empty() {
                    let end = self.window_end.take();
                    self.advance(end);
                }
                crate::telemetry::events_delivered(self.version.label(), 1);
                return Some(Ok(match entry {
                    Entry::Event(event) => StreamItem::Event(Box::new(event)),
                    Entry::Undecodable(event) => {
                        tracing::warn!(
                            id = event.id,
                            error = %event.error,
                            "an event the SDK cannot read is handed over as sent"
                        );
                        StreamItem::Undecodable(Box::new(event))
                    }
                }));
            }
            if std::mem::take(&mut self.caught_up) {
                return Some(Ok(self.caught_up_notice()));
            }
            if let Some(at) = self.next_poll.take()
                && at > Instant::now()
            {
                tokio::time::sleep_until(at).await;
            }
            if let Some(start) = self.start {
                match self.resolve(start).await {
                    Ok(cursor) => {
                        self.cursor = Some(cursor);
                        self.start = None;
                        self.store_failures = 0;
                        if let Some(lease) = &self.lease
                            && std::mem::take(&mut self.announce)
                        {
                            return Some(Ok(StreamItem::Notice(StreamNotice::Consuming {
                                token: lease.token,
                                after: cursor,
                                taken_over: lease.taken_over,
                            })));
                        }
                    }
                    Err(Error::Checkpoint(e)) => {
                        let retry = self.store_failed(&e);
                        self.next_poll = retry.map(|wait| Instant::now() + wait);
                        return Some(Err(Error::Checkpoint(e)));
                    }
                    Err(e) => {
                        if matches!(e, Error::Decode { .. }) {
                            self.ended = true;
                        } else {
                            self.next_poll = Some(Instant::now() + self.poll_interval);
                        }
                        return Some(Err(e));
                    }
                }
            }
            let cursor = self.cursor.unwrap_or_default();
            let query = EventQuery {
                id: cursor,
                ..self.query.clone()
            };
            let count = query.page_size();
            let window = match super::events_page(&self.client, self.version, &query).await {
                Ok(Some(page)) => Window::forward(cursor, count, page),
                Ok(None) => {
                    self.next_poll = Some(Instant::now() + self.poll_interval);
                    return Some(Ok(self.caught_up_notice()));
                }
                Err(e) => 'failed: {
                    // A page that has its shape, whose events do not all: read event by event.
                    if let Error::Decode { body, .. } = &e
                        && let Some(window) = Window::lenient(cursor, count, body)
                    {
                        break 'failed window;
                    }
                    // Input the SDK or the server refuses, or an operation that is gone,
                    // fails the same way at every poll (only the cursor changes, and the
                    // server set it): the stream ends with it instead of repeating it.
                    if matches!(
                        e,
                        Error::InvalidInput(_) | Error::InvalidRequest(_) | Error::Removed { .. }
                    ) {
                        self.ended = true;
                    } else {
                        self.next_poll = Some(Instant::now() + self.poll_interval);
                    }
                    return Some(Err(e));
                }
            };
            if let Some(oldest) = window.restarted_at {
                self.notices
                    .push_back(StreamNotice::MayHaveMissed { cursor, oldest });
            }
            if !window.more {
                self.next_poll = Some(Instant::now() + self.poll_interval);
            }
            if window.events.is_empty() {
                self.advance(Some(window.end));
                if !window.more {
                    self.caught_up = true;
                    continue;
                }
                empty_windows += 1;
                if empty_windows >= EventStream::MAX_EMPTY_WINDOWS_PER_ITEM {
                    self.notices.push_back(StreamNotice::Skipped {
                        through: window.end,
                    });
                }
                continue;
            }
            self.buffer.extend(window.events);
            self.window_end = Some(window.end);
            self.caught_up = !window.more;
        }
    }

    /// Holds the stream's lease before anything is handed out: takes it, or stands by while
    /// another consumer holds it, or says it was lost. `None` while it is held (or there is
    /// no store); otherwise the item to hand out.
    async fn keep_lease(&mut self) -> Option<Result<StreamItem, Error>> {
        let (store, name) = self.checkpoints.clone()?;
        loop {
            if let Some(lease) = &self.lease {
                if self.watch.as_ref().is_some_and(|watch| watch.holds()) {
                    return None;
                }
                let token = lease.token;
                tracing::warn!(stream = %name, token, "the event stream's lease passed to another consumer: standing by");
                self.give_up_lease();
                return Some(Ok(StreamItem::Notice(StreamNotice::LeaseLost { token })));
            }
            if let Some(at) = self.next_try.take()
                && at > Instant::now()
            {
                tokio::time::sleep_until(at).await;
            }
            let asked = Instant::now();
            match store.acquire(&name).await {
                Ok(Acquired::Lease(lease)) => {
                    self.standing_by = false;
                    self.store_failures = 0;
                    let hold = match lease.expires_in {
                        Some(lease_time) => Hold::Until(asked + lease_time),
                        None => Hold::UntilReleased,
                    };
                    let watch = Arc::new(LeaseWatch(std::sync::Mutex::new(hold)));
                    if let Some(lease_time) = lease.expires_in {
                        self.renewal = Some(spawn_renewal(
                            store.clone(),
                            lease.clone(),
                            lease_time,
                            watch.clone(),
                        ));
                    }
                    self.watch = Some(watch);
                    // Resume from what the store holds now: another holder may have moved it.
                    self.start = Some(self.initial_start);
                    self.announce = true;
                    self.lease = Some(lease);
                    return None;
                }
                Ok(Acquired::Busy { retry_in }) => {
                    // What the holder saves, so that a store that loses it is found out. A
                    // store that cannot be read now is asked again at the next try; one that
                    // holds no checkpoint there ends the stream, as a holder's read would.
                    match store.load(&name).await {
                        Ok(Some(id)) => self.memory.seen(id),
                        Err(e) if e.kind == FleetErrorKind::Corrupt => {
                            self.store_failed(&e);
                            return Some(Err(Error::Checkpoint(e)));
                        }
                        Ok(None) | Err(_) => {}
                    }
                    self.next_try = Some(Instant::now() + retry_in);
                    if !std::mem::replace(&mut self.standing_by, true) {
                        return Some(Ok(StreamItem::Notice(StreamNotice::StandingBy {
                            retry_in,
                        })));
                    }
                }
                Err(e) => {
                    let retry = self.store_failed(&e);
                    self.next_try = retry.map(|wait| Instant::now() + wait);
                    return Some(Err(Error::Checkpoint(e)));
                }
            }
        }
    }

    /// Forgets a lost lease and what was read under it.
    fn give_up_lease(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        self.lease = None;
        self.watch = None;
        self.buffer.clear();
        self.notices.clear();
        self.window_end = None;
        self.caught_up = false;
        self.next_poll = None;
    }

    /// What to do after the checkpoint store failed: a store that cannot be reached is asked
    /// again after the returned backoff (and the failure is logged now); any other failure
    /// ends the stream (`None`).
    fn store_failed(&mut self, error: &FleetError) -> Option<Duration> {
        if error.kind != FleetErrorKind::Unavailable {
            tracing::error!(%error, "the event stream's checkpoint store failed: the stream ends");
            self.ended = true;
            return None;
        }
        let base = Duration::from_secs(1u64 << self.store_failures.min(6))
            .min(EventStream::MAX_STORE_BACKOFF);
        self.store_failures = self.store_failures.saturating_add(1);
        let jitter = Duration::from_millis(self.jitter.below(base.as_millis() as u64 / 10));
        let wait = base + jitter;
        tracing::warn!(%error, retry_in = ?wait, "the event stream's checkpoint store failed; trying again");
        Some(wait)
    }

    fn advance(&mut self, to: Option<i64>) {
        if let Some(to) = to {
            self.cursor = Some(self.cursor.map_or(to, |cursor| cursor.max(to)));
        }
    }

    fn caught_up_notice(&self) -> StreamItem {
        StreamItem::Notice(StreamNotice::CaughtUp {
            next_poll_in: self.poll_interval,
        })
    }

    async fn resolve(&mut self, start: StreamStart) -> Result<i64, Error> {
        if let Some((store, name)) = &self.checkpoints {
            match store.load(name).await {
                Ok(found) => {
                    if let Some(restored) = self.memory.lost(name, found) {
                        // Written again now, so that a holder after this one finds it.
                        if let Some(lease) = &self.lease {
                            store
                                .save(lease, restored)
                                .await
                                .map_err(Error::Checkpoint)?;
                        }
                        self.notices
                            .push_back(StreamNotice::CheckpointLost { found, restored });
                        return Ok(restored);
                    }
                    if let Some(saved) = found {
                        self.memory.seen(saved);
                        return Ok(saved);
                    }
                }
                // Starting elsewhere would lose or repeat events: say so and try again later.
                Err(e) => return Err(Error::Checkpoint(e)),
            }
        }
        match start {
            StreamStart::After(id) => Ok(id),
            StreamStart::Latest | StreamStart::Oldest => {
                let cursor = super::events_cursor(&self.client).await?;
                let (field, id) = match start {
                    StreamStart::Latest => ("latest_event_id", Some(cursor.latest_event_id)),
                    _ => (
                        "oldest_event_id",
                        Some(cursor.oldest_event_id.saturating_sub(1)),
                    ),
                };
                // Starting from 0 instead would replay the whole history, or skip it.
                id.ok_or_else(|| Error::Decode {
                    path: field.into(),
                    message: "the events cursor has no such id".into(),
                    body: Default::default(),
                })
            }
        }
    }
}

/// A page's own fields (its `events` left empty) and its events in the page's order, each
/// read or kept as sent; `None` when the page itself does not have its shape.
fn read_leniently(body: &[u8]) -> Option<(pubapi_sdk::types::EventPage, Vec<Entry>)> {
    let mut page: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(body).ok()?;
    let serde_json::Value::Array(events) = page.remove("events")? else {
        return None;
    };
    let shell: pubapi_sdk::types::EventPage =
        serde_json::from_value(serde_json::Value::Object(page)).ok()?;
    let entries = events
        .into_iter()
        .map(|raw| {
            let event = serde_path_to_error::deserialize(&raw);
            match event.map(pubapi_sdk::types::PollingEvent::into) {
                Ok(event) => Entry::Event(event),
                Err(error) => Entry::Undecodable(UndecodableEvent {
                    id: raw.get("id").and_then(serde_json::Value::as_i64),
                    error: format!("{}: {}", error.path(), error.inner()),
                    raw,
                }),
            }
        })
        .collect();
    Some((shell, entries))
}

/// One event of a window: read, or kept as sent.
#[derive(Debug)]
pub(crate) enum Entry {
    Event(PollingEvent),
    Undecodable(UndecodableEvent),
}

impl Entry {
    pub(crate) fn id(&self) -> Option<i64> {
        match self {
            Entry::Event(event) => Some(event.id()),
            Entry::Undecodable(event) => event.id,
        }
    }
}

/// What one forward page says: the events to deliver, where the window ended and whether
/// more may follow at once. Pure, so the arithmetic is property-tested on its own.
#[derive(Debug)]
pub(crate) struct Window {
    /// Events after the cursor, ascending by id, each id once (events without an id last,
    /// in the page's order).
    pub(crate) events: Vec<Entry>,
    /// The new cursor once `events` are delivered: never below the cursor asked from.
    pub(crate) end: i64,
    /// A full window of ids was read: the next one may be read at once.
    pub(crate) more: bool,
    /// The server restarted from its oldest stored id, above the cursor.
    pub(crate) restarted_at: Option<i64>,
}

impl Window {
    /// Reads the page answered for `cursor` with `count` ids per window.
    pub(crate) fn forward(cursor: i64, count: i64, page: pubapi_sdk::types::EventPage) -> Window {
        let events = page.events.into_iter();
        let entries = events.map(|e| Entry::Event(PollingEvent::from(e)));
        Window::of(
            cursor,
            count,
            page.oldest_id,
            page.latest_id,
            entries.collect(),
        )
    }

    /// Reads, event by event, a page that failed to decode as a whole: `None` unless the page
    /// itself has its shape (then the error was the page's, and stays the caller's). Every
    /// event that reads is typed (also when the page failed for another cause a value does
    /// not keep, such as a key twice in an event: a stream must not stop on it).
    pub(crate) fn lenient(cursor: i64, count: i64, body: &[u8]) -> Option<Window> {
        let (shell, entries) = read_leniently(body)?;
        Some(Window::of(
            cursor,
            count,
            shell.oldest_id,
            shell.latest_id,
            entries,
        ))
    }

    fn of(
        cursor: i64,
        count: i64,
        oldest_id: Option<i64>,
        latest_id: i64,
        entries: Vec<Entry>,
    ) -> Window {
        let count = count.max(1);
        let restarted_at = oldest_id.filter(|oldest| cursor.saturating_add(1) < *oldest);
        // The window starts after the cursor, or at the oldest stored id above it.
        let base = restarted_at.map_or(cursor, |oldest| oldest - 1);
        let bound = base.saturating_add(count);
        // An event without an id goes right after the event before it in the page: the
        // checkpoint after it stays that event's id, so a consumer that stops on it is handed
        // it again rather than never.
        let mut before = i64::MIN;
        let mut keyed: Vec<((i64, bool, usize), Entry)> = entries
            .into_iter()
            .enumerate()
            .map(|(at, entry)| match entry.id() {
                Some(id) => {
                    before = id;
                    ((id, false, at), entry)
                }
                None => ((before, true, at), entry),
            })
            .filter(|((_, idless, _), entry)| *idless || entry.id().is_some_and(|id| id > cursor))
            .collect();
        keyed.sort_by_key(|(key, _)| *key);
        let mut events: Vec<Entry> = keyed.into_iter().map(|(_, entry)| entry).collect();
        events.dedup_by(|a, b| a.id().is_some() && a.id() == b.id());
        let newest = events.iter().filter_map(Entry::id).max();
        // Only ids fill a window: a page of events without one still ends at `latest_id`.
        let full_by_count = events.iter().filter_map(Entry::id).count() as i64 >= count;
        // `latest_id` ends the window; one beyond the ids the window can hold is not trusted
        // (and a full page of events is read up to its last id only).
        let latest = Some(latest_id)
            .filter(|latest| *latest > cursor && !full_by_count)
            .map(|latest| latest.min(bound));
        let end = newest.max(latest).unwrap_or(cursor).max(cursor);
        let more = end > cursor && (full_by_count || end >= bound);
        Window {
            events,
            end,
            more,
            restarted_at,
        }
    }
}

/// The walk of [`Events::backfill`](crate::api::Events::backfill).
pub(crate) fn backfill(
    client: Client,
    version: EventsVersion,
    from: i64,
) -> BoxStream<'static, Result<PollingEvent, Error>> {
    struct Walk {
        client: Client,
        /// The next window ends here (inclusive); `None` before the cursor is read.
        next: Option<i64>,
        /// The oldest stored id: the walk ends below it.
        floor: i64,
        buffer: VecDeque<Result<PollingEvent, Error>>,
        done: bool,
    }
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
            let top = match walk.next {
                Some(top) => top,
                None => match super::events_cursor(&walk.client).await {
                    Ok(cursor) => {
                        walk.floor = cursor.oldest_event_id;
                        let latest = cursor.latest_event_id;
                        from.min(latest)
                    }
                    Err(e) => {
                        walk.done = true;
                        return Some((Err(e), walk));
                    }
                },
            };
            if top < walk.floor {
                return None;
            }
            let query = EventQuery {
                reverse: true,
                ..EventQuery::after(top)
            };
            let count = query.page_size();
            let bottom = top.saturating_sub(count - 1);
            let (oldest_id, entries, body) =
                match super::events_page(&walk.client, version, &query).await {
                    Ok(Some(page)) => {
                        let events = page.events.into_iter();
                        let entries = events.map(|e| Entry::Event(e.into())).collect();
                        (page.oldest_id, entries, Bytes::new())
                    }
                    Ok(None) => {
                        walk.done = true;
                        continue;
                    }
                    Err(e) => {
                        // A page that has its shape, whose events do not all: read event by
                        // event, and an event that does not read is an error item in its
                        // place (the walk goes on past it).
                        let lenient = match &e {
                            Error::Decode { body, .. } => {
                                read_leniently(body).map(|read| (read, body.0.clone()))
                            }
                            _ => None,
                        };
                        let Some(((shell, entries), body)) = lenient else {
                            walk.done = true;
                            return Some((Err(e), walk));
                        };
                        (shell.oldest_id, entries, body)
                    }
                };
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
                bottom <= walk.floor || oldest_id.is_some_and(|oldest| oldest > bottom);
            // The next window ends below every id delivered so far; there is none below
            // `i64::MIN` (saturating there would read it again).
            let below = lowest.map_or(bottom, |lowest| lowest.min(bottom));
            let next = below.checked_sub(1);
            walk.done = reached_oldest || next.is_none();
            walk.next = next;
            walk.buffer
                .extend(events.into_iter().map(|(at, entry)| match entry {
                    Entry::Event(event) => Ok(event),
                    Entry::Undecodable(event) => Err(Error::Decode {
                        path: format!("events[{at}]"),
                        message: event.error,
                        body: body.clone().into(),
                    }),
                }));
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        unpin(
            &client
                .search()
                .results(pubapi_sdk::types::HybridSearchRequest::new("q").unwrap()),
        );
        unpin(&client.knowledge_bases().list(Default::default()));
        let at = crate::audit::ReportLocation {
            kind: pubapi_sdk::types::AuditReportKind::Logins,
            id: "r-1".into(),
        };
        unpin(
            &client
                .audit()
                .events(at, crate::audit::ReportRead::default()),
        );
        unpin(&client.events().stream(EventsVersion::V2).build());
    }
    use proptest::prelude::*;
    use pubapi_sdk::types::EventPage;
    use serde_json::json;

    /// Ids near the cursor, near the ends of the range, and anywhere.
    fn id_near(cursor: i64) -> impl Strategy<Value = i64> {
        prop_oneof![
            (-150i64..150).prop_map(move |d| cursor.saturating_add(d)),
            Just(i64::MIN),
            Just(i64::MAX),
            any::<i64>(),
        ]
    }

    fn page(cursor: i64) -> impl Strategy<Value = (i64, EventPage)> {
        (
            proptest::collection::vec(id_near(cursor), 0..120),
            id_near(cursor),
            proptest::option::of(id_near(cursor)),
        )
            .prop_map(move |(ids, latest_id, oldest_id)| {
                let events = ids
                    .into_iter()
                    .map(|id| {
                        serde_json::from_value(serde_json::json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}))
                            .unwrap()
                    })
                    .collect();
                let page = EventPage {
                    count: None,
                    events,
                    latest_id,
                    oldest_id,
                };
                (cursor, page)
            })
    }

    #[test]
    fn events_without_an_id_do_not_decode_and_duplicate_ids_are_delivered_once() {
        // The spec makes `id` and `type` required: an event without them is a decode error
        // naming the field, not an event the window has to place.
        let missing =
            serde_json::from_value::<pubapi_sdk::types::PollingEvent>(json!({"type": "note"}));
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `id`")
        );
        let events = [
            json!({"id": 7, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
            json!({"id": 7, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
        ]
        .into_iter()
        .map(|e| serde_json::from_value(e).unwrap())
        .collect();
        let page = EventPage {
            count: None,
            events,
            latest_id: 9,
            oldest_id: None,
        };
        let window = Window::forward(5, 10, page);
        let ids: Vec<i64> = window.events.iter().filter_map(Entry::id).collect();
        assert_eq!(ids, vec![7]);
        assert_eq!((window.end, window.more), (9, false));
    }

    #[test]
    fn a_full_page_of_events_moves_by_latest_id() {
        let events = (51..=60)
            .map(|id| {
                serde_json::from_value(
                    json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
                )
                .unwrap()
            })
            .collect();
        let page = EventPage {
            count: None,
            events,
            latest_id: 60,
            oldest_id: Some(51),
        };
        let window = Window::forward(50, 10, page);
        assert_eq!(window.events.len(), 10);
        assert_eq!((window.end, window.more), (60, true));
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        #[test]
        fn a_window_never_moves_back_delivers_each_id_once_and_only_claims_more_with_progress(
            (cursor, page) in prop_oneof![
                any::<i64>(),
                Just(i64::MIN),
                Just(i64::MAX),
                Just(i64::MAX - 50),
                Just(i64::MIN + 50),
            ].prop_flat_map(page),
            count in 1i64..=100,
        ) {
            let window = Window::forward(cursor, count, page);
            prop_assert!(window.end >= cursor);
            let ids: Vec<i64> = window.events.iter().filter_map(Entry::id).collect();
            prop_assert!(ids.iter().all(|id| *id > cursor));
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            prop_assert!(ids.iter().all(|id| *id <= window.end));
            if window.more {
                prop_assert!(window.end > cursor, "more without progress");
            }
        }

        #[test]
        fn a_lenient_read_of_any_body_never_panics(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Window::lenient(0, 50, &body);
        }

        #[test]
        fn a_lenient_read_hands_over_every_event_once_in_order_and_moves_forward(
            cursor in -5i64..5,
            count in 1i64..=20,
            events in proptest::collection::vec(
                (proptest::option::of(-10i64..10), any::<bool>(), any::<bool>()),
                1..20,
            ),
            latest in -10i64..30,
        ) {
            // An event: its id (or none), whether it keeps its timestamp, its type.
            let raw: Vec<serde_json::Value> = events
                .iter()
                .map(|(id, timestamp, note)| {
                    let mut event = json!({"type": if *note { "note" } else { "file_system" }});
                    if let Some(id) = id {
                        event["id"] = json!(id);
                    }
                    if *timestamp {
                        event["timestamp"] = json!("2026-01-05T10:00:00Z");
                    }
                    event
                })
                .collect();
            let body = json!({"latest_id": latest, "events": raw}).to_string();
            let window = Window::lenient(cursor, count, body.as_bytes()).unwrap();
            prop_assert!(window.end >= cursor);
            let ids: Vec<Option<i64>> = window.events.iter().map(Entry::id).collect();
            // Ascending ids above the cursor, each once, with those without an id among them.
            let with: Vec<i64> = ids.iter().flatten().copied().collect();
            prop_assert!(with.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            prop_assert!(with.iter().all(|id| *id > cursor && *id <= window.end));
            let mut expected: Vec<i64> =
                events.iter().filter_map(|e| e.0).filter(|id| *id > cursor).collect();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(&with, &expected);
            prop_assert_eq!(
                ids.len() - ids.iter().flatten().count(),
                events.iter().filter(|e| e.0.is_none()).count()
            );
            if window.more {
                prop_assert!(window.end > cursor, "more without progress");
            }
            // A window that hands something over moves on, unless the page's `latest_id` was
            // not past the cursor (a server that contradicts itself).
            if window.end == cursor {
                prop_assert!(latest <= cursor || ids.is_empty(), "{ids:?}");
            }
        }
    }
}
