//! Arbitrary and mutated input: the parser never panics, and the receiver answers 200 to
//! every authenticated body within the size limit (so no content can disable the feed).
//!
//! Deterministic: a fixed-seed generator, no external fuzzing dependency.

use serde_json::{Map, Value, json};

use crate::webhook::{Batch, Delivery, EventType, HandlerError, Receiver, WebhookSecret, testing};

const SECRET: &str = "robustness-secret-5b8e2f1d9c7a";
const ROUNDS: usize = 3000;

/// SplitMix64: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn byte(&mut self) -> u8 {
        (self.next() & 0xff) as u8
    }
}

fn valid_bodies() -> Vec<Vec<u8>> {
    let mut bodies = Vec::new();
    for (n, event_type) in testing::all_event_types().iter().enumerate() {
        let (_, body) = testing::DeliveryBuilder::new(SECRET)
            .event_with_id(
                event_type.clone(),
                &format!("v-{n}"),
                testing::sample_data(event_type),
            )
            .event(EventType::LinkCreate, json!({}))
            .build();
        bodies.push(body);
    }
    bodies
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.next().is_multiple_of(2)),
        2 => json!(rng.next() as i64),
        3 => json!(-(rng.below(1000) as f64) / 7.0),
        4 => {
            let len = rng.below(12);
            Value::String((0..len).map(|_| char::from(rng.byte() % 95 + 32)).collect())
        }
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        6 => {
            let keys = ["eventId", "domain", "data", "user", "eventType", "id", "x"];
            let mut map = Map::new();
            for _ in 0..rng.below(4) {
                map.insert(
                    keys[rng.below(keys.len())].to_owned(),
                    random_value(rng, depth + 1),
                );
            }
            Value::Object(map)
        }
        _ => json!(u64::MAX - rng.next() % 10),
    }
}

/// Replaces, removes or retypes one node of the tree.
fn mutate_value(value: &mut Value, rng: &mut Rng) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.below(4) != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            match rng.below(4) {
                0 => {
                    map.remove(key);
                }
                1 => {
                    if let Some(child) = map.remove(key) {
                        map.insert(format!("{key}_"), child);
                    }
                }
                _ => {
                    if let Some(child) = map.get_mut(key) {
                        mutate_value(child, rng);
                    }
                }
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(4) != 0 => {
            let index = rng.below(items.len());
            if rng.below(3) == 0 {
                let copy = items[index].clone();
                items.push(copy);
            } else {
                mutate_value(&mut items[index], rng);
            }
        }
        _ => *value = random_value(rng, 0),
    }
}

/// Flips, inserts, deletes, truncates or repeats bytes.
fn mutate_bytes(bytes: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..=rng.below(4) {
        let len = bytes.len();
        match rng.below(5) {
            0 if len > 0 => {
                let at = rng.below(len);
                bytes[at] ^= 1 << rng.below(8);
            }
            1 => {
                let at = rng.below(len + 1);
                bytes.insert(at, rng.byte());
            }
            2 if len > 0 => {
                let from = rng.below(len);
                let to = (from + rng.below(16)).min(len);
                bytes.drain(from..to);
            }
            3 => bytes.truncate(rng.below(len + 1)),
            _ if len > 0 => {
                let from = rng.below(len);
                let to = (from + rng.below(64)).min(len);
                let chunk = bytes[from..to].to_vec();
                let at = rng.below(bytes.len() + 1);
                bytes.splice(at..at, chunk);
            }
            _ => bytes.push(rng.byte()),
        }
    }
}

fn generate(rng: &mut Rng, valid: &[Vec<u8>]) -> Vec<u8> {
    let base = &valid[rng.below(valid.len())];
    match rng.below(3) {
        0 => {
            let mut value: Value = serde_json::from_slice(base).unwrap();
            for _ in 0..=rng.below(3) {
                // Mostly inside `data`, so the typed paths are exercised; sometimes anywhere.
                if rng.below(8) == 0 {
                    mutate_value(&mut value, rng);
                } else if let Some(data) = value.get_mut("data") {
                    mutate_value(data, rng);
                }
            }
            serde_json::to_vec(&value).unwrap()
        }
        1 => {
            let mut bytes = base.clone();
            mutate_bytes(&mut bytes, rng);
            bytes
        }
        _ => (0..rng.below(256)).map(|_| rng.byte()).collect(),
    }
}

#[test]
fn parser_never_panics_on_mutated_or_arbitrary_bodies() {
    let valid = valid_bodies();
    let mut rng = Rng(0x5eed_0001);
    let (mut parsed, mut typed, mut untyped, mut malformed) = (0, 0, 0, 0);
    for _ in 0..ROUNDS {
        let body = generate(&mut rng, &valid);
        if let Ok(delivery) = Delivery::parse(&body) {
            parsed += 1;
            malformed += delivery.items.len() - delivery.events().count();
            for event in delivery.events() {
                if event.data.is_unknown() {
                    untyped += 1;
                } else {
                    typed += 1;
                }
                let _ = event.occurred_at();
                let _ = serde_json::to_vec(event);
            }
        }
    }
    // The generator must reach every path, not only rejections of the whole body.
    assert!(
        parsed > ROUNDS / 6,
        "only {parsed} of {ROUNDS} bodies parsed"
    );
    assert!(
        typed > 0 && untyped > 0 && malformed > 0,
        "{typed} {untyped} {malformed}"
    );
}

#[tokio::test(start_paused = true)]
async fn authenticated_body_within_the_limit_is_always_answered_200() {
    let valid = valid_bodies();
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .dedup_capacity(1000)
        .build()
        .unwrap();
    let headers = testing::authorized_headers(SECRET);
    let handler = |batch: Batch| async move {
        for event in &batch.events {
            let _ = serde_json::to_value(&event.data);
        }
        Ok::<(), HandlerError>(())
    };
    let mut rng = Rng(0x5eed_0002);
    for round in 0..ROUNDS {
        let body = generate(&mut rng, &valid);
        let outcome = receiver.handle(&headers, &body, &handler).await;
        assert_eq!(
            outcome.status,
            200,
            "round {round}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(receiver.remembered() <= 1000);
    }
}

#[tokio::test(start_paused = true)]
async fn deeply_nested_body_is_a_dead_letter_not_a_crash() {
    let receiver = super::default_receiver(SECRET);
    let headers = testing::authorized_headers(SECRET);
    let handler = |_batch: Batch| async { Ok::<(), HandlerError>(()) };
    let mut deep = b"{\"data\": [".to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    let outcome = receiver.handle(&headers, &deep, &handler).await;
    assert_eq!((outcome.status, outcome.dead_letters), (200, 1));
}

#[tokio::test(start_paused = true)]
async fn unauthenticated_requests_are_always_401() {
    let valid = valid_bodies();
    let receiver = super::default_receiver(SECRET);
    // A call would show as 500.
    let handler = |_batch: Batch| async { Err::<(), HandlerError>(HandlerError::new("called")) };
    let mut rng = Rng(0x5eed_0003);
    for _ in 0..500 {
        let mut secret = SECRET.as_bytes().to_vec();
        mutate_bytes(&mut secret, &mut rng);
        if secret == SECRET.as_bytes() {
            continue;
        }
        let mut headers = testing::authorized_headers(SECRET);
        match http::HeaderValue::from_bytes(&secret) {
            Ok(value) => {
                headers.insert(http::header::AUTHORIZATION, value);
            }
            Err(_) => {
                headers.remove(http::header::AUTHORIZATION);
            }
        }
        let body = generate(&mut rng, &valid);
        assert_eq!(receiver.handle(&headers, &body, &handler).await.status, 401);
    }
}
