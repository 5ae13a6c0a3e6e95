//! The framework-neutral webhook receiver: authenticate, bound, parse, deduplicate, hand over.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http::header::AUTHORIZATION;

use super::dedup::{
    Claim, Claimant, DeadLetterKey, DedupError, DedupKey, DedupStore, dead_letter_key,
};
use super::delivery::{MIN_EVENT_BYTES, envelope_problem, read_element};
use super::recent::{Overruled, Recent};
use super::scan::{Elements, data_elements, tree_cost};
mod builder;

pub use builder::{ReceiverBuildError, ReceiverBuilder};

use super::{Batch, DeadLetter, DeliveryHandler, DeliveryParseError, WebhookEvent, WebhookSecret};

/// Default for [`ReceiverBuilder::dedup_window`]: 2 hours, beyond the platform's last retry
/// (71 minutes after the first attempt) with margin.
pub const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(2 * 60 * 60);

/// Default for [`ReceiverBuilder::dedup_capacity`]: 100,000 events, on the order of 10 MiB.
pub const DEFAULT_DEDUP_CAPACITY: usize = 100_000;

/// Default for [`ReceiverBuilder::recent_deliveries`]'s count: the last 100,000 events this
/// process committed (on the order of 10 MiB, as much as the in-process store's default).
///
/// A repeat of a delivery comes at most 71 minutes after its first attempt (the platform
/// retries after 1 minute, 10 minutes and 1 hour), so this covers every repeat for a process
/// that commits up to about 23 events a second on average (100,000 in 71 minutes), and the
/// whole [`DEFAULT_RECENT_WINDOW`] up to about 14 a second.
pub const DEFAULT_RECENT_CAPACITY: usize = 100_000;

/// Default for [`ReceiverBuilder::recent_deliveries`]'s window: 2 hours, as
/// [`DEFAULT_DEDUP_WINDOW`], beyond the platform's last retry (71 minutes after the first
/// attempt) with margin. Never longer than the store's own [window](DedupStore::window).
pub const DEFAULT_RECENT_WINDOW: Duration = DEFAULT_DEDUP_WINDOW;

/// Default for [`ReceiverBuilder::max_body_bytes`]: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Default for [`ReceiverBuilder::max_read_bytes`]: 32 MiB.
pub const DEFAULT_MAX_READ_BYTES: usize = 32 * 1024 * 1024;

/// Default for [`ReceiverBuilder::max_items`]: 10,000 elements of `data` per delivery.
///
/// The smallest element the reference allows as an event takes 146 bytes, so a body within
/// [`DEFAULT_MAX_BODY_BYTES`] holds at most about 7,100 events: the default never cuts a
/// real delivery, and one delivery takes at most a tenth of [`DEFAULT_DEDUP_CAPACITY`].
pub const DEFAULT_MAX_ITEMS: usize = 10_000;

/// The most heap, per byte of an element, that the tree of an element read as an event may
/// take (estimated before reading it; see [`Receiver`]'s memory notes).
const TREE_BYTES_PER_BYTE: usize = 14;

/// The receiver's name with the in-process default store, which no other receiver shares.
const DEFAULT_RECEIVER_NAME: &str = "default";

/// The longest [receiver name](ReceiverBuilder::dedup_store), in bytes.
const MAX_RECEIVER_NAME_BYTES: usize = 64;

/// Receives webhook deliveries, whatever the HTTP server.
///
/// [`Receiver::handle`] takes the request's headers and body and returns the [`HandleOutcome`]
/// whose `status` to answer with. In order, it:
///
/// 1. checks the `authorization` header against the current and the previous secret, in
///    constant time; a missing, repeated or wrong header is answered **401** and nothing else
///    happens;
/// 2. hands a body over [`max_body_bytes`](ReceiverBuilder::max_body_bytes), or whose `data`
///    has more than [`max_items`](ReceiverBuilder::max_items) elements, to the handler
///    unparsed, as a [`DeadLetter`], and answers 200: an authenticated delivery is never
///    refused, since every refusal counts towards disabling the registration (the axum
///    route stops reading at [`max_read_bytes`](ReceiverBuilder::max_read_bytes), a memory
///    bound against whoever holds the secret, and answers 413 there);
/// 3. reads the elements of `data` one at a time; what cannot be read (the whole body, an
///    element that is not an event, or one too dense to read within the memory bound below)
///    becomes a [`DeadLetter`] for the handler, never an error answer;
/// 4. drops events repeated inside the delivery and, if configured, the application's own
///    events, then claims the rest in the [dedup store](DedupStore) (key: `domain` +
///    `eventId`, and one key for the delivery's dead letters): events and dead letters
///    already handed over within the dedup window are dropped, and so are those the store
///    lost but this process handed over within its
///    [recent set](ReceiverBuilder::recent_deliveries);
/// 5. calls the [`DeliveryHandler`] once with what is left, and answers **200** only after it
///    returned `Ok` (then commits the claims: remembered as seen), or **500** if it failed
///    (and releases them, so the platform's retry is handed over again).
///
/// If an event of the delivery is being handled right now for another delivery (the
/// platform's immediate retry racing a slow handler, here or on another replica sharing the
/// store), the rest is handled and the answer is **503**, so the platform sends the delivery
/// again later; by then that event is either seen (a duplicate) or released (handled then).
/// Nothing is lost or handed over twice.
///
/// If the dedup store cannot be reached (a shared store such as Redis is down), the delivery
/// is refused with **503** before the handler sees anything
/// ([`HandleOutcome::dedup_unavailable`]): the platform retries it (after 1 minute, 10 minutes and
/// 1 hour), so nothing is lost, and nothing is handed over without its claim, so nothing is
/// handed over twice. An outage longer than the retry horizon (71 minutes) disables the
/// registration: reconcile through the events API then.
///
/// # Deduplication memory
///
/// By default deduplication lives in this process's memory ([`MemoryDedup`](crate::webhook::MemoryDedup)): forgotten on
/// restart, not shared between replicas. To share it between replicas and keep it across
/// restarts, give the receiver a shared store with
/// [`dedup_store`](ReceiverBuilder::dedup_store) (`RedisDedup`, feature `redis`). Otherwise,
/// where that matters, make the handler idempotent on `(domain, eventId)`.
///
/// A shared store can lose what it held (Redis restarted without its data, flushed, failed
/// over to a lagging replica). Behind one, the receiver keeps a second line: the keys this
/// process handed over recently ([`recent_deliveries`](ReceiverBuilder::recent_deliveries),
/// by default the last 100,000 events for 2 hours). An event the store answers as new but
/// this process handed over within those bounds is a duplicate (200, counted in
/// [`HandleOutcome::forgotten_by_store`]) and is recorded in the store again. Another replica
/// that never handed it over cannot know it, and past those bounds this process forgets too.
///
/// - Events handed over are remembered up to [`dedup_capacity`](ReceiverBuilder::dedup_capacity)
///   ids, the oldest forgotten first. Only events take these slots, and one delivery adds at
///   most [`max_items`](ReceiverBuilder::max_items) of them, so **one delivery evicts at most
///   `max_items` ids of other deliveries** (with the defaults, a tenth of the memory).
/// - Dead letters never take or evict an event's slot. A delivery's dead letters are
///   remembered together, as one digest of their bytes, in a separate memory of the last
///   [`DEAD_LETTER_DEDUP_CAPACITY`](super::DEAD_LETTER_DEDUP_CAPACITY) such deliveries: a
///   retry of the delivery does not hand them over again, a different delivery with the same
///   bad element does.
///
/// # Memory of one delivery
///
/// Handling a delivery of `n` bytes whose `data` has `k` elements holds **at most about
/// `40·n + 256·k` bytes of heap** (64-bit targets), whatever the body holds: 42.5 MiB with
/// the default limits (1 MiB, 10,000 elements). Real deliveries take 4 to 8 times their size.
/// This holds because:
///
/// - the body is never parsed into one tree: serde_json checks that it is JSON without
///   keeping anything, a scan finds the elements of `data`, and each is read on its own;
/// - an element is read as an event only if its JSON tree (a [`serde_json::Value`] takes 32
///   bytes per array slot and 640 per object node) is estimated at **14 bytes or less per
///   byte** of its text; real events take 5 to 10 (11 for a long list of numeric ids), while
///   runs of tiny arrays or objects take up to 90. A denser element is handed over as a dead
///   letter; while one element is read, at most two trees of it exist;
/// - dead letters are copies of their bytes, not trees;
/// - the events' vector is sized once: an event takes 1,088 bytes and at least 146 bytes of
///   body, so 7.5 times the body at most.
///
/// So: 7.5·n for the events, 14·n for the trees they keep, and, while an element is read, a
/// second tree of it (with the allocator's rounding, the densest readable body of one element
/// peaks at about 31·n), plus per element the dead letter and its reason.
///
/// Clock: `tokio::time`, so tests can pause and advance time.
///
/// ```
/// use pubapi_sdk_ext::webhook::{Batch, HandlerError, Receiver, WebhookSecret};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let receiver = Receiver::builder()
///     .secret(WebhookSecret::new("s3cr3t-from-registration")?)
///     .ignore_own_client_id("my-oauth-client-id")
///     .build()?;
///
/// let handler = |batch: Batch| async move {
///     for event in &batch.events {
///         println!("{} at {}", event.event_type, event.timestamp_ms);
///     }
///     Ok::<(), HandlerError>(())
/// };
///
/// // A delivery as the platform sends it (`webhook::testing`, feature `test-util`, builds
/// // signed sample deliveries for your tests).
/// let mut headers = pubapi_sdk_ext::http::HeaderMap::new();
/// headers.insert("authorization", "s3cr3t-from-registration".parse()?);
/// headers.insert("content-type", "application/json".parse()?);
/// let body = br#"{"data": [{
///     "eventId": "evt-1", "domain": "example", "timestamp": 1700000000000,
///     "user": {"id": 1001, "displayName": "Ada", "username": "ada", "email": "ada@example.com"},
///     "actionSource": "PublicAPI", "eventType": "fs:add_folder", "webhookId": "wh-1",
///     "data": {"targetPath": "/Shared/Reports"}
/// }]}"#;
/// let outcome = receiver.handle(&headers, body, &handler).await;
/// assert_eq!(outcome.status, 200);
/// assert_eq!(outcome.accepted, 1);
///
/// // The same delivery again is acknowledged without reaching the handler.
/// let again = receiver.handle(&headers, body, &handler).await;
/// assert_eq!((again.status, again.accepted, again.duplicates), (200, 0, 1));
/// # Ok(())
/// # }
/// ```
pub struct Receiver {
    current: WebhookSecret,
    previous: Option<WebhookSecret>,
    own_client_id_hashes: Vec<String>,
    max_body_bytes: usize,
    max_read_bytes: usize,
    max_items: usize,
    /// Scopes the dedup keys, so receivers sharing a store do not share keys.
    name: Arc<str>,
    dedup: Arc<dyn DedupStore>,
    /// What this process committed lately, behind a shared store; `None` with the in-process
    /// store (the same memory) or when turned off.
    recent: Option<Recent>,
}

impl Receiver {
    /// Starts configuring a receiver; a [secret](ReceiverBuilder::secret) is required.
    #[must_use]
    pub fn builder() -> ReceiverBuilder {
        ReceiverBuilder::default()
    }

    /// Whether the headers carry exactly one `authorization` header equal to the current or
    /// the previous secret. Constant time in the header's content.
    ///
    /// [`handle`](Self::handle) checks this itself; a server adapter may also call it before
    /// reading the body, to refuse unauthenticated requests cheaply.
    #[must_use]
    pub fn is_authorized(&self, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return false;
        };
        let digest = crate::digest::sha256(value.as_bytes());
        // Both secrets are compared whichever matches, so the time does not tell which did.
        let current = self.current.matches_digest(&digest);
        let previous = self
            .previous
            .as_ref()
            .is_some_and(|previous| previous.matches_digest(&digest));
        current | previous
    }

    /// Handles one delivery (see the type docs for the steps) and says what to answer.
    ///
    /// Never panics on any header or body. If the returned future is dropped while the
    /// handler runs (the client went away), nothing is remembered as seen: the claims are
    /// released (by a task on the current tokio runtime when the store is remote; a claim
    /// that is never released expires, see `RedisDedup::claim_lease`).
    pub async fn handle<H: DeliveryHandler>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        handler: &H,
    ) -> HandleOutcome {
        let outcome = self.take_in(headers, body, handler).await;
        crate::telemetry::webhook_delivery(outcome.status, outcome.duplicates);
        outcome
    }

    async fn take_in<H: DeliveryHandler>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        handler: &H,
    ) -> HandleOutcome {
        if !self.is_authorized(headers) {
            return HandleOutcome::with_status(401);
        }
        let mut outcome = HandleOutcome::with_status(200);
        let Read {
            mut events,
            mut dead_letters,
            dead_letter_key,
        } = self.read(body, &mut outcome);
        let keys = self.keys(&mut events, dead_letter_key, &mut outcome);
        if keys.is_empty() {
            return outcome;
        }

        let claimant = Claimant::new(Arc::clone(&self.name));
        let mut found = match self.dedup.claim(&claimant, &keys).await {
            Ok(found) if found.len() == keys.len() => found,
            Ok(found) => {
                let error = format!("{} answers for {} keys", found.len(), keys.len());
                return self.dedup_unavailable(&DedupError::new(error), outcome);
            }
            Err(error) => return self.dedup_unavailable(&error, outcome),
        };
        let overruled = match &self.recent {
            Some(recent) => recent.overrule(&keys, &mut found),
            None => Overruled::none(keys.len()),
        };
        self.restore(&claimant, &overruled).await;
        let mut claims = Claims::new(&*self.dedup, claimant);
        let mut found = found.into_iter().zip(keys).zip(overruled.forgotten);
        events.retain(|_| match found.next() {
            Some(((Claim::Fresh, key), _)) => {
                claims.keys.push(key);
                true
            }
            Some(((Claim::Seen, _), forgotten)) => {
                outcome.duplicates += 1;
                outcome.forgotten_by_store += usize::from(forgotten);
                false
            }
            Some(((Claim::InFlight, _), _)) => {
                outcome.in_flight += 1;
                false
            }
            None => false,
        });
        let count = dead_letters.len();
        match found.next() {
            Some(((Claim::Fresh, key), _)) => claims.keys.push(key),
            Some(((Claim::Seen, _), forgotten)) => {
                outcome.duplicates += count;
                if forgotten {
                    outcome.forgotten_by_store += count;
                }
                dead_letters.clear();
            }
            Some(((Claim::InFlight, _), _)) => {
                outcome.in_flight += count;
                dead_letters.clear();
            }
            None => dead_letters.clear(),
        }

        self.hand_over(handler, events, dead_letters, claims, outcome)
            .await
    }

    /// The keys to claim for a delivery: one per event, less the repeats inside the delivery
    /// (duplicates before any store is asked, dropped from `events`), then the dead letters'
    /// key.
    fn keys(
        &self,
        events: &mut Vec<WebhookEvent>,
        dead_letter_key: Option<DedupKey>,
        outcome: &mut HandleOutcome,
    ) -> Vec<DedupKey> {
        let mut in_this_delivery = HashSet::with_capacity(events.len());
        let mut keys = Vec::with_capacity(events.len() + 1);
        events.retain(|event| {
            let key = DedupKey::event(&self.name, &event.domain, &event.event_id);
            if in_this_delivery.insert(key) {
                keys.push(key);
                true
            } else {
                outcome.duplicates += 1;
                false
            }
        });
        // The dead letters' key comes last, after one key per remaining event.
        keys.extend(dead_letter_key);
        keys
    }

    /// Hands the claimed events and dead letters to `handler`, then commits the claims (or
    /// releases them when it fails); the outcome's status says which.
    async fn hand_over<H: DeliveryHandler>(
        &self,
        handler: &H,
        events: Vec<WebhookEvent>,
        dead_letters: Vec<DeadLetter>,
        claims: Claims<'_>,
        mut outcome: HandleOutcome,
    ) -> HandleOutcome {
        let busy_elsewhere = outcome.in_flight > 0;
        if events.is_empty() && dead_letters.is_empty() {
            outcome.status = if busy_elsewhere { 503 } else { 200 };
            return outcome;
        }
        outcome.accepted = events.len();
        outcome.dead_letters = dead_letters.len();
        match handler.handle_batch(Batch::new(events, dead_letters)).await {
            Ok(()) => {
                // Before the store: a store that fails to commit forgets, this process does not.
                if let Some(recent) = &self.recent {
                    recent.record(&claims.keys);
                }
                claims.commit().await;
                outcome.status = if busy_elsewhere { 503 } else { 200 };
            }
            Err(_) => {
                claims.release().await;
                outcome.status = 500;
            }
        }
        outcome
    }

    /// Commits again the keys the store had forgotten and this delivery claimed, so the store
    /// holds them once more (for other replicas too); says that the store had forgotten some.
    async fn restore(&self, claimant: &Claimant, overruled: &Overruled) {
        let forgotten = overruled.count();
        if forgotten == 0 {
            return;
        }
        tracing::warn!(
            forgotten,
            restored = overruled.restore.len(),
            store = ?self.dedup,
            "webhook delivery repeats events this process handed over, which the dedup store \
             no longer held (it lost them: a restart without data, a flush, a failover or an \
             eviction); they are not handed over again and are recorded in the store again"
        );
        if overruled.restore.is_empty() {
            return;
        }
        if let Err(error) = self.dedup.commit(claimant, &overruled.restore).await {
            tracing::warn!(
                error = %error,
                cause = ?std::error::Error::source(&error),
                "webhook dedup keys not recorded again in the dedup store; their claims \
                 expire on their own"
            );
        }
    }

    /// Refuses a delivery whose keys could not be claimed, so the platform retries it.
    fn dedup_unavailable(&self, error: &DedupError, mut outcome: HandleOutcome) -> HandleOutcome {
        tracing::warn!(
            error = %error,
            cause = ?std::error::Error::source(error),
            store = ?self.dedup,
            "webhook delivery refused with 503: its events could not be claimed in the dedup \
             store; the platform retries it"
        );
        outcome.status = 503;
        outcome.dedup_unavailable = true;
        outcome
    }

    /// Bounds and parses a body, one element at a time; counts the own events it drops.
    fn read(&self, body: &[u8], outcome: &mut HandleOutcome) -> Read {
        let mut read = Read {
            events: Vec::new(),
            dead_letters: Vec::new(),
            dead_letter_key: None,
        };
        let (elements, count) = match self.bound(body) {
            Ok(found) => found,
            Err(error) => {
                read.dead_letter_key = Some(dead_letter_key(&self.name, "body", body));
                read.dead_letters.push(DeadLetter::Body {
                    raw: Bytes::copy_from_slice(body),
                    error,
                });
                return read;
            }
        };
        // No more events than elements, nor than the smallest event fits in the body: the
        // vector never grows, and its 1 KiB per event stays within 7.5 times the body.
        read.events = Vec::with_capacity(count.min(body.len() / MIN_EVENT_BYTES));
        let mut key: Option<DeadLetterKey> = None;
        for (index, range) in elements.enumerate() {
            let raw = body.get(range).unwrap_or_default();
            match self.read_element(raw) {
                Ok(event) if self.is_own(&event.user.client_id_hash) => outcome.ignored_own += 1,
                Ok(event) => read.events.push(event),
                Err(reason) => {
                    if read.dead_letters.is_empty() {
                        // Sized once too: no copies of the vector while it grows.
                        read.dead_letters.reserve_exact(count - index);
                    }
                    key.get_or_insert_with(|| DeadLetterKey::new(&self.name, "items"))
                        .push(raw);
                    read.dead_letters.push(DeadLetter::Item {
                        raw: Bytes::copy_from_slice(raw),
                        reason,
                    });
                }
            }
        }
        read.dead_letter_key = key.map(DeadLetterKey::finish);
        read
    }

    /// The elements of a body within the size and count limits, and how many there are.
    fn bound<'a>(&self, body: &'a [u8]) -> Result<(Elements<'a>, usize), DeliveryParseError> {
        if body.len() > self.max_body_bytes {
            return Err(DeliveryParseError::TooLarge {
                bytes: body.len(),
                limit: self.max_body_bytes,
            });
        }
        let elements = data_elements(body)?;
        let items = elements.clone().count();
        if items > self.max_items {
            return Err(DeliveryParseError::TooManyItems {
                items,
                limit: self.max_items,
            });
        }
        Ok((elements, items))
    }

    /// Reads one element as an event if its tree fits the memory bound.
    fn read_element(&self, raw: &[u8]) -> Result<WebhookEvent, String> {
        let cost = tree_cost(raw);
        if cost > TREE_BYTES_PER_BYTE.saturating_mul(raw.len()) {
            // Say what is wrong with the element if it is not an event anyway.
            if let Some(problem) = envelope_problem(raw) {
                return Err(problem);
            }
            return Err(format!(
                "not read: its JSON tree would take about {cost} bytes for {} bytes of text, \
                 over the receiver's bound of {TREE_BYTES_PER_BYTE} per byte",
                raw.len()
            ));
        }
        read_element(raw)
    }

    /// The body size above which deliveries are handed over unparsed, as dead letters.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The most the axum route reads of a body before answering 413.
    #[must_use]
    pub fn max_read_bytes(&self) -> usize {
        self.max_read_bytes
    }

    /// How long a handed-over event is remembered (the [dedup store](DedupStore::window)'s
    /// window).
    #[must_use]
    pub fn dedup_window(&self) -> Duration {
        self.dedup.window()
    }

    /// How many handed-over events are remembered at most; `usize::MAX` for a store that
    /// bounds its memory by expiry alone (`RedisDedup`).
    #[must_use]
    pub fn dedup_capacity(&self) -> usize {
        self.dedup.capacity().unwrap_or(usize::MAX)
    }

    /// The bounds of the [recent set](ReceiverBuilder::recent_deliveries) in effect: how many
    /// events, and how long after its commit each is remembered; `None` without one (the
    /// in-process store, or turned off).
    #[must_use]
    pub fn recent_deliveries(&self) -> Option<(usize, Duration)> {
        self.recent
            .as_ref()
            .map(|recent| (recent.capacity(), recent.window()))
    }

    /// The most elements of `data` read from one delivery.
    #[must_use]
    pub fn max_items(&self) -> usize {
        self.max_items
    }

    /// How many handed-over events are remembered right now (dead letters are remembered
    /// apart, see [`DEAD_LETTER_DEDUP_CAPACITY`](super::DEAD_LETTER_DEDUP_CAPACITY)); 0 for a
    /// store that cannot tell cheaply (`RedisDedup`: its keys expire on the server).
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.dedup.remembered().unwrap_or(0)
    }

    fn is_own(&self, client_id_hash: &Option<String>) -> bool {
        client_id_hash.as_deref().is_some_and(|received| {
            self.own_client_id_hashes
                .iter()
                .any(|own| own.eq_ignore_ascii_case(received))
        })
    }
}

/// What one delivery brings before deduplication.
struct Read {
    events: Vec<WebhookEvent>,
    dead_letters: Vec<DeadLetter>,
    /// One key for all the delivery's dead letters, if it has any.
    dead_letter_key: Option<DedupKey>,
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("current", &self.current)
            .field("previous", &self.previous)
            .field("own_client_id_hashes", &self.own_client_id_hashes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_items", &self.max_items)
            .field("name", &self.name)
            .field("dedup", &self.dedup)
            .field("recent", &self.recent_deliveries())
            .finish_non_exhaustive()
    }
}

/// The keys one delivery claimed; released on drop unless settled, so a failed or
/// cancelled handler leaves them free for the retry.
struct Claims<'a> {
    store: &'a dyn DedupStore,
    claimant: Claimant,
    keys: Vec<DedupKey>,
    settled: bool,
}

impl<'a> Claims<'a> {
    fn new(store: &'a dyn DedupStore, claimant: Claimant) -> Self {
        Claims {
            store,
            claimant,
            keys: Vec::new(),
            settled: false,
        }
    }

    /// Records the keys as handed over. A store failure is logged: the handler has the batch.
    async fn commit(mut self) {
        // The handler succeeded: even if this is cancelled, there is nothing to release.
        self.settled = true;
        if self.keys.is_empty() {
            return;
        }
        if let Err(error) = self.store.commit(&self.claimant, &self.keys).await {
            tracing::warn!(
                error = %error,
                cause = ?std::error::Error::source(&error),
                "webhook delivery handled but not recorded in the dedup store; its claims \
                 expire on their own"
            );
        }
    }

    /// Gives the keys up for the platform's retry.
    async fn release(mut self) {
        self.settled = true;
        let keys = std::mem::take(&mut self.keys);
        if keys.is_empty() {
            return;
        }
        if let Err(error) = self.store.release(self.claimant.clone(), keys).await {
            log_release_failure(&error);
        }
    }
}

fn log_release_failure(error: &DedupError) {
    tracing::warn!(
        error = %error,
        cause = ?std::error::Error::source(error),
        "webhook dedup claims not released; they expire on their own"
    );
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        if self.settled || self.keys.is_empty() {
            return;
        }
        let release = self
            .store
            .release(self.claimant.clone(), std::mem::take(&mut self.keys));
        // Without a runtime there is nothing to drive it: a remote claim then expires.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = release.await {
                    log_release_failure(&error);
                }
            });
        }
    }
}

/// What [`Receiver::handle`] did with one delivery, and the status to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandleOutcome {
    /// HTTP status to answer: 200 handled (or nothing new), 401 not authenticated, 413 body
    /// too large, 500 the handler failed, 503 an event is being handled for another delivery
    /// or the dedup store cannot be reached. Anything but 200 makes the platform retry.
    pub status: u16,
    /// New events handed to the handler (refused by it when `status` is 500).
    pub accepted: usize,
    /// Events and dead letters already handed over within the window, and events repeated
    /// within this delivery.
    pub duplicates: usize,
    /// Of the [`duplicates`](Self::duplicates): events and dead letters this process handed
    /// over within its [recent set](ReceiverBuilder::recent_deliveries)'s bounds, which the
    /// dedup store no longer held (it lost them). Not handed over again, and recorded in the
    /// store again.
    pub forgotten_by_store: usize,
    /// Events caused by the application's own client id, dropped.
    pub ignored_own: usize,
    /// Dead letters handed to the handler.
    pub dead_letters: usize,
    /// Events left out because another delivery is handling them right now.
    pub in_flight: usize,
    /// The dedup store could not be reached: the delivery was refused (503) before the
    /// handler saw anything, so that the platform retries it.
    pub dedup_unavailable: bool,
}

impl HandleOutcome {
    fn with_status(status: u16) -> Self {
        HandleOutcome {
            status,
            accepted: 0,
            duplicates: 0,
            forgotten_by_store: 0,
            ignored_own: 0,
            dead_letters: 0,
            in_flight: 0,
            dedup_unavailable: false,
        }
    }

    /// [`status`](Self::status) as an [`http::StatusCode`].
    #[must_use]
    pub fn status_code(&self) -> http::StatusCode {
        http::StatusCode::from_u16(self.status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR)
    }
}
