//! What one delivery may cost: dedup slots (only events take them, at most `max_items` per
//! delivery) and memory (elements read one at a time, dense ones left raw).

use std::sync::Mutex;
use std::time::Duration;

use http::HeaderMap;
use serde_json::json;

use crate::webhook::delivery::{MIN_EVENT_BYTES, read_element};
use crate::webhook::scan::tree_cost;
use crate::webhook::{
    Batch, DEAD_LETTER_DEDUP_CAPACITY, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ITEMS, DeadLetter,
    Delivery, DeliveryHandler, DeliveryParseError, EventType, HandlerError, Receiver,
    ReceiverBuildError, WebhookSecret, testing,
};

const SECRET: &str = "bounds-secret-2c4e6a8b0d1f3e5a";

/// Keeps every batch; fails while `failing` is set.
#[derive(Default)]
struct Keep {
    batches: Mutex<Vec<Batch>>,
    failing: std::sync::atomic::AtomicBool,
}

impl Keep {
    fn event_ids(&self) -> Vec<String> {
        let batches = self.batches.lock().unwrap();
        batches
            .iter()
            .flat_map(|b| b.events.iter().map(|e| e.event_id.clone()))
            .collect()
    }

    fn dead_letters(&self) -> usize {
        let batches = self.batches.lock().unwrap();
        batches.iter().map(|b| b.dead_letters.len()).sum()
    }
}

impl DeliveryHandler for Keep {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(HandlerError::new("store down"));
        }
        self.batches.lock().unwrap().push(batch);
        Ok(())
    }
}

fn receiver(capacity: usize, max_items: usize) -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_capacity(capacity)
        .max_items(max_items)
        .build()
        .unwrap()
}

fn events(ids: impl IntoIterator<Item = String>) -> (HeaderMap, Vec<u8>) {
    let mut builder = testing::DeliveryBuilder::new(SECRET);
    for id in ids {
        builder = builder.event_with_id(EventType::LinkCreate, &id, json!({}));
    }
    builder.build()
}

fn ids(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("{prefix}-{n}")).collect()
}

/// `{"data": [e, e, ...]}` with `count` copies of the element text `element`.
fn repeated(element: &str, count: usize) -> Vec<u8> {
    let mut body = b"{\"data\":[".to_vec();
    for n in 0..count {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(element.as_bytes());
    }
    body.extend_from_slice(b"]}");
    body
}

/// Hands over `remembered` events one delivery at a time, then checks that every one of them
/// is still remembered: a retry of each is a duplicate and reaches no handler.
async fn assert_all_remembered(receiver: &Receiver, remembered: &[String]) {
    let never = |_batch: Batch| async { Err::<(), HandlerError>(HandlerError::new("called")) };
    for id in remembered {
        let (headers, body) = events([id.clone()]);
        let outcome = receiver.handle(&headers, &body, &never).await;
        assert_eq!(
            (outcome.status, outcome.duplicates),
            (200, 1),
            "{id} was forgotten"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn dead_letters_do_not_take_dedup_slots() {
    let receiver = receiver(50, DEFAULT_MAX_ITEMS);
    let keep = Keep::default();
    let earlier = ids("kept", 0..50);
    for id in &earlier {
        let (headers, body) = events([id.clone()]);
        assert_eq!(receiver.handle(&headers, &body, &keep).await.accepted, 1);
    }
    assert_eq!(receiver.remembered(), 50);

    // 5,000 distinct malformed elements in one delivery, then 200 deliveries of garbage.
    let headers = testing::authorized_headers(SECRET);
    let items: Vec<String> = (0..5_000).map(|n| format!("{{\"n\":{n}}}")).collect();
    let body = format!("{{\"data\":[{}]}}", items.join(","));
    let outcome = receiver.handle(&headers, body.as_bytes(), &keep).await;
    assert_eq!((outcome.status, outcome.dead_letters), (200, 5_000));
    for n in 0..200 {
        let garbage = format!("not json {n}");
        let outcome = receiver.handle(&headers, garbage.as_bytes(), &keep).await;
        assert_eq!((outcome.status, outcome.dead_letters), (200, 1));
    }

    assert_eq!(receiver.remembered(), 50);
    assert_all_remembered(&receiver, &earlier).await;
}

#[tokio::test(start_paused = true)]
async fn one_delivery_cannot_evict_remembered_ids() {
    // The issue's delivery: ~166,000 tiny elements, against the default limits.
    let defaults = super::default_receiver(SECRET);
    let keep = Keep::default();
    let earlier = ids("early", 0..300);
    let (headers, body) = events(earlier.clone());
    assert_eq!(defaults.handle(&headers, &body, &keep).await.accepted, 300);
    let flood = repeated("{}", 166_000);
    assert!(flood.len() <= DEFAULT_MAX_BODY_BYTES);
    let outcome = defaults.handle(&headers, &flood, &keep).await;
    assert_eq!((outcome.status, outcome.dead_letters), (200, 1));
    assert_eq!(defaults.remembered(), 300);
    assert_all_remembered(&defaults, &earlier).await;

    // Valid events: a delivery over `max_items` evicts nothing, one within evicts at most
    // `max_items`, the oldest.
    let receiver = receiver(100, 10);
    let earlier = ids("old", 0..100);
    for chunk in earlier.chunks(10) {
        let (headers, body) = events(chunk.to_vec());
        assert_eq!(receiver.handle(&headers, &body, &keep).await.accepted, 10);
        tokio::time::advance(Duration::from_millis(1)).await;
    }
    let (headers, body) = events(ids("new", 0..11));
    let outcome = receiver.handle(&headers, &body, &keep).await;
    assert_eq!((outcome.accepted, outcome.dead_letters), (0, 1));
    assert_eq!(receiver.remembered(), 100);
    assert_all_remembered(&receiver, &earlier).await;

    let (headers, body) = events(ids("new", 0..10));
    assert_eq!(receiver.handle(&headers, &body, &keep).await.accepted, 10);
    assert_eq!(receiver.remembered(), 100);
    assert_all_remembered(&receiver, &earlier[10..]).await;
}

#[tokio::test(start_paused = true)]
async fn body_with_more_elements_than_max_items_is_handed_over_raw() {
    let receiver = receiver(1_000, 3);
    let keep = Keep::default();
    let (headers, body) = events(ids("e", 0..4));
    let outcome = receiver.handle(&headers, &body, &keep).await;
    assert_eq!(
        (outcome.status, outcome.accepted, outcome.dead_letters),
        (200, 0, 1)
    );
    {
        let batches = keep.batches.lock().unwrap();
        let DeadLetter::Body { raw, error } = &batches[0].dead_letters[0] else {
            panic!("{:?}", batches[0].dead_letters[0])
        };
        assert_eq!(&raw[..], &body[..]);
        assert!(
            matches!(
                error,
                DeliveryParseError::TooManyItems { items: 4, limit: 3 }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "delivery has 4 elements in `data`, over the limit of 3"
        );
    }
    // Its retry is a duplicate, and a delivery at the limit is read.
    let again = receiver.handle(&headers, &body, &keep).await;
    assert_eq!((again.duplicates, again.dead_letters), (1, 0));
    let (headers, body) = events(ids("e", 0..3));
    assert_eq!(receiver.handle(&headers, &body, &keep).await.accepted, 3);
    assert_eq!(keep.event_ids(), ids("e", 0..3));
}

#[tokio::test(start_paused = true)]
async fn retried_delivery_hands_its_dead_letters_over_once() {
    let receiver = receiver(1_000, DEFAULT_MAX_ITEMS);
    let keep = Keep::default();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(json!({"eventId": "half"}))
        .event_with_id(EventType::LinkCreate, "e-1", json!({}))
        .item(json!(7))
        .build();

    keep.failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(receiver.handle(&headers, &body, &keep).await.status, 500);
    keep.failing
        .store(false, std::sync::atomic::Ordering::SeqCst);

    let first = receiver.handle(&headers, &body, &keep).await;
    assert_eq!(
        (first.status, first.accepted, first.dead_letters),
        (200, 1, 2)
    );
    let retry = receiver.handle(&headers, &body, &keep).await;
    assert_eq!(
        (
            retry.status,
            retry.accepted,
            retry.dead_letters,
            retry.duplicates
        ),
        (200, 0, 0, 3)
    );
    assert_eq!(keep.dead_letters(), 2);

    // Another delivery with one of the same bad elements is another delivery.
    let (headers, other) = testing::DeliveryBuilder::new(SECRET).item(json!(7)).build();
    assert_eq!(
        receiver.handle(&headers, &other, &keep).await.dead_letters,
        1
    );
    assert_eq!(receiver.remembered(), 1);
}

#[tokio::test(start_paused = true)]
async fn dead_letter_memory_is_bounded_and_apart_from_events() {
    let receiver = receiver(10, DEFAULT_MAX_ITEMS);
    let keep = Keep::default();
    let headers = testing::authorized_headers(SECRET);
    for n in 0..=DEAD_LETTER_DEDUP_CAPACITY {
        let garbage = format!("garbage {n}");
        let outcome = receiver.handle(&headers, garbage.as_bytes(), &keep).await;
        assert_eq!(outcome.dead_letters, 1);
    }
    // The newest is remembered, the oldest forgotten.
    let newest = format!("garbage {DEAD_LETTER_DEDUP_CAPACITY}");
    let outcome = receiver.handle(&headers, newest.as_bytes(), &keep).await;
    assert_eq!((outcome.dead_letters, outcome.duplicates), (0, 1));
    let outcome = receiver.handle(&headers, b"garbage 0", &keep).await;
    assert_eq!(outcome.dead_letters, 1);
    assert_eq!(receiver.remembered(), 0);
}

#[tokio::test(start_paused = true)]
async fn element_too_dense_to_read_is_a_dead_letter_with_its_bytes() {
    let receiver = receiver(1_000, DEFAULT_MAX_ITEMS);
    let keep = Keep::default();
    // A valid envelope whose `data` is 20,000 one-entry objects: about 90 bytes of tree per
    // byte of text.
    let mut dense = testing::sample_event(&EventType::LinkCreate, "dense");
    dense["data"] = json!({ "x": vec![json!({"a": 0}); 20_000] });
    let dense_text = dense.to_string();
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(dense)
        .event_with_id(EventType::LinkCreate, "light", json!({}))
        .build();
    let outcome = receiver.handle(&headers, &body, &keep).await;
    assert_eq!(
        (outcome.status, outcome.accepted, outcome.dead_letters),
        (200, 1, 1)
    );
    assert_eq!(keep.event_ids(), ["light"]);
    let batches = keep.batches.lock().unwrap();
    let DeadLetter::Item { raw, reason } = &batches[0].dead_letters[0] else {
        panic!()
    };
    assert_eq!(&raw[..], dense_text.as_bytes());
    assert!(reason.contains("14 per byte"), "{reason}");
    // The same element is an event for `Delivery::parse`, which does not bound memory.
    assert_eq!(Delivery::parse(&body).unwrap().events().count(), 2);
}

#[test]
fn real_events_are_well_within_the_density_bound() {
    for event_type in &testing::all_event_types() {
        let text = testing::sample_event(event_type, "e-1").to_string();
        let ratio = tree_cost(text.as_bytes()) as f64 / text.len() as f64;
        assert!(ratio < 10.0, "{event_type}: {ratio}");
    }
    // Group members by username, and as objects with the user fields group events carry.
    for members in [
        json!(vec!["grace.hopper"; 500]),
        json!(vec![
            json!({"id": 1234, "fullName": "Grace Hopper", "userName": "grace", "email": "grace@example.com"});
            500
        ]),
        json!((0..500).collect::<Vec<u32>>()),
    ] {
        let mut event = testing::sample_event(&EventType::GroupAddMembers, "e-1");
        event["data"]["members"] = members;
        let text = event.to_string();
        let ratio = tree_cost(text.as_bytes()) as f64 / text.len() as f64;
        assert!(ratio < 12.0, "{ratio}");
    }
}

#[test]
fn tree_cost_is_dense_for_runs_of_tiny_containers() {
    let nested = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert_eq!(tree_cost(nested.as_bytes()), 99 * 128);
    let objects = format!("[{}]", vec!["{\"a\":0}"; 1_000].join(","));
    assert!(tree_cost(objects.as_bytes()) > 80 * objects.len());
    assert_eq!(tree_cost(b"[]"), 0);
    assert_eq!(tree_cost(b"\"abc\""), 5);
}

#[test]
fn smallest_event_is_min_event_bytes_long() {
    let smallest = br#"{"eventId":"","domain":"","timestamp":0,"user":{"id":0,"displayName":"","username":"","email":""},"actionSource":"","eventType":"","webhookId":""}"#;
    assert_eq!(smallest.len(), MIN_EVENT_BYTES);
    assert_eq!(MIN_EVENT_BYTES, 146);
    assert!(read_element(smallest).is_ok());
    // Every envelope field is needed: none can be left out to make it shorter.
    let element: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(smallest).unwrap();
    for field in element.keys() {
        let mut shorter = element.clone();
        shorter.remove(field);
        let text = serde_json::to_vec(&shorter).unwrap();
        assert!(read_element(&text).is_err(), "{field}");
    }
}

#[tokio::test(start_paused = true)]
async fn default_max_items_reads_a_full_body_of_smallest_events() {
    let receiver = super::default_receiver(SECRET);
    let count = (DEFAULT_MAX_BODY_BYTES - 20) / (MIN_EVENT_BYTES + 8);
    assert!(count < DEFAULT_MAX_ITEMS);
    let elements: Vec<String> = (0..count)
        .map(|n| {
            format!(
                r#"{{"eventId":"{n:06}","domain":"","timestamp":0,"user":{{"id":0,"displayName":"","username":"","email":""}},"actionSource":"","eventType":"","webhookId":""}}"#
            )
        })
        .collect();
    let body = format!("{{\"data\":[{}]}}", elements.join(","));
    assert!(body.len() <= DEFAULT_MAX_BODY_BYTES);
    let ok = |_batch: Batch| async { Ok::<(), HandlerError>(()) };
    let outcome = receiver
        .handle(&testing::authorized_headers(SECRET), body.as_bytes(), &ok)
        .await;
    assert_eq!((outcome.status, outcome.accepted), (200, count));
}

#[test]
fn builder_refuses_zero_max_items() {
    let built = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .max_items(0)
        .build();
    assert_eq!(built.unwrap_err(), ReceiverBuildError::ZeroMaxItems);
    let receiver = super::default_receiver(SECRET);
    assert_eq!(receiver.max_items(), DEFAULT_MAX_ITEMS);
}

#[tokio::test(start_paused = true)]
async fn small_malformed_element_says_what_is_missing() {
    let receiver = receiver(1_000, DEFAULT_MAX_ITEMS);
    let keep = Keep::default();
    // Too dense to read as an event (one object node for 18 bytes), but first of all not one.
    let (headers, body) = testing::DeliveryBuilder::new(SECRET)
        .item(json!({"eventId": "half"}))
        .build();
    assert_eq!(
        receiver.handle(&headers, &body, &keep).await.dead_letters,
        1
    );
    let batches = keep.batches.lock().unwrap();
    let DeadLetter::Item { reason, .. } = &batches[0].dead_letters[0] else {
        panic!()
    };
    assert!(reason.starts_with("missing field `domain`"), "{reason}");
}
