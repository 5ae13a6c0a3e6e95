//! Whether a JSON map fits a type, found without copying its strings: so that
//! [`AuditEvent::from_json`](super::AuditEvent::from_json) can move the map's strings into the
//! typed event, knowing beforehand that the move cannot fail half way (which would lose the
//! strings already moved, and with them the map it keeps whole for a misfit).
//!
//! The map is read as a serde [`Deserializer`] that shows a string empty where the type asks
//! for an owned `String` (`deserialize_string`: an empty `String` allocates nothing) and as it
//! is everywhere else (keys, numbers, `&str`, enums, `Value`s). A type for which an empty
//! string and the string sent are not alike (a `String` newtype that checks its content)
//! would be told it fits when it may not: the typed audit events (every field an `Option` of
//! a string, an integer, a boolean or a JSON value) have none, which the property test of
//! `from_json` against the copying decode keeps true.

use serde::Deserializer;
use serde::de::value::{BorrowedStrDeserializer, SeqDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Error, Map, Value};

/// Whether `map` would decode into a `T`.
pub(super) fn fits<T: DeserializeOwned>(map: &Map<String, Value>) -> bool {
    T::deserialize(Shape(map)).is_ok()
}

/// A map, read for its shape.
struct Shape<'de>(&'de Map<String, Value>);

/// One value of a map, read for its shape.
struct ShapeValue<'de>(&'de Value);

/// The entries of a map, read for their shape.
struct Entries<'de> {
    entries: serde_json::map::Iter<'de>,
    value: Option<&'de Value>,
}

impl<'de> Deserializer<'de> for Shape<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(Entries {
            entries: self.0.iter(),
            value: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let value = self.value.take().unwrap_or(&Value::Null);
        seed.deserialize(ShapeValue(value))
    }
}

impl<'de> IntoDeserializer<'de, Error> for ShapeValue<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for ShapeValue<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => n.deserialize_any(visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                visitor.visit_seq(SeqDeserializer::new(items.iter().map(ShapeValue)))
            }
            Value::Object(map) => Shape(map).deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            // What the type makes of an owned string does not depend on it here (see the
            // module docs): an empty one allocates nothing.
            Value::String(_) => visitor.visit_str(""),
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Login {
        username: Option<String>,
        user_id: Option<i64>,
        ok: Option<bool>,
        any: Option<Value>,
    }

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn a_map_fits_exactly_when_it_decodes() {
        for value in [
            json!({"username": "alice", "user_id": 7, "ok": true, "any": [1, "x", {"a": null}]}),
            json!({"username": null, "other": "ignored"}),
            json!({}),
            json!({"username": 7}),
            json!({"user_id": "seven"}),
            json!({"user_id": 1.5}),
            json!({"user_id": u64::MAX}),
            json!({"ok": "true"}),
            json!({"username": ["alice"]}),
        ] {
            let map = map(value);
            let decodes = Login::deserialize(&map).is_ok();
            assert_eq!(fits::<Login>(&map), decodes, "{map:?}");
        }
    }
}
