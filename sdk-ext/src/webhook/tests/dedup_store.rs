//! The receiver through the `DedupStore` seam: what it answers when a store fails, and what a
//! shared store is asked.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pubapi_sdk::hooks::BoxFuture;

use crate::webhook::{
    Batch, ClaimFuture, Claimant, DedupError, DedupKey, DedupStore, EventType, HandlerError,
    MemoryDedup, Receiver, ReceiverBuildError, WebhookSecret, testing,
};

const SECRET: &str = "dedup-store-secret-5e4d3c2b1a09f8e7";

/// A store that fails on request and records what it was asked.
#[derive(Debug, Default)]
struct Flaky {
    inner: Option<Arc<MemoryDedup>>,
    claim_fails: AtomicBool,
    commit_fails: AtomicBool,
    receivers: Mutex<Vec<String>>,
    released: AtomicUsize,
}

impl Flaky {
    fn over(memory: Arc<MemoryDedup>) -> Self {
        Flaky {
            inner: Some(memory),
            ..Flaky::default()
        }
    }

    fn memory(&self) -> &MemoryDedup {
        self.inner.as_deref().expect("a memory behind")
    }
}

impl DedupStore for Flaky {
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        self.receivers
            .lock()
            .unwrap()
            .push(claimant.receiver().to_owned());
        if self.claim_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(DedupError::new("connection refused")) });
        }
        self.memory().claim(claimant, keys)
    }

    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        if self.commit_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(DedupError::new("connection reset")) });
        }
        self.memory().commit(claimant, keys)
    }

    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        self.released.fetch_add(keys.len(), Ordering::SeqCst);
        self.memory().release(claimant, keys)
    }

    fn window(&self) -> Duration {
        self.memory().window()
    }
}

fn receiver_on(store: impl DedupStore) -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_store("orders", store)
        .build()
        .unwrap()
}

fn counting(calls: &AtomicUsize) -> impl Fn(Batch) -> std::future::Ready<Result<(), HandlerError>> {
    move |batch: Batch| {
        calls.fetch_add(
            batch.events.len() + batch.dead_letters.len(),
            Ordering::SeqCst,
        );
        std::future::ready(Ok(()))
    }
}

fn memory() -> Arc<MemoryDedup> {
    Arc::new(MemoryDedup::new(Duration::from_secs(3600), 100))
}

#[tokio::test(start_paused = true)]
async fn unreachable_store_refuses_the_delivery_with_503_before_the_handler() {
    let store = Arc::new(Flaky::over(memory()));
    let receiver = receiver_on(Arc::clone(&store));
    let calls = AtomicUsize::new(0);
    let (headers, body) = testing::one_event(SECRET, "e-1");

    store.claim_fails.store(true, Ordering::SeqCst);
    let refused = receiver.handle(&headers, &body, &counting(&calls)).await;
    assert_eq!(refused.status, 503);
    assert!(refused.dedup_unavailable);
    assert_eq!(refused.accepted, 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // The platform's retry, once the store answers again, is handed over once.
    store.claim_fails.store(false, Ordering::SeqCst);
    let retried = receiver.handle(&headers, &body, &counting(&calls)).await;
    assert_eq!((retried.status, retried.accepted), (200, 1));
    assert!(!retried.dedup_unavailable);
    let again = receiver.handle(&headers, &body, &counting(&calls)).await;
    assert_eq!((again.status, again.duplicates), (200, 1));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn unreachable_store_refuses_dead_letters_too() {
    let store = Arc::new(Flaky::over(memory()));
    store.claim_fails.store(true, Ordering::SeqCst);
    let receiver = receiver_on(Arc::clone(&store));
    let calls = AtomicUsize::new(0);
    let headers = testing::authorized_headers(SECRET);
    let refused = receiver
        .handle(&headers, b"not json", &counting(&calls))
        .await;
    assert_eq!((refused.status, refused.dead_letters), (503, 0));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn failed_commit_still_answers_200_since_the_handler_has_the_batch() {
    let store = Arc::new(Flaky::over(memory()));
    store.commit_fails.store(true, Ordering::SeqCst);
    let receiver = receiver_on(Arc::clone(&store));
    let calls = AtomicUsize::new(0);
    let (headers, body) = testing::one_event(SECRET, "e-1");
    let outcome = receiver.handle(&headers, &body, &counting(&calls)).await;
    assert_eq!((outcome.status, outcome.accepted), (200, 1));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(store.released.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn handler_failure_releases_exactly_the_claimed_keys() {
    let store = Arc::new(Flaky::over(memory()));
    let receiver = receiver_on(Arc::clone(&store));
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", serde_json::json!({}))
        .event_with_id(EventType::LinkCreate, "e-1", serde_json::json!({}))
        .event_with_id(EventType::LinkCreate, "e-2", serde_json::json!({}))
        .build();
    let failing = |_batch: Batch| async { Err::<(), _>(HandlerError::new("queue down")) };
    let outcome = receiver.handle(&headers, &body, &failing).await;
    assert_eq!((outcome.status, outcome.accepted), (500, 2));
    assert_eq!(store.released.load(Ordering::SeqCst), 2);
    assert_eq!(receiver.remembered(), 0);
}

#[tokio::test(start_paused = true)]
async fn receivers_sharing_a_store_are_scoped_by_their_names() {
    let shared = memory();
    let orders = Arc::new(Flaky::over(Arc::clone(&shared)));
    let first = receiver_on(Arc::clone(&orders));
    let second = receiver_on(Arc::clone(&shared));
    let billing = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_store("billing", Arc::clone(&shared))
        .build()
        .unwrap();
    let calls = AtomicUsize::new(0);
    let (headers, body) = testing::one_event(SECRET, "e-1");
    for receiver in [&first, &second, &billing] {
        assert_eq!(
            receiver
                .handle(&headers, &body, &counting(&calls))
                .await
                .status,
            200
        );
    }
    // Once for the two replicas named "orders", once for "billing".
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(*orders.receivers.lock().unwrap(), ["orders"]);
}

#[test]
fn dedup_store_needs_a_plain_name_and_no_in_process_settings() {
    let builder = || Receiver::builder().secret(WebhookSecret::new(SECRET).unwrap());
    for name in ["", "a:b", "with space", &"x".repeat(65)] {
        assert_eq!(
            builder().dedup_store(name, memory()).build().unwrap_err(),
            ReceiverBuildError::InvalidReceiverName,
            "{name:?}"
        );
    }
    assert!(
        builder()
            .dedup_store(&"x".repeat(64), memory())
            .build()
            .is_ok()
    );
    assert_eq!(
        builder()
            .dedup_window(Duration::from_secs(60))
            .dedup_store("orders", memory())
            .build()
            .unwrap_err(),
        ReceiverBuildError::DedupSettingsWithStore
    );
    assert_eq!(
        builder()
            .dedup_capacity(10)
            .dedup_store("orders", memory())
            .build()
            .unwrap_err(),
        ReceiverBuildError::DedupSettingsWithStore
    );
    let receiver = builder()
        .dedup_store("orders.v2_blue-1", memory())
        .build()
        .unwrap();
    assert_eq!(receiver.dedup_window(), Duration::from_secs(3600));
    assert_eq!(receiver.dedup_capacity(), 100);
}
