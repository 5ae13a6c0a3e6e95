//! The receiver's second line behind a shared dedup store: the keys this process committed
//! recently, so that a store that lost them does not make this process hand them over again.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::dedup::{Claim, DedupKey, Memory};

/// Default for [`ReceiverBuilder::recent_deliveries`](super::ReceiverBuilder::recent_deliveries)'s
/// count: the last 100,000 events this process committed (on the order of 10 MiB, as much as
/// the in-process store's default).
///
/// A repeat of a delivery comes at most 71 minutes after its first attempt (the platform
/// retries after 1 minute, 10 minutes and 1 hour), so this covers every repeat for a process
/// that commits up to about 23 events a second on average (100,000 in 71 minutes), and the
/// whole [`DEFAULT_RECENT_WINDOW`] up to about 14 a second.
pub const DEFAULT_RECENT_CAPACITY: usize = 100_000;

/// Default for [`ReceiverBuilder::recent_deliveries`](super::ReceiverBuilder::recent_deliveries)'s
/// window: 2 hours, as [`DEFAULT_DEDUP_WINDOW`](super::DEFAULT_DEDUP_WINDOW), beyond the
/// platform's last retry (71 minutes after the first attempt) with margin. Never longer than
/// the store's own [window](super::DedupStore::window).
pub const DEFAULT_RECENT_WINDOW: Duration = super::DEFAULT_DEDUP_WINDOW;

/// Digests of the events (and, apart from them, of the dead letters of deliveries) this
/// process committed, each for `window` after its commit, up to `capacity` events, the oldest
/// forgotten first.
#[derive(Debug)]
pub(super) struct Recent {
    capacity: usize,
    window: Duration,
    memory: Mutex<Memory>,
}

/// What the recent set made of a store's answers for one delivery.
#[derive(Debug)]
pub(super) struct Overruled {
    /// Per key, in order: the store no longer held it as handed over although this process
    /// committed it within the window; its answer is now [`Claim::Seen`].
    pub(super) forgotten: Vec<bool>,
    /// Of those, the keys the store answered [`Claim::Fresh`]: claimed by this delivery now,
    /// to be committed again so that the store holds them once more.
    pub(super) restore: Vec<DedupKey>,
}

impl Overruled {
    /// Nothing overruled, for `keys` keys.
    pub(super) fn none(keys: usize) -> Self {
        Overruled {
            forgotten: vec![false; keys],
            restore: Vec::new(),
        }
    }

    /// How many keys the store had forgotten.
    pub(super) fn count(&self) -> usize {
        self.forgotten
            .iter()
            .filter(|&&forgotten| forgotten)
            .count()
    }
}

impl Recent {
    /// `None` when `capacity` or `window` is zero: no second line.
    pub(super) fn new(capacity: usize, window: Duration) -> Option<Self> {
        (capacity > 0 && !window.is_zero()).then(|| Recent {
            capacity,
            window,
            memory: Mutex::new(Memory::new(window, capacity)),
        })
    }

    /// The most events remembered.
    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// How long each is remembered after its commit.
    pub(super) fn window(&self) -> Duration {
        self.window
    }

    fn lock(&self) -> MutexGuard<'_, Memory> {
        // The memory stays consistent between calls, so a panic elsewhere does not spoil it.
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Turns into [`Claim::Seen`] every answer in `found` (the store's, for `keys`) that is not
    /// already one although this process committed its key within the window.
    pub(super) fn overrule(&self, keys: &[DedupKey], found: &mut [Claim]) -> Overruled {
        let now = Instant::now();
        let mut memory = self.lock();
        let mut overruled = Overruled::none(keys.len());
        for ((key, claim), forgotten) in keys.iter().zip(found).zip(&mut overruled.forgotten) {
            if *claim == Claim::Seen || !memory.of(key.kind()).contains(key.digest(), now) {
                continue;
            }
            if *claim == Claim::Fresh {
                overruled.restore.push(*key);
            }
            *claim = Claim::Seen;
            *forgotten = true;
        }
        overruled
    }

    /// Remembers `keys` as committed now.
    pub(super) fn record(&self, keys: &[DedupKey]) {
        let now = Instant::now();
        let mut memory = self.lock();
        for key in keys {
            memory.of(key.kind()).commit(&[*key.digest()], now);
        }
    }
}
