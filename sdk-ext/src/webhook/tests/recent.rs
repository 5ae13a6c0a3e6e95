//! The receiver's second line behind a shared store that loses what it held: the recent set
//! of this process, its bounds, and what it writes back. (The same with a real Redis restarted
//! empty or flushed: `tests/webhook_redis.rs`.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pubapi_sdk::hooks::BoxFuture;

use crate::webhook::{
    Batch, Claim, ClaimFuture, Claimant, DEFAULT_RECENT_CAPACITY, DEFAULT_RECENT_WINDOW,
    DedupError, DedupKey, DedupStore, HandleOutcome, HandlerError, MemoryDedup, Receiver,
    ReceiverBuildError, WebhookSecret, testing,
};

const SECRET: &str = "recent-set-secret-9a8b7c6d5e4f3021";
const NAME: &str = "orders";
/// The domain of `testing::DeliveryBuilder`'s envelopes.
const DOMAIN: &str = "example";
const HOUR: Duration = Duration::from_secs(3600);
const MINUTE: Duration = Duration::from_secs(60);

/// A shared store that can lose everything it holds, as Redis restarted without its data.
#[derive(Debug)]
struct Forgetful {
    window: Duration,
    memory: Mutex<Arc<MemoryDedup>>,
}

impl Forgetful {
    fn new(window: Duration) -> Arc<Self> {
        Arc::new(Forgetful {
            window,
            memory: Mutex::new(Arc::new(MemoryDedup::new(window, 1_000))),
        })
    }

    fn lose_everything(&self) {
        *self.memory.lock().unwrap() = Arc::new(MemoryDedup::new(self.window, 1_000));
    }

    fn current(&self) -> Arc<MemoryDedup> {
        Arc::clone(&self.memory.lock().unwrap())
    }
}

impl DedupStore for Forgetful {
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        let memory = self.current();
        Box::pin(async move { memory.claim(claimant, keys).await })
    }

    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        let memory = self.current();
        Box::pin(async move { memory.commit(claimant, keys).await })
    }

    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        self.current().release(claimant, keys)
    }

    fn window(&self) -> Duration {
        self.window
    }
}

fn builder() -> crate::webhook::ReceiverBuilder {
    Receiver::builder().secret(WebhookSecret::new(SECRET).unwrap())
}

/// One replica on `store`, with the default recent set.
fn replica(store: &Arc<Forgetful>) -> Receiver {
    builder()
        .dedup_store(NAME, Arc::clone(store))
        .build()
        .unwrap()
}

/// Counts the events and dead letters handed over.
#[derive(Default)]
struct Counter(AtomicUsize);

impl crate::webhook::DeliveryHandler for Counter {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        self.0.fetch_add(
            batch.events.len() + batch.dead_letters.len(),
            Ordering::SeqCst,
        );
        Ok(())
    }
}

impl Counter {
    fn handed_over(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// (status, accepted, dead letters, duplicates, forgotten by the store)
type Counts = (u16, usize, usize, usize, usize);

fn counts(outcome: HandleOutcome) -> Counts {
    (
        outcome.status,
        outcome.accepted,
        outcome.dead_letters,
        outcome.duplicates,
        outcome.forgotten_by_store,
    )
}

#[tokio::test(start_paused = true)]
async fn delivery_repeated_after_the_store_lost_its_set_reaches_the_handler_once() {
    let table: [(&str, Vec<u8>, Counts); 2] = [
        (
            "an event",
            testing::one_event(SECRET, "e-1").1,
            (200, 1, 0, 0, 0),
        ),
        ("dead letters", b"not json".to_vec(), (200, 0, 1, 0, 0)),
    ];
    let headers = testing::authorized_headers(SECRET);
    for (what, body, first) in table {
        let store = Forgetful::new(HOUR);
        let receiver = replica(&store);
        let counter = Counter::default();
        let handled = receiver.handle(&headers, &body, &counter).await;
        assert_eq!(counts(handled), first, "{what}");

        store.lose_everything();
        tokio::time::advance(11 * MINUTE).await;
        let repeated = receiver.handle(&headers, &body, &counter).await;
        assert_eq!(counts(repeated), (200, 0, 0, 1, 1), "{what}");
        assert_eq!(counter.handed_over(), 1, "{what}");
    }
}

#[tokio::test(start_paused = true)]
async fn event_the_store_lost_is_recorded_in_it_again_for_the_other_replicas() {
    let store = Forgetful::new(HOUR);
    let first = replica(&store);
    let counter = Counter::default();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(first.handle(&headers, &body, &counter).await.status, 200);
    store.lose_everything();
    assert_eq!(
        first
            .handle(&headers, &body, &counter)
            .await
            .forgotten_by_store,
        1
    );

    // A replica that never handed e-1 over learns it from the store again.
    let second = replica(&store);
    let elsewhere = second.handle(&headers, &body, &counter).await;
    assert_eq!(counts(elsewhere), (200, 0, 0, 1, 0));
    assert_eq!(counter.handed_over(), 1);
}

#[tokio::test(start_paused = true)]
async fn event_the_store_lost_and_another_replica_claimed_is_a_duplicate_here_not_503() {
    let store = Forgetful::new(HOUR);
    let receiver = replica(&store);
    let counter = Counter::default();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(receiver.handle(&headers, &body, &counter).await.status, 200);
    store.lose_everything();
    // Another replica, which never saw e-1, took it after the loss and is handling it.
    let elsewhere = store
        .claim(
            &Claimant::new(NAME),
            &[DedupKey::event(NAME, DOMAIN, "e-1")],
        )
        .await
        .unwrap();
    assert_eq!(elsewhere, [Claim::Fresh]);

    let repeated = receiver.handle(&headers, &body, &counter).await;
    assert_eq!(counts(repeated), (200, 0, 0, 1, 1));
    assert_eq!(repeated.in_flight, 0);
    assert_eq!(counter.handed_over(), 1);
}

#[tokio::test(start_paused = true)]
async fn recent_set_forgets_past_its_count_and_its_window() {
    struct Row {
        what: &'static str,
        recent: (usize, Duration),
        handled_before: &'static [&'static str],
        later: Duration,
        /// Handed over again after the store lost its set: the recent set had forgotten it.
        handled_again: bool,
    }
    let table = [
        Row {
            what: "within both bounds",
            recent: (2, 10 * MINUTE),
            handled_before: &["e-1", "e-2"],
            later: 10 * MINUTE - Duration::from_millis(1),
            handled_again: false,
        },
        Row {
            what: "past the count",
            recent: (2, 10 * MINUTE),
            handled_before: &["e-1", "e-2", "e-3"],
            later: Duration::ZERO,
            handled_again: true,
        },
        Row {
            what: "past the window",
            recent: (2, 10 * MINUTE),
            handled_before: &["e-1"],
            later: 10 * MINUTE,
            handled_again: true,
        },
        Row {
            what: "past the store's window (1 hour), shorter than the one asked",
            recent: (2, 2 * HOUR),
            handled_before: &["e-1"],
            later: HOUR,
            handled_again: true,
        },
        Row {
            what: "turned off",
            recent: (0, 10 * MINUTE),
            handled_before: &["e-1"],
            later: Duration::ZERO,
            handled_again: true,
        },
    ];
    for row in table {
        let store = Forgetful::new(HOUR);
        let receiver = builder()
            .dedup_store(NAME, Arc::clone(&store))
            .recent_deliveries(row.recent.0, row.recent.1)
            .build()
            .unwrap();
        let counter = Counter::default();
        for id in row.handled_before {
            let (headers, body) = testing::one_event(SECRET, id);
            let handled = receiver.handle(&headers, &body, &counter).await;
            assert_eq!(handled.accepted, 1, "{}", row.what);
        }
        store.lose_everything();
        tokio::time::advance(row.later).await;

        let (headers, body) = testing::one_event(SECRET, "e-1");
        let repeated = receiver.handle(&headers, &body, &counter).await;
        assert_eq!(
            (repeated.accepted, repeated.forgotten_by_store),
            if row.handled_again { (1, 0) } else { (0, 1) },
            "{}",
            row.what
        );
        assert_eq!(repeated.status, 200, "{}", row.what);
    }
}

#[test]
fn recent_deliveries_need_a_store_default_to_the_retry_horizon_and_never_outlast_the_store() {
    assert_eq!(
        builder().recent_deliveries(10, MINUTE).build().unwrap_err(),
        ReceiverBuildError::RecentDeliveriesWithoutStore
    );
    // The in-process store is this process's memory already.
    assert_eq!(builder().build().unwrap().recent_deliveries(), None);

    let store = Forgetful::new(3 * HOUR);
    let defaults = replica(&store);
    assert_eq!(
        defaults.recent_deliveries(),
        Some((DEFAULT_RECENT_CAPACITY, DEFAULT_RECENT_WINDOW))
    );
    // Beyond the last retry, 71 minutes after the first attempt.
    assert!(DEFAULT_RECENT_WINDOW > 71 * MINUTE);

    let short = builder()
        .dedup_store(NAME, Forgetful::new(HOUR))
        .build()
        .unwrap();
    assert_eq!(
        short.recent_deliveries(),
        Some((DEFAULT_RECENT_CAPACITY, HOUR))
    );
    let off = builder()
        .dedup_store(NAME, Arc::clone(&store))
        .recent_deliveries(10, Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!(off.recent_deliveries(), None);
}
