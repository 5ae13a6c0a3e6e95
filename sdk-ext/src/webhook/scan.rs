//! Finding the elements of a delivery's `data` array without building a JSON tree.
//!
//! serde_json first checks that the whole body is JSON, without keeping anything of it
//! ([`Valid`]); after that the scanner only has to find where values start and end, which
//! it does in one pass with no allocation and no recursion. Each element is then read on its
//! own, so the memory of a delivery is its elements' one at a time, never a tree of the
//! whole body.

use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::parse_error::DeliveryParseError;

/// The elements of a body's `data` array, as byte ranges of the body, in order.
#[derive(Debug, Clone)]
pub(crate) struct Elements<'a> {
    body: &'a [u8],
    /// Where to look for the next element.
    pos: usize,
    /// The position of the array's closing `]`.
    end: usize,
}

/// Checks that `body` is JSON and finds its `data` array.
///
/// Same verdicts as parsing into a [`serde_json::Value`]: not JSON (including invalid UTF-8,
/// lone surrogates and nesting deeper than serde_json's limit) is
/// [`DeliveryParseError::NotJson`]; anything but an object whose `data` (the last one, if
/// repeated) is an array is [`DeliveryParseError::NoDataArray`].
pub(crate) fn data_elements(body: &[u8]) -> Result<Elements<'_>, DeliveryParseError> {
    serde_json::from_slice::<Valid>(body).map_err(DeliveryParseError::NotJson)?;
    match member(body, "data") {
        Some(range) if body.get(range.start) == Some(&b'[') && range.len() >= 2 => Ok(Elements {
            body,
            pos: range.start + 1,
            end: range.end - 1,
        }),
        _ => Err(DeliveryParseError::NoDataArray),
    }
}

/// The range of the value of member `name` of the JSON object `object` (already known to be
/// valid JSON), the last one if repeated; `None` if `object` is not an object or has no
/// such member.
pub(crate) fn member(object: &[u8], name: &str) -> Option<Range<usize>> {
    let mut scanner = Scanner {
        body: object,
        pos: 0,
    };
    scanner.skip_whitespace();
    if scanner.peek() != Some(b'{') {
        return None;
    }
    scanner.pos += 1;
    let mut found = None;
    loop {
        scanner.skip_whitespace();
        match scanner.peek() {
            Some(b',') => {
                scanner.pos += 1;
                continue;
            }
            Some(b'"') => {}
            _ => return found,
        }
        let key = scanner.value()?;
        scanner.skip_whitespace();
        if scanner.peek() != Some(b':') {
            return None;
        }
        scanner.pos += 1;
        scanner.skip_whitespace();
        let value = scanner.value()?;
        if is_key(object.get(key).unwrap_or_default(), name) {
            found = Some(value);
        }
    }
}

impl Iterator for Elements<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let mut scanner = Scanner {
            body: self.body,
            pos: self.pos,
        };
        scanner.skip_whitespace();
        if scanner.peek() == Some(b',') {
            scanner.pos += 1;
            scanner.skip_whitespace();
        }
        if scanner.pos >= self.end {
            self.pos = self.end;
            return None;
        }
        let range = scanner.value()?;
        // A value always moves the scanner on; stop rather than loop if it ever did not.
        self.pos = if scanner.pos > self.pos {
            scanner.pos
        } else {
            self.end
        };
        Some(range)
    }
}

/// An upper estimate of the heap a [`serde_json::Value`] tree of this JSON text takes, in
/// bytes, on a 64-bit target: 32 bytes per slot of each array's `Vec` (at least 4 slots,
/// then powers of two), 640 bytes per `BTreeMap` node of each object (one node up to 11
/// entries, then at most one per 4), and the length of each string and key.
///
/// Dense text is what makes a tree expensive: `[[[[]]]]` costs 64 bytes per byte, and a run
/// of one-entry objects about 90. Real events cost 5 to 10 bytes per byte.
pub(crate) fn tree_cost(raw: &[u8]) -> usize {
    struct Open {
        object: bool,
        commas: usize,
        empty: bool,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut cost = 0_usize;
    let mut scanner = Scanner { body: raw, pos: 0 };
    while let Some(byte) = scanner.peek() {
        match byte {
            b'"' => {
                let start = scanner.pos;
                if scanner.string().is_none() {
                    break;
                }
                cost = cost.saturating_add(scanner.pos - start);
                if let Some(top) = open.last_mut() {
                    top.empty = false;
                }
                continue;
            }
            b'{' | b'[' => {
                if let Some(top) = open.last_mut() {
                    top.empty = false;
                }
                open.push(Open {
                    object: byte == b'{',
                    commas: 0,
                    empty: true,
                });
            }
            b'}' | b']' => {
                if let Some(closed) = open.pop() {
                    let entries = if closed.empty { 0 } else { closed.commas + 1 };
                    cost = cost.saturating_add(container_cost(closed.object, entries));
                }
            }
            b',' => {
                if let Some(top) = open.last_mut() {
                    top.commas += 1;
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            _ => {
                if let Some(top) = open.last_mut() {
                    top.empty = false;
                }
            }
        }
        scanner.pos += 1;
    }
    cost
}

fn container_cost(object: bool, entries: usize) -> usize {
    const NODE: usize = 640;
    const SLOT: usize = 32;
    match (object, entries) {
        (_, 0) => 0,
        (true, 1..=11) => NODE,
        (true, _) => NODE.saturating_mul(entries / 4 + 2),
        (false, _) => SLOT.saturating_mul(
            entries
                .checked_next_power_of_two()
                .unwrap_or(usize::MAX)
                .max(4),
        ),
    }
}

/// Whether a key, as written (with its quotes and any escapes), is `name`.
fn is_key(raw: &[u8], name: &str) -> bool {
    match raw {
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => inner == name.as_bytes(),
        _ => serde_json::from_slice::<String>(raw).is_ok_and(|key| key == name),
    }
}

/// A cursor over JSON already known to be valid.
struct Scanner<'a> {
    body: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.body.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// Skips the value starting here and returns its range; `None` only if the input was
    /// not valid JSON after all.
    fn value(&mut self) -> Option<Range<usize>> {
        let start = self.pos;
        match self.peek()? {
            b'"' => self.string()?,
            b'{' | b'[' => {
                let mut depth = 0_usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.pos += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while let Some(byte) = self.peek() {
                    if matches!(byte, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
            }
        }
        (self.pos > start).then_some(start..self.pos)
    }

    /// Skips the string whose opening quote is here.
    fn string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            let rest = self.body.get(self.pos..)?;
            let at = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
            self.pos += at;
            if rest[at] == b'"' {
                self.pos += 1;
                return Some(());
            }
            self.pos += 2;
        }
    }
}

/// Any JSON value serde_json would read into a [`serde_json::Value`], checked and dropped:
/// strings are decoded (UTF-8, escapes, surrogates) and numbers parsed, but nothing is kept.
struct Valid;

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValidVisitor)
    }
}

struct ValidVisitor;

impl<'de> Visitor<'de> for ValidVisitor {
    type Value = Valid;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Valid)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_entry::<Valid, Valid>()?.is_some() {}
        Ok(Valid)
    }
}

#[cfg(test)]
mod tests {
    use super::{DeliveryParseError, data_elements};

    fn elements(body: &str) -> Result<Vec<&str>, DeliveryParseError> {
        Ok(data_elements(body.as_bytes())?
            .map(|range| &body[range])
            .collect())
    }

    #[test]
    fn finds_each_element_of_data_whatever_it_holds() {
        let body = r#" { "x": [1, {"data": 2}], "data" : [ 1 , "a,]\"}" ,{"b":[{}, "]"]},[] ,null,-1.5e3] } "#;
        assert_eq!(
            elements(body).unwrap(),
            [
                "1",
                r#""a,]\"}""#,
                r#"{"b":[{}, "]"]}"#,
                "[]",
                "null",
                "-1.5e3"
            ]
        );
        assert!(elements(r#"{"data": []}"#).unwrap().is_empty());
        assert!(elements(r#"{"data": [ ]}"#).unwrap().is_empty());
    }

    #[test]
    fn the_last_data_key_counts_even_when_escaped() {
        assert_eq!(
            elements(r#"{"data": [1], "d\u0061ta": [2]}"#).unwrap(),
            ["2"]
        );
        assert!(matches!(
            elements(r#"{"data": [1], "data": {}}"#),
            Err(DeliveryParseError::NoDataArray)
        ));
        assert!(matches!(
            elements(r#"{"dat\"a": [1]}"#),
            Err(DeliveryParseError::NoDataArray)
        ));
    }

    #[test]
    fn verdicts_match_parsing_into_a_value() {
        let deep = format!("{{\"data\": [{}{}]}}", "[".repeat(200), "]".repeat(200));
        let cases: &[&[u8]] = &[
            b"",
            b"[]",
            b"{}",
            b"{\"data\": 1}",
            b"{\"data\": [1,]}",
            b"{\"data\": []} x",
            b"{\"data\": [\"\\ud800\"]}",
            b"{\"data\": [\"\xff\"]}",
            b"{\"data\": [1e999]}",
            deep.as_bytes(),
            b"{\"data\": [1, 2]}",
        ];
        for body in cases {
            let as_value = serde_json::from_slice::<serde_json::Value>(body);
            let scanned = data_elements(body);
            match (&as_value, &scanned) {
                (Err(_), Err(DeliveryParseError::NotJson(_))) => {}
                (Ok(value), Ok(found)) => {
                    let items = value["data"].as_array().unwrap();
                    let read: Vec<serde_json::Value> = found
                        .clone()
                        .map(|range| serde_json::from_slice(&body[range]).unwrap())
                        .collect();
                    assert_eq!(&read, items);
                }
                (Ok(value), Err(DeliveryParseError::NoDataArray)) => {
                    assert!(!value["data"].is_array());
                }
                _ => panic!(
                    "{}: {as_value:?} vs {scanned:?}",
                    String::from_utf8_lossy(body)
                ),
            }
        }
    }
}
