//! Whether a JSON map fits a type, found without copying its strings, and the map then taken
//! apart into the type, its strings moved: so that
//! [`AuditEvent::from_json`](super::AuditEvent::from_json) can move the map's strings into the
//! typed event, knowing beforehand that the move cannot fail half way (which would lose the
//! strings already moved, and with them the map it keeps whole for a misfit).
//!
//! Both are one serde [`Deserializer`] ([`Reader`]) over the map, so that each type's visitor
//! is compiled once for the two. Read for its shape ([`Read::Shape`]), the map is left as it
//! is: a string is shown empty where the type asks for an owned `String`
//! (`deserialize_string`: an empty `String` allocates nothing) and as it is everywhere else
//! (keys, numbers, `&str`, enums, `Value`s). Taken apart ([`Read::Take`]), every string and
//! key is moved out of the map. A type for which an empty string and the string sent are not
//! alike (a `String` newtype that checks its content) would be told it fits when it may not:
//! the typed audit events (every field an `Option` of a string, an integer, a boolean or a
//! JSON value) have none, which the property test of `from_json` against the copying decode
//! keeps true.

use serde::Deserializer;
use serde::de::value::{CowStrDeserializer, SeqDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Error, Map, Value};
use std::borrow::Cow;

/// Whether `map` would decode into a `T`; the map is left as it is.
pub(super) fn fits<T: DeserializeOwned>(map: &mut Map<String, Value>) -> bool {
    T::deserialize(Reader::map(map, Read::Shape)).is_ok()
}

/// `map` as a `T`, its strings and keys moved out (the map is left emptied).
pub(super) fn take<T: DeserializeOwned>(map: &mut Map<String, Value>) -> Result<T, Error> {
    T::deserialize(Reader::map(map, Read::Take))
}

/// How a [`Reader`] reads.
#[derive(Clone, Copy)]
enum Read {
    /// For the shape: nothing is changed, owned strings are shown empty.
    Shape,
    /// Taken apart: strings and keys are moved out.
    Take,
}

/// A map, or one value in it, read as `read` says.
struct Reader<'a> {
    target: Target<'a>,
    read: Read,
}

/// What a [`Reader`] reads.
enum Target<'a> {
    Map(&'a mut Map<String, Value>),
    Value(&'a mut Value),
}

impl<'a> Reader<'a> {
    fn map(map: &'a mut Map<String, Value>, read: Read) -> Reader<'a> {
        Reader {
            target: Target::Map(map),
            read,
        }
    }
}

/// The entries of a map: looked at in place, or moved out of it.
enum Entries<'a> {
    Shape {
        entries: serde_json::map::IterMut<'a>,
        value: Option<&'a mut Value>,
    },
    Take {
        entries: serde_json::map::IntoIter,
        value: Option<Value>,
    },
}

impl<'a> Entries<'a> {
    fn of(map: &'a mut Map<String, Value>, read: Read) -> Entries<'a> {
        match read {
            Read::Shape => Entries::Shape {
                entries: map.iter_mut(),
                value: None,
            },
            Read::Take => Entries::Take {
                entries: std::mem::take(map).into_iter(),
                value: None,
            },
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let key = match self {
            Entries::Shape { entries, value } => entries.next().map(|(key, next)| {
                *value = Some(next);
                Cow::Borrowed(key.as_str())
            }),
            Entries::Take { entries, value } => entries.next().map(|(key, next)| {
                *value = Some(next);
                Cow::Owned(key)
            }),
        };
        key.map(|key| seed.deserialize(CowStrDeserializer::new(key)))
            .transpose()
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let mut null = Value::Null;
        match self {
            Entries::Shape { value, .. } => seed.deserialize(Reader {
                target: Target::Value(value.take().unwrap_or(&mut null)),
                read: Read::Shape,
            }),
            Entries::Take { value, .. } => {
                let mut value = value.take().unwrap_or(Value::Null);
                seed.deserialize(Reader {
                    target: Target::Value(&mut value),
                    read: Read::Take,
                })
            }
        }
    }
}

impl<'de> IntoDeserializer<'de, Error> for Reader<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for Reader<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let read = self.read;
        let value = match self.target {
            Target::Map(map) => return visitor.visit_map(Entries::of(map, read)),
            Target::Value(value) => value,
        };
        match value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => n.clone().deserialize_any(visitor),
            Value::String(s) => match read {
                Read::Shape => visitor.visit_str(s),
                Read::Take => visitor.visit_string(std::mem::take(s)),
            },
            Value::Array(items) => {
                visitor.visit_seq(SeqDeserializer::new(items.iter_mut().map(|item| Reader {
                    target: Target::Value(item),
                    read,
                })))
            }
            Value::Object(map) => visitor.visit_map(Entries::of(map, read)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.target {
            Target::Value(Value::Null) => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match (&self.target, self.read) {
            // What the type makes of an owned string does not depend on it here (see the
            // module docs): an empty one allocates nothing.
            (Target::Value(Value::String(_)), Read::Shape) => visitor.visit_str(""),
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
            let mut read = map.clone();
            assert_eq!(fits::<Login>(&mut read), decodes, "{map:?}");
            assert_eq!(read, map, "read for its shape, the map is left as it is");
            let taken = take::<Login>(&mut read).map(|login| format!("{login:?}"));
            let copied = Login::deserialize(&map).map(|login| format!("{login:?}"));
            assert_eq!(taken.ok(), copied.ok(), "{map:?}");
        }
    }
}
