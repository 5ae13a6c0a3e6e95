//! The walker: the state an [`EventStream`] moves through windows of ids with, and its loop.
//!
//! One call of [`Walker::next`] hands out one item: it keeps the stream's lease (taking it,
//! standing by, or saying it was lost, with the lease's parts from `lease`), hands out what
//! is buffered, waits for the next poll, resolves where to start (the store's checkpoint,
//! checked against the `checkpoint` memory) and reads the next [`Window`] into the buffer.

use super::checkpoint::Memory;
use super::lease::{Hold, LeaseWatch, spawn_renewal};
use super::{EventStream, EventStreamBuilder, StreamItem, StreamNotice, StreamStart};
use crate::Client;
use crate::error::Error;
use crate::events::window::{Entry, Window};
use crate::events::{EventQuery, EventsVersion};
use crate::fleet::{Acquired, CheckpointStore, FleetError, FleetErrorKind, Lease};
use crate::rng::SplitMix64;
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The state an [`EventStream`] moves through windows with.
#[derive(Debug)]
pub(super) struct Walker {
    /// Shared with the stream.
    pub(super) memory: Arc<Memory>,
    pub(super) client: Client,
    pub(super) version: EventsVersion,
    pub(super) start: Option<StreamStart>,
    /// Where to start when the store has no checkpoint (also after taking the lease again).
    pub(super) initial_start: StreamStart,
    pub(super) query: EventQuery,
    pub(super) poll_interval: Duration,
    pub(super) checkpoints: Option<(Arc<dyn CheckpointStore>, String)>,
    pub(super) cursor: Option<i64>,
    pub(super) buffer: VecDeque<Entry>,
    pub(super) notices: VecDeque<StreamNotice>,
    /// Where the window of the buffered events ended: the cursor once they are delivered.
    pub(super) window_end: Option<i64>,
    pub(super) next_poll: Option<Instant>,
    /// The last window reached the newest event: say so once its events are delivered.
    pub(super) caught_up: bool,
    /// An error ended the stream.
    pub(super) ended: bool,
    /// The stream's lease, while held.
    pub(super) lease: Option<Lease>,
    /// Until when the lease is held, kept by the renewal.
    pub(super) watch: Option<Arc<LeaseWatch>>,
    /// The task renewing the lease.
    pub(super) renewal: Option<tokio::task::AbortHandle>,
    /// Say [`StreamNotice::Consuming`] once the checkpoint is read.
    pub(super) announce: bool,
    /// [`StreamNotice::StandingBy`] was said for this stand-by.
    pub(super) standing_by: bool,
    /// When to ask for the lease again.
    pub(super) next_try: Option<Instant>,
    /// Failures in a row of a store that could not be reached: the backoff's exponent.
    pub(super) store_failures: u32,
    pub(super) jitter: SplitMix64,
}

impl Walker {
    /// A walker with the builder's settings, sharing `memory` with its stream.
    pub(super) fn new(builder: EventStreamBuilder, memory: Arc<Memory>) -> Walker {
        Walker {
            memory,
            client: builder.client,
            version: builder.version,
            start: Some(builder.start),
            initial_start: builder.start,
            query: builder.query,
            poll_interval: builder.poll_interval,
            checkpoints: builder.checkpoints,
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
        }
    }

    /// The next item. Errors are items and the stream goes on after them at the next poll;
    /// `None` comes only after an error no later poll can mend (input the SDK refuses, such
    /// as an invalid folder path; a query the server refuses with 400, such as an event type
    /// it does not know, as [`Error::InvalidRequest`] with the server's codes and
    /// descriptions; or a cursor without the id to start from), which was the item before it.
    pub(super) async fn next(&mut self) -> Option<Result<StreamItem, Error>> {
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
            if let Some(item) = self.ready_item() {
                return Some(Ok(item));
            }
            if let Some(at) = self.next_poll.take()
                && at > Instant::now()
            {
                tokio::time::sleep_until(at).await;
            }
            if let Some(start) = self.start
                && let Some(item) = self.start_at(start).await
            {
                return Some(item);
            }
            let cursor = self.cursor.unwrap_or_default();
            match self.read_window(cursor).await {
                ControlFlow::Continue(window) => {
                    self.take_window(cursor, window, &mut empty_windows);
                }
                ControlFlow::Break(item) => return Some(item),
            }
        }
    }

    /// What is ready without reading: a notice, a buffered event, or that the stream caught
    /// up.
    fn ready_item(&mut self) -> Option<StreamItem> {
        if let Some(notice) = self.notices.pop_front() {
            return Some(StreamItem::Notice(notice));
        }
        if let Some(entry) = self.buffer.pop_front() {
            self.advance(entry.id());
            if self.buffer.is_empty() {
                let end = self.window_end.take();
                self.advance(end);
            }
            crate::telemetry::events_delivered(self.version.label(), 1);
            return Some(match entry {
                Entry::Event(event) => StreamItem::Event(Box::new(event)),
                Entry::Undecodable(event) => {
                    tracing::warn!(
                        id = event.id,
                        error = %event.error,
                        "an event the SDK cannot read is handed over as sent"
                    );
                    StreamItem::Undecodable(Box::new(event))
                }
            });
        }
        if std::mem::take(&mut self.caught_up) {
            return Some(self.caught_up_notice());
        }
        None
    }

    /// Sets the cursor where the walk (re)starts; the item to hand out first, if any
    /// ([`StreamNotice::Consuming`] after taking the lease, or the error that kept it from
    /// starting).
    async fn start_at(&mut self, start: StreamStart) -> Option<Result<StreamItem, Error>> {
        match self.resolve(start).await {
            Ok(cursor) => {
                self.cursor = Some(cursor);
                self.start = None;
                self.store_failures = 0;
                let lease = self.lease.as_ref()?;
                std::mem::take(&mut self.announce).then(|| {
                    Ok(StreamItem::Notice(StreamNotice::Consuming {
                        token: lease.token,
                        after: cursor,
                        taken_over: lease.taken_over,
                    }))
                })
            }
            Err(Error::Checkpoint(e)) => {
                let retry = self.store_failed(&e);
                self.next_poll = retry.map(|wait| Instant::now() + wait);
                Some(Err(Error::Checkpoint(e)))
            }
            Err(e) => {
                if matches!(e, Error::Decode { .. }) {
                    self.ended = true;
                } else {
                    self.next_poll = Some(Instant::now() + self.poll_interval);
                }
                Some(Err(e))
            }
        }
    }

    /// Reads the window after `cursor`, or says what to hand out instead (that the stream
    /// caught up, or an error).
    async fn read_window(&mut self, cursor: i64) -> ControlFlow<Result<StreamItem, Error>, Window> {
        let query = EventQuery {
            id: cursor,
            ..self.query.clone()
        };
        let count = query.page_size();
        let e = match crate::events::events_page(&self.client, self.version, &query).await {
            Ok(Some(page)) => return ControlFlow::Continue(Window::forward(cursor, count, page)),
            Ok(None) => {
                self.next_poll = Some(Instant::now() + self.poll_interval);
                return ControlFlow::Break(Ok(self.caught_up_notice()));
            }
            Err(e) => e,
        };
        // A page that has its shape, whose events do not all: read event by event.
        if let Error::Decode { body, .. } = &e
            && let Some(window) = Window::lenient(cursor, count, body)
        {
            return ControlFlow::Continue(window);
        }
        // Input the SDK or the server refuses, or an operation that is gone, fails the same
        // way at every poll (only the cursor changes, and the server set it): the stream ends
        // with it instead of repeating it.
        if matches!(
            e,
            Error::InvalidInput(_) | Error::InvalidRequest(_) | Error::Removed { .. }
        ) {
            self.ended = true;
        } else {
            self.next_poll = Some(Instant::now() + self.poll_interval);
        }
        ControlFlow::Break(Err(e))
    }

    /// Takes in the window read after `cursor`: its events into the buffer or, when it has
    /// none, the cursor past it (`empty_windows` counts those in a row for one item).
    fn take_window(&mut self, cursor: i64, window: Window, empty_windows: &mut u32) {
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
                return;
            }
            *empty_windows += 1;
            if *empty_windows >= EventStream::MAX_EMPTY_WINDOWS_PER_ITEM {
                self.notices.push_back(StreamNotice::Skipped {
                    through: window.end,
                });
            }
            return;
        }
        self.buffer.extend(window.events);
        self.window_end = Some(window.end);
        self.caught_up = !window.more;
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

    /// Holds the stream's lease before anything is handed out: takes it, or stands by while
    /// another consumer holds it, or says it was lost. `None` while it is held (or there is
    /// no store); otherwise the item to hand out.
    async fn keep_lease(&mut self) -> Option<Result<StreamItem, Error>> {
        let (store, name) = self.checkpoints.clone()?;
        loop {
            if let Some(lease) = &self.lease {
                if let Some(watch) = self.watch.clone()
                    && watch.holds()
                {
                    // A handler may take a third of the lease time: nothing is handed out
                    // with less of the hold left (a renewal late or failing), so no handler
                    // outlasts the hold, which ends before the store's lease does. Until
                    // the renewal comes in or the hold runs out, nothing is handed out.
                    let guard = lease.expires_in.map(|lease_time| lease_time / 3);
                    if let (Some(guard), Some(until)) = (guard, watch.until()) {
                        let now = Instant::now();
                        if until.saturating_duration_since(now) < guard {
                            let look = (guard / 8).max(Duration::from_millis(5));
                            tokio::time::sleep_until(until.min(now + look)).await;
                            continue;
                        }
                    }
                    match self.owed_save(&store, &name, &watch).await {
                        ControlFlow::Continue(()) => continue,
                        ControlFlow::Break(item) => return item,
                    }
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
                    let watch = Arc::new(LeaseWatch::new(hold));
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

    /// While the lease is held: stores the checkpoint a save could not store, before
    /// anything more is handed out. `Break(None)` when nothing is owed (or it is stored now),
    /// `Break(Some(error))` when the store holds no checkpoint there, `Continue` to look at
    /// the lease again (lost, or the store still unreachable after a short wait, within the
    /// hold).
    async fn owed_save(
        &mut self,
        store: &Arc<dyn CheckpointStore>,
        name: &str,
        watch: &LeaseWatch,
    ) -> ControlFlow<Option<Result<StreamItem, Error>>> {
        let (Some(id), Some(lease)) = (watch.unsaved(), &self.lease) else {
            return ControlFlow::Break(None);
        };
        match store.save(lease, id).await {
            Ok(found) => {
                self.memory.saved(name, found, id);
                watch.saved(id);
                ControlFlow::Break(None)
            }
            Err(e) if e.kind == FleetErrorKind::LeaseLost => {
                watch.lose();
                ControlFlow::Continue(())
            }
            Err(e) if e.kind == FleetErrorKind::Unavailable => {
                // Asked again soon, but never past the hold: a store unreachable for the
                // lease time is a lease lost.
                let lease_time = lease.expires_in.unwrap_or(Duration::from_secs(1));
                let mut at = Instant::now()
                    + (lease_time / 10).clamp(Duration::from_millis(50), Duration::from_secs(1));
                if let Some(until) = watch.until() {
                    at = at.min(until);
                }
                tracing::debug!(stream = %name, %e, "the checkpoint is not stored yet; nothing more is handed out until it is");
                tokio::time::sleep_until(at).await;
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.store_failed(&e);
                ControlFlow::Break(Some(Err(Error::Checkpoint(e))))
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
                let cursor = crate::events::events_cursor(&self.client).await?;
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
                    request_id: None,
                })
            }
        }
    }
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
