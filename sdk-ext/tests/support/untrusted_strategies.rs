//! Strategies shared by the property tests of untrusted input, each written once here: the
//! crate's unit tests of the request machinery (`src/request/proptest_untrusted.rs`) and of
//! the webhook scanner (`src/webhook/tests/properties.rs`), which include this file by path,
//! and the receiver's integration tests (`tests/proptest_untrusted.rs`).

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value};

/// Any JSON value, small: every scalar kind, strings of any characters, nesting to 4 levels,
/// keys often the names the parsers look for.
pub(crate) fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        let key = prop_oneof![
            Just("data".to_owned()),
            Just("eventId".to_owned()),
            Just("code".to_owned()),
            Just("Errors".to_owned()),
            Just("fault".to_owned()),
            ".{0,5}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Flips, inserts or truncates a few bytes.
pub(crate) fn mutate(mut bytes: Vec<u8>, edits: Vec<(Index, u8, u8)>) -> Vec<u8> {
    for (at, byte, kind) in edits {
        let at = at.index(bytes.len() + 1);
        match kind % 3 {
            0 if at < bytes.len() => bytes[at] ^= byte | 1,
            1 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
    }
    bytes
}

pub(crate) fn arb_edits() -> impl Strategy<Value = Vec<(Index, u8, u8)>> {
    prop::collection::vec((any::<Index>(), any::<u8>(), any::<u8>()), 1..4)
}
