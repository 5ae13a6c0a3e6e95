//! The receiver's documented behaviours.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use http::header::AUTHORIZATION;
use serde_json::json;

use crate::webhook::{
    Batch, DeadLetter, DeliveryHandler, DeliveryParseError, EventType, HandleOutcome, HandlerError,
    Receiver, ReceiverBuildError, WebhookSecret, testing,
};

const SECRET: &str = "current-secret-7d1f0c9a4b2e8f63";
const OLD_SECRET: &str = "previous-secret-1a2b3c4d5e6f7081";

/// Records every batch; fails while `failing` is set.
#[derive(Default)]
struct Recorder {
    batches: Mutex<Vec<Batch>>,
    calls: AtomicUsize,
    failing: AtomicBool,
}

impl Recorder {
    fn event_ids(&self) -> Vec<String> {
        self.batches
            .lock()
            .unwrap()
            .iter()
            .flat_map(|batch| batch.events.iter().map(|e| e.event_id.clone()))
            .collect()
    }

    fn dead_letters(&self) -> usize {
        self.batches
            .lock()
            .unwrap()
            .iter()
            .map(|batch| batch.dead_letters.len())
            .sum()
    }
}

impl DeliveryHandler for Recorder {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(HandlerError::new("store unavailable"));
        }
        self.batches.lock().unwrap().push(batch);
        Ok(())
    }
}

fn receiver() -> Receiver {
    super::default_receiver(SECRET)
}

fn counts(outcome: HandleOutcome) -> (u16, usize, usize, usize, usize) {
    (
        outcome.status,
        outcome.accepted,
        outcome.duplicates,
        outcome.ignored_own,
        outcome.dead_letters,
    )
}

#[tokio::test(start_paused = true)]
async fn valid_delivery_is_handed_over_and_answered_200() {
    let recorder = Recorder::default();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .event(
            EventType::FsAddFile,
            testing::sample_data(&EventType::FsAddFile),
        )
        .event(
            EventType::GroupCreate,
            testing::sample_data(&EventType::GroupCreate),
        )
        .build();
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 2, 0, 0, 0));
    assert_eq!(recorder.event_ids(), ["evt-1", "evt-2"]);
}

#[tokio::test(start_paused = true)]
async fn wrong_secret_is_401_and_handler_not_called() {
    let recorder = Recorder::default();
    let (headers, body) = testing::one_event("not-the-secret", "e-1");
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (401, 0, 0, 0, 0));
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn missing_authorization_is_401_and_handler_not_called() {
    let recorder = Recorder::default();
    let (mut headers, body) = testing::one_event(SECRET, "e-1");
    headers.remove(AUTHORIZATION);
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(outcome.status, 401);
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn duplicated_authorization_is_401_even_if_one_is_right() {
    let recorder = Recorder::default();
    let (mut headers, body) = testing::one_event(SECRET, "e-1");
    headers.append(AUTHORIZATION, SECRET.parse().unwrap());
    assert_eq!(
        receiver().handle(&headers, &body, &recorder).await.status,
        401
    );
    let (mut headers, body) = testing::one_event(SECRET, "e-1");
    headers.append(AUTHORIZATION, "other".parse().unwrap());
    assert_eq!(
        receiver().handle(&headers, &body, &recorder).await.status,
        401
    );
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn previous_secret_is_accepted_during_rotation_and_not_after() {
    let recorder = Recorder::default();
    let rotating = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .previous_secret(WebhookSecret::new(OLD_SECRET).unwrap())
        .build()
        .unwrap();
    let (headers, body) = testing::one_event(OLD_SECRET, "e-old");
    assert_eq!(
        rotating.handle(&headers, &body, &recorder).await.status,
        200
    );
    let (headers, body) = testing::one_event(SECRET, "e-new");
    assert_eq!(
        rotating.handle(&headers, &body, &recorder).await.status,
        200
    );
    assert_eq!(recorder.event_ids(), ["e-old", "e-new"]);

    let (headers, body) = testing::one_event(OLD_SECRET, "e-late");
    assert_eq!(
        receiver().handle(&headers, &body, &recorder).await.status,
        401
    );
}

#[tokio::test(start_paused = true)]
async fn oversized_authenticated_body_is_handed_over_raw_and_answered_200() {
    let recorder = Recorder::default();
    let small = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .max_body_bytes(100)
        .build()
        .unwrap();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert!(body.len() > 100);
    let outcome = small.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 0, 0, 0, 1));
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 1);
    // A retry of the same oversized body is not handed over twice.
    let again = small.handle(&headers, &body, &recorder).await;
    assert_eq!(again.status, 200);
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn default_body_limit_is_one_mebibyte() {
    let recorder = Recorder::default();
    let receiver = receiver();
    assert_eq!(receiver.max_body_bytes(), 1024 * 1024);
    let headers = testing::authorized_headers(SECRET);
    let mut body = br#"{"data": []}"#.to_vec();
    body.resize(1024 * 1024, b' ');
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.status,
        200
    );
    body.push(b' ');
    let outcome = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!((outcome.status, outcome.dead_letters), (200, 1));
}

#[tokio::test(start_paused = true)]
async fn same_event_id_again_is_acknowledged_but_not_handed_over() {
    let recorder = Recorder::default();
    let receiver = receiver();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(
        counts(receiver.handle(&headers, &body, &recorder).await),
        (200, 1, 0, 0, 0)
    );
    assert_eq!(
        counts(receiver.handle(&headers, &body, &recorder).await),
        (200, 0, 1, 0, 0)
    );
    // Another delivery carrying the same event among new ones.
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .event_with_id(EventType::LinkCreate, "e-2", json!({}))
        .build();
    assert_eq!(
        counts(receiver.handle(&headers, &body, &recorder).await),
        (200, 1, 1, 0, 0)
    );
    assert_eq!(recorder.event_ids(), ["e-1", "e-2"]);
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn same_event_id_twice_in_one_delivery_is_handed_over_once() {
    let recorder = Recorder::default();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .build();
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 1, 1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn same_event_id_in_another_domain_is_a_different_event() {
    let recorder = Recorder::default();
    let receiver = receiver();
    let mut other_domain = testing::sample_event(&EventType::LinkCreate, "e-1");
    other_domain["domain"] = json!("other");
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .item(other_domain)
        .build();
    assert_eq!(
        counts(receiver.handle(&headers, &body, &recorder).await),
        (200, 2, 0, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn event_is_handed_over_again_after_the_dedup_window() {
    let recorder = Recorder::default();
    let receiver = receiver();
    assert_eq!(receiver.dedup_window(), Duration::from_secs(2 * 3600));
    let (headers, body) = testing::one_event(SECRET, "e-1");
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.accepted,
        1
    );

    tokio::time::advance(Duration::from_secs(2 * 3600 - 1)).await;
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.duplicates,
        1
    );

    tokio::time::advance(Duration::from_secs(1)).await;
    let outcome = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 1, 0, 0, 0));
    assert_eq!(recorder.event_ids(), ["e-1", "e-1"]);
}

#[tokio::test(start_paused = true)]
async fn dedup_memory_stays_within_capacity_and_forgets_the_oldest() {
    let recorder = Recorder::default();
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_capacity(50)
        .build()
        .unwrap();
    for n in 0..120 {
        let (headers, body) = testing::one_event(SECRET, &format!("e-{n}"));
        assert_eq!(
            receiver.handle(&headers, &body, &recorder).await.accepted,
            1
        );
        assert!(receiver.remembered() <= 50);
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    assert_eq!(receiver.remembered(), 50);
    let (headers, body) = testing::one_event(SECRET, "e-119");
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.duplicates,
        1
    );
    let (headers, body) = testing::one_event(SECRET, "e-0");
    assert_eq!(
        receiver.handle(&headers, &body, &recorder).await.accepted,
        1
    );
}

#[tokio::test(start_paused = true)]
async fn own_client_events_are_dropped_by_sha1_of_the_client_id() {
    let recorder = Recorder::default();
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .ignore_own_client_id("abc")
        .build()
        .unwrap();
    let mut own = testing::sample_event(&EventType::FsAddFolder, "own");
    own["user"]["clientIdHash"] = json!("a9993e364706816aba3e25717850c26c9cd0d89d");
    let mut own_upper = testing::sample_event(&EventType::FsAddFolder, "own-upper");
    own_upper["user"]["clientIdHash"] = json!("A9993E364706816ABA3E25717850C26C9CD0D89D");
    let mut someone_else = testing::sample_event(&EventType::FsAddFolder, "other");
    someone_else["user"]["clientIdHash"] = json!("da39a3ee5e6b4b0d3255bfef95601890afd80709");
    let no_hash = testing::sample_event(&EventType::FsAddFolder, "no-hash");
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(own)
        .item(own_upper)
        .item(someone_else)
        .item(no_hash)
        .build();
    let outcome = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 2, 0, 2, 0));
    assert_eq!(recorder.event_ids(), ["other", "no-hash"]);
}

#[tokio::test(start_paused = true)]
async fn malformed_body_goes_to_dead_letters_with_200() {
    let recorder = Recorder::default();
    let receiver = receiver();
    let headers = testing::authorized_headers(SECRET);
    for body in [&b"<html>oops</html>"[..], b"{\"items\": []}", b""] {
        let outcome = receiver.handle(&headers, body, &recorder).await;
        assert_eq!(counts(outcome), (200, 0, 0, 0, 1), "{body:?}");
    }
    let batches = recorder.batches.lock().unwrap();
    let DeadLetter::Body { raw, error } = &batches[0].dead_letters[0] else {
        panic!()
    };
    assert_eq!(&raw[..], b"<html>oops</html>");
    assert!(matches!(error, DeliveryParseError::NotJson(_)));
    let DeadLetter::Body { error, .. } = &batches[1].dead_letters[0] else {
        panic!()
    };
    assert!(matches!(error, DeliveryParseError::NoDataArray));
}

#[tokio::test(start_paused = true)]
async fn malformed_items_go_to_dead_letters_next_to_good_events_with_200() {
    let recorder = Recorder::default();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(json!({"eventId": "half"}))
        .event(EventType::LinkCreate, json!({}))
        .item(json!("text"))
        .build();
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 1, 0, 0, 2));
    let batches = recorder.batches.lock().unwrap();
    let DeadLetter::Item { raw, .. } = &batches[0].dead_letters[0] else {
        panic!()
    };
    assert_eq!(&raw[..], br#"{"eventId":"half"}"#);
}

#[tokio::test(start_paused = true)]
async fn a_malformed_element_is_reported_not_the_delivery() {
    use crate::webhook::{Delivery, DeliveryItem, EventData};

    let mut bad_envelope = testing::sample_event(&EventType::FsAddFolder, "bad-envelope");
    bad_envelope["eventType"] = json!(17);
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(bad_envelope)
        // A known event whose `data` lacks a field its generated type requires.
        .event_with_id(
            EventType::FsAddFile,
            "bad-data",
            json!({"targetPath": "/A"}),
        )
        .event_with_id(
            EventType::FsAddFile,
            "good",
            testing::sample_data(&EventType::FsAddFile),
        )
        .build();

    let delivery = Delivery::parse(&body).unwrap();
    let [bad, odd, good] = <[DeliveryItem; 3]>::try_from(delivery.items).unwrap();
    let DeliveryItem::Malformed { reason, .. } = bad else {
        panic!("{bad:?}")
    };
    assert!(reason.contains("invalid type"), "{reason}");
    let DeliveryItem::Event(odd) = odd else {
        panic!("{odd:?}")
    };
    assert_eq!(
        odd.data,
        EventData::Unknown {
            event_type: EventType::FsAddFile,
            data: json!({"targetPath": "/A"})
        }
    );
    assert!(matches!(good, DeliveryItem::Event(e) if matches!(e.data, EventData::FsAddFile(_))));

    let recorder = Recorder::default();
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 2, 0, 0, 1));
    assert_eq!(recorder.event_ids(), ["bad-data", "good"]);
}

#[tokio::test(start_paused = true)]
async fn repeated_dead_letter_is_handed_over_once() {
    let recorder = Recorder::default();
    let receiver = receiver();
    let headers = testing::authorized_headers(SECRET);
    assert_eq!(
        receiver
            .handle(&headers, b"garbage", &recorder)
            .await
            .dead_letters,
        1
    );
    let again = receiver.handle(&headers, b"garbage", &recorder).await;
    assert_eq!(counts(again), (200, 0, 1, 0, 0));
    assert_eq!(recorder.dead_letters(), 1);
}

#[tokio::test(start_paused = true)]
async fn handler_error_is_500_and_the_retry_is_handed_over() {
    let recorder = Recorder::default();
    let receiver = receiver();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    recorder.failing.store(true, Ordering::SeqCst);
    let failed = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!(failed.status, 500);
    assert_eq!(receiver.remembered(), 0);

    recorder.failing.store(false, Ordering::SeqCst);
    let retried = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(retried), (200, 1, 0, 0, 0));
    assert_eq!(recorder.event_ids(), ["e-1"]);
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn empty_delivery_is_200_without_calling_the_handler() {
    let recorder = Recorder::default();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET).build();
    let outcome = receiver().handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 0, 0, 0, 0));
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn answer_comes_only_after_the_handler_returned() {
    let receiver = receiver();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Mutex::new(Some(released));
    let handler = |_batch: Batch| {
        let wait = released.lock().unwrap().take();
        async move {
            if let Some(wait) = wait {
                let _ = wait.await;
            }
            Ok::<(), HandlerError>(())
        }
    };
    let handling = receiver.handle(&headers, &body, &handler);
    tokio::pin!(handling);
    assert!(
        futures_poll_once(&mut handling).await.is_none(),
        "answered before the handler returned"
    );
    assert_eq!(receiver.remembered(), 0);
    release.send(()).unwrap();
    assert_eq!(handling.await.status, 200);
    assert_eq!(receiver.remembered(), 1);
}

#[tokio::test(start_paused = true)]
async fn event_being_handled_elsewhere_is_left_out_and_answered_503() {
    let receiver = receiver();
    let recorder = Recorder::default();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Mutex::new(Some(released));
    let slow = |_batch: Batch| {
        let wait = released.lock().unwrap().take();
        async move {
            if let Some(wait) = wait {
                let _ = wait.await;
            }
            Ok::<(), HandlerError>(())
        }
    };
    let first = receiver.handle(&headers, &body, &slow);
    tokio::pin!(first);
    assert!(futures_poll_once(&mut first).await.is_none());

    // The platform's immediate retry arrives while the first is still being handled.
    let (headers2, body2) = testing::DeliveryBuilder::new(SECRET)
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .event_with_id(EventType::LinkCreate, "e-2", json!({}))
        .build();
    let second = receiver.handle(&headers2, &body2, &recorder).await;
    assert_eq!(second.status, 503);
    assert_eq!((second.accepted, second.in_flight), (1, 1));
    assert_eq!(recorder.event_ids(), ["e-2"]);

    release.send(()).unwrap();
    assert_eq!(first.await.status, 200);
    let third = receiver.handle(&headers2, &body2, &recorder).await;
    assert_eq!(counts(third), (200, 0, 2, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn cancelled_handling_remembers_nothing() {
    let receiver = receiver();
    let (headers, body) = testing::one_event(SECRET, "e-1");
    let never = |_batch: Batch| std::future::pending::<Result<(), HandlerError>>();
    {
        let handling = receiver.handle(&headers, &body, &never);
        tokio::pin!(handling);
        assert!(futures_poll_once(&mut handling).await.is_none());
    }
    let recorder = Recorder::default();
    let outcome = receiver.handle(&headers, &body, &recorder).await;
    assert_eq!(counts(outcome), (200, 1, 0, 0, 0));
}

#[test]
fn builder_requires_a_secret_and_nonzero_limits() {
    let secret = || WebhookSecret::new(SECRET).unwrap();
    assert_eq!(
        Receiver::builder().build().unwrap_err(),
        ReceiverBuildError::MissingSecret
    );
    assert_eq!(
        Receiver::builder()
            .secret(secret())
            .dedup_capacity(0)
            .build()
            .unwrap_err(),
        ReceiverBuildError::ZeroDedupCapacity
    );
    assert_eq!(
        Receiver::builder()
            .secret(secret())
            .dedup_window(Duration::ZERO)
            .build()
            .unwrap_err(),
        ReceiverBuildError::ZeroDedupWindow
    );
    assert_eq!(
        Receiver::builder()
            .secret(secret())
            .max_body_bytes(0)
            .build()
            .unwrap_err(),
        ReceiverBuildError::ZeroMaxBodyBytes
    );
}

#[test]
fn receiver_and_builder_debug_do_not_show_secrets() {
    let builder = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .previous_secret(WebhookSecret::new(OLD_SECRET).unwrap());
    let builder_debug = format!("{builder:?}");
    let receiver = builder.build().unwrap();
    let (headers, _) = testing::one_event(SECRET, "e");
    for printed in [
        builder_debug,
        format!("{receiver:#?}"),
        format!("{headers:?}"),
    ] {
        assert!(!printed.contains(SECRET), "{printed}");
        assert!(!printed.contains(OLD_SECRET), "{printed}");
    }
}

/// Polls a future once; `None` if it is still pending.
async fn futures_poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *future).poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}
