//! What the server remembers between tool calls so that no call breaks a platform floor: when
//! each audit job was last asked about (the reference's two minutes between polls), when the
//! events list may be polled again after catching up, and the named event checkpoints.
//! Times are tokio's clock; the floors are in real time (the server's time divided by a
//! sandbox's time scale).

use pubapi_sdk_ext::audit::JobState;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// An audit job as last seen.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    /// When the job was made or last polled.
    pub(super) at: Instant,
    /// What that answer said (`None` right after creating it).
    pub(super) state: Option<JobState>,
}

/// The floors, shared by every session of the server.
#[derive(Debug, Default)]
pub(super) struct Floors {
    jobs: Mutex<HashMap<String, Seen>>,
    events_quiet_until: Mutex<Option<Instant>>,
    checkpoints: Mutex<HashMap<String, i64>>,
}

/// Whether the platform may be asked now, or how long to wait.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Gate {
    /// Ask now.
    Open,
    /// Not before this long; what is known meanwhile.
    Closed {
        /// How long until asking is allowed.
        wait: Duration,
        /// The last answer.
        seen: Option<JobState>,
    },
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Floors {
    /// Whether job `id` may be polled now, `floor` after it was last made or polled. A job
    /// this server has not seen may be polled (another process made it).
    pub(super) fn job_gate(&self, id: &str, floor: Duration, now: Instant) -> Gate {
        match locked(&self.jobs).get(id) {
            Some(seen) if now < seen.at + floor => Gate::Closed {
                wait: seen.at + floor - now,
                seen: seen.state.clone(),
            },
            _ => Gate::Open,
        }
    }

    /// Records that job `id` was made (`state` `None`) or polled at `at`.
    pub(super) fn job_seen(&self, id: &str, at: Instant, state: Option<JobState>) {
        locked(&self.jobs).insert(id.to_string(), Seen { at, state });
    }

    /// Forgets a job (its report was deleted).
    pub(super) fn job_gone(&self, id: &str) {
        locked(&self.jobs).remove(id);
    }

    /// How long until the events list may be polled again, if it may not be now.
    pub(super) fn events_wait(&self, now: Instant) -> Option<Duration> {
        locked(&self.events_quiet_until)
            .filter(|until| now < *until)
            .map(|until| until - now)
    }

    /// The events list caught up at `now`: no poll for `wait`.
    pub(super) fn events_caught_up(&self, now: Instant, wait: Duration) {
        *locked(&self.events_quiet_until) = Some(now + wait);
    }

    /// The checkpoint saved under `name` in memory.
    pub(super) fn checkpoint(&self, name: &str) -> Option<i64> {
        locked(&self.checkpoints).get(name).copied()
    }

    /// Saves `id` under `name` in memory (never backwards).
    pub(super) fn save_checkpoint(&self, name: &str, id: i64) {
        let mut all = locked(&self.checkpoints);
        let kept = all.entry(name.to_string()).or_insert(id);
        *kept = (*kept).max(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_closed_for_the_floor_after_it_was_seen_then_open() {
        let floors = Floors::default();
        let start = Instant::now();
        let floor = Duration::from_secs(120);
        assert_eq!(floors.job_gate("j", floor, start), Gate::Open);
        floors.job_seen("j", start, None);
        assert_eq!(
            floors.job_gate("j", floor, start + Duration::from_secs(20)),
            Gate::Closed {
                wait: Duration::from_secs(100),
                seen: None
            }
        );
        assert_eq!(floors.job_gate("j", floor, start + floor), Gate::Open);
        floors.job_gone("j");
        assert_eq!(floors.job_gate("j", floor, start), Gate::Open);
    }

    #[test]
    fn the_events_list_is_quiet_until_its_interval_has_passed() {
        let floors = Floors::default();
        let start = Instant::now();
        assert_eq!(floors.events_wait(start), None);
        floors.events_caught_up(start, Duration::from_secs(300));
        assert_eq!(
            floors.events_wait(start + Duration::from_secs(100)),
            Some(Duration::from_secs(200))
        );
        assert_eq!(floors.events_wait(start + Duration::from_secs(300)), None);
    }

    #[test]
    fn a_checkpoint_never_goes_back() {
        let floors = Floors::default();
        floors.save_checkpoint("perm", 40);
        floors.save_checkpoint("perm", 12);
        assert_eq!(floors.checkpoint("perm"), Some(40));
        assert_eq!(floors.checkpoint("other"), None);
    }
}
