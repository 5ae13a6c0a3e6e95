//! Client-side pacing so a token stays inside its [`Limits`].
//!
//! The limiter is a sliding-window log: it remembers when each request of
//! the last 24 hours started (or is booked to start) and books a new request
//! at the earliest instant at which, in every rolling second and every
//! rolling 24 hours, no more requests start than the budget allows. A token
//! bucket or GCRA would not give that guarantee over a rolling window (a
//! `per_day(1000)` GCRA can admit more than 1,000 in some 24 h span).
//!
//! Windows are half-open: at 2 per second, requests start at 0 s, 0 s, 1 s,
//! 1 s, 2 s, ... and never earlier. Time comes from tokio's clock, so tests
//! run on paused time.
//!
//! One limiter belongs to one token; clones share its state, so hand a clone
//! to every task that uses the token.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::limits::{Budget, LimitClass, Limits};

const SECOND: Duration = Duration::from_secs(1);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Longest block [`RateLimiter::server_exhausted`] records, so a wild
/// `Retry-After` cannot overflow the clock.
const MAX_BLOCK: Duration = Duration::from_secs(366 * 24 * 60 * 60);

/// Paces the requests of one token. Cheap to clone; clones share state.
///
/// ```
/// use std::time::Duration;
/// use pubapi_sdk_ext::limiter::RateLimiter;
/// use pubapi_sdk_ext::limits::{LimitClass, Limits};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let limiter = RateLimiter::new(Limits::default());
/// let permit = limiter.acquire(LimitClass::General, Duration::from_secs(5)).await?;
/// assert_eq!(permit.waited(), Duration::ZERO);
/// assert_eq!(limiter.quota(LimitClass::General).remaining_today, Some(999));
/// # Ok::<(), pubapi_sdk_ext::limiter::LimitError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    limits: Limits,
    classes: Mutex<[ClassLog; 2]>,
}

/// Start times of one class, ascending, plus a block set by the server.
#[derive(Default)]
struct ClassLog {
    starts: VecDeque<Instant>,
    blocked_until: Option<Instant>,
}

impl RateLimiter {
    /// A limiter with these budgets and no requests yet.
    pub fn new(limits: Limits) -> Self {
        RateLimiter {
            inner: Arc::new(Inner {
                limits,
                classes: Mutex::new(Default::default()),
            }),
        }
    }

    /// The budgets this limiter enforces.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Waits for the earliest start slot of `class` and returns once the
    /// request may be sent.
    ///
    /// The slot is booked at once, so concurrent callers get distinct slots
    /// in call order. Fails without booking when the slot is more than
    /// `max_wait` away: with [`LimitError::DailyBudgetExhausted`] when the
    /// daily window (or a block from [`RateLimiter::server_exhausted`]) is
    /// the cause, with [`LimitError::WouldExceedDeadline`] when only the
    /// per-second queue is. If the returned future is dropped while waiting,
    /// the slot is given back when it is the latest one booked; otherwise it
    /// stays counted, which can only make the limiter stricter.
    pub async fn acquire(
        &self,
        class: LimitClass,
        max_wait: Duration,
    ) -> Result<Permit, LimitError> {
        let called = Instant::now();
        let booking = self.book(class, max_wait, called)?;
        tokio::time::sleep_until(booking.at).await;
        let now = Instant::now();
        let blocked_until = self.lock()[index(class)].blocked_until;
        if let Some(until) = blocked_until
            && until > now
        {
            // The server declared the quota used up while we waited.
            drop(booking);
            return Err(LimitError::DailyBudgetExhausted {
                class,
                available_in: until - now,
            });
        }
        Ok(Permit {
            class,
            start: booking.keep(),
            waited: now.saturating_duration_since(called),
        })
    }

    /// How much of `class`'s budget is used, counting booked slots.
    pub fn quota(&self, class: LimitClass) -> Quota {
        let now = Instant::now();
        let budget = self.inner.limits.budget(class);
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.prune(budget, now);
        let used_today = budget
            .per_day
            .map(|_| u32::try_from(log.starts.len()).unwrap_or(u32::MAX));
        let next_slot_in = match log.earliest(budget, now) {
            Some(slot) => slot.at - now,
            None => Duration::MAX,
        };
        Quota {
            used_today,
            remaining_today: budget
                .per_day
                .zip(used_today)
                .map(|(limit, used)| limit.saturating_sub(used)),
            per_day: budget.per_day,
            next_slot_in,
        }
    }

    /// Records that the server said the daily quota of `class` is used up
    /// (its counting can differ from ours): no request of the class starts
    /// before `retry_after` from now. Callers already waiting for a slot
    /// before then fail with [`LimitError::DailyBudgetExhausted`].
    pub fn server_exhausted(&self, class: LimitClass, retry_after: Duration) {
        let now = Instant::now();
        let until = now + retry_after.min(MAX_BLOCK);
        let mut classes = self.lock();
        let blocked = &mut classes[index(class)].blocked_until;
        *blocked = Some(blocked.map_or(until, |b| b.max(until)));
    }

    fn book(
        &self,
        class: LimitClass,
        max_wait: Duration,
        now: Instant,
    ) -> Result<Booking<'_>, LimitError> {
        let budget = self.inner.limits.budget(class);
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.prune(budget, now);
        let slot = log
            .earliest(budget, now)
            .ok_or(LimitError::NoBudget { class })?;
        let wait = slot.at - now;
        if wait > max_wait {
            return Err(if slot.daily - now > max_wait {
                LimitError::DailyBudgetExhausted {
                    class,
                    available_in: wait,
                }
            } else {
                LimitError::WouldExceedDeadline {
                    class,
                    wait,
                    max_wait,
                }
            });
        }
        log.starts.push_back(slot.at);
        Ok(Booking {
            limiter: self,
            class,
            at: slot.at,
            armed: true,
        })
    }

    fn lock(&self) -> MutexGuard<'_, [ClassLog; 2]> {
        // The state stays consistent even if a holder panicked.
        self.inner
            .classes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn log_len(&self, class: LimitClass) -> usize {
        self.lock()[index(class)].starts.len()
    }
}

impl Default for RateLimiter {
    /// A limiter with [`Limits::default`].
    fn default() -> Self {
        RateLimiter::new(Limits::default())
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

fn index(class: LimitClass) -> usize {
    match class {
        LimitClass::General => 0,
        LimitClass::Ai => 1,
    }
}

/// The earliest start and the part of it owed to the daily window.
struct Slot {
    at: Instant,
    daily: Instant,
}

impl ClassLog {
    /// Drops starts that can no longer matter: older than 24 h with a
    /// daily budget, older than 1 s without.
    fn prune(&mut self, budget: Budget, now: Instant) {
        let window = if budget.per_day.is_some() {
            DAY
        } else {
            SECOND
        };
        if let Some(horizon) = now.checked_sub(window) {
            while self.starts.front().is_some_and(|&s| s <= horizon) {
                self.starts.pop_front();
            }
        }
        if self.blocked_until.is_some_and(|b| b <= now) {
            self.blocked_until = None;
        }
    }

    /// The earliest start at or after `now` that keeps both windows within
    /// budget, or `None` when a window allows nothing at all.
    ///
    /// Booked starts are ascending and every new one is at or after the
    /// last, so a window of `k` is respected when the new start is at least
    /// one window after the k-th latest start.
    fn earliest(&self, budget: Budget, now: Instant) -> Option<Slot> {
        let after_kth_latest = |k: u32, window: Duration| -> Option<Option<Instant>> {
            let k = usize::try_from(k).ok()?;
            if k == 0 {
                return None;
            }
            let len = self.starts.len();
            Some((len >= k).then(|| self.starts[len - k] + window))
        };
        let mut daily = now;
        if let Some(k) = budget.per_day {
            daily = daily.max(after_kth_latest(k, DAY)?.unwrap_or(now));
        }
        if let Some(until) = self.blocked_until {
            daily = daily.max(until);
        }
        let mut at = daily;
        if let Some(k) = budget.per_second {
            at = at.max(after_kth_latest(k, SECOND)?.unwrap_or(now));
        }
        Some(Slot { at, daily })
    }
}

/// A booked slot, given back if the waiter goes away before it.
struct Booking<'a> {
    limiter: &'a RateLimiter,
    class: LimitClass,
    at: Instant,
    armed: bool,
}

impl Booking<'_> {
    fn keep(mut self) -> Instant {
        self.armed = false;
        self.at
    }
}

impl Drop for Booking<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut classes = self.limiter.lock();
        let starts = &mut classes[index(self.class)].starts;
        // Only the latest booking can go without breaking the ascending
        // order later bookings rely on; equal instants are interchangeable.
        if starts.back() == Some(&self.at) {
            starts.pop_back();
        }
    }
}

/// Leave to send one request, returned by [`RateLimiter::acquire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permit {
    class: LimitClass,
    start: Instant,
    waited: Duration,
}

impl Permit {
    /// The class the slot was taken from.
    pub fn class(&self) -> LimitClass {
        self.class
    }

    /// The booked start instant.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// How long [`RateLimiter::acquire`] waited for the slot.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

/// A snapshot of one class's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Requests started or booked in the last 24 h; `None` without a daily
    /// budget (then only the last second is remembered).
    pub used_today: Option<u32>,
    /// `per_day - used_today`; `None` without a daily budget.
    pub remaining_today: Option<u32>,
    /// The daily budget.
    pub per_day: Option<u32>,
    /// How long a request made now would wait (`Duration::MAX` when the
    /// budget allows nothing).
    pub next_slot_in: Duration,
}

/// Why [`RateLimiter::acquire`] gave no permit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// The daily budget (or a block the server asked for) leaves no slot
    /// within the wait allowed. Nothing was booked.
    DailyBudgetExhausted {
        /// The exhausted class.
        class: LimitClass,
        /// When the next slot opens.
        available_in: Duration,
    },
    /// The per-second queue is longer than the wait allowed. Nothing was
    /// booked.
    WouldExceedDeadline {
        /// The class queued for.
        class: LimitClass,
        /// How long the wait would have been.
        wait: Duration,
        /// The wait that was allowed.
        max_wait: Duration,
    },
    /// The configured budget of the class allows no request at all.
    NoBudget {
        /// The class without budget.
        class: LimitClass,
    },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::DailyBudgetExhausted {
                class,
                available_in,
            } => write!(
                f,
                "daily {class} budget exhausted, next slot in {}s",
                available_in.as_secs()
            ),
            LimitError::WouldExceedDeadline {
                class,
                wait,
                max_wait,
            } => write!(
                f,
                "{class} slot is {}ms away, more than the {}ms allowed",
                wait.as_millis(),
                max_wait.as_millis()
            ),
            LimitError::NoBudget { class } => write!(f, "no {class} budget configured"),
        }
    }
}

impl std::error::Error for LimitError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::SplitMix64;
    use tokio::task::JoinSet;
    use tokio::time::{sleep, sleep_until, timeout};

    const GENERAL: LimitClass = LimitClass::General;
    const AI: LimitClass = LimitClass::Ai;
    const LONG: Duration = Duration::from_secs(3600);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn limiter(per_second: Option<u32>, per_day: Option<u32>) -> RateLimiter {
        RateLimiter::new(Limits {
            general: Budget::new(per_second, per_day),
            ..Limits::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_calls_at_two_per_second_start_at_0_0_1_1_2_2() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let limiter = limiter.clone();
            set.spawn(async move {
                let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
                assert_eq!(Instant::now(), permit.start());
                assert_eq!(permit.waited(), permit.start() - t0);
                Instant::now() - t0
            });
        }
        let mut starts = set.join_all().await;
        starts.sort();
        let expected: Vec<Duration> = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4].map(secs).into();
        assert_eq!(starts, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn sequential_calls_wait_no_longer_than_needed() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..10 {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            starts.push(permit.start() - t0);
        }
        let expected: Vec<Duration> = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4].map(secs).into();
        assert_eq!(starts, expected);
        // After an idle gap the budget is there again at once.
        sleep(Duration::from_millis(2500)).await;
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        assert_eq!(permit.waited(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn per_second_queue_longer_than_max_wait_would_exceed_deadline_and_books_nothing() {
        let limiter = RateLimiter::default();
        let max_wait = Duration::from_millis(1500);
        for _ in 0..2 {
            limiter.acquire(GENERAL, max_wait).await.unwrap();
        }
        // Book 1 s and 1 s without waiting for them.
        let t0 = Instant::now();
        let (a, b) = tokio::join!(
            limiter.acquire(GENERAL, max_wait),
            limiter.acquire(GENERAL, max_wait)
        );
        assert_eq!(a.unwrap().start() - t0, secs(1));
        assert_eq!(b.unwrap().start() - t0, secs(1));
        // Now at 1 s: the next slot is at 2 s, within 1.5 s.
        let mut queue = JoinSet::new();
        for _ in 0..2 {
            let limiter = limiter.clone();
            queue.spawn(async move { limiter.acquire(GENERAL, max_wait).await });
        }
        tokio::task::yield_now().await;
        // Slots 2 s and 2 s are booked; the next is at 3 s, 2 s away.
        assert_eq!(
            limiter.acquire(GENERAL, max_wait).await,
            Err(LimitError::WouldExceedDeadline {
                class: GENERAL,
                wait: secs(2),
                max_wait
            })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, secs(2));
        assert_eq!(limiter.quota(GENERAL).used_today, Some(6));
        for permit in queue.join_all().await {
            assert_eq!(permit.unwrap().start() - t0, secs(2));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn daily_budget_exhausted_is_returned_without_booking() {
        let limiter = limiter(None, Some(3));
        for _ in 0..3 {
            assert_eq!(
                limiter.acquire(GENERAL, secs(5)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        sleep(secs(60)).await;
        let err = limiter.acquire(GENERAL, secs(5)).await.unwrap_err();
        assert_eq!(
            err,
            LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: DAY - secs(60)
            }
        );
        assert_eq!(
            err.to_string(),
            "daily general budget exhausted, next slot in 86340s"
        );
        let quota = limiter.quota(GENERAL);
        assert_eq!(
            quota,
            Quota {
                used_today: Some(3),
                remaining_today: Some(0),
                per_day: Some(3),
                next_slot_in: DAY - secs(60),
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_allowed_to_wait_a_day_starts_exactly_when_the_window_frees() {
        let limiter = limiter(Some(2), Some(3));
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.acquire(GENERAL, secs(5)).await.unwrap();
        }
        // 0, 0, 1 s: the fourth and fifth start when both starts at 0 have
        // left the day window, the sixth when the one at 1 s has.
        let expected = [DAY, DAY, DAY + secs(1)];
        for expected in expected {
            let permit = limiter.acquire(GENERAL, DAY).await.unwrap();
            assert_eq!(permit.start() - t0, expected);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn used_today_falls_as_starts_leave_the_24_hour_window() {
        let limiter = limiter(None, Some(10));
        limiter.acquire(GENERAL, secs(0)).await.unwrap();
        sleep(secs(3600)).await;
        limiter.acquire(GENERAL, secs(0)).await.unwrap();
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
        sleep(DAY - secs(3600)).await;
        assert_eq!(limiter.quota(GENERAL).used_today, Some(1));
        assert_eq!(limiter.quota(GENERAL).remaining_today, Some(9));
        sleep(secs(3600)).await;
        assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn ai_class_is_separate_from_general() {
        let limiter = RateLimiter::default();
        for _ in 0..100 {
            assert_eq!(
                limiter.acquire(AI, secs(0)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        assert!(matches!(
            limiter.acquire(AI, secs(60)).await,
            Err(LimitError::DailyBudgetExhausted { class: AI, .. })
        ));
        assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
        let permit = limiter.acquire(GENERAL, secs(0)).await.unwrap();
        assert_eq!(permit.class(), GENERAL);
        assert_eq!(permit.waited(), Duration::ZERO);
        assert_eq!(limiter.quota(AI).remaining_today, Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn server_exhausted_blocks_the_class_until_retry_after() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        limiter.server_exhausted(GENERAL, secs(600));
        assert_eq!(
            limiter.acquire(GENERAL, secs(60)).await,
            Err(LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: secs(600)
            })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, secs(600));
        // A shorter later block does not shorten it.
        limiter.server_exhausted(GENERAL, secs(10));
        assert_eq!(
            limiter.acquire(AI, secs(0)).await.unwrap().waited(),
            Duration::ZERO
        );
        let permit = limiter.acquire(GENERAL, secs(600)).await.unwrap();
        assert_eq!(permit.start() - t0, secs(600));
    }

    #[tokio::test(start_paused = true)]
    async fn server_exhausted_fails_callers_already_waiting() {
        let limiter = RateLimiter::default();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        let waiter = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire(GENERAL, secs(5)).await }
        });
        sleep(Duration::from_millis(500)).await;
        limiter.server_exhausted(GENERAL, secs(3600));
        assert_eq!(
            waiter.await.unwrap(),
            Err(LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: Duration::from_millis(3_600_000 - 500)
            })
        );
        // Its slot was handed back.
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_waiter_gives_its_slot_back() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        let gave_up = timeout(
            Duration::from_millis(300),
            limiter.acquire(GENERAL, secs(5)),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
        let a = limiter.acquire(GENERAL, secs(5));
        let b = limiter.acquire(GENERAL, secs(5));
        let (a, b) = tokio::join!(a, b);
        assert_eq!(a.unwrap().start() - t0, secs(1));
        assert_eq!(b.unwrap().start() - t0, secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_budget_allows_nothing() {
        let limiter = limiter(Some(0), Some(10));
        assert_eq!(
            limiter.acquire(GENERAL, LONG).await,
            Err(LimitError::NoBudget { class: GENERAL })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, Duration::MAX);
        let limiter = limiter_day_zero();
        assert_eq!(
            limiter
                .acquire(GENERAL, LONG)
                .await
                .unwrap_err()
                .to_string(),
            "no general budget configured"
        );
    }

    fn limiter_day_zero() -> RateLimiter {
        limiter(Some(2), Some(0))
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_class_never_waits_and_remembers_only_a_second() {
        let limiter = limiter(None, None);
        for _ in 0..1000 {
            assert_eq!(
                limiter.acquire(GENERAL, secs(0)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        sleep(secs(2)).await;
        let quota = limiter.quota(GENERAL);
        assert_eq!(quota.used_today, None);
        assert_eq!(quota.remaining_today, None);
        assert_eq!(limiter.log_len(GENERAL), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn memory_stays_bounded_over_many_days() {
        let limiter = limiter(Some(50), Some(200));
        for _ in 0..5 {
            for _ in 0..200 {
                limiter.acquire(GENERAL, DAY).await.unwrap();
            }
            assert!(limiter.log_len(GENERAL) <= 200);
            sleep(DAY).await;
            assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
            assert_eq!(limiter.log_len(GENERAL), 0);
        }
    }

    #[test]
    fn limit_errors_display_short_lowercase() {
        assert_eq!(
            LimitError::WouldExceedDeadline {
                class: AI,
                wait: secs(2),
                max_wait: secs(1)
            }
            .to_string(),
            "ai slot is 2000ms away, more than the 1000ms allowed"
        );
    }

    /// The largest number of `starts` (sorted) in any half-open window of
    /// length `window`. A busiest window can always be slid to begin at a
    /// start, so only those are checked.
    fn busiest_window(starts: &[Instant], window: Duration) -> usize {
        let mut end = 0;
        let mut busiest = 0;
        for (begin, &first) in starts.iter().enumerate() {
            while end < starts.len() && starts[end] < first + window {
                end += 1;
            }
            busiest = busiest.max(end - begin);
        }
        busiest
    }

    #[derive(Debug, Default)]
    struct Run {
        starts: Vec<Instant>,
        exhausted: usize,
        other: Vec<LimitError>,
    }

    /// `tasks` callers, each making `per_task` calls in bursts of up to 5 at
    /// random instants of `[t0, t0 + span)`. The first burst is at `t0`.
    async fn simulate(
        limiter: &RateLimiter,
        class: LimitClass,
        tasks: u64,
        per_task: usize,
        span: Duration,
    ) -> Run {
        let t0 = Instant::now();
        let span_ms = span.as_millis() as u64;
        let mut set = JoinSet::new();
        for task in 0..tasks {
            let limiter = limiter.clone();
            set.spawn(async move {
                let mut rng = SplitMix64::new(task * 1_000 + class as u64);
                let mut arrivals: Vec<u64> = Vec::with_capacity(per_task);
                while arrivals.len() < per_task {
                    let centre = if task == 0 && arrivals.is_empty() {
                        0
                    } else {
                        rng.below(span_ms)
                    };
                    for _ in 0..1 + rng.below(5) {
                        arrivals.push((centre + rng.below(400)).min(span_ms - 1));
                    }
                }
                arrivals.truncate(per_task);
                arrivals.sort_unstable();
                let mut run = Run::default();
                for offset in arrivals {
                    sleep_until(t0 + Duration::from_millis(offset)).await;
                    match limiter.acquire(class, secs(10)).await {
                        Ok(permit) => {
                            assert_eq!(Instant::now(), permit.start());
                            run.starts.push(permit.start());
                        }
                        Err(LimitError::DailyBudgetExhausted { .. }) => run.exhausted += 1,
                        Err(other) => run.other.push(other),
                    }
                }
                run
            });
        }
        let mut all = Run::default();
        for run in set.join_all().await {
            all.starts.extend(run.starts);
            all.exhausted += run.exhausted;
            all.other.extend(run.other);
        }
        all.starts.sort_unstable();
        all
    }

    #[tokio::test(start_paused = true)]
    async fn a_day_at_three_times_demand_never_breaks_a_rolling_window() {
        let limiter = RateLimiter::default();
        // Arrivals end 11 s before the first start leaves the day window,
        // so exactly one day's budget can be used.
        let span = DAY - secs(11);
        let (general, ai) = tokio::join!(
            simulate(&limiter, GENERAL, 8, 375, span),
            simulate(&limiter, AI, 3, 100, span),
        );
        assert!(general.other.is_empty(), "{:?}", general.other);
        assert_eq!(general.starts.len(), 1000);
        assert_eq!(general.exhausted, 2000);
        assert_eq!(busiest_window(&general.starts, SECOND), 2);
        assert_eq!(busiest_window(&general.starts, DAY), 1000);

        assert!(ai.other.is_empty(), "{:?}", ai.other);
        assert_eq!(ai.starts.len(), 100);
        assert_eq!(ai.exhausted, 200);
        assert_eq!(busiest_window(&ai.starts, DAY), 100);
    }

    #[tokio::test(start_paused = true)]
    async fn two_days_at_three_times_demand_keep_every_rolling_window() {
        let limiter = RateLimiter::default();
        let run = simulate(&limiter, GENERAL, 8, 750, 2 * DAY).await;
        assert!(run.other.is_empty(), "{:?}", run.other);
        assert_eq!(run.starts.len() + run.exhausted, 6000);
        assert!(busiest_window(&run.starts, SECOND) <= 2);
        assert_eq!(busiest_window(&run.starts, DAY), 1000);
        // The limiter does not leave budget unused under excess demand.
        assert!(run.starts.len() >= 1900, "{}", run.starts.len());
    }
}
