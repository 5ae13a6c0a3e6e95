//! Calls the gateway counted that this process did not make (another process of the token
//! without a shared fleet, or this process before a restart), placed where the gateway's
//! counters put them.
//!
//! The gateway says how many calls of a class it counted today
//! (`x-accesstoken-quota-current`), not when they were made. So:
//!
//! - **The day's count** seen in an answer, beyond what the log holds, is counted in the
//!   daily window only ([`Reach::DayOnly`]): those calls were made some time today. Counted
//!   as made now in the minute and second windows, a new process of a token that had made
//!   ten AI calls that day would wait a minute before its first one.
//! - **The increase between two answers** of this process, beyond the calls it made between
//!   them, was made between those answers: counted in every window ([`Reach::Every`]) at the
//!   middle of the two answers' instants.
//!
//! Each is a [`Group`]: a count at one instant, so a header that claims four billion calls
//! costs constant time and memory; there are at most [`MAX_GROUPS`] (the oldest merge, at the
//! later instant of the two: stricter, never looser).

use std::collections::VecDeque;

use tokio::time::Instant;

/// The most groups kept; the two oldest merge past it.
pub(super) const MAX_GROUPS: usize = 16;

/// Which windows a group counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// The day's count: the daily window only.
    DayOnly,
    /// Calls placed between two answers: every window.
    Every,
}

/// `n` calls at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Group {
    pub(super) at: Instant,
    pub(super) n: u32,
    pub(super) reach: Reach,
}

/// The groups of one class, ascending by instant.
#[derive(Debug, Default)]
pub(super) struct Unseen {
    groups: VecDeque<Group>,
}

impl Unseen {
    /// Counts `n` calls at `at` in the windows of `reach`.
    pub(super) fn add(&mut self, at: Instant, n: u32, reach: Reach) {
        if n == 0 {
            return;
        }
        let i = self.groups.partition_point(|g| g.at <= at);
        self.groups.insert(i, Group { at, n, reach });
        if self.groups.len() > MAX_GROUPS
            && let (Some(first), Some(second)) = (self.groups.pop_front(), self.groups.pop_front())
        {
            let reach = if first.reach == Reach::DayOnly && second.reach == Reach::DayOnly {
                Reach::DayOnly
            } else {
                Reach::Every
            };
            self.groups.push_front(Group {
                at: second.at,
                n: first.n.saturating_add(second.n),
                reach,
            });
        }
    }

    /// Forgets the groups at or before `horizon`.
    pub(super) fn prune(&mut self, horizon: Instant) {
        while self.groups.front().is_some_and(|g| g.at <= horizon) {
            self.groups.pop_front();
        }
    }

    /// How many calls the groups count in the daily window.
    pub(super) fn count(&self) -> usize {
        self.groups.iter().map(|g| g.n as usize).sum()
    }

    /// The groups a window counts, newest first: the daily window (`day`) counts them all,
    /// the shorter windows only those of [`Reach::Every`].
    pub(super) fn newest_first(&self, day: bool) -> impl Iterator<Item = &Group> {
        self.groups
            .iter()
            .rev()
            .filter(move |g| day || g.reach == Reach::Every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn past_the_bound_the_oldest_groups_merge_at_the_later_instant() {
        let t0 = Instant::now();
        let mut unseen = Unseen::default();
        for i in 0..=MAX_GROUPS as u64 {
            let reach = if i == 0 { Reach::DayOnly } else { Reach::Every };
            unseen.add(t0 + Duration::from_secs(i), 2, reach);
        }
        assert_eq!(unseen.groups.len(), MAX_GROUPS);
        assert_eq!(unseen.count(), 2 * (MAX_GROUPS + 1));
        let oldest = unseen.groups[0];
        assert_eq!(
            (oldest.at, oldest.n, oldest.reach),
            (t0 + Duration::from_secs(1), 4, Reach::Every)
        );
    }
}
