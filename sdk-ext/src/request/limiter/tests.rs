//! Unit tests of [`super`], kept apart so the module holds the code alone: here the local
//! pacing (the windows, booking and waiting, the server's counters, one limiter per token);
//! the fleet's in [`fleet`] (booking through the store) and [`health`] (the store's outages,
//! the history and the watch), on the helpers at the end of this file.

use super::window::{DAY, SECOND};
use super::*;
use crate::fleet::{Answer, FleetError, Reservation, Reserve};
use crate::limits::Budget;
use crate::rng::SplitMix64;
use tokio::task::JoinSet;
use tokio::time::{sleep, sleep_until, timeout};

/// `FleetBudget::give_back` of a test store that records the ids in its `given_back`
/// ([`GivenBack`]); written before the submodules, which use it too.
macro_rules! gives_back_to_its_record {
    () => {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            self.given_back.record(id)
        }
    };
}

mod fleet;
mod health;

const GENERAL: LimitClass = LimitClass::General;
const AI: LimitClass = LimitClass::Ai;
const LONG: Duration = Duration::from_secs(3600);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The rolling-window rules alone: bursts, no margin (the pacing of these tests'
/// expectations; the default pacing has tests of its own below).
const EXACT: Pacing = Pacing::burst(Duration::ZERO);

fn limiter(per_second: Option<u32>, per_day: Option<u32>) -> RateLimiter {
    RateLimiter::with_pacing(
        Limits {
            general: Budget::new(per_second, per_day),
            ai: Budget::new(None, Some(100)),
        },
        EXACT,
    )
}

fn exact_default() -> RateLimiter {
    limiter(Some(2), Some(1000))
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_at_two_per_second_start_at_0_0_1_1_2_2() {
    let limiter = exact_default();
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
    let limiter = exact_default();
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
    let limiter = exact_default();
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
        queue.spawn(async move {
            let permit = limiter.acquire(GENERAL, max_wait).await;
            permit.map(|permit| permit.start())
        });
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
    for start in queue.join_all().await {
        assert_eq!(start.unwrap() - t0, secs(2));
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
        "daily general budget exhausted, next slot in 23h 59m"
    );
    let quota = limiter.quota(GENERAL);
    assert_eq!(
        quota,
        Quota {
            server: None,
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
    let limiter = exact_default();
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
    assert_eq!(permit.class, GENERAL);
    assert_eq!(permit.waited(), Duration::ZERO);
    assert_eq!(limiter.quota(AI).remaining_today, Some(0));
}

#[tokio::test(start_paused = true)]
async fn server_exhausted_blocks_the_class_until_retry_after() {
    let limiter = exact_default();
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
    let limiter = exact_default();
    limiter.acquire(GENERAL, secs(5)).await.unwrap();
    limiter.acquire(GENERAL, secs(5)).await.unwrap();
    let waiter = tokio::spawn({
        let limiter = limiter.clone();
        async move {
            let permit = limiter.acquire(GENERAL, secs(5)).await;
            permit.map(|permit| permit.start())
        }
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
    let limiter = exact_default();
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
        "ai slot is 2s away, more than the 1s allowed"
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
    let limiter = exact_default();
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
    let limiter = exact_default();
    let run = simulate(&limiter, GENERAL, 8, 750, 2 * DAY).await;
    assert!(run.other.is_empty(), "{:?}", run.other);
    assert_eq!(run.starts.len() + run.exhausted, 6000);
    assert!(busiest_window(&run.starts, SECOND) <= 2);
    assert_eq!(busiest_window(&run.starts, DAY), 1000);
    // The limiter does not leave budget unused under excess demand.
    assert!(run.starts.len() >= 1900, "{}", run.starts.len());
}

// ---------------------------------------------------------------- default pacing

/// Arrival instants of `calls` requests by `tasks` concurrent callers of `limiter`, where
/// every `nth_delayed` request reaches the gateway `delay` after it was sent.
async fn arrivals(
    limiter: &RateLimiter,
    tasks: usize,
    calls: usize,
    nth_delayed: usize,
    delay: Duration,
) -> Vec<Instant> {
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        let (limiter, counter) = (limiter.clone(), counter.clone());
        set.spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..calls / tasks {
                let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
                let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                permit.sent();
                // The delay is on the way (a new connection, a handshake): the gateway
                // sees the request later than the SDK sent it.
                if n.is_multiple_of(nth_delayed) {
                    sleep(delay).await;
                }
                seen.push(Instant::now());
            }
            seen
        });
    }
    let mut all: Vec<Instant> = set.join_all().await.into_iter().flatten().collect();
    all.sort_unstable();
    all
}

#[tokio::test(start_paused = true)]
async fn default_pacing_spreads_starts_evenly_with_the_margin() {
    let limiter = RateLimiter::default();
    let t0 = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..6 {
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        starts.push(permit.start() - t0);
        permit.sent();
    }
    let expected: Vec<Duration> = [0, 550, 1100, 1650, 2200, 2750]
        .map(Duration::from_millis)
        .into();
    assert_eq!(starts, expected);
}

#[tokio::test(start_paused = true)]
async fn a_free_slot_is_granted_at_once_without_a_timer() {
    use futures_util::FutureExt;
    let limiter = RateLimiter::default();
    let permit = limiter
        .acquire(GENERAL, LONG)
        .now_or_never()
        .expect("granted in the first poll")
        .unwrap();
    assert_eq!(permit.waited(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_late_send_moves_its_start_and_later_callers_wait_for_it() {
    let limiter = RateLimiter::default();
    let t0 = Instant::now();
    let first = limiter.acquire(GENERAL, LONG).await.unwrap();
    let second = tokio::spawn({
        let limiter = limiter.clone();
        async move { limiter.acquire(GENERAL, LONG).await.unwrap().start() }
    });
    tokio::task::yield_now().await;
    // The first request leaves 400 ms after its slot (a slow handshake).
    sleep(Duration::from_millis(400)).await;
    first.sent();
    let second = second.await.unwrap();
    assert_eq!(second - t0, Duration::from_millis(950));
}

#[tokio::test(start_paused = true)]
async fn no_rolling_second_holds_three_arrivals_when_every_third_request_arrives_late() {
    for tasks in [1, 4] {
        let limiter = RateLimiter::default();
        let seen = arrivals(&limiter, tasks, 20, 3, Duration::from_millis(80)).await;
        assert_eq!(seen.len(), 20);
        assert!(busiest_window(&seen, SECOND) <= 2, "{tasks} tasks");
    }
    // Pairs without a margin, the old pacing, put three arrivals in a second.
    let pairs = RateLimiter::with_pacing(Limits::default(), Pacing::burst(Duration::ZERO));
    let seen = arrivals(&pairs, 1, 20, 3, Duration::from_millis(80)).await;
    assert_eq!(busiest_window(&seen, SECOND), 3);
}

#[tokio::test(start_paused = true)]
async fn ai_calls_keep_to_ten_a_minute_by_default() {
    let limiter = RateLimiter::default();
    let t0 = Instant::now();
    let mut last = Duration::ZERO;
    for _ in 0..11 {
        let permit = limiter.acquire(AI, LONG).await.unwrap();
        last = permit.start() - t0;
        permit.sent();
    }
    assert_eq!(last, Duration::from_millis(60_100));
}

/// The AI counters of an answer: `current` calls counted today.
fn ai_counted(current: u32) -> ServerCounters {
    ServerCounters {
        qps_allotted: None,
        qps_current: None,
        quota_allotted: Some(100),
        quota_current: Some(current),
    }
}

#[tokio::test(start_paused = true)]
async fn the_days_count_in_a_new_processs_first_answer_is_counted_in_the_day_not_the_minute() {
    let limiter = RateLimiter::with_pacing(Limits::default(), EXACT);
    let t0 = Instant::now();
    limiter.acquire(AI, LONG).await.unwrap().sent();
    // The gateway counted 24 AI calls today: this process's one and 23 of others.
    limiter.observe(AI, ai_counted(24));
    assert_eq!(limiter.quota(AI).used_today, Some(24));
    // The next nine of the minute go at once: the day's count was made some time today.
    for _ in 0..9 {
        let permit = limiter.acquire(AI, LONG).await.unwrap();
        assert_eq!(permit.start(), t0);
        permit.sent();
    }
    assert_eq!(limiter.quota(AI).remaining_today, Some(67));
}

#[tokio::test(start_paused = true)]
async fn calls_others_made_between_two_answers_are_counted_between_them_in_every_window() {
    let limiter = RateLimiter::with_pacing(Limits::default(), EXACT);
    let t0 = Instant::now();
    limiter.acquire(AI, LONG).await.unwrap().sent();
    limiter.observe(AI, ai_counted(1));
    sleep(secs(30)).await;
    limiter.acquire(AI, LONG).await.unwrap().sent();
    // 10 counted now: this process's second call and 8 of another process, made
    // between the two answers (placed at 15 s).
    limiter.observe(AI, ai_counted(10));
    let mut starts = Vec::new();
    for _ in 0..2 {
        let permit = limiter.acquire(AI, LONG).await.unwrap();
        starts.push(permit.start() - t0);
        permit.sent();
    }
    // The tenth latest of the minute is the first call (0 s), then the others (15 s);
    // counted as made at 30 s, the second would wait until 90 s.
    assert_eq!(starts, [secs(60), secs(75)]);
}

#[tokio::test(start_paused = true)]
async fn the_daily_window_follows_the_server_count_when_it_is_higher() {
    let limiter = RateLimiter::default();
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    let counters = ServerCounters {
        qps_allotted: Some(2),
        qps_current: Some(1),
        quota_allotted: Some(1000),
        quota_current: Some(990),
    };
    limiter.observe(GENERAL, counters);
    let quota = limiter.quota(GENERAL);
    assert_eq!(quota.used_today, Some(990));
    assert_eq!(quota.remaining_today, Some(10));
    assert_eq!(quota.server, Some(counters));
    // A lower server count changes nothing.
    limiter.observe(
        GENERAL,
        ServerCounters {
            quota_current: Some(5),
            ..counters
        },
    );
    assert_eq!(limiter.quota(GENERAL).used_today, Some(990));
}

#[test]
fn server_counters_are_read_from_the_gateway_headers() {
    let mut headers = http::HeaderMap::new();
    assert_eq!(ServerCounters::from_headers(&headers), None);
    headers.insert("x-accesstoken-quota-current", "17".parse().unwrap());
    headers.insert("x-accesstoken-quota-allotted", " 1000 ".parse().unwrap());
    headers.insert("x-accesstoken-qps-current", "many".parse().unwrap());
    let counters = ServerCounters::from_headers(&headers).unwrap();
    assert_eq!(counters.quota_current, Some(17));
    assert_eq!(counters.quota_allotted, Some(1000));
    assert_eq!(counters.qps_current, None);
}

fn domain() -> BudgetDomain {
    BudgetDomain::of(&"https://acme.example.com/pubapi".parse().unwrap())
}

#[test]
fn one_token_has_one_limiter_in_the_process() {
    let token = crate::SecretToken::try_from("shared-token").unwrap();
    let here = token.fingerprint();
    let a = RateLimiter::for_token(here, &domain(), Limits::default(), Pacing::default(), None)
        .unwrap();
    let b = RateLimiter::for_token(here, &domain(), Limits::default(), Pacing::default(), None)
        .unwrap();
    assert!(a.same_as(&b));
    let other = crate::SecretToken::try_from("rotated-token").unwrap();
    let c = RateLimiter::for_token(
        other.fingerprint(),
        &domain(),
        Limits::default(),
        Pacing::default(),
        None,
    )
    .unwrap();
    assert!(!a.same_as(&c));
    assert!(!format!("{here:?}").contains("shared-token"));
}

#[test]
fn a_client_whose_settings_differ_from_its_tokens_pacer_is_refused_naming_the_difference() {
    #[derive(Debug)]
    struct NoStore;
    impl crate::fleet::FleetBudget for NoStore {
        fn reserve<'a>(
            &'a self,
            _: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            Box::pin(async { Err(FleetError::new("none")) })
        }
    }
    let token = crate::SecretToken::try_from("configured-token").unwrap();
    let here = token.fingerprint();
    let _first =
        RateLimiter::for_token(here, &domain(), Limits::default(), Pacing::default(), None)
            .unwrap();
    let one_ai_call = Limits {
        ai: Budget::new(None, Some(1)),
        ..Limits::default()
    };
    let fleet = Fleet::new(Arc::new(NoStore));
    let cases: [(&str, Limits, Pacing, Option<Fleet>); 3] = [
        ("limits", one_ai_call, Pacing::default(), None),
        (
            "pacing",
            Limits::default(),
            Pacing::burst(Duration::ZERO),
            None,
        ),
        ("fleet", Limits::default(), Pacing::default(), Some(fleet)),
    ];
    for (setting, limits, pacing, fleet) in cases {
        let conflict = RateLimiter::for_token(here, &domain(), limits, pacing, fleet).unwrap_err();
        assert_eq!(conflict.setting, setting);
        assert_ne!(conflict.existing, conflict.requested);
        let message = conflict.to_string();
        assert!(message.contains(setting), "{message}");
        assert!(message.contains("isolated_budget"), "{message}");
        assert!(!message.contains("configured-token"), "{message}");
        // In words: no Rust Debug text (`Budget {`, `Some(`, a store's struct).
        for debug in ["{", "Some(", "None", "::"] {
            assert!(!message.contains(debug), "{setting}: {message}");
        }
    }
}

/// A process's limiter in a fleet whose store is `store`, pacing on a quarter of the budget
/// while the store cannot be reached (what most of these tests check).
fn in_fleet_of(
    limits: Limits,
    pacing: Pacing,
    store: Arc<dyn crate::fleet::FleetBudget>,
) -> RateLimiter {
    in_fleet_with(limits, pacing, Fleet::new(store).fallback_share(4))
}

/// A process's limiter in `fleet`.
fn in_fleet_with(limits: Limits, pacing: Pacing, fleet: Fleet) -> RateLimiter {
    let token = crate::SecretToken::try_from("fleet-token")
        .unwrap()
        .fingerprint();
    RateLimiter::in_fleet(limits, pacing, fleet, token)
}

/// The answer of a store that has always held what it was given (generation `g1`).
fn in_generation_one(reservation: Reservation) -> Result<Answer, FleetError> {
    Ok(Answer {
        reservation,
        generation: "g1".into(),
        lost_history: false,
    })
}

/// A store that grants every booking at once, and records what it was asked.
#[derive(Debug, Default)]
struct EagerStore {
    asked: Mutex<Vec<(Duration, bool, usize)>>,
}

impl crate::fleet::FleetBudget for EagerStore {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        self.asked.lock().unwrap().push((
            request.not_before,
            request.book,
            request.history.map_or(usize::MAX, <[_]>::len),
        ));
        let wait = request.not_before;
        Box::pin(async move { in_generation_one(Reservation::Granted { wait }) })
    }
}

/// The ids a store was given back.
#[derive(Debug, Default)]
struct GivenBack(Mutex<Vec<u64>>);

impl GivenBack {
    fn record(&self, id: u64) -> pubapi_sdk::hooks::BoxFuture<'_, Result<(), FleetError>> {
        self.0.lock().unwrap().push(id);
        Box::pin(async { Ok(()) })
    }

    /// The ids given back, once the tasks that give them back have run.
    async fn ids(&self) -> Vec<u64> {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        self.0.lock().unwrap().clone()
    }
}

/// A runtime of its own, as each blocking client has, on paused time.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}
