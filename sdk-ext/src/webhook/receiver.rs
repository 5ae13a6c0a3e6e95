//! The framework-neutral webhook receiver: authenticate, bound, parse, deduplicate, hand over.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::dedup::{Claim, DeadLetterKey, DedupKey, DedupStore, dead_letter_key, event_key};
use super::delivery::{MIN_EVENT_BYTES, envelope_problem, read_element};
use super::scan::{Elements, data_elements, tree_cost};
use super::{
    Batch, DeadLetter, DeliveryHandler, DeliveryParseError, WebhookEvent, WebhookSecret,
    client_id_hash,
};

/// Default for [`ReceiverBuilder::dedup_window`]: 2 hours, beyond the platform's last retry
/// (71 minutes after the first attempt) with margin.
pub const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(2 * 60 * 60);

/// Default for [`ReceiverBuilder::dedup_capacity`]: 100,000 events, on the order of 10 MiB.
pub const DEFAULT_DEDUP_CAPACITY: usize = 100_000;

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

/// How many deliveries' dead letters are remembered (within the dedup window), apart from
/// the events, so that a retried delivery's dead letters are handed over once.
pub const DEAD_LETTER_DEDUP_CAPACITY: usize = 1_000;

/// Receives webhook deliveries, whatever the HTTP server.
///
/// [`Receiver::handle`] takes the request's headers and body and returns the [`Outcome`]
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
/// 4. drops events already handed over within the dedup window (key: `domain` + `eventId`),
///    events repeated inside the delivery, dead letters of the same delivery already handed
///    over, and, if configured, the application's own events;
/// 5. calls the [`DeliveryHandler`] once with what is left, and answers **200** only after it
///    returned `Ok` (then remembers the events as seen), or **500** if it failed (and forgets
///    them, so the platform's retry is handed over again).
///
/// If an event of the delivery is being handled right now for another delivery (the
/// platform's immediate retry racing a slow handler), the rest is handled and the answer is
/// **503**, so the platform sends the delivery again later; by then that event is either seen
/// (a duplicate) or released (handled then). Nothing is lost or handed over twice.
///
/// # Deduplication memory
///
/// Deduplication lives in this process's memory: forgotten on restart, not shared between
/// replicas. Where that matters, make the handler idempotent on `(domain, eventId)`.
///
/// - Events handed over are remembered up to [`dedup_capacity`](ReceiverBuilder::dedup_capacity)
///   ids, the oldest forgotten first. Only events take these slots, and one delivery adds at
///   most [`max_items`](ReceiverBuilder::max_items) of them, so **one delivery evicts at most
///   `max_items` ids of other deliveries** (with the defaults, a tenth of the memory).
/// - Dead letters never take or evict an event's slot. A delivery's dead letters are
///   remembered together, as one digest of their bytes, in a separate memory of the last
///   [`DEAD_LETTER_DEDUP_CAPACITY`] such deliveries: a retry of the delivery does not hand
///   them over again, a different delivery with the same bad element does.
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
/// use pubapi_sdk_ext::webhook::{Batch, EventType, HandlerError, Receiver, WebhookSecret, testing};
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
/// let (headers, body) = testing::DeliveryBuilder::new("s3cr3t-from-registration")
///     .event(EventType::FsAddFolder, testing::sample_data(&EventType::FsAddFolder))
///     .build();
/// let outcome = receiver.handle(&headers, &body, &handler).await;
/// assert_eq!(outcome.status, 200);
/// assert_eq!(outcome.accepted, 1);
///
/// // The same delivery again is acknowledged without reaching the handler.
/// let again = receiver.handle(&headers, &body, &handler).await;
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
    dedup_window: Duration,
    dedup_capacity: usize,
    memory: Mutex<Memory>,
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
        let digest: [u8; 32] = Sha256::digest(value.as_bytes()).into();
        let mut matched = self.current.ct_matches(&digest);
        if let Some(previous) = &self.previous {
            matched |= previous.ct_matches(&digest);
        }
        matched.into()
    }

    /// Handles one delivery (see the type docs for the steps) and says what to answer.
    ///
    /// Never panics on any header or body. If the returned future is dropped while the
    /// handler runs (the client went away), nothing is remembered as seen.
    pub async fn handle<H: DeliveryHandler>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        handler: &H,
    ) -> Outcome {
        if !self.is_authorized(headers) {
            return Outcome::with_status(401);
        }
        let mut outcome = Outcome::with_status(200);
        let Read {
            mut events,
            mut dead_letters,
            dead_letter_key,
        } = self.read(body, &mut outcome);
        let now = Instant::now();
        let mut claims = Claims::new(&self.memory);
        {
            let mut memory = self.lock_memory();
            events.retain(|event| {
                let key = event_key(&event.domain, &event.event_id);
                claims.claim_event(&mut memory.events, key, now, &mut outcome)
            });
            if let Some(key) = dead_letter_key {
                let count = dead_letters.len();
                if !claims.claim_dead_letters(
                    &mut memory.dead_letters,
                    key,
                    now,
                    count,
                    &mut outcome,
                ) {
                    dead_letters.clear();
                }
            }
        }

        let busy_elsewhere = outcome.in_flight > 0;
        if events.is_empty() && dead_letters.is_empty() {
            outcome.status = if busy_elsewhere { 503 } else { 200 };
            return outcome;
        }
        outcome.accepted = events.len();
        outcome.dead_letters = dead_letters.len();
        match handler.handle_batch(Batch::new(events, dead_letters)).await {
            Ok(()) => {
                claims.commit(Instant::now());
                outcome.status = if busy_elsewhere { 503 } else { 200 };
            }
            Err(_) => {
                drop(claims);
                outcome.status = 500;
            }
        }
        outcome
    }

    /// Bounds and parses a body, one element at a time; counts the own events it drops.
    fn read(&self, body: &[u8], outcome: &mut Outcome) -> Read {
        let mut read = Read {
            events: Vec::new(),
            dead_letters: Vec::new(),
            dead_letter_key: None,
        };
        let (elements, count) = match self.bound(body) {
            Ok(found) => found,
            Err(error) => {
                read.dead_letter_key = Some(dead_letter_key("body", body));
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
                    key.get_or_insert_with(|| DeadLetterKey::new("items"))
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

    /// How long a handed-over event is remembered.
    #[must_use]
    pub fn dedup_window(&self) -> Duration {
        self.dedup_window
    }

    /// How many handed-over events are remembered at most.
    #[must_use]
    pub fn dedup_capacity(&self) -> usize {
        self.dedup_capacity
    }

    /// The most elements of `data` read from one delivery.
    #[must_use]
    pub fn max_items(&self) -> usize {
        self.max_items
    }

    /// How many handed-over events are remembered right now (dead letters are remembered
    /// apart, see [`DEAD_LETTER_DEDUP_CAPACITY`]).
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.lock_memory().events.len()
    }

    fn is_own(&self, client_id_hash: &Option<String>) -> bool {
        client_id_hash.as_deref().is_some_and(|received| {
            self.own_client_id_hashes
                .iter()
                .any(|own| own.eq_ignore_ascii_case(received))
        })
    }

    fn lock_memory(&self) -> MutexGuard<'_, Memory> {
        // The stores stay consistent between calls, so a panic elsewhere does not spoil them.
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What one delivery brings before deduplication.
struct Read {
    events: Vec<WebhookEvent>,
    dead_letters: Vec<DeadLetter>,
    /// One key for all the delivery's dead letters, if it has any.
    dead_letter_key: Option<DedupKey>,
}

/// What the receiver remembers: events by `(domain, eventId)`, and apart from them, one key
/// per delivery that had dead letters, so dead letters never take or evict an event's slot.
#[derive(Debug)]
struct Memory {
    events: DedupStore,
    dead_letters: DedupStore,
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("current", &self.current)
            .field("previous", &self.previous)
            .field("own_client_id_hashes", &self.own_client_id_hashes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_items", &self.max_items)
            .field("dedup_window", &self.dedup_window)
            .field("dedup_capacity", &self.dedup_capacity)
            .finish_non_exhaustive()
    }
}

/// The keys one delivery claimed; released on drop unless committed, so a failed or
/// cancelled handler leaves them free for the retry.
struct Claims<'a> {
    memory: &'a Mutex<Memory>,
    events: Vec<DedupKey>,
    dead_letters: Option<DedupKey>,
    in_this_delivery: HashSet<DedupKey>,
    committed: bool,
}

impl<'a> Claims<'a> {
    fn new(memory: &'a Mutex<Memory>) -> Self {
        Claims {
            memory,
            events: Vec::new(),
            dead_letters: None,
            in_this_delivery: HashSet::new(),
            committed: false,
        }
    }

    /// Claims an event's key, counting what it was in `outcome`; true when it is new.
    fn claim_event(
        &mut self,
        store: &mut DedupStore,
        key: DedupKey,
        now: Instant,
        outcome: &mut Outcome,
    ) -> bool {
        if !self.in_this_delivery.insert(key) {
            outcome.duplicates += 1;
            return false;
        }
        match store.claim(key, now) {
            Claim::Fresh => {
                self.events.push(key);
                true
            }
            Claim::Seen => {
                outcome.duplicates += 1;
                false
            }
            Claim::InFlight => {
                outcome.in_flight += 1;
                false
            }
        }
    }

    /// Claims the key of the delivery's `count` dead letters; true when they are new.
    fn claim_dead_letters(
        &mut self,
        store: &mut DedupStore,
        key: DedupKey,
        now: Instant,
        count: usize,
        outcome: &mut Outcome,
    ) -> bool {
        match store.claim(key, now) {
            Claim::Fresh => {
                self.dead_letters = Some(key);
                true
            }
            Claim::Seen => {
                outcome.duplicates += count;
                false
            }
            Claim::InFlight => {
                outcome.in_flight += count;
                false
            }
        }
    }

    fn commit(mut self, now: Instant) {
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        memory.events.commit(&self.events, now);
        if let Some(key) = self.dead_letters {
            memory.dead_letters.commit(&[key], now);
        }
        self.committed = true;
    }
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        if !self.committed && (!self.events.is_empty() || self.dead_letters.is_some()) {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            memory.events.release(&self.events);
            if let Some(key) = self.dead_letters {
                memory.dead_letters.release(&[key]);
            }
        }
    }
}

/// What [`Receiver::handle`] did with one delivery, and the status to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outcome {
    /// HTTP status to answer: 200 handled (or nothing new), 401 not authenticated, 413 body
    /// too large, 500 the handler failed, 503 an event is being handled for another delivery.
    /// Anything but 200 makes the platform retry.
    pub status: u16,
    /// New events handed to the handler (refused by it when `status` is 500).
    pub accepted: usize,
    /// Events and dead letters already handed over within the window, and events repeated
    /// within this delivery.
    pub duplicates: usize,
    /// Events caused by the application's own client id, dropped.
    pub ignored_own: usize,
    /// Dead letters handed to the handler.
    pub dead_letters: usize,
    /// Events left out because another delivery is handling them right now.
    pub in_flight: usize,
}

impl Outcome {
    fn with_status(status: u16) -> Self {
        Outcome {
            status,
            accepted: 0,
            duplicates: 0,
            ignored_own: 0,
            dead_letters: 0,
            in_flight: 0,
        }
    }

    /// [`status`](Self::status) as an [`http::StatusCode`].
    #[must_use]
    pub fn status_code(&self) -> http::StatusCode {
        http::StatusCode::from_u16(self.status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// Configures a [`Receiver`]; made by [`Receiver::builder`].
#[derive(Debug)]
pub struct ReceiverBuilder {
    current: Option<WebhookSecret>,
    previous: Option<WebhookSecret>,
    own_client_id_hashes: Vec<String>,
    max_body_bytes: usize,
    max_read_bytes: usize,
    max_items: usize,
    dedup_window: Duration,
    dedup_capacity: usize,
}

impl Default for ReceiverBuilder {
    fn default() -> Self {
        ReceiverBuilder {
            current: None,
            previous: None,
            own_client_id_hashes: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_items: DEFAULT_MAX_ITEMS,
            dedup_window: DEFAULT_DEDUP_WINDOW,
            dedup_capacity: DEFAULT_DEDUP_CAPACITY,
        }
    }
}

impl ReceiverBuilder {
    /// The secret the registration sends now (its `authHeader`). Required.
    #[must_use]
    pub fn secret(mut self, secret: WebhookSecret) -> Self {
        self.current = Some(secret);
        self
    }

    /// The secret the registration sent before, still accepted while rotating.
    ///
    /// Rotate by deploying with the new secret as current and the old as previous, then
    /// updating the registration's `authHeader`, then (after the last retry of old deliveries,
    /// 71 minutes) deploying without the previous secret.
    #[must_use]
    pub fn previous_secret(mut self, secret: WebhookSecret) -> Self {
        self.previous = Some(secret);
        self
    }

    /// How long a handed-over event is remembered (default [`DEFAULT_DEDUP_WINDOW`]).
    #[must_use]
    pub fn dedup_window(mut self, window: Duration) -> Self {
        self.dedup_window = window;
        self
    }

    /// How many handed-over events are remembered at most; the oldest are forgotten first
    /// (default [`DEFAULT_DEDUP_CAPACITY`]).
    #[must_use]
    pub fn dedup_capacity(mut self, capacity: usize) -> Self {
        self.dedup_capacity = capacity;
        self
    }

    /// Drops events caused by this OAuth client id (their `user.clientIdHash` is the SHA-1 of
    /// it; see [`client_id_hash`]). May be called for several client ids.
    #[must_use]
    pub fn ignore_own_client_id(mut self, client_id: &str) -> Self {
        self.own_client_id_hashes.push(client_id_hash(client_id));
        self
    }

    /// The largest body parsed, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]); a larger
    /// authenticated body is handed over raw as a dead letter, never refused. The heap of
    /// handling a delivery is bounded by a multiple of this (see [`Receiver`]).
    #[must_use]
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// The most the axum route reads of a body before answering 413 (default
    /// [`DEFAULT_MAX_READ_BYTES`]): a memory bound, far above any real batch.
    #[must_use]
    pub fn max_read_bytes(mut self, max: usize) -> Self {
        self.max_read_bytes = max;
        self
    }

    /// The most elements of `data` read from one delivery (default [`DEFAULT_MAX_ITEMS`]);
    /// a body with more is handed over raw as a dead letter, never refused.
    ///
    /// This is also the most event ids one delivery can add to the dedup memory, so the most
    /// it can evict of other deliveries': keep it well below
    /// [`dedup_capacity`](Self::dedup_capacity), and raise it with
    /// [`max_body_bytes`](Self::max_body_bytes) (a real event takes 146 bytes or more).
    #[must_use]
    pub fn max_items(mut self, max: usize) -> Self {
        self.max_items = max;
        self
    }

    /// Builds the receiver.
    ///
    /// # Errors
    ///
    /// [`BuildError`] when no secret was given or a limit is zero.
    pub fn build(self) -> Result<Receiver, BuildError> {
        let current = self.current.ok_or(BuildError::MissingSecret)?;
        if self.dedup_capacity == 0 {
            return Err(BuildError::ZeroDedupCapacity);
        }
        if self.dedup_window.is_zero() {
            return Err(BuildError::ZeroDedupWindow);
        }
        if self.max_body_bytes == 0 || self.max_read_bytes == 0 {
            return Err(BuildError::ZeroMaxBodyBytes);
        }
        if self.max_items == 0 {
            return Err(BuildError::ZeroMaxItems);
        }
        Ok(Receiver {
            current,
            previous: self.previous,
            own_client_id_hashes: self.own_client_id_hashes,
            max_body_bytes: self.max_body_bytes,
            max_read_bytes: self.max_read_bytes,
            max_items: self.max_items,
            dedup_window: self.dedup_window,
            dedup_capacity: self.dedup_capacity,
            memory: Mutex::new(Memory {
                events: DedupStore::new(self.dedup_window, self.dedup_capacity),
                dead_letters: DedupStore::new(self.dedup_window, DEAD_LETTER_DEDUP_CAPACITY),
            }),
        })
    }
}

/// Why [`ReceiverBuilder::build`] refused the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// No [`secret`](ReceiverBuilder::secret) was given.
    MissingSecret,
    /// [`dedup_capacity`](ReceiverBuilder::dedup_capacity) is zero.
    ZeroDedupCapacity,
    /// [`dedup_window`](ReceiverBuilder::dedup_window) is zero.
    ZeroDedupWindow,
    /// [`max_body_bytes`](ReceiverBuilder::max_body_bytes) is zero.
    ZeroMaxBodyBytes,
    /// [`max_items`](ReceiverBuilder::max_items) is zero.
    ZeroMaxItems,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildError::MissingSecret => "webhook receiver needs a secret",
            BuildError::ZeroDedupCapacity => "webhook receiver dedup capacity is zero",
            BuildError::ZeroDedupWindow => "webhook receiver dedup window is zero",
            BuildError::ZeroMaxBodyBytes => "webhook receiver body limit is zero",
            BuildError::ZeroMaxItems => "webhook receiver item limit is zero",
        })
    }
}

impl std::error::Error for BuildError {}
