//! The limiter's windows: the log of one class's starts ([`ClassLog`]) and the arithmetic of
//! its rolling windows (second, minute, hour, day): where the earliest start that keeps every
//! window within its budget is, what a fleet's store is given as history, what is pruned.
//!
//! It knows nothing of waiting, of the fleet or of the server: [`super`] books and waits on
//! these logs, and [`super::health`] and [`super::fleet`] give their starts to a fleet's store.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::HistoryStart;
use crate::limits::{Budget, LimitClass, MINUTE, Pacing, ServerCounters};

use super::unseen::Unseen;

pub(super) const SECOND: Duration = Duration::from_secs(1);
pub(super) const HOUR: Duration = Duration::from_secs(60 * 60);
pub(super) const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a start counts: the longest window of `budget`, and the margin.
pub(super) fn longest_window(budget: Budget, pacing: Pacing) -> Duration {
    let window = if budget.per_day.is_some() {
        DAY
    } else if budget.per_hour.is_some() {
        HOUR
    } else if budget.per_minute.is_some() {
        MINUTE
    } else {
        SECOND
    };
    window + pacing.margin
}

/// Start times of one class, ascending, plus a block set by the server.
#[derive(Default)]
pub(super) struct ClassLog {
    pub(super) starts: VecDeque<Start>,
    /// The id of the next booking.
    pub(super) next_id: u64,
    pub(super) blocked_until: Option<Instant>,
    /// What the server's headers said last.
    pub(super) server: Option<ServerCounters>,
    /// Calls the server counted that this log has no start for (another client of the token, a
    /// restart), where its counters place them ([`unseen`](super::unseen)).
    pub(super) unseen: Unseen,
    /// The last answer that carried the day's count: when it came and the count.
    pub(super) answered: Option<(Instant, u32)>,
}

/// One booked or made start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Start {
    pub(super) at: Instant,
    pub(super) id: u64,
}

pub(super) fn index(class: LimitClass) -> usize {
    match class {
        LimitClass::General => 0,
        LimitClass::Ai => 1,
    }
}

/// The earliest start and the part of it owed to the long windows (day,
/// minute) and server blocks.
pub(super) struct Slot {
    pub(super) at: Instant,
    pub(super) long: Instant,
}

impl ClassLog {
    /// The position of the start with this id: searched from the newest, where it usually is.
    pub(super) fn find(&self, id: u64) -> Option<usize> {
        self.starts.iter().rposition(|s| s.id == id)
    }

    /// Forgets the start with this id (a booking given back). Bookings after it keep their
    /// slots: that can only be stricter.
    pub(super) fn remove(&mut self, id: u64) {
        if let Some(i) = self.find(id) {
            self.starts.remove(i);
        }
    }

    /// Counts a start at `at` with the id `id` (taken from `next_id` before), in order among
    /// the booked ones.
    pub(super) fn insert_at(&mut self, at: Instant, id: u64) {
        let i = self.starts.partition_point(|s| s.at <= at);
        self.starts.insert(i, Start { at, id });
    }

    /// The starts of the log for a fleet's store, as offsets from `now`.
    pub(super) fn history(&self, now: Instant) -> Vec<HistoryStart> {
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.starts
            .iter()
            .map(|s| HistoryStart {
                id: s.id,
                offset_us: if s.at >= now {
                    micros(s.at - now)
                } else {
                    -micros(now - s.at)
                },
            })
            .collect()
    }

    /// How many starts the log counts in its daily window: those it lists and those the
    /// server counted unseen.
    pub(super) fn count(&self) -> usize {
        self.starts.len() + self.unseen.count()
    }

    /// The `k`-th latest start (`k` ≥ 1) a window counts, if there are `k`: the listed
    /// starts and the unseen ones in their place, all of them for the daily window (`day`),
    /// for the shorter ones only those placed between two answers.
    pub(super) fn kth_latest(&self, k: usize, day: bool) -> Option<Instant> {
        let len = self.starts.len();
        let listed = |j: usize| (j >= 1 && len >= j).then(|| self.starts[len - j].at);
        // Unseen starts newer than the group in hand.
        let mut newer_unseen = 0;
        for group in self.unseen.newest_first(day) {
            let newer_listed = len - self.starts.partition_point(|s| s.at <= group.at);
            if k <= newer_listed + newer_unseen {
                return listed(k - newer_unseen);
            }
            newer_unseen += group.n as usize;
            if k <= newer_listed + newer_unseen {
                return Some(group.at);
            }
        }
        listed(k - newer_unseen)
    }

    /// Drops starts that can no longer matter: older than the longest window
    /// the budget has, plus the margin.
    pub(super) fn prune(&mut self, budget: Budget, pacing: Pacing, now: Instant) {
        if let Some(horizon) = now.checked_sub(longest_window(budget, pacing)) {
            while self.starts.front().is_some_and(|s| s.at <= horizon) {
                self.starts.pop_front();
            }
            self.unseen.prune(horizon);
        }
        if self.blocked_until.is_some_and(|b| b <= now) {
            self.blocked_until = None;
        }
    }

    /// The earliest start at or after `now` that keeps every window within
    /// `1 / share` of its budget, or `None` when a window allows nothing at all.
    ///
    /// Booked starts are ascending and every new one is at or after the
    /// last, so a window of `k` is respected when the new start is at least
    /// one window after the k-th latest start.
    pub(super) fn earliest(
        &self,
        budget: Budget,
        pacing: Pacing,
        now: Instant,
        share: u32,
    ) -> Option<Slot> {
        let after_kth_latest = |k: u32, window: Duration| -> Option<Instant> {
            let k = if k == 0 { 0 } else { (k / share).max(1) };
            let k = usize::try_from(k).ok().filter(|k| *k > 0)?;
            Some(match self.kth_latest(k, window == DAY) {
                Some(at) => at + window + pacing.margin,
                None => now,
            })
        };
        let mut long = now;
        if let Some(k) = budget.per_day {
            long = long.max(after_kth_latest(k, DAY)?);
        }
        if let Some(k) = budget.per_hour {
            long = long.max(after_kth_latest(k, HOUR)?);
        }
        if let Some(k) = budget.per_minute {
            long = long.max(after_kth_latest(k, MINUTE)?);
        }
        if let Some(until) = self.blocked_until {
            long = long.max(until);
        }
        let mut at = long;
        if let Some(k) = budget.per_second {
            at = at.max(after_kth_latest(k, SECOND)?);
            if (!pacing.burst || share > 1)
                && let Some(last) = self.starts.back()
            {
                at = at.max(last.at + (SECOND + pacing.margin) * share / k);
            }
        }
        if let Some(last) = self.starts.back() {
            at = at.max(last.at);
        }
        Some(Slot { at, long })
    }
}
