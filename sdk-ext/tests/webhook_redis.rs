//! The webhook receiver's dedup set on a real `redis-server` started on a loopback port: each
//! `Receiver` here stands for one replica (its own connection), the store shared through Redis.
#![cfg(feature = "redis")]

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pubapi_sdk_ext::webhook::{
    Batch, DedupKey, DeliveryHandler, EventType, HandleOutcome, HandlerError, Receiver, RedisDedup,
    WebhookSecret, testing,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use support::redis_server::RedisServer;
use tokio::sync::{Notify, mpsc};

const SECRET: &str = "redis-dedup-secret-0f1e2d3c4b5a6978";
const NAME: &str = "orders";
/// The domain of `testing::DeliveryBuilder`'s envelopes.
const DOMAIN: &str = "example";

/// Records what reaches the handler; fails while `failing` is set.
#[derive(Default)]
struct Recorder {
    event_ids: Mutex<Vec<String>>,
    dead_letters: Mutex<usize>,
    failing: AtomicBool,
}

impl Recorder {
    fn event_ids(&self) -> Vec<String> {
        self.event_ids.lock().unwrap().clone()
    }
}

impl DeliveryHandler for Recorder {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(HandlerError::new("queue unavailable"));
        }
        let ids = batch.events.iter().map(|event| event.event_id.clone());
        self.event_ids.lock().unwrap().extend(ids);
        *self.dead_letters.lock().unwrap() += batch.dead_letters.len();
        Ok(())
    }
}

/// A connection manager that gives up reconnecting after one retry, as a service would
/// configure it so that deliveries are answered promptly while Redis is down.
async fn connection(server: &RedisServer) -> ConnectionManager {
    let client = redis::Client::open(server.url()).unwrap();
    let config = ConnectionManagerConfig::new().set_number_of_retries(1);
    ConnectionManager::new_with_config(client, config)
        .await
        .unwrap()
}

/// One replica of the `orders` endpoint: its own receiver and connection, Redis shared.
async fn replica(server: &RedisServer) -> Receiver {
    replica_with(RedisDedup::new(connection(server).await))
}

fn replica_with(store: RedisDedup) -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_store(NAME, store)
        .build()
        .unwrap()
}

/// A recorder and two replicas of the endpoint on `server`.
async fn recorder_and_two_replicas(server: &RedisServer) -> (Recorder, Receiver, Receiver) {
    let first = replica(server).await;
    let second = replica(server).await;
    (Recorder::default(), first, second)
}

/// Delivers the one event `id` to `receiver`: the status and how many events were accepted.
async fn deliver(receiver: &Receiver, id: &str, recorder: &Recorder) -> (u16, usize) {
    let (headers, body) = testing::one_event(SECRET, id);
    let outcome = receiver.handle(&headers, &body, recorder).await;
    (outcome.status, outcome.accepted)
}

/// What a delivery's outcome counts: status, accepted, duplicates, forgotten by the store.
fn counts(outcome: &HandleOutcome) -> (u16, usize, usize, usize) {
    (
        outcome.status,
        outcome.accepted,
        outcome.duplicates,
        outcome.forgotten_by_store,
    )
}

#[tokio::test]
async fn same_delivery_to_two_receivers_and_after_a_restart_reaches_the_handler_once() {
    let server = RedisServer::start();
    let (recorder, first, second) = recorder_and_two_replicas(&server).await;
    let (headers, body) = testing::one_event(SECRET, "e-1");

    let handled = first.handle(&headers, &body, &recorder).await;
    assert_eq!((handled.status, handled.accepted), (200, 1));
    let elsewhere = second.handle(&headers, &body, &recorder).await;
    assert_eq!(
        (elsewhere.status, elsewhere.accepted, elsewhere.duplicates),
        (200, 0, 1)
    );

    // The first replica restarts: a new receiver and connection, nothing in its memory.
    drop(first);
    let restarted = replica(&server).await;
    let after_restart = restarted.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(&after_restart), (200, 0, 1, 0));
    assert_eq!(recorder.event_ids(), ["e-1"]);
}

#[tokio::test]
async fn unreachable_redis_refuses_the_delivery_and_the_retry_after_it_is_back_is_handled_once() {
    let mut server = RedisServer::start();
    let (recorder, first, second) = recorder_and_two_replicas(&server).await;
    let (headers, body) = testing::one_event(SECRET, "e-1");

    server.stop();
    for receiver in [&first, &second] {
        let refused = receiver.handle(&headers, &body, &recorder).await;
        assert_eq!(refused.status, 503);
        assert!(refused.dedup_unavailable);
        assert_eq!(refused.accepted, 0);
    }
    assert!(
        recorder.event_ids().is_empty(),
        "nothing while Redis is down"
    );

    // The platform's retries, once Redis is back: handled once, by whichever comes first.
    server.restart();
    let retried = first.handle(&headers, &body, &recorder).await;
    assert_eq!((retried.status, retried.accepted), (200, 1));
    assert!(!retried.dedup_unavailable);
    let retried_elsewhere = second.handle(&headers, &body, &recorder).await;
    assert_eq!(
        (retried_elsewhere.status, retried_elsewhere.duplicates),
        (200, 1)
    );
    assert_eq!(recorder.event_ids(), ["e-1"]);
}

/// A server, and a receiver on it that has handed the event `e-1` to the recorder.
async fn handled_e1() -> (RedisServer, Recorder, Receiver) {
    let server = RedisServer::start();
    let recorder = Recorder::default();
    let receiver = replica(&server).await;
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.status,
        200
    );
    (server, recorder, receiver)
}

#[tokio::test]
async fn redis_stopped_between_deliveries_refuses_only_while_it_is_down() {
    let (mut server, recorder, receiver) = handled_e1().await;

    server.stop();
    assert_eq!(deliver(&receiver, "e-2", &recorder).await, (503, 0));

    // The restarted server lost its data (no persistence here), so e-1 is new to it again;
    // e-2, refused before, is handled now.
    server.restart();
    assert_eq!(deliver(&receiver, "e-2", &recorder).await, (200, 1));
    assert_eq!(recorder.event_ids(), ["e-1", "e-2"]);
}

#[tokio::test]
async fn redis_restarted_while_idle_answers_the_next_delivery_at_once() {
    let (mut server, recorder, receiver) = handled_e1().await;

    // The connection the receiver holds is dead; the store reconnects and sends again.
    server.restart();
    assert_eq!(deliver(&receiver, "e-2", &recorder).await, (200, 1));
    assert_eq!(recorder.event_ids(), ["e-1", "e-2"]);
}

/// A handler that says when it started and returns when told to.
struct Gate {
    entered: mpsc::UnboundedSender<()>,
    release: Arc<Notify>,
    recorder: Arc<Recorder>,
}

impl Gate {
    /// A gate in front of `recorder`: what says when a batch reached it, and what lets it
    /// through.
    fn new(recorder: Arc<Recorder>) -> (Gate, mpsc::UnboundedReceiver<()>, Arc<Notify>) {
        let (entered, started) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let gate = Gate {
            entered,
            release: Arc::clone(&release),
            recorder,
        };
        (gate, started, release)
    }
}

impl DeliveryHandler for Gate {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        let _ = self.entered.send(());
        self.release.notified().await;
        self.recorder.handle_batch(batch).await
    }
}

#[tokio::test]
async fn event_being_handled_by_one_replica_is_answered_503_by_another_until_committed() {
    let server = RedisServer::start();
    let recorder = Arc::new(Recorder::default());
    let first = Arc::new(replica(&server).await);
    let second = replica(&server).await;
    let (headers, body) = testing::one_event(SECRET, "e-1");

    let (gate, mut started, release) = Gate::new(Arc::clone(&recorder));
    let slow = tokio::spawn({
        let (first, headers, body) = (Arc::clone(&first), headers.clone(), body.clone());
        async move { first.handle(&headers, &body, &gate).await }
    });
    started.recv().await.unwrap();

    // The platform's retry reaches the other replica while the first still handles it.
    let (headers2, body2) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", serde_json::json!({}))
        .event_with_id(EventType::LinkCreate, "e-2", serde_json::json!({}))
        .build();
    let busy = second.handle(&headers2, &body2, &*recorder).await;
    assert_eq!(busy.status, 503);
    assert_eq!((busy.accepted, busy.in_flight), (1, 1));

    release.notify_one();
    assert_eq!(slow.await.unwrap().status, 200);
    let later = second.handle(&headers2, &body2, &*recorder).await;
    assert_eq!((later.status, later.duplicates), (200, 2));
    let mut ids = recorder.event_ids();
    ids.sort();
    assert_eq!(ids, ["e-1", "e-2"]);
}

#[tokio::test]
async fn handler_failure_on_one_replica_lets_another_handle_the_retry() {
    let server = RedisServer::start();
    let failing = Recorder::default();
    failing.failing.store(true, Ordering::SeqCst);
    let (recorder, first, second) = recorder_and_two_replicas(&server).await;
    let (headers, body) = testing::one_event(SECRET, "e-1");

    assert_eq!(first.handle(&headers, &body, &failing).await.status, 500);
    let retried = second.handle(&headers, &body, &recorder).await;
    assert_eq!((retried.status, retried.accepted), (200, 1));
    assert_eq!(recorder.event_ids(), ["e-1"]);
}

#[tokio::test]
async fn dead_letters_of_a_delivery_reach_the_handler_once_across_replicas() {
    let server = RedisServer::start();
    let (recorder, first, second) = recorder_and_two_replicas(&server).await;
    let headers = testing::authorized_headers(SECRET);

    let handled = first.handle(&headers, b"not json", &recorder).await;
    assert_eq!((handled.status, handled.dead_letters), (200, 1));
    let elsewhere = second.handle(&headers, b"not json", &recorder).await;
    assert_eq!((elsewhere.status, elsewhere.duplicates), (200, 1));
    assert_eq!(*recorder.dead_letters.lock().unwrap(), 1);
}

#[tokio::test]
async fn keys_are_namespaced_claims_expire_after_the_lease_and_records_after_the_ttl() {
    let server = RedisServer::start();
    let store = RedisDedup::new(connection(&server).await).key_prefix("acme:dedup:");
    let key = store.redis_key(NAME, &DedupKey::event(NAME, DOMAIN, "e-1"));
    assert_eq!(
        key,
        format!(
            "acme:dedup:{{orders}}:event:{}",
            DedupKey::event(NAME, DOMAIN, "e-1").digest_hex()
        )
    );
    let receiver = Arc::new(replica_with(store));
    let mut redis = server.connection().await;
    let (headers, body) = testing::one_event(SECRET, "e-1");

    let (gate, mut started, release) = Gate::new(Arc::default());
    let handling = tokio::spawn({
        let receiver = Arc::clone(&receiver);
        async move { receiver.handle(&headers, &body, &gate).await }
    });
    started.recv().await.unwrap();

    // While the handler runs: claimed, for the lease.
    let claimed: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(claimed.starts_with("claimed:"), "{claimed}");
    let lease: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    let lease_ms = RedisDedup::DEFAULT_CLAIM_LEASE.as_millis() as i64;
    assert!((lease_ms - 10_000..=lease_ms).contains(&lease), "{lease}");

    // Once handled: done, for the TTL (2 hours).
    release.notify_one();
    assert_eq!(handling.await.unwrap().status, 200);
    let done: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(done, "done");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    let ttl_ms = 2 * 3600 * 1000;
    assert!((ttl_ms - 10_000..=ttl_ms).contains(&ttl), "{ttl}");
    assert_eq!(receiver.dedup_window(), Duration::from_secs(2 * 3600));

    // Nothing else was written but the receiver's generation key, and nothing outside the
    // prefix.
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut redis)
        .await
        .unwrap();
    keys.sort();
    assert_eq!(keys, [key, "acme:dedup:{orders}:generation".to_owned()]);
}

/// How Redis loses what the store wrote.
#[derive(Debug, Clone, Copy)]
enum Loss {
    /// A crash and a restart without persistence.
    RestartEmpty,
    /// `FLUSHALL`.
    Flushall,
    /// The event's key alone is gone, as after a failover to a replica that had not received
    /// the last writes (or an eviction): the generation key is still there.
    LastWrites,
}

impl Loss {
    async fn strike(self, server: &mut RedisServer, store: &RedisDedup, event_id: &str) {
        match self {
            Loss::RestartEmpty => server.restart_empty(),
            Loss::Flushall => {
                let () = redis::cmd("FLUSHALL")
                    .query_async(&mut server.connection().await)
                    .await
                    .unwrap();
            }
            Loss::LastWrites => {
                let key = store.redis_key(NAME, &DedupKey::event(NAME, DOMAIN, event_id));
                let deleted: i64 = redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut server.connection().await)
                    .await
                    .unwrap();
                assert_eq!(deleted, 1);
            }
        }
    }
}

#[tokio::test]
async fn handler_runs_once_when_redis_loses_the_set_between_two_deliveries_of_an_event() {
    // (how Redis loses it, losses the generation key reveals)
    let table = [
        (Loss::RestartEmpty, 1),
        (Loss::Flushall, 1),
        (Loss::LastWrites, 0),
    ];
    for (loss, detected) in table {
        let mut server = RedisServer::start();
        let store = RedisDedup::new(connection(&server).await);
        let receiver = replica_with(store.clone());
        let recorder = Recorder::default();
        let (headers, body) = testing::one_event(SECRET, "e-1");
        let handled = receiver.handle(&headers, &body, &recorder).await;
        assert_eq!((handled.status, handled.accepted), (200, 1), "{loss:?}");

        loss.strike(&mut server, &store, "e-1").await;
        let repeated = receiver.handle(&headers, &body, &recorder).await;
        assert_eq!(counts(&repeated), (200, 0, 1, 1), "{loss:?}");
        assert_eq!(recorder.event_ids(), ["e-1"], "{loss:?}");

        // Recorded in Redis again: a replica that never saw e-1 knows it now.
        let other = replica(&server).await;
        let elsewhere = other.handle(&headers, &body, &recorder).await;
        assert_eq!(counts(&elsewhere), (200, 0, 1, 0), "{loss:?}");
        // Once per loss, however many deliveries follow.
        let (headers2, body2) = testing::one_event(SECRET, "e-2");
        assert_eq!(
            receiver.handle(&headers2, &body2, &recorder).await.status,
            200
        );
        assert_eq!(store.losses_detected(), detected, "{loss:?}");
        assert_eq!(recorder.event_ids(), ["e-1", "e-2"], "{loss:?}");
    }
}

#[tokio::test]
async fn replica_that_never_saw_an_event_hands_it_over_again_after_redis_lost_the_set() {
    let mut server = RedisServer::start();
    let store = RedisDedup::new(connection(&server).await);
    let first = replica_with(store.clone());
    let second = replica(&server).await;
    let recorder = Recorder::default();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(first.handle(&headers, &body, &recorder).await.accepted, 1);

    // Documented as not covered: only the process that handed e-1 over remembers it.
    Loss::RestartEmpty.strike(&mut server, &store, "e-1").await;
    let elsewhere = second.handle(&headers, &body, &recorder).await;
    assert_eq!((elsewhere.status, elsewhere.accepted), (200, 1));
    assert_eq!(recorder.event_ids(), ["e-1", "e-1"]);
}

#[tokio::test]
async fn recent_set_forgets_the_oldest_past_its_count_after_redis_lost_the_set() {
    // The window bound runs on paused time, with a store that forgets, in the unit tests
    // (`webhook::tests::recent`): real Redis expiry does not follow tokio's clock.
    let mut server = RedisServer::start();
    let store = RedisDedup::new(connection(&server).await);
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_store(NAME, store.clone())
        .recent_deliveries(2, Duration::from_secs(3600))
        .build()
        .unwrap();
    let recorder = Recorder::default();
    for id in ["e-1", "e-2", "e-3"] {
        let (headers, body) = testing::one_event(SECRET, id);
        assert_eq!(
            receiver.handle(&headers, &body, &recorder).await.accepted,
            1
        );
    }

    Loss::Flushall.strike(&mut server, &store, "e-1").await;
    let (headers, body) = testing::one_event(SECRET, "e-3");
    let newest = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!((newest.accepted, newest.forgotten_by_store), (0, 1));
    let (headers, body) = testing::one_event(SECRET, "e-1");
    let oldest = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!((oldest.status, oldest.accepted), (200, 1));
    assert_eq!(recorder.event_ids(), ["e-1", "e-2", "e-3", "e-1"]);
}

#[tokio::test]
async fn a_delivery_reaches_the_handler_once_across_replicas_on_sentinel_and_on_a_cluster() {
    use support::redis_server::{RedisCluster, SentinelSet};
    let sentinel = SentinelSet::start();
    let cluster = RedisCluster::start();
    for url in [sentinel.url(), cluster.url()] {
        let recorder = Recorder::default();
        let first = replica_with(RedisDedup::connect(&url).await.unwrap());
        let second = replica_with(RedisDedup::connect(&url).await.unwrap());
        let (headers, body) = testing::one_event(SECRET, "e-1");
        let handled = first.handle(&headers, &body, &recorder).await;
        assert_eq!((handled.status, handled.accepted), (200, 1), "{url}");
        let elsewhere = second.handle(&headers, &body, &recorder).await;
        assert_eq!(
            (elsewhere.status, elsewhere.accepted, elsewhere.duplicates),
            (200, 0, 1),
            "{url}"
        );
        assert_eq!(recorder.event_ids(), ["e-1"], "{url}");
    }
}

#[tokio::test]
async fn a_malformed_redis_url_is_refused_naming_the_problem_not_the_password() {
    let error = RedisDedup::connect("redis+sentinel://user:s3cret@/")
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(!message.contains("s3cret"), "{message}");
    assert!(!message.is_empty());
}
