//! The Redis server's clock against this machine's, one estimate per token: a token's keys
//! live on the node that owns their hash tag's slot (on a Redis Cluster each primary has a
//! clock of its own), so each token's clock is read from that node, by the booking script
//! and by [`TIME_SCRIPT`] keyed with one of the token's keys, never by a keyless `TIME` that
//! any node may answer.

use crate::token::TokenFingerprint;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Reads the clock of the node that owns `KEYS[1]`'s slot (a keyless `TIME` goes to any node
/// of a cluster). Returns `{seconds, microseconds}`, as `TIME` does.
pub(super) const TIME_SCRIPT: &str = "return redis.call('TIME')";

/// Each token's [`Clock`].
#[derive(Debug, Default)]
pub(super) struct Clocks(Mutex<HashMap<TokenFingerprint, Clock>>);

impl Clocks {
    /// Runs `f` on `token`'s clock (one with no reading if none was taken).
    pub(super) fn with<R>(&self, token: &TokenFingerprint, f: impl FnOnce(&mut Clock) -> R) -> R {
        let mut clocks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(clocks.entry(*token).or_default())
    }
}

/// The server's clock minus this machine's, estimated as NTP does: from a reading of the
/// server's clock taken between two of this machine's, which is off by at most half the
/// round trip. Every booking is such a reading (the script returns the server's time), and
/// the one with the smallest bound is kept, its bound growing with its age (50 µs a second,
/// for clocks that drift apart): a store that answers slowly for a while does not spoil the
/// estimate its quick answers gave.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Clock {
    /// Server minus local, in microseconds.
    offset_us: i64,
    /// How far off `offset_us` may have been when taken, in microseconds; `None` before a
    /// reading.
    pub(super) bound_us: Option<i64>,
    /// When it was taken, in this machine's microseconds.
    taken_us: i64,
}

impl Clock {
    /// Takes in a reading `server` of the server's clock made between `before` and `after`.
    pub(super) fn sample(&mut self, before: i64, after: i64, server: i64) {
        let bound = (after - before).max(0) / 2;
        let better = match self.bound_us {
            None => true,
            Some(known) => {
                let aged = known.saturating_add((after - self.taken_us).max(0) / 20_000);
                bound <= aged
            }
        };
        if better {
            self.offset_us = server - (before + (after - before) / 2);
            self.bound_us = Some(bound);
            self.taken_us = after;
        }
    }

    /// This machine's time `local_us` on the server's clock.
    pub(super) fn server_time(&self, local_us: i64) -> i64 {
        local_us.saturating_add(self.offset_us)
    }
}

#[cfg(test)]
mod tests {
    use super::{Clock, Clocks};
    use crate::token::SecretToken;

    #[test]
    fn each_token_keeps_the_clock_of_the_node_that_holds_its_keys() {
        let fingerprint = |t: &str| SecretToken::try_from(t.to_owned()).unwrap().fingerprint();
        let (ahead, behind) = (fingerprint("a"), fingerprint("b"));
        let clocks = Clocks::default();
        // On a cluster, the nodes of two tokens' slots: one 5 s ahead, one 2 s behind.
        clocks.with(&ahead, |clock| clock.sample(0, 1_000, 5_000_500));
        clocks.with(&behind, |clock| clock.sample(0, 1_000, -1_999_500));
        assert_eq!(clocks.with(&ahead, |c| c.server_time(0)), 5_000_000);
        assert_eq!(clocks.with(&behind, |c| c.server_time(0)), -2_000_000);
        // A token never read has no reading: it is measured before its first start is placed.
        assert_eq!(clocks.with(&fingerprint("c"), |c| c.bound_us), None);
    }

    #[test]
    fn the_clock_keeps_the_reading_with_the_smallest_bound_and_ages_it() {
        let mut clock = Clock::default();
        // A quick reading (1 ms round trip): the server is 5 s ahead.
        clock.sample(1_000_000, 1_001_000, 6_000_500);
        assert_eq!(clock.offset_us, 5_000_000);
        // A slow one (400 ms round trip, the answer held on the way back) says 4.8 s: kept
        // out, the quick one is better.
        clock.sample(2_000_000, 2_400_000, 7_000_000);
        assert_eq!(clock.offset_us, 5_000_000);
        assert_eq!(clock.server_time(10), 5_000_010);
        // 4,000 s later the quick reading's bound has grown past the slow one's (200 ms):
        // taken in.
        clock.sample(4_002_000_000, 4_002_400_000, 4_007_000_000);
        assert_eq!(clock.offset_us, 4_800_000);
    }
}
