//! Properties of the private scanner over arbitrary input: it says what serde_json says, finds
//! exactly the elements a `Value` holds, always ends, and never underestimates a tree.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::untrusted_strategies::arb_json;
use crate::webhook::scan::{data_elements, member, tree_cost};
use crate::webhook::{DeliveryParseError, testing};

/// JSON text of `value` with whitespace after every structural character when `spaced`.
fn text(value: &Value, spaced: bool) -> Vec<u8> {
    if spaced {
        serde_json::to_vec_pretty(value).unwrap()
    } else {
        serde_json::to_vec(value).unwrap()
    }
}

/// `{"data": [...]}` with any JSON inside, and another member.
fn arb_delivery() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(arb_json(), 0..6),
        arb_json(),
        any::<bool>(),
    )
        .prop_map(|(items, other, spaced)| {
            let mut body = Map::new();
            body.insert("other".into(), other);
            body.insert("data".into(), Value::Array(items));
            text(&Value::Object(body), spaced)
        })
}

/// Bodies: mostly deliveries with JSON inside, some mutated at the byte level, some any
/// bytes at all.
fn arb_body() -> impl Strategy<Value = Vec<u8>> {
    let mutated = (
        arb_delivery(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3_u8), 1..4),
    )
        .prop_map(|(mut body, edits)| {
            for (at, byte, kind) in edits {
                let at = at.index(body.len() + 1);
                match kind {
                    0 if at < body.len() => body[at] = byte,
                    1 => body.insert(at, byte),
                    _ => body.truncate(at),
                }
            }
            body
        });
    prop_oneof![
        4 => arb_delivery(),
        3 => mutated,
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => arb_json().prop_map(|value| text(&value, false)),
    ]
}

/// What a `serde_json::Value` holds that can be seen from outside: slots of array buffers,
/// string buffers, and at least one 632-byte node per 11 entries of an object.
fn observable_tree_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.capacity(),
        Value::Array(items) => {
            32 * items.capacity() + items.iter().map(observable_tree_bytes).sum::<usize>()
        }
        Value::Object(map) => {
            632 * map.len().div_ceil(11)
                + map
                    .iter()
                    .map(|(key, value)| key.capacity() + observable_tree_bytes(value))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scanner_verdicts_and_elements_match_a_value(body in arb_body()) {
        let as_value = serde_json::from_slice::<Value>(&body);
        match (as_value, data_elements(&body)) {
            (Err(_), Err(DeliveryParseError::NotJson(_))) => {}
            (Ok(value), Err(DeliveryParseError::NoDataArray)) => {
                prop_assert!(!value.get("data").is_some_and(Value::is_array));
            }
            (Ok(value), Ok(elements)) => {
                let expected = value["data"].as_array().unwrap();
                let mut last_end = 0;
                let mut found = Vec::new();
                for range in elements {
                    prop_assert!(range.start >= last_end && range.end <= body.len());
                    prop_assert!(found.len() <= expected.len(), "more elements than the array has");
                    last_end = range.end;
                    found.push(serde_json::from_slice::<Value>(&body[range]).unwrap());
                }
                prop_assert_eq!(&found, expected);
            }
            (value, scanned) => {
                prop_assert!(false, "{:?} vs {:?}", value.map(|_| "a value"), scanned.map(|_| "elements"));
            }
        }
    }

    #[test]
    fn member_finds_the_value_a_map_keeps(object in arb_json(), spaced in any::<bool>()) {
        let body = text(&object, spaced);
        let found = member(&body, "data").map(|range| serde_json::from_slice::<Value>(&body[range]).unwrap());
        // Compared with the text read back, not `object`: serde_json's float parsing does
        // not always give back the float it printed.
        let reread: Value = serde_json::from_slice(&body).unwrap();
        prop_assert_eq!(found.as_ref(), reread.as_object().and_then(|map| map.get("data")));
    }

    #[test]
    fn tree_cost_never_underestimates_what_a_value_holds(value in arb_json(), spaced in any::<bool>()) {
        let body = text(&value, spaced);
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        prop_assert!(tree_cost(&body) >= observable_tree_bytes(&parsed));
    }

    #[test]
    fn tree_cost_of_sample_events_with_any_data_stays_an_estimate(
        kind in any::<prop::sample::Index>(),
        data in arb_json(),
    ) {
        let types = testing::all_event_types();
        let event_type = kind.get(&types);
        let mut event = testing::sample_event(event_type, "e-1");
        event["data"] = data;
        let body = text(&json!(event), false);
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        prop_assert!(tree_cost(&body) >= observable_tree_bytes(&parsed));
    }
}
