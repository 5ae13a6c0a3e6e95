//! What the receiver already handed over: the [`DedupStore`] seam and its in-process default.
//!
//! A [`Receiver`](super::Receiver) asks its store, per delivery, to **claim** the keys of the
//! delivery's events (and one key for its dead letters). Each key comes back [`Claim::Fresh`]
//! (now held by this delivery), [`Claim::Seen`] (handed over before, within the window) or
//! [`Claim::InFlight`] (held by a delivery whose handler has not returned). After the handler
//! returned `Ok` the receiver **commits** the fresh keys (remembered as seen for the store's
//! window); after it failed, or when the handling was cancelled, it **releases** them, so the
//! platform's retry is handed over again.
//!
//! [`MemoryDedup`] (bounded, in this process) is the default; `RedisDedup` (feature `redis`)
//! shares the memory between replicas and across restarts.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::digest::Sha256;
use pubapi_sdk::hooks::BoxFuture;
use tokio::time::Instant;

/// How many deliveries' dead letters [`MemoryDedup`] remembers (within its window), apart from
/// the events, so that a retried delivery's dead letters are handed over once.
pub const DEAD_LETTER_DEDUP_CAPACITY: usize = 1_000;

/// What a [`DedupKey`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupKind {
    /// One event, by `(domain, eventId)`.
    Event,
    /// All the dead letters of one delivery, by their bytes.
    DeadLetters,
}

impl DedupKind {
    /// A short lowercase name: `event` or `dead-letters` (a store may put it in its keys).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DedupKind::Event => "event",
            DedupKind::DeadLetters => "dead-letters",
        }
    }
}

/// What a [`DedupStore`] remembers: a kind and a fixed-size digest.
///
/// The digest is the SHA-256 of a length-prefixed description of the item, including the
/// receiver's name, so memory per entry does not depend on what the sender put in `eventId`,
/// and receivers with different names never share a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DedupKey {
    kind: DedupKind,
    digest: [u8; 32],
}

impl DedupKey {
    /// The key of an event: its `(domain, eventId)`, for the receiver named `receiver`.
    #[must_use]
    pub fn event(receiver: &str, domain: &str, event_id: &str) -> Self {
        let mut hasher = Sha256::new();
        for part in [
            b"event".as_slice(),
            receiver.as_bytes(),
            domain.as_bytes(),
            event_id.as_bytes(),
        ] {
            push(&mut hasher, part);
        }
        DedupKey {
            kind: DedupKind::Event,
            digest: hasher.finish(),
        }
    }

    /// What the key stands for.
    #[must_use]
    pub fn kind(&self) -> DedupKind {
        self.kind
    }

    /// The SHA-256 digest that identifies the item.
    #[must_use]
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// The digest in lowercase hex (64 characters).
    #[must_use]
    pub fn digest_hex(&self) -> String {
        crate::digest::hex(&self.digest)
    }
}

fn push(hasher: &mut Sha256, part: &[u8]) {
    hasher.update(&(part.len() as u64).to_be_bytes());
    hasher.update(part);
}

/// The key of the dead letters of one delivery: their kind and raw bytes, in order.
///
/// One key per delivery, kept apart from the events' keys, so dead letters never take the
/// slots that deduplicate events.
#[derive(Debug, Clone)]
pub(crate) struct DeadLetterKey(Sha256);

impl DeadLetterKey {
    pub(crate) fn new(receiver: &str, kind: &str) -> Self {
        let mut key = DeadLetterKey(Sha256::new());
        key.push(b"dead-letter");
        key.push(receiver.as_bytes());
        key.push(kind.as_bytes());
        key
    }

    /// Adds one dead letter's raw bytes.
    pub(crate) fn push(&mut self, part: &[u8]) {
        push(&mut self.0, part);
    }

    pub(crate) fn finish(self) -> DedupKey {
        DedupKey {
            kind: DedupKind::DeadLetters,
            digest: self.0.finish(),
        }
    }
}

/// The key of a dead letter: its kind and raw bytes.
pub(crate) fn dead_letter_key(receiver: &str, kind: &str, raw: &[u8]) -> DedupKey {
    let mut key = DeadLetterKey::new(receiver, kind);
    key.push(raw);
    key.finish()
}

/// What [`DedupStore::claim`] found for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Not seen within the window; now claimed by the caller.
    Fresh,
    /// Handed over successfully within the window.
    Seen,
    /// Claimed by a delivery whose handler has not returned yet.
    InFlight,
}

/// Who claims: the receiver's name and an id unique to one delivery's handling.
///
/// A store that shares claims between processes keeps the id with the claim, so that only
/// the claimant releases it and a repeated request of the same claimant is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant {
    receiver: Arc<str>,
    id: u128,
}

impl Claimant {
    /// A claimant for the receiver named `receiver`, with a new id: unique across threads and
    /// processes (random per process, then counted), not secret.
    #[must_use]
    pub fn new(receiver: impl Into<Arc<str>>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let count = NEXT.fetch_add(1, Ordering::Relaxed);
        // `RandomState` is seeded from the operating system's randomness once per thread.
        let half = |salt: u64| {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.write_u64(count);
            hasher.write_u64(salt);
            hasher.finish()
        };
        Claimant {
            receiver: receiver.into(),
            id: (u128::from(half(0)) << 64) | u128::from(half(1)),
        }
    }

    /// The name of the receiver that claims.
    #[must_use]
    pub fn receiver(&self) -> &str {
        &self.receiver
    }

    /// The claimant's unique id.
    #[must_use]
    pub fn id(&self) -> u128 {
        self.id
    }
}

wrapping_error! {
    /// A [`DedupStore`] could not answer (for example Redis is unreachable).
    ///
    /// The receiver then refuses the delivery with 503, so the platform retries it later; nothing
    /// is handed over twice and nothing is lost.
    pub struct DedupError: "webhook dedup store failed";
}

/// What [`DedupStore::claim`] returns: in the order of the keys, what was found for each.
pub type ClaimFuture<'a> = BoxFuture<'a, Result<Vec<Claim>, DedupError>>;

/// Where a [`Receiver`](super::Receiver) remembers what it handed over: claim, then commit or
/// release (see [Deduplication across replicas](super#deduplication-across-replicas)).
///
/// [`MemoryDedup`] is the default; `RedisDedup` (feature `redis`) is shared by replicas.
/// The receiver never passes the same key twice in one call, and commits or releases only keys
/// it got back [`Claim::Fresh`], with the same [`Claimant`].
pub trait DedupStore: Send + Sync + fmt::Debug + 'static {
    /// Claims every key for `claimant` and says, in order, what was found for each.
    ///
    /// # Errors
    ///
    /// When the store cannot answer. It should then hold no claim for `claimant` that does not
    /// expire on its own: the receiver refuses the delivery and releases nothing.
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a>;

    /// Records `claimant`'s keys as handed over, remembered for [`window`](Self::window).
    ///
    /// # Errors
    ///
    /// When the store cannot answer; the receiver logs it and still answers 200 (the handler
    /// took the batch, and a 200 means the platform sends it no more).
    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>>;

    /// Gives `claimant`'s claims on `keys` up, so a later delivery of them is handed over.
    /// Claims held by another claimant, and keys already committed, are left alone.
    ///
    /// Called from `Drop` when a handling is cancelled: do at once what can be done without
    /// waiting (an in-process store releases before returning); the future is spawned on the
    /// current tokio runtime if there is one, and dropped otherwise.
    ///
    /// # Errors
    ///
    /// When the store cannot answer; the receiver logs it.
    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>>;

    /// How long a committed key is remembered.
    fn window(&self) -> Duration;

    /// How many events the store remembers at most, if it counts them.
    fn capacity(&self) -> Option<usize> {
        None
    }

    /// How many events are remembered right now, if the store can tell cheaply.
    fn remembered(&self) -> Option<usize> {
        None
    }
}

impl<S: DedupStore + ?Sized> DedupStore for Arc<S> {
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        (**self).claim(claimant, keys)
    }

    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        (**self).commit(claimant, keys)
    }

    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        (**self).release(claimant, keys)
    }

    fn window(&self) -> Duration {
        (**self).window()
    }

    fn capacity(&self) -> Option<usize> {
        (**self).capacity()
    }

    fn remembered(&self) -> Option<usize> {
        (**self).remembered()
    }
}

/// The default [`DedupStore`]: bounded memory in this process, forgotten on restart and not
/// shared between replicas.
///
/// - Events handed over are remembered for `window` after they were committed, up to
///   `capacity` of them, the oldest forgotten first.
/// - Dead letters never take or evict an event's slot: one key per delivery, remembered apart,
///   for the last [`DEAD_LETTER_DEDUP_CAPACITY`] such deliveries.
/// - Claimed keys are held in flight, uncounted (at most as many as the deliveries being
///   handled at once hold), until committed or released.
///
/// Clock: `tokio::time`, so tests can pause and advance time.
///
/// ```
/// use std::time::Duration;
/// use pubapi_sdk_ext::webhook::{MemoryDedup, DedupStore};
///
/// let store = MemoryDedup::new(Duration::from_secs(2 * 3600), 100_000);
/// assert_eq!(store.capacity(), Some(100_000));
/// ```
#[derive(Debug)]
pub struct MemoryDedup {
    window: Duration,
    capacity: usize,
    memory: Mutex<Memory>,
}

/// Events by `(domain, eventId)`, and apart from them, one key per delivery that had dead
/// letters.
#[derive(Debug)]
pub(super) struct Memory {
    events: Bounded,
    dead_letters: Bounded,
}

impl Memory {
    /// Up to `capacity` events for `window` each, and apart from them the dead letters of the
    /// last [`DEAD_LETTER_DEDUP_CAPACITY`] deliveries that had some.
    pub(super) fn new(window: Duration, capacity: usize) -> Self {
        Memory {
            events: Bounded::new(window, capacity),
            dead_letters: Bounded::new(window, DEAD_LETTER_DEDUP_CAPACITY),
        }
    }

    pub(super) fn of(&mut self, kind: DedupKind) -> &mut Bounded {
        match kind {
            DedupKind::Event => &mut self.events,
            DedupKind::DeadLetters => &mut self.dead_letters,
        }
    }
}

impl MemoryDedup {
    /// Remembers up to `capacity` events for `window` each.
    #[must_use]
    pub fn new(window: Duration, capacity: usize) -> Self {
        MemoryDedup {
            window,
            capacity,
            memory: Mutex::new(Memory::new(window, capacity)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Memory> {
        // The memory stays consistent between calls, so a panic elsewhere does not spoil it.
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl DedupStore for MemoryDedup {
    fn claim<'a>(&'a self, _claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        let now = Instant::now();
        let mut memory = self.lock();
        let found = keys
            .iter()
            .map(|key| memory.of(key.kind).claim(key.digest, now))
            .collect();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn commit<'a>(
        &'a self,
        _claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        let now = Instant::now();
        let mut memory = self.lock();
        for kind in [DedupKind::Event, DedupKind::DeadLetters] {
            let digests: Vec<_> = keys
                .iter()
                .filter(|key| key.kind == kind)
                .map(|key| key.digest)
                .collect();
            if !digests.is_empty() {
                memory.of(kind).commit(&digests, now);
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn release(
        &self,
        _claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        let mut memory = self.lock();
        for key in &keys {
            memory.of(key.kind).release(&key.digest);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn window(&self) -> Duration {
        self.window
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.capacity)
    }

    fn remembered(&self) -> Option<usize> {
        Some(self.lock().events.len())
    }
}

type Digest32 = [u8; 32];

/// Keys handed over successfully (with when), and keys being handed over right now.
///
/// Seen keys expire `window` after they were recorded, and the oldest are evicted beyond
/// `capacity`. In-flight keys are not counted: there are at most as many as the deliveries
/// being handled at once hold.
#[derive(Debug)]
pub(super) struct Bounded {
    window: Duration,
    capacity: usize,
    seen: HashSet<Digest32>,
    order: VecDeque<(Digest32, Instant)>,
    in_flight: HashSet<Digest32>,
}

impl Bounded {
    fn new(window: Duration, capacity: usize) -> Self {
        Bounded {
            window,
            capacity,
            seen: HashSet::new(),
            order: VecDeque::new(),
            in_flight: HashSet::new(),
        }
    }

    /// Looks `key` up and, if it is fresh, marks it in flight.
    fn claim(&mut self, key: Digest32, now: Instant) -> Claim {
        self.expire(now);
        if self.seen.contains(&key) {
            Claim::Seen
        } else if !self.in_flight.insert(key) {
            Claim::InFlight
        } else {
            Claim::Fresh
        }
    }

    /// Whether `key` was recorded as handed over within the window before `now`.
    pub(super) fn contains(&mut self, key: &Digest32, now: Instant) -> bool {
        self.expire(now);
        self.seen.contains(key)
    }

    /// Records claimed keys as handed over at `now`.
    pub(super) fn commit(&mut self, keys: &[Digest32], now: Instant) {
        // Keep `order` sorted even if a caller's clock reading is older than the last entry.
        let at = self.order.back().map_or(now, |&(_, last)| last.max(now));
        for key in keys {
            self.in_flight.remove(key);
            if self.seen.insert(*key) {
                self.order.push_back((*key, at));
            }
        }
        while self.order.len() > self.capacity {
            if let Some((oldest, _)) = self.order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
        self.expire(now);
    }

    /// Gives a claimed key up, so a later delivery of it is handled.
    fn release(&mut self, key: &Digest32) {
        self.in_flight.remove(key);
    }

    /// Number of keys remembered as handed over.
    fn len(&self) -> usize {
        self.seen.len()
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(oldest, at)) = self.order.front() {
            if now.saturating_duration_since(at) < self.window {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{
        Bounded, Claim, Claimant, DedupKey, DedupKind, DedupStore, MemoryDedup, dead_letter_key,
    };

    const HOUR: Duration = Duration::from_secs(3600);

    fn event_key(domain: &str, event_id: &str) -> [u8; 32] {
        *DedupKey::event("default", domain, event_id).digest()
    }

    #[test]
    fn committed_key_is_seen_until_the_window_passes() {
        let start = Instant::now();
        let mut store = Bounded::new(2 * HOUR, 10);
        let key = event_key("acme", "e-1");
        assert_eq!(store.claim(key, start), Claim::Fresh);
        store.commit(&[key], start);
        assert_eq!(
            store.claim(key, start + 2 * HOUR - Duration::from_millis(1)),
            Claim::Seen
        );
        assert_eq!(store.claim(key, start + 2 * HOUR), Claim::Fresh);
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn claimed_key_is_in_flight_until_released() {
        let now = Instant::now();
        let mut store = Bounded::new(HOUR, 10);
        let key = event_key("acme", "e-1");
        assert_eq!(store.claim(key, now), Claim::Fresh);
        assert_eq!(store.claim(key, now), Claim::InFlight);
        store.release(&key);
        assert_eq!(store.claim(key, now), Claim::Fresh);
    }

    #[test]
    fn capacity_bound_evicts_the_oldest() {
        let start = Instant::now();
        let mut store = Bounded::new(HOUR, 100);
        for n in 0..250u64 {
            let key = event_key("acme", &n.to_string());
            let at = start + Duration::from_millis(n);
            assert_eq!(store.claim(key, at), Claim::Fresh);
            store.commit(&[key], at);
            assert!(store.len() <= 100);
        }
        assert_eq!(store.len(), 100);
        let later = start + Duration::from_secs(1);
        assert_eq!(store.claim(event_key("acme", "249"), later), Claim::Seen);
        assert_eq!(store.claim(event_key("acme", "150"), later), Claim::Seen);
        assert_eq!(store.claim(event_key("acme", "149"), later), Claim::Fresh);
    }

    #[test]
    fn keys_separate_domain_event_id_and_kind() {
        assert_ne!(event_key("ab", "c"), event_key("a", "bc"));
        assert_ne!(event_key("acme", "1"), event_key("other", "1"));
        assert_ne!(
            dead_letter_key("r", "body", b"x"),
            dead_letter_key("r", "item", b"x")
        );
        assert_eq!(
            dead_letter_key("r", "body", b"x").kind(),
            DedupKind::DeadLetters
        );
        // Kept in a shared store across deploys: the same key in every version.
        assert_eq!(
            DedupKey::event("r", "acme", "1").digest_hex(),
            "99b0785b51c079502a16f6e5f600a4d7fb2776f1c7d62d1663bc0edc263603d5"
        );
    }

    #[test]
    fn keys_separate_receivers() {
        assert_ne!(
            DedupKey::event("orders", "acme", "1"),
            DedupKey::event("billing", "acme", "1")
        );
        assert_ne!(
            dead_letter_key("orders", "body", b"x"),
            dead_letter_key("billing", "body", b"x")
        );
    }

    #[test]
    fn claimants_are_unique() {
        let ids: std::collections::HashSet<u128> =
            (0..1000).map(|_| Claimant::new("r").id()).collect();
        assert_eq!(ids.len(), 1000);
    }

    #[tokio::test(start_paused = true)]
    async fn memory_store_keeps_dead_letters_apart_from_events() {
        let store = MemoryDedup::new(HOUR, 1);
        let claimant = Claimant::new("r");
        let keys = [
            DedupKey::event("r", "acme", "e-1"),
            dead_letter_key("r", "body", b"x"),
        ];
        let found = store.claim(&claimant, &keys).await.unwrap();
        assert_eq!(found, [Claim::Fresh, Claim::Fresh]);
        store.commit(&claimant, &keys).await.unwrap();
        assert_eq!(store.remembered(), Some(1));
        let again = store.claim(&Claimant::new("r"), &keys).await.unwrap();
        assert_eq!(again, [Claim::Seen, Claim::Seen]);
    }
}
