//! The limiter's knowledge of its fleet's store ([`super::super::health`]): watches and
//! history tasks whose runtime went away, a store that lost what it was given, starts given
//! back once the store answers again.

use super::*;

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
    gives_back_to_its_record!();

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
