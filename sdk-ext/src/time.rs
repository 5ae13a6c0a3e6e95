//! Time values of the API, typed as [`jiff::Timestamp`] instants.
//!
//! The reference sends time in three forms (section 2): ISO 8601 text ("timestamps are ISO
//! 8601 unless a field is said to be an epoch number": event `timestamp`, agent
//! `lastUpdated`, report `time`), epoch milliseconds (knowledge-base `createdOn`, assistant
//! `lastUpdated`, webhook delivery `timestamp`) and epoch seconds (webhook `expires`). The
//! generated types keep each field as sent, so the raw text or number stays reachable; the
//! areas' accessors (`occurred_at()`, `last_updated_at()`, `created_at()`, ...) read them
//! through the functions here. A value that does not read is a [`TimeError`] naming the
//! field and the value, never a panic.
//!
//! ```
//! use pubapi_sdk_ext::jiff::Timestamp;
//! use pubapi_sdk_ext::time::{instant, epoch_millis};
//!
//! let at: Timestamp = instant("timestamp", "2026-01-05T10:00:00Z")?;
//! assert_eq!(at, epoch_millis("createdOn", 1_767_607_200_000)?);
//! let err = instant("timestamp", "yesterday").unwrap_err();
//! assert_eq!(err.to_string(), "`timestamp` is not an iso 8601 instant: \"yesterday\"");
//! # Ok::<(), pubapi_sdk_ext::time::TimeError>(())
//! ```

use jiff::Timestamp;
use std::fmt;

/// A time field whose value is not a time the SDK can read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeError {
    /// An ISO 8601 field whose text is not an instant (a date and a time, with an offset or,
    /// as the reference's "ISO 8601 UTC", without one).
    NotAnInstant {
        /// The field's wire name.
        field: &'static str,
        /// The text as sent.
        text: String,
    },
    /// An epoch number outside the years -9999 to 9999.
    OutOfRange {
        /// The field's wire name.
        field: &'static str,
        /// The number as sent.
        value: i64,
        /// What the number counts.
        unit: EpochUnit,
    },
}

/// What an epoch number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EpochUnit {
    /// Seconds since 1970-01-01T00:00:00Z (webhook `expires`).
    Seconds,
    /// Milliseconds since 1970-01-01T00:00:00Z (`createdOn`, assistant `lastUpdated`, ...).
    Milliseconds,
}

impl TimeError {
    /// The wire name of the field that did not read.
    pub fn field(&self) -> &'static str {
        match self {
            TimeError::NotAnInstant { field, .. } | TimeError::OutOfRange { field, .. } => field,
        }
    }
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::NotAnInstant { field, text } => {
                write!(f, "`{field}` is not an iso 8601 instant: {text:?}")
            }
            TimeError::OutOfRange { field, value, unit } => {
                let unit = match unit {
                    EpochUnit::Seconds => "seconds",
                    EpochUnit::Milliseconds => "milliseconds",
                };
                write!(f, "`{field}` is out of range as epoch {unit}: {value}")
            }
        }
    }
}

impl std::error::Error for TimeError {}

/// Reads the ISO 8601 text of `field` as an instant.
///
/// Takes RFC 3339 and the ISO 8601 forms with an offset (`Z`, `+02:00`, fractions of a
/// second), and a date with a time but no offset as UTC (the reference calls agent
/// `lastUpdated` an "ISO 8601 UTC timestamp"). A date alone is not an instant.
pub fn instant(field: &'static str, text: &str) -> Result<Timestamp, TimeError> {
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let not_an_instant = || TimeError::NotAnInstant {
        field,
        text: text.to_string(),
    };
    // Without an offset: only a date and a time, nothing after the time (an offset that did
    // not read above must not be dropped silently here).
    let (_, time) = text
        .split_once(['T', 't', ' '])
        .ok_or_else(not_an_instant)?;
    if time.contains(['Z', 'z', '+', '-', '[']) {
        return Err(not_an_instant());
    }
    text.parse::<jiff::civil::DateTime>()
        .ok()
        .and_then(|civil| jiff::tz::Offset::UTC.to_timestamp(civil).ok())
        .ok_or_else(not_an_instant)
}

/// Reads `field`'s epoch milliseconds as an instant.
pub fn epoch_millis(field: &'static str, value: i64) -> Result<Timestamp, TimeError> {
    Timestamp::from_millisecond(value).map_err(|_| TimeError::OutOfRange {
        field,
        value,
        unit: EpochUnit::Milliseconds,
    })
}

/// Reads `field`'s epoch seconds as an instant.
pub fn epoch_seconds(field: &'static str, value: i64) -> Result<Timestamp, TimeError> {
    Timestamp::from_second(value).map_err(|_| TimeError::OutOfRange {
        field,
        value,
        unit: EpochUnit::Seconds,
    })
}

/// Reads an optional ISO 8601 field: `Ok(None)` when absent.
pub(crate) fn optional_instant(
    field: &'static str,
    text: Option<&str>,
) -> Result<Option<Timestamp>, TimeError> {
    text.map(|text| instant(field, text)).transpose()
}

/// Reads an optional epoch-milliseconds field: `Ok(None)` when absent.
pub(crate) fn optional_epoch_millis(
    field: &'static str,
    value: Option<i64>,
) -> Result<Option<Timestamp>, TimeError> {
    value.map(|value| epoch_millis(field, value)).transpose()
}

/// `at` as the decimal text of its epoch milliseconds, the form the SDK sends where the
/// reference types a time filter `string` and the platform's clients send epoch milliseconds.
pub(crate) fn millis_text(at: Timestamp) -> String {
    at.as_millisecond().to_string()
}

/// The wall clock: the one place `pubapi-sdk-ext` reads the machine's time of day (the
/// workspace's `clippy.toml` refuses `SystemTime::now` elsewhere). It is for comparing with a
/// time the server sent or the spec states (a `Retry-After` date, a token's expiry, a sunset, a
/// lease); what waits or paces reads tokio's clock instead, which tests pause.
#[allow(
    clippy::disallowed_methods,
    reason = "the crate's one reading of the wall clock"
)]
pub(crate) fn now() -> std::time::SystemTime {
    std::time::SystemTime::now()
}

/// A duration as a person reads it in a message: `3h 21m 47s`, `2m`, `45s`, `2d 4h` (the
/// three largest units at most, none that is zero); below a second, milliseconds (`250ms`).
/// What the SDK's `Display` of an error shows for a wait, a reset or a retry.
///
/// ```
/// use std::time::Duration;
/// use pubapi_sdk_ext::time::HumanDuration;
///
/// assert_eq!(HumanDuration(Duration::from_secs(12_107)).to_string(), "3h 21m 47s");
/// assert_eq!(HumanDuration(Duration::from_secs(120)).to_string(), "2m");
/// assert_eq!(HumanDuration(Duration::from_millis(250)).to_string(), "250ms");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub std::time::Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.as_secs();
        if secs == 0 {
            return write!(f, "{}ms", self.0.as_millis());
        }
        let units = [
            (secs / 86_400, "d"),
            (secs / 3600 % 24, "h"),
            (secs / 60 % 60, "m"),
            (secs % 60, "s"),
        ];
        let first = units
            .iter()
            .position(|(n, _)| *n > 0)
            .unwrap_or(units.len());
        let mut separator = "";
        for (n, unit) in units[first..].iter().take(3).filter(|(n, _)| *n > 0) {
            write!(f, "{separator}{n}{unit}")?;
            separator = " ";
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn durations_read_as_a_person_reads_them() {
        use std::time::Duration;
        for (duration, shown) in [
            (Duration::from_secs(12_107), "3h 21m 47s"),
            (Duration::from_secs(7200), "2h"),
            (Duration::from_secs(90), "1m 30s"),
            (Duration::from_secs(45), "45s"),
            (Duration::from_secs(2 * 86_400 + 4 * 3600 + 59), "2d 4h"),
            (Duration::from_secs(86_400 + 61), "1d 1m"),
            (Duration::from_millis(1_999), "1s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::ZERO, "0ms"),
            (Duration::MAX, "213503982334601d 7h"),
        ] {
            assert_eq!(HumanDuration(duration).to_string(), shown, "{duration:?}");
        }
    }

    #[test]
    fn iso_8601_forms_the_platform_sends_are_read() {
        let at = |s: &str| instant("time", s).unwrap().as_millisecond();
        let base = 1_767_607_200_000; // 2026-01-05T10:00:00Z
        assert_eq!(at("2026-01-05T10:00:00Z"), base);
        assert_eq!(at("2026-01-05T10:00:00.123Z"), base + 123);
        assert_eq!(at("2026-01-05T12:00:00+02:00"), base);
        assert_eq!(at("2026-01-05t10:00:00z"), base);
        // "ISO 8601 UTC" without an offset.
        assert_eq!(at("2026-01-05T10:00:00"), base);
        assert_eq!(at("2026-01-05 10:00:00.5"), base + 500);
    }

    #[test]
    fn text_that_is_not_an_instant_is_an_error_naming_field_and_text() {
        for text in [
            "",
            "2026-01-05",
            "yesterday",
            "2026-13-05T10:00:00Z",
            "2026-01-05T10:00:00+26:00",
            "2026-01-05T10:00:00-",
            "1767607200000",
        ] {
            assert_eq!(
                instant("lastUpdated", text),
                Err(TimeError::NotAnInstant {
                    field: "lastUpdated",
                    text: text.to_string()
                }),
                "{text:?}"
            );
        }
    }

    #[test]
    fn epoch_numbers_out_of_range_are_errors() {
        assert_eq!(
            epoch_millis("createdOn", i64::MAX).unwrap_err().to_string(),
            format!(
                "`createdOn` is out of range as epoch milliseconds: {}",
                i64::MAX
            )
        );
        assert_eq!(
            epoch_seconds("expires", i64::MIN).unwrap_err().field(),
            "expires"
        );
        assert_eq!(epoch_seconds("expires", 0).unwrap(), Timestamp::UNIX_EPOCH);
        assert_eq!(millis_text(epoch_millis("x", -1).unwrap()), "-1");
    }

    proptest! {
        #[test]
        fn any_text_never_panics(text in ".{0,40}") {
            let _ = instant("timestamp", &text);
        }

        #[test]
        fn any_iso_shaped_text_never_panics(text in "[0-9]{1,5}-[0-9]{1,3}-[0-9]{1,3}[Tt ][0-9:.]{0,15}[Zz+\\-0-9:\\[\\]A-Za-z/]{0,12}") {
            let _ = instant("timestamp", &text);
        }

        #[test]
        fn every_valid_rfc_3339_instant_round_trips(
            year in 1i16..=9998, month in 1i8..=12, day in 1i8..=28,
            hour in 0i8..=23, minute in 0i8..=59, second in 0i8..=59,
            nanos in 0i32..1_000_000_000, digits in 0usize..=9,
            offset_minutes in -(23 * 60 + 59)..=(23 * 60 + 59i32), zulu in any::<bool>(),
        ) {
            // The fraction as written with `digits` digits.
            let fraction = nanos / 10i32.pow(9 - digits as u32);
            let frac_text = if digits == 0 { String::new() } else { format!(".{fraction:0digits$}") };
            let offset_minutes = if zulu { 0 } else { offset_minutes };
            let offset_text = if zulu {
                "Z".to_string()
            } else {
                let sign = if offset_minutes < 0 { '-' } else { '+' };
                let m = offset_minutes.abs();
                format!("{sign}{:02}:{:02}", m / 60, m % 60)
            };
            let text = format!(
                "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{frac_text}{offset_text}"
            );
            let civil = jiff::civil::date(year, month, day).at(
                hour, minute, second, fraction * 10i32.pow(9 - digits as u32),
            );
            let offset = jiff::tz::Offset::from_seconds(offset_minutes * 60).unwrap();
            let expected = offset.to_timestamp(civil).unwrap();
            let read = instant("timestamp", &text).unwrap();
            prop_assert_eq!(read, expected, "{}", text);
            // And back: the instant's own RFC 3339 text reads as the same instant.
            prop_assert_eq!(instant("timestamp", &read.to_string()).unwrap(), read);
        }

        #[test]
        fn every_epoch_millisecond_in_range_round_trips(ms in -30_000_000_000_000i64..=250_000_000_000_000) {
            let at = epoch_millis("createdOn", ms).unwrap();
            prop_assert_eq!(at.as_millisecond(), ms);
            prop_assert_eq!(millis_text(at), ms.to_string());
        }
    }
}
