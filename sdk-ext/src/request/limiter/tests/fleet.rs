//! The limiter's booking through a fleet's store ([`super::super::fleet`]): the process's own
//! spacing under the store's grants, calls queued behind a store that times out, answers that
//! come too late, processes that wake too late, and a store too slow to wait for.

use super::*;

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
    gives_back_to_its_record!();

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
    gives_back_to_its_record!();

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
    gives_back_to_its_record!();

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

/// Without a fallback share (the default), a store that cannot be reached sends nothing: a
/// call waits for the store, trying it again 2 s after each failure, and is refused with
/// `StoreUnavailable` when its wait runs out before the store answers.
#[tokio::test(start_paused = true)]
async fn without_a_share_a_call_waits_for_the_store_and_is_refused_when_it_never_answers() {
    let store = Arc::new(PausedStore::default());
    let limiter = in_fleet_with(
        Limits::default(),
        Pacing::default(),
        crate::fleet::Fleet::new(store.clone()),
    );
    let t0 = Instant::now();
    let refused = limiter.acquire(GENERAL, secs(10)).await.map(drop);
    let took = Instant::now() - t0;
    match refused {
        Err(LimitError::StoreUnavailable {
            class,
            waited,
            error,
        }) => {
            assert_eq!(class, GENERAL);
            assert_eq!(waited, took);
            assert_eq!(error.message, "response timed out");
        }
        other => panic!("{other:?}"),
    }
    // Each try is a 1 s timeout followed by 2 s of rest (the task that gives the store the
    // history tries it too, and moves the rest): refused once the next try would be past the
    // 10 s allowed, not before the third.
    assert!(took > secs(6) && took <= secs(10), "{took:?}");
}

/// A store that fails, then answers: the waiting call goes on with the store's start.
#[derive(Debug, Default)]
struct DownThenUp {
    asked: std::sync::atomic::AtomicU32,
}

impl crate::fleet::FleetBudget for DownThenUp {
    fn reserve<'a>(
        &'a self,
        _: Reserve<'a>,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
        let asked = self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if asked < 2 {
                Err(FleetError::new("connection refused"))
            } else {
                in_generation_one(Reservation::Granted {
                    wait: Duration::ZERO,
                })
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_share_a_call_waiting_for_the_store_goes_on_once_it_answers() {
    let store = Arc::new(DownThenUp::default());
    let limiter = in_fleet_with(
        Limits::default(),
        Pacing::default(),
        crate::fleet::Fleet::new(store.clone()),
    );
    let t0 = Instant::now();
    let permit = limiter.acquire(GENERAL, secs(60)).await.unwrap();
    permit.sent();
    // Refused at once twice (the call, or the task that gives the store the history), each
    // failure followed by 2 s of rest: the store's start after the second rest at most.
    let took = Instant::now() - t0;
    assert!(took >= secs(2) && took <= secs(4), "{took:?}");
    assert!(store.asked.load(std::sync::atomic::Ordering::SeqCst) >= 3);
}
