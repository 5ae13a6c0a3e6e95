//! Unit tests of [`super`], kept apart so the module holds the code alone.

use super::*;
use crate::rng::SplitMix64;
use tokio::task::JoinSet;
use tokio::time::{sleep, sleep_until, timeout};

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

#[test]
fn one_token_has_one_limiter_in_the_process() {
    let token = crate::SecretToken::try_from("shared-token").unwrap();
    let here = token.fingerprint();
    let a = RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
    let b = RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
    assert!(a.same_as(&b));
    let other = crate::SecretToken::try_from("rotated-token").unwrap();
    let c = RateLimiter::for_token(
        other.fingerprint(),
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
    let _first = RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
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
        let conflict = RateLimiter::for_token(here, limits, pacing, fleet).unwrap_err();
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

/// A process's limiter in a fleet whose store is `store`.
fn in_fleet_of(
    limits: Limits,
    pacing: Pacing,
    store: Arc<dyn crate::fleet::FleetBudget>,
) -> RateLimiter {
    let token = crate::SecretToken::try_from("fleet-token")
        .unwrap()
        .fingerprint();
    RateLimiter::in_fleet(limits, pacing, Fleet::new(store), token)
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

#[tokio::test(start_paused = true)]
async fn a_grant_from_the_store_never_starts_two_calls_of_a_process_closer_than_its_spacing() {
    let store = Arc::new(EagerStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let t0 = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..4 {
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        starts.push(permit.start() - t0);
        permit.sent();
    }
    // (1 s + 100 ms) / 2 apart, though the store would have let every call go at once.
    let expected: Vec<Duration> = [0, 550, 1100, 1650].map(Duration::from_millis).into();
    assert_eq!(starts, expected);
    let asked = store.asked.lock().unwrap();
    // The first booking carries the (empty) history of a process new to the store.
    assert_eq!(asked[0], (Duration::ZERO, true, 0));
    assert_eq!(asked[1], (Duration::from_millis(550), true, usize::MAX));
}

#[tokio::test(start_paused = true)]
async fn what_the_servers_counters_claim_costs_a_count_not_a_start_per_call() {
    let limits = Limits {
        general: Budget::new(Some(2), Some(u32::MAX)),
        ..Limits::default()
    };
    let limiter = RateLimiter::with_pacing(limits, EXACT);
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    let started = std::time::Instant::now();
    limiter.observe(
        GENERAL,
        ServerCounters {
            qps_allotted: None,
            qps_current: None,
            quota_allotted: None,
            quota_current: Some(u32::MAX),
        },
    );
    // A list of four billion starts would take minutes and gigabytes.
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(limiter.log_len(GENERAL), 1);
    assert_eq!(limiter.quota(GENERAL).used_today, Some(u32::MAX));
    // Counted in the windows: none left today.
    assert!(matches!(
        limiter.acquire(GENERAL, secs(60)).await,
        Err(LimitError::DailyBudgetExhausted { .. })
    ));
    // And gone after a day.
    sleep(DAY + secs(1)).await;
    assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
    limiter.acquire(GENERAL, LONG).await.unwrap();
}

proptest::proptest! {
    #[test]
    fn the_kth_latest_start_counts_the_unseen_ones_in_their_place(
        listed in proptest::collection::vec(0u64..10_000, 0..40),
        groups in proptest::collection::vec((0u64..10_000, 0u32..50, proptest::bool::ANY), 0..6),
        k in 1usize..100,
    ) {
        let t0 = Instant::now();
        let mut log = ClassLog::default();
        let mut listed = listed;
        listed.sort_unstable();
        for (id, ms) in listed.iter().enumerate() {
            log.insert_at(t0 + Duration::from_millis(*ms), id as u64);
        }
        let at = |ms: &u64| t0 + Duration::from_millis(*ms);
        let mut day: Vec<Instant> = listed.iter().map(at).collect();
        let mut short = day.clone();
        for (ms, n, day_only) in &groups {
            let reach = if *day_only { Reach::DayOnly } else { Reach::Every };
            log.unseen.add(at(ms), *n, reach);
            day.extend((0..*n).map(|_| at(ms)));
            if !day_only {
                short.extend((0..*n).map(|_| at(ms)));
            }
        }
        for (all, is_day) in [(&mut day, true), (&mut short, false)] {
            all.sort_unstable();
            let expected = (all.len() >= k).then(|| all[all.len() - k]);
            proptest::prop_assert_eq!(log.kth_latest(k, is_day), expected);
        }
        proptest::prop_assert_eq!(log.count(), day.len());
    }
}

/// A store that answers nothing for a second, then fails (a paused server).
#[derive(Debug, Default)]
struct PausedStore {
    given_back: GivenBack,
}

impl crate::fleet::FleetBudget for PausedStore {
    fn give_back<'a>(
        &'a self,
        _: &'a TokenFingerprint,
        _: LimitClass,
        id: u64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
        self.given_back.record(id)
    }

    fn reserve<'a>(
        &'a self,
        _: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        Box::pin(async {
            sleep(secs(1)).await;
            Err(FleetError::new("response timed out"))
        })
    }
}

#[tokio::test(start_paused = true)]
async fn calls_queued_behind_a_store_that_times_out_do_not_each_wait_for_its_timeout() {
    let store = Arc::new(PausedStore::default());
    let limiter = in_fleet_of(
        Limits {
            general: Budget::new(Some(20), None),
            ..Limits::default()
        },
        Pacing::even(Duration::ZERO),
        store.clone(),
    );
    let t0 = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..5 {
        let limiter = limiter.clone();
        set.spawn(async move {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            permit.sent();
            Instant::now() - t0
        });
    }
    let mut starts = set.join_all().await;
    starts.sort();
    // One timeout (1 s), then a quarter of 20 per second: 200 ms apart.
    let expected: Vec<Duration> = [1000, 1200, 1400, 1600, 1800]
        .map(Duration::from_millis)
        .into();
    assert_eq!(starts, expected);
    // The store may have booked the one booking whose answer never came: it is given
    // back once the store answers, never sent to a store that does not.
    sleep(secs(5)).await;
    assert!(store.given_back.ids().await.is_empty());
}

/// A store whose first answer comes back after the start it booked, then answers in
/// time; it records how far ahead each booking asked to start.
#[derive(Debug, Default)]
struct LateOnceStore {
    asked: Mutex<Vec<Duration>>,
    given_back: GivenBack,
}

impl crate::fleet::FleetBudget for LateOnceStore {
    fn give_back<'a>(
        &'a self,
        _: &'a TokenFingerprint,
        _: LimitClass,
        id: u64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
        self.given_back.record(id)
    }

    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let first = {
            let mut asked = self.asked.lock().unwrap();
            asked.push(request.not_before);
            asked.len() == 1
        };
        Box::pin(async move {
            sleep(Duration::from_millis(300)).await;
            let reservation = if first {
                Reservation::Missed {
                    late_by: Duration::from_millis(300),
                }
            } else {
                Reservation::Granted {
                    wait: request
                        .not_before
                        .saturating_sub(Duration::from_millis(300)),
                }
            };
            in_generation_one(reservation)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_comes_after_its_start_is_not_used_and_the_next_asks_further_ahead() {
    let store = Arc::new(LateOnceStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let t0 = Instant::now();
    let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
    // Asked again at 300 ms for a start at least 600 ms ahead (twice the late answer's
    // time), granted in time: it starts at 900 ms.
    assert_eq!(
        *store.asked.lock().unwrap(),
        [Duration::ZERO, Duration::from_millis(600)]
    );
    assert_eq!(permit.start() - t0, Duration::from_millis(900));
    // The start booked in the past, where nobody started, went back to the store.
    assert_eq!(store.given_back.ids().await, [0]);
}

/// A store that grants every booking 200 ms ahead; the first time, the process stalls
/// (the clock jumps 500 ms while it sleeps) and wakes 300 ms past its start.
#[derive(Debug, Default)]
struct StallOnceStore {
    asked: Mutex<u32>,
    given_back: GivenBack,
}

impl crate::fleet::FleetBudget for StallOnceStore {
    fn give_back<'a>(
        &'a self,
        _: &'a TokenFingerprint,
        _: LimitClass,
        id: u64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
        self.given_back.record(id)
    }

    fn reserve<'a>(
        &'a self,
        _: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let mut asked = self.asked.lock().unwrap();
        *asked += 1;
        if *asked == 1 {
            tokio::spawn(async {
                sleep(Duration::from_millis(10)).await;
                tokio::time::advance(Duration::from_millis(500)).await;
            });
        }
        Box::pin(async {
            in_generation_one(Reservation::Granted {
                wait: Duration::from_millis(200),
            })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_process_that_wakes_past_its_fleet_start_by_more_than_the_margin_books_again() {
    let store = Arc::new(StallOnceStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let t0 = Instant::now();
    let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
    // Woken at 510 ms for a start at 200 ms: that start went back, and the second
    // booking (200 ms after 510 ms) is the one used.
    assert_eq!(*store.asked.lock().unwrap(), 2);
    assert_eq!(permit.start() - t0, Duration::from_millis(710));
    assert_eq!(store.given_back.ids().await, [0]);
}

/// A store that answers every booking after 600 ms, granting it at once.
#[derive(Debug, Default)]
struct SlowStore {
    asked: Mutex<u32>,
}

impl crate::fleet::FleetBudget for SlowStore {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        if request.book {
            *self.asked.lock().unwrap() += 1;
        }
        Box::pin(async {
            sleep(Duration::from_millis(600)).await;
            in_generation_one(Reservation::Granted {
                wait: Duration::ZERO,
            })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_slower_than_half_a_second_three_times_in_a_row_is_left_for_the_share() {
    let store = Arc::new(SlowStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let mut starts = Vec::new();
    let t0 = Instant::now();
    for _ in 0..4 {
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        starts.push(permit.start() - t0);
        permit.sent();
    }
    // The fourth is not asked of the store: paced on a quarter of the budget, one start
    // every 2.2 s after the third.
    assert_eq!(*store.asked.lock().unwrap(), 3);
    assert_eq!(starts[3] - starts[2], Duration::from_millis(2200));
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

#[test]
fn a_watch_whose_runtime_was_dropped_starts_again_on_the_next_runtime() {
    // Two blocking clients of one token share its limiter, each with its own runtime:
    // the first client, and the watch spawned on its runtime, go away.
    let store = Arc::new(EagerStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    paused_runtime().block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
    paused_runtime().block_on(async {
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        sleep(secs(3)).await;
    });
    let asked = store.asked.lock().unwrap();
    // (not_before, book, history): a question books nothing and carries no history.
    let questions = asked.iter().filter(|a| !a.1 && a.2 == usize::MAX).count();
    assert_eq!(questions, 1, "{asked:?}");
}

/// A store that is down or up as `down` says, and records the ids of every history it
/// takes in.
#[derive(Debug, Default)]
struct SwitchedStore {
    down: std::sync::atomic::AtomicBool,
    histories: Mutex<Vec<Vec<u64>>>,
}

impl crate::fleet::FleetBudget for SwitchedStore {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async { Err(FleetError::new("connection refused")) });
        }
        if let Some(history) = request.history {
            let ids = history.iter().map(|start| start.id).collect();
            self.histories.lock().unwrap().push(ids);
        }
        let wait = request.not_before;
        Box::pin(async move { in_generation_one(Reservation::Granted { wait }) })
    }
}

#[test]
fn a_history_task_whose_runtime_was_dropped_is_started_again_by_the_watch() {
    // Two blocking clients of one token share its limiter, each with its own runtime.
    // The watch runs on the second's; the store fails a call of the first, whose runtime
    // (with the task that would give the store the history) then goes away.
    let store = Arc::new(SwitchedStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let second = paused_runtime();
    second.block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
    store.down.store(true, std::sync::atomic::Ordering::SeqCst);
    paused_runtime().block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
    store.down.store(false, std::sync::atomic::Ordering::SeqCst);
    // The second client's process makes no call: only its tasks can reach the store.
    second.block_on(async { sleep(secs(10)).await });
    let histories = store.histories.lock().unwrap().clone();
    // Both starts: the one the store granted and the one booked on the share.
    assert!(
        histories.iter().any(|ids| ids.len() == 2),
        "the start booked on the share never reached the store: {histories:?}"
    );
}

/// A store that grants every booking and answers every question of the watch that it
/// needs the history, without saying it lost anything (a store of a user's own); records
/// whether each request was a booking and how many starts of history it carried.
#[derive(Debug, Default)]
struct HistoryWantingStore {
    asked: Mutex<Vec<(bool, Option<usize>)>>,
}

impl crate::fleet::FleetBudget for HistoryWantingStore {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let history = request.history.map(<[_]>::len);
        self.asked.lock().unwrap().push((request.book, history));
        let reservation = if !request.book && history.is_none() {
            Reservation::HistoryNeeded
        } else {
            Reservation::Granted {
                wait: request.not_before,
            }
        };
        Box::pin(async move { in_generation_one(reservation) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_answered_history_needed_is_followed_by_the_history() {
    let store = Arc::new(HistoryWantingStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    sleep(secs(3)).await;
    let asked = store.asked.lock().unwrap().clone();
    // The booking (with the empty history of a process new to the store), the watch's
    // question, then the history: the one start, in a request that books nothing.
    assert_eq!(
        asked[..3],
        [(true, Some(0)), (false, None), (false, Some(1))],
        "{asked:?}"
    );
}

/// A store that takes 500 ms to take in a history and records the ids each one carried;
/// it fails bookings (down for them) and answers the watch's questions.
#[derive(Debug, Default)]
struct SlowHistoryStore {
    histories: Mutex<Vec<Vec<u64>>>,
}

impl crate::fleet::FleetBudget for SlowHistoryStore {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        if request.book {
            return Box::pin(async { Err(FleetError::new("down for bookings")) });
        }
        // The watch's question: nothing lost.
        let Some(history) = request.history else {
            return Box::pin(async {
                in_generation_one(Reservation::Granted {
                    wait: Duration::ZERO,
                })
            });
        };
        let ids = history.iter().map(|start| start.id).collect();
        Box::pin(async move {
            sleep(Duration::from_millis(500)).await;
            self.histories.lock().unwrap().push(ids);
            in_generation_one(Reservation::Granted {
                wait: Duration::ZERO,
            })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_start_made_on_the_share_while_the_history_was_out_is_given_on_the_next_pass() {
    let store = Arc::new(SlowHistoryStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    let link = limiter.inner.fleet.as_ref().unwrap();
    // Down at 0 (the task that gives the history asks at 2 s) and again at 1 s (resting
    // until 3 s): what is booked from 2 s to 2.5 s is booked on the share, unseen by the
    // history out at that time.
    let error = FleetError::new("timed out");
    limiter.store_failed(link, &error);
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    sleep(secs(1)).await;
    limiter.store_failed(link, &error);
    sleep(Duration::from_millis(1200)).await;
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    sleep(secs(5)).await;
    let histories = store.histories.lock().unwrap().clone();
    assert_eq!(histories.first(), Some(&vec![0]), "{histories:?}");
    assert!(
        histories.iter().any(|ids| ids.contains(&1)),
        "the start made while the history was out never reached the store: {histories:?}"
    );
}

/// Counts a call in `calls`: whether it is the first.
fn first_time(calls: &Mutex<u32>) -> bool {
    let mut calls = calls.lock().unwrap();
    *calls += 1;
    *calls == 1
}

/// A store whose first booking's answer is lost, and which answers from then on; it
/// records what is given back.
#[derive(Debug, Default)]
struct LostOnceStore {
    asked: Mutex<u32>,
    given_back: GivenBack,
}

impl crate::fleet::FleetBudget for LostOnceStore {
    fn give_back<'a>(
        &'a self,
        _: &'a TokenFingerprint,
        _: LimitClass,
        id: u64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
        self.given_back.record(id)
    }

    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let first = first_time(&self.asked);
        let wait = request.not_before;
        Box::pin(async move {
            if first {
                return Err(FleetError::new("the answer was lost"));
            }
            in_generation_one(Reservation::Granted { wait })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_booking_whose_answer_was_lost_is_given_back_once_the_store_answers() {
    let store = Arc::new(LostOnceStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    // Booked on the share: the store's answer was lost.
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    assert!(store.given_back.ids().await.is_empty());
    // The task that gives the store the history asks 2 s later, and gives it back the
    // start it may hold.
    sleep(secs(3)).await;
    assert_eq!(store.given_back.ids().await, [0]);
}

/// A store whose first booking's answer is lost and whose first give-back fails; it
/// takes in every history (recording the ids) and fails every later booking.
#[derive(Debug, Default)]
struct GiveBackFailsOnceStore {
    histories: Mutex<Vec<Vec<u64>>>,
    give_backs: Mutex<u32>,
    given_back: GivenBack,
}

impl crate::fleet::FleetBudget for GiveBackFailsOnceStore {
    fn give_back<'a>(
        &'a self,
        _: &'a TokenFingerprint,
        _: LimitClass,
        id: u64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
        let first = first_time(&self.give_backs);
        if first {
            return Box::pin(async { Err(FleetError::new("timed out")) });
        }
        self.given_back.record(id)
    }

    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let Some(history) = request.history.filter(|_| !request.book) else {
            return Box::pin(async { Err(FleetError::new("the answer was lost")) });
        };
        let ids = history.iter().map(|start| start.id).collect();
        self.histories.lock().unwrap().push(ids);
        Box::pin(async {
            in_generation_one(Reservation::Granted {
                wait: Duration::ZERO,
            })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_start_booked_on_the_share_after_a_failed_give_back_reaches_the_store() {
    let store = Arc::new(GiveBackFailsOnceStore::default());
    let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
    // Id 0's answer is lost (to be given back); 1 is booked on the share.
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    // At 2 s the history (1) goes in and the give-back of 0 fails: down again, so 2 is
    // booked on the share, after the history that cleared the class.
    sleep(Duration::from_millis(2100)).await;
    limiter.acquire(GENERAL, LONG).await.unwrap().sent();
    sleep(secs(5)).await;
    let histories = store.histories.lock().unwrap().clone();
    assert!(
        histories.iter().any(|ids| ids.contains(&2)),
        "the start booked after the failed give-back never reached the store: {histories:?}"
    );
    assert_eq!(store.given_back.ids().await, [0]);
}
