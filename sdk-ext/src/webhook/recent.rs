//! The receiver's second line behind a shared dedup store: the keys this process committed
//! recently, so that a store that lost them does not make this process hand them over again.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::dedup::{Claim, DedupKey, Memory};

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
