//! The receiver's memory of what it already handed over: bounded, expiring, in process.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

/// A fixed-size key: SHA-256 of a length-prefixed description of the item, so memory per
/// entry does not depend on what the sender put in `eventId`.
pub(crate) type DedupKey = [u8; 32];

/// The key of an event: its `(domain, eventId)`.
pub(crate) fn event_key(domain: &str, event_id: &str) -> DedupKey {
    key_of(&[b"event", domain.as_bytes(), event_id.as_bytes()])
}

/// The key of the dead letters of one delivery: their kind and raw bytes, in order.
///
/// One key per delivery, kept apart from the events' keys, so dead letters never take the
/// slots that deduplicate events.
#[derive(Debug, Clone)]
pub(crate) struct DeadLetterKey(Sha256);

impl DeadLetterKey {
    pub(crate) fn new(kind: &str) -> Self {
        let mut key = DeadLetterKey(Sha256::new());
        key.push(b"dead-letter");
        key.push(kind.as_bytes());
        key
    }

    /// Adds one dead letter's raw bytes.
    pub(crate) fn push(&mut self, part: &[u8]) {
        self.0.update((part.len() as u64).to_be_bytes());
        self.0.update(part);
    }

    pub(crate) fn finish(self) -> DedupKey {
        self.0.finalize().into()
    }
}

/// The key of a dead letter: its kind and raw bytes.
pub(crate) fn dead_letter_key(kind: &str, raw: &[u8]) -> DedupKey {
    let mut key = DeadLetterKey::new(kind);
    key.push(raw);
    key.finish()
}

fn key_of(parts: &[&[u8]]) -> DedupKey {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// What [`DedupStore::claim`] found for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Not seen within the window; now claimed by the caller.
    Fresh,
    /// Handed over successfully within the window.
    Seen,
    /// Claimed by a delivery whose handler has not returned yet.
    InFlight,
}

/// Keys handed over successfully (with when), and keys being handed over right now.
///
/// Seen keys expire `window` after they were recorded, and the oldest are evicted beyond
/// `capacity`. In-flight keys are not counted: there are at most as many as the deliveries
/// being handled at once hold.
#[derive(Debug)]
pub(crate) struct DedupStore {
    window: Duration,
    capacity: usize,
    seen: HashSet<DedupKey>,
    order: VecDeque<(DedupKey, Instant)>,
    in_flight: HashSet<DedupKey>,
}

impl DedupStore {
    pub(crate) fn new(window: Duration, capacity: usize) -> Self {
        DedupStore {
            window,
            capacity,
            seen: HashSet::new(),
            order: VecDeque::new(),
            in_flight: HashSet::new(),
        }
    }

    /// Looks `key` up and, if it is fresh, marks it in flight.
    pub(crate) fn claim(&mut self, key: DedupKey, now: Instant) -> Claim {
        self.expire(now);
        if self.seen.contains(&key) {
            Claim::Seen
        } else if !self.in_flight.insert(key) {
            Claim::InFlight
        } else {
            Claim::Fresh
        }
    }

    /// Records claimed keys as handed over at `now`.
    pub(crate) fn commit(&mut self, keys: &[DedupKey], now: Instant) {
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

    /// Gives claimed keys up, so a later delivery of them is handled.
    pub(crate) fn release(&mut self, keys: &[DedupKey]) {
        for key in keys {
            self.in_flight.remove(key);
        }
    }

    /// Number of keys remembered as handed over.
    pub(crate) fn len(&self) -> usize {
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

    use super::{Claim, DedupStore, dead_letter_key, event_key};

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn committed_key_is_seen_until_the_window_passes() {
        let start = Instant::now();
        let mut store = DedupStore::new(2 * HOUR, 10);
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
        let mut store = DedupStore::new(HOUR, 10);
        let key = event_key("acme", "e-1");
        assert_eq!(store.claim(key, now), Claim::Fresh);
        assert_eq!(store.claim(key, now), Claim::InFlight);
        store.release(&[key]);
        assert_eq!(store.claim(key, now), Claim::Fresh);
    }

    #[test]
    fn capacity_bound_evicts_the_oldest() {
        let start = Instant::now();
        let mut store = DedupStore::new(HOUR, 100);
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
        assert_ne!(dead_letter_key("body", b"x"), dead_letter_key("item", b"x"));
    }
}
