//! Reading the `Retry-After` header (of a throttle, for the [verdict](crate::verdict) on an answer).
//!
//! The header is either delta-seconds (`120`) or an HTTP-date. A date is
//! turned into a delay relative to a `now` the caller passes in (so tests
//! and clock-skew handling stay in the caller's hands); a date in the past
//! means "now", a zero delay. Anything else is ignored, and the caller falls
//! back to its own backoff.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
use http::header::RETRY_AFTER;

/// The delay a `Retry-After` value asks for, or `None` when it is neither
/// delta-seconds nor an HTTP-date.
///
/// Delta-seconds too large for `u64` saturate at `u64::MAX` seconds; callers
/// cap the delay they honour anyway.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches([' ', '\t']);
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The delay asked for by the first `Retry-After` header in `headers`.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use std::time::UNIX_EPOCH;

    /// Sun, 06 Nov 1994 08:49:37 GMT, the RFC 9110 example date.
    const EXAMPLE: u64 = 784_111_777;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn delta_seconds_are_a_delay() {
        for (value, secs) in [("0", 0), ("1", 1), ("120", 120), (" 30 ", 30), ("007", 7)] {
            assert_eq!(
                parse_retry_after(value, at(0)),
                Some(Duration::from_secs(secs))
            );
        }
    }

    #[test]
    fn huge_delta_seconds_saturate() {
        assert_eq!(
            parse_retry_after("99999999999999999999999", at(0)),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn all_three_http_date_formats_are_relative_to_now() {
        let now = at(EXAMPLE - 90);
        for value in [
            "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
            "Sunday, 06-Nov-94 08:49:37 GMT", // RFC 850
            "Sun Nov  6 08:49:37 1994",       // asctime
        ] {
            assert_eq!(
                parse_retry_after(value, now),
                Some(Duration::from_secs(90)),
                "{value}"
            );
        }
    }

    #[test]
    fn a_date_in_the_past_is_zero() {
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(EXAMPLE + 3600)),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(EXAMPLE)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn garbage_is_none() {
        for value in [
            "",
            " ",
            "-1",
            "1.5",
            "+5",
            "5s",
            "0x10",
            "soon",
            "Sun, 06 Nov 1994",
            "١٢",
            "1 2",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_retry_after(value, at(0)), None, "{value:?}");
        }
    }

    #[test]
    fn header_is_read_from_the_map() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, at(0)), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("15"));
        assert_eq!(retry_after(&headers, at(0)), Some(Duration::from_secs(15)));
        headers.insert(RETRY_AFTER, HeaderValue::from_bytes(b"\xff1").unwrap());
        assert_eq!(retry_after(&headers, at(0)), None);
    }
}
