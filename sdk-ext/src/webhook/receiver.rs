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

use super::dedup::{Claim, DedupKey, DedupStore, dead_letter_key, event_key};
use super::{
    Batch, DeadLetter, Delivery, DeliveryHandler, DeliveryItem, WebhookSecret, client_id_hash,
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

/// Receives webhook deliveries, whatever the HTTP server.
///
/// [`Receiver::handle`] takes the request's headers and body and returns the [`Outcome`]
/// whose `status` to answer with. In order, it:
///
/// 1. checks the `authorization` header against the current and the previous secret, in
///    constant time; a missing, repeated or wrong header is answered **401** and nothing else
///    happens;
/// 2. hands a body over [`max_body_bytes`](ReceiverBuilder::max_body_bytes) to the handler
///    unparsed, as a [`DeadLetter`], and answers 200: an authenticated delivery is never
///    refused, since every refusal counts towards disabling the registration (the axum
///    route stops reading at [`max_read_bytes`](ReceiverBuilder::max_read_bytes), a memory
///    bound against whoever holds the secret, and answers 413 there);
/// 3. parses the body; what cannot be read (the whole body, or single elements) becomes a
///    [`DeadLetter`] for the handler, never an error answer;
/// 4. drops events already handed over within the dedup window (key: `domain` + `eventId`),
///    events repeated inside the delivery, and, if configured, the application's own events;
/// 5. calls the [`DeliveryHandler`] once with what is left, and answers **200** only after it
///    returned `Ok` (then remembers the events as seen), or **500** if it failed (and forgets
///    them, so the platform's retry is handed over again).
///
/// If an event of the delivery is being handled right now for another delivery (the
/// platform's immediate retry racing a slow handler), the rest is handled and the answer is
/// **503**, so the platform sends the delivery again later; by then that event is either seen
/// (a duplicate) or released (handled then). Nothing is lost or handed over twice.
///
/// Deduplication lives in this process's memory: bounded by
/// [`dedup_capacity`](ReceiverBuilder::dedup_capacity), forgotten on restart, not shared
/// between replicas. Where that matters, make the handler idempotent on `(domain, eventId)`.
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
    dedup_window: Duration,
    dedup_capacity: usize,
    dedup: Mutex<DedupStore>,
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
        let mut events = Vec::new();
        let mut dead_letters = Vec::new();
        let parsed = if body.len() > self.max_body_bytes {
            Err(super::DeliveryParseError::TooLarge {
                bytes: body.len(),
                limit: self.max_body_bytes,
            })
        } else {
            Delivery::parse(body)
        };
        let now = Instant::now();
        let mut claims = Claims::new(&self.dedup);
        {
            let mut store = self.lock_dedup();
            match parsed {
                Err(error) => {
                    let key = dead_letter_key("body", body);
                    if claims.claim(&mut store, key, now, &mut outcome) {
                        dead_letters.push(DeadLetter::Body {
                            raw: Bytes::copy_from_slice(body),
                            error,
                        });
                    }
                }
                Ok(delivery) => {
                    for item in delivery.items {
                        match item {
                            DeliveryItem::Event(event) => {
                                if self.is_own(&event.user.client_id_hash) {
                                    outcome.ignored_own += 1;
                                    continue;
                                }
                                let key = event_key(&event.domain, &event.event_id);
                                if claims.claim(&mut store, key, now, &mut outcome) {
                                    events.push(*event);
                                }
                            }
                            DeliveryItem::Malformed { raw, reason } => {
                                let bytes = serde_json::to_vec(&raw).unwrap_or_default();
                                let key = dead_letter_key("item", &bytes);
                                if claims.claim(&mut store, key, now, &mut outcome) {
                                    dead_letters.push(DeadLetter::Item { raw, reason });
                                }
                            }
                        }
                    }
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

    /// How many handed-over events (and dead letters) are remembered right now.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.lock_dedup().len()
    }

    fn is_own(&self, client_id_hash: &Option<String>) -> bool {
        client_id_hash.as_deref().is_some_and(|received| {
            self.own_client_id_hashes
                .iter()
                .any(|own| own.eq_ignore_ascii_case(received))
        })
    }

    fn lock_dedup(&self) -> MutexGuard<'_, DedupStore> {
        // The store stays consistent between calls, so a panic elsewhere does not spoil it.
        self.dedup.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("current", &self.current)
            .field("previous", &self.previous)
            .field("own_client_id_hashes", &self.own_client_id_hashes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("dedup_window", &self.dedup_window)
            .field("dedup_capacity", &self.dedup_capacity)
            .finish_non_exhaustive()
    }
}

/// The keys one delivery claimed; released on drop unless committed, so a failed or
/// cancelled handler leaves them free for the retry.
struct Claims<'a> {
    store: &'a Mutex<DedupStore>,
    keys: Vec<DedupKey>,
    in_this_delivery: HashSet<DedupKey>,
    committed: bool,
}

impl<'a> Claims<'a> {
    fn new(store: &'a Mutex<DedupStore>) -> Self {
        Claims {
            store,
            keys: Vec::new(),
            in_this_delivery: HashSet::new(),
            committed: false,
        }
    }

    /// Claims `key`, counting what it was in `outcome`; true when it is new.
    fn claim(
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
                self.keys.push(key);
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

    fn commit(mut self, now: Instant) {
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        store.commit(&self.keys, now);
        self.committed = true;
    }
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        if !self.committed && !self.keys.is_empty() {
            let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
            store.release(&self.keys);
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
    /// Events and dead letters already handed over within the window, or repeated within
    /// this delivery.
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
    /// authenticated body is handed over raw as a dead letter, never refused.
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
        Ok(Receiver {
            current,
            previous: self.previous,
            own_client_id_hashes: self.own_client_id_hashes,
            max_body_bytes: self.max_body_bytes,
            max_read_bytes: self.max_read_bytes,
            dedup_window: self.dedup_window,
            dedup_capacity: self.dedup_capacity,
            dedup: Mutex::new(DedupStore::new(self.dedup_window, self.dedup_capacity)),
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
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildError::MissingSecret => "webhook receiver needs a secret",
            BuildError::ZeroDedupCapacity => "webhook receiver dedup capacity is zero",
            BuildError::ZeroDedupWindow => "webhook receiver dedup window is zero",
            BuildError::ZeroMaxBodyBytes => "webhook receiver body limit is zero",
        })
    }
}

impl std::error::Error for BuildError {}
