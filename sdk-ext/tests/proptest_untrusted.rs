//! Property tests over what a webhook sender or a caller hands us: the webhook receiver's
//! bodies and `authorization` headers, and act-as values. (What a server answers, error
//! bodies, `Retry-After` and the outcome classifier, is tested next to those parsers, in
//! `src/request/proptest_untrusted.rs`.)
//!
//! Each property holds for every input: no panic, no hang (every case returns), bounded
//! output, and an invariant that says what the parser is for. 2,000 cases each.

use std::future::Future;
use std::sync::Mutex;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use pubapi_sdk_ext::act_as::{self, ActAs};
use pubapi_sdk_ext::webhook::{
    Batch, DeadLetter, Delivery, DeliveryHandler, DeliveryItem, HandlerError, Receiver,
    WebhookSecret, testing,
};

// ---------------------------------------------------------------------------------------------
// Shared strategies

#[path = "support/untrusted_strategies.rs"]
mod untrusted_strategies;
use untrusted_strategies::{arb_edits, arb_json, mutate};

// ---------------------------------------------------------------------------------------------
// Webhook receiver

const SECRET: &str = "proptest-secret-4a5b6c7d8e9f0a1b";
const OLD_SECRET: &str = "proptest-old-secret-1f2e3d4c5b6a";

fn receiver() -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .previous_secret(WebhookSecret::new(OLD_SECRET).unwrap())
        .build()
        .unwrap()
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// Keeps the batches it is handed.
#[derive(Default)]
struct Keep(Mutex<Vec<Batch>>);

impl Keep {
    fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl DeliveryHandler for Keep {
    async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
        self.0.lock().unwrap().push(batch);
        Ok(())
    }
}

const ENVELOPE: [&str; 10] = [
    "eventId",
    "domain",
    "timestamp",
    "user",
    "actionSource",
    "eventType",
    "webhookId",
    "customProperties",
    "data",
    "extra",
];

/// A sample event of any type, with up to three fields removed or replaced by any JSON.
fn arb_event() -> impl Strategy<Value = Value> {
    (
        any::<Index>(),
        "[a-z0-9-]{0,6}",
        prop::collection::vec((any::<Index>(), any::<bool>(), arb_json()), 0..3),
    )
        .prop_map(|(kind, id, edits)| {
            let types = testing::all_event_types();
            let mut event = testing::sample_event(kind.get(&types), &id);
            for (field, remove, value) in edits {
                let field = *field.get(&ENVELOPE);
                match event.as_object_mut() {
                    Some(object) if remove => {
                        object.remove(field);
                    }
                    _ => event[field] = value,
                }
            }
            event
        })
}

/// Webhook bodies: deliveries of events and other elements (as JSON, with repeated
/// elements, repeated keys, escaped keys), the same mutated byte by byte, any JSON, any bytes.
fn arb_webhook_body() -> impl Strategy<Value = Vec<u8>> {
    let element = prop_oneof![3 => arb_event(), 1 => arb_json()];
    let delivery = (
        prop::collection::vec(element, 0..5),
        any::<Index>(),
        0..4_u8,
    )
        .prop_map(|(mut items, pick, trick)| {
            if trick == 1 && !items.is_empty() {
                let again = pick.get(&items).clone();
                items.push(again);
            }
            let mut text = serde_json::to_string(&json!({ "data": items })).unwrap();
            match trick {
                // The element's `eventId` given twice.
                2 => {
                    text = text.replacen(
                        "{\"actionSource\"",
                        "{\"eventId\":\"twice\",\"actionSource\"",
                        1,
                    )
                }
                // The key written with an escape, and whitespace everywhere.
                3 => {
                    text = text
                        .replacen("\"data\"", "\"d\\u0061ta\"", 1)
                        .replace(',', " ,\n ")
                }
                _ => {}
            }
            text.into_bytes()
        });
    prop_oneof![
        5 => delivery.clone(),
        3 => (delivery, arb_edits()).prop_map(|(body, edits)| mutate(body, edits)),
        1 => arb_json().prop_map(|value| serde_json::to_vec(&value).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..128),
    ]
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

/// The number of elements of `data`, when the body is a delivery.
fn elements(body: &[u8]) -> Option<usize> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value.get("data")?.as_array().map(Vec::len)
}

/// An `authorization` value: a secret, a near miss of one, or any bytes a header may carry.
fn arb_authorization() -> impl Strategy<Value = Vec<u8>> {
    let secret = prop_oneof![Just(SECRET), Just(OLD_SECRET)];
    prop_oneof![
        2 => secret.clone().prop_map(|s| s.as_bytes().to_vec()),
        2 => (secret, arb_edits()).prop_map(|(s, edits)| mutate(s.as_bytes().to_vec(), edits)),
        1 => Just(format!("Bearer {SECRET}").into_bytes()),
        1 => Just(SECRET.to_uppercase().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
    ]
}

/// Text that may be an impersonation value: usernames, e-mail addresses, near misses, and any
/// characters at all.
fn arb_act_as_text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "[a-zA-Z0-9._-]{1,20}",
        2 => "[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]{0,12}@[a-zA-Z0-9-]{0,10}([.][a-z-]{0,5}){0,2}",
        2 => "[ -~]{0,30}",
        1 => "[ \t]{0,2}[a-z@.]{0,10}[ \t\r\n]{0,2}",
        1 => ".{0,20}",
        1 => "[a-z]{250,260}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    // -- webhook receiver ----------------------------------------------------------------------

    /// An authenticated body is always answered 200 (so no content can disable the feed),
    /// the handler gets exactly what the outcome counts, a dead letter is the body or a piece
    /// of it, and the platform's retry of the same body hands nothing over again.
    #[test]
    fn receiver_answers_any_authenticated_body_200_and_hands_it_over_once(
        body in arb_webhook_body(),
        old in any::<bool>(),
    ) {
        let receiver = receiver();
        let keep = Keep::default();
        let headers = testing::authorized_headers(if old { OLD_SECRET } else { SECRET });
        let first = block_on(receiver.handle(&headers, &body, &keep));
        prop_assert_eq!(first.status, 200);
        let batches = keep.take();
        prop_assert!(batches.len() <= 1);
        let (events, dead_letters) = batches
            .first()
            .map_or((0, 0), |batch| (batch.events.len(), batch.dead_letters.len()));
        prop_assert_eq!((events, dead_letters), (first.accepted, first.dead_letters));
        let counted = first.accepted + first.dead_letters + first.duplicates + first.ignored_own;
        prop_assert!(counted <= elements(&body).unwrap_or(1).max(1));
        let mut raw_bytes = 0;
        for dead_letter in batches.iter().flat_map(|batch| &batch.dead_letters) {
            match dead_letter {
                DeadLetter::Body { raw, .. } => prop_assert_eq!(&raw[..], &body[..]),
                DeadLetter::Item { raw, reason } => {
                    prop_assert!(contains(&body, raw), "{:?}", raw);
                    prop_assert!(!reason.is_empty());
                    raw_bytes += raw.len();
                }
                _ => {}
            }
        }
        prop_assert!(raw_bytes <= body.len());

        let retry = block_on(receiver.handle(&headers, &body, &keep));
        prop_assert_eq!((retry.status, retry.accepted, retry.dead_letters), (200, 0, 0));
        prop_assert!(keep.take().is_empty());
    }

    /// The receiver hands over what `Delivery::parse` reads: the same events, and every
    /// malformed element as a dead letter; it only adds elements it would not build a tree of.
    #[test]
    fn receiver_hands_over_what_delivery_parse_reads(body in arb_webhook_body()) {
        let receiver = receiver();
        let keep = Keep::default();
        let outcome = block_on(receiver.handle(&testing::authorized_headers(SECRET), &body, &keep));
        let batch = keep.take().pop();
        match Delivery::parse(&body) {
            Err(_) => {
                prop_assert_eq!(outcome.dead_letters, 1);
                let batch = batch.unwrap();
                let whole_body = matches!(batch.dead_letters[0], DeadLetter::Body { .. });
                prop_assert!(whole_body);
            }
            Ok(delivery) => {
                prop_assert_eq!(
                    delivery.items.len(),
                    outcome.accepted + outcome.dead_letters + outcome.duplicates
                );
                let parsed: Vec<(String, String)> = delivery
                    .events()
                    .map(|e| (e.domain.clone(), e.event_id.clone()))
                    .collect();
                let malformed = delivery
                    .items
                    .iter()
                    .filter(|item| matches!(item, DeliveryItem::Malformed { .. }))
                    .count();
                let (events, dead_letters) = batch.map_or((Vec::new(), Vec::new()), |b| (b.events, b.dead_letters));
                for event in &events {
                    prop_assert!(parsed.contains(&(event.domain.clone(), event.event_id.clone())));
                }
                // Beyond the malformed elements, the receiver leaves raw only elements it
                // would not build a tree of, and says so.
                prop_assert!(dead_letters.len() >= malformed);
                let not_read = dead_letters
                    .iter()
                    .filter(|d| matches!(d, DeadLetter::Item { reason, .. } if reason.starts_with("not read")))
                    .count();
                prop_assert!(dead_letters.len() - malformed <= not_read);
            }
        }
    }

    /// Exactly one `authorization` header equal to the current or the previous secret is let
    /// in; anything else (missing, repeated, near misses, other bytes) is 401 and reaches no
    /// handler, whatever else the headers hold.
    #[test]
    fn receiver_lets_in_exactly_one_matching_authorization(
        values in prop::collection::vec(arb_authorization(), 0..3),
        others in prop::collection::vec(("x-[a-z]{1,8}", prop::collection::vec(32..127_u8, 0..20)), 0..3),
        body in arb_webhook_body(),
    ) {
        let mut headers = HeaderMap::new();
        for value in &values {
            if let Ok(value) = HeaderValue::from_bytes(value) {
                headers.append(AUTHORIZATION, value);
            }
        }
        for (name, value) in &others {
            if let (Ok(name), Ok(value)) = (HeaderName::try_from(name.as_str()), HeaderValue::from_bytes(value)) {
                headers.append(name, value);
            }
        }
        let sent: Vec<&[u8]> = headers.get_all(AUTHORIZATION).iter().map(HeaderValue::as_bytes).collect();
        let expected = matches!(sent[..], [one] if one == SECRET.as_bytes() || one == OLD_SECRET.as_bytes());
        let receiver = receiver();
        prop_assert_eq!(receiver.is_authorized(&headers), expected);
        let keep = Keep::default();
        let outcome = block_on(receiver.handle(&headers, &body, &keep));
        if expected {
            prop_assert_eq!(outcome.status, 200);
        } else {
            prop_assert_eq!(outcome.status, 401);
            prop_assert!(keep.take().is_empty());
        }
    }

    /// An event whose optional `customProperties` is any JSON at all is still an event, by
    /// `Delivery::parse` and by the receiver (never a dead letter): an object is read, `null`
    /// is none, and any other type is not read and kept in `extra` as sent.
    #[test]
    fn an_optional_custom_properties_of_any_type_never_costs_the_event(
        kind in any::<Index>(),
        value in arb_json(),
    ) {
        let types = testing::all_event_types();
        let mut element = testing::sample_event(kind.get(&types), "e-1");
        element["customProperties"] = value;
        let body = serde_json::to_vec(&json!({ "data": [element] })).unwrap();
        // As read back from the text (a float's last digit may differ from `value`'s).
        let value = serde_json::from_slice::<Value>(&body).unwrap()["data"][0]["customProperties"].clone();
        let delivery = Delivery::parse(&body).unwrap();
        let [DeliveryItem::Event(event)] = &delivery.items[..] else {
            return Err(TestCaseError::fail(format!("not one event: {:?}", delivery.items)));
        };
        match &value {
            Value::Object(_) => prop_assert!(event.custom_properties.is_some()),
            Value::Null => prop_assert!(event.custom_properties.is_none()),
            other => {
                prop_assert!(event.custom_properties.is_none());
                prop_assert_eq!(event.extra.get("customProperties"), Some(other));
            }
        }
        let keep = Keep::default();
        let outcome = block_on(receiver().handle(&testing::authorized_headers(SECRET), &body, &keep));
        prop_assert_eq!((outcome.accepted, outcome.dead_letters), (1, 0));
    }

    // -- act-as --------------------------------------------------------------------------------

    /// A username is accepted exactly when it is 1 to 256 bytes of visible ASCII and inner
    /// spaces; then it is sent unchanged, as a valid header value marked sensitive.
    #[test]
    fn accepted_username_is_sent_unchanged_as_a_sensitive_header(value in arb_act_as_text()) {
        let valid = !value.is_empty()
            && value.len() <= act_as::MAX_LEN
            && value.bytes().all(|b| (b' '..=b'~').contains(&b))
            && !value.starts_with(' ')
            && !value.ends_with(' ');
        match ActAs::username(&value) {
            Ok(who) => {
                prop_assert!(valid, "{:?}", value);
                prop_assert_eq!(who.header_name(), act_as::ACT_AS);
                let header = who.header_value();
                prop_assert_eq!(header.as_bytes(), value.as_bytes());
                prop_assert!(header.is_sensitive());
                prop_assert_eq!(who.as_str(), value.as_str());
                let direct = HeaderValue::from_str(&value).unwrap();
                prop_assert_eq!(direct.as_bytes(), value.as_bytes());
            }
            Err(_) => prop_assert!(!valid, "{:?}", value),
        }
    }

    /// An accepted e-mail address has one `@` with text on both sides and no blank, and is
    /// sent unchanged as a valid header value marked sensitive.
    #[test]
    fn accepted_email_is_one_address_sent_unchanged(value in arb_act_as_text()) {
        if let Ok(who) = ActAs::email(&value) {
            prop_assert_eq!(who.header_name(), act_as::ACT_AS_EMAIL);
            let (local, domain) = value.split_once('@').unwrap();
            prop_assert!(!local.is_empty() && !domain.is_empty() && !domain.contains('@'));
            prop_assert!(!value.contains([' ', '\t']));
            prop_assert!(value.len() <= act_as::MAX_LEN);
            let header = who.header_value();
            prop_assert_eq!(header.as_bytes(), value.as_bytes());
            prop_assert!(header.is_sensitive());
        }
    }

    /// Neither an accepted value's `Debug` nor a refusal's `Display`, `Debug` or source ever
    /// shows the value (it is personal data).
    #[test]
    fn impersonation_values_never_show_in_debug_or_errors(tail in arb_act_as_text(), email in any::<bool>()) {
        let value = format!("Zq#{tail}");
        let result = if email { ActAs::email(&value) } else { ActAs::username(&value) };
        let shown = match &result {
            Ok(who) => format!("{who:?}"),
            Err(error) => format!(
                "{error} {error:?} {}",
                std::error::Error::source(error).map(ToString::to_string).unwrap_or_default()
            ),
        };
        prop_assert!(!shown.contains("Zq#"), "{}", shown);
    }
}
