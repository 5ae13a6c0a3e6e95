//! Identifiers that may be JSON strings or integers.
//!
//! The reference gives no type for most ids inside `data` (a user id is an integer in the
//! envelope, file ids are strings in the events API). Accepting both, kept as text, means a
//! delivery does not fall back to [`EventData::Unknown`](super::EventData::Unknown) over the
//! spelling of an id.

use std::fmt;

use serde::Deserializer;
use serde::de::{Error, Visitor};

struct IdText;

impl Visitor<'_> for IdText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id as a string or an integer")
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }

    fn visit_string<E: Error>(self, value: String) -> Result<String, E> {
        Ok(value)
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<String, E> {
        Ok(value.to_string())
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<String, E> {
        Ok(value.to_string())
    }
}

struct OptionalIdText;

impl<'de> Visitor<'de> for OptionalIdText {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or an id as a string or an integer")
    }

    fn visit_none<E: Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<String>, D::Error> {
        required(deserializer).map(Some)
    }
}

/// A required id: a string, or an integer kept as its decimal text.
pub(super) fn required<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    deserializer.deserialize_any(IdText)
}

/// An optional or nullable id (use with `#[serde(default)]`).
pub(super) fn optional<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    deserializer.deserialize_option(OptionalIdText)
}
