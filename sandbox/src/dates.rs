//! Dates on epoch milliseconds (UTC), on `jiff`'s calendar: ISO 8601 formatting, the HTTP
//! date, the CSV reports' short form, and the two request date forms of the reference
//! (`YYYY-MM-DD` and `YYYY-MM-DDTHH:MM:SSZ`).
//!
//! Instants are split into a day (counted from 1970-01-01) and the milliseconds into it, so
//! that every instant of the sandbox's clock, up to 9999-12-31T23:59:59.999Z, has its date
//! (a `jiff::Timestamp` stops a day short of it).

use jiff::civil::Date;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// 1970-01-01, day 0.
const EPOCH: Date = jiff::civil::date(1970, 1, 1);

/// The date `(year, month, day)`, if there is one in years -9999 to 9999.
fn civil((year, month, day): (i64, u32, u32)) -> Option<Date> {
    let year = i16::try_from(year).ok()?;
    let month = i8::try_from(month).ok()?;
    let day = i8::try_from(day).ok()?;
    Date::new(year, month, day).ok()
}

/// Days since 1970-01-01 of `date`.
fn days_of(date: Date) -> i64 {
    i64::from(EPOCH.until(date).map_or(0, |span| span.get_days()))
}

/// Epoch milliseconds of midnight UTC on the date `(year, month, day)` of a built-in table.
///
/// # Panics
/// When the table holds no such date.
pub fn midnight_ms(date: (i64, u32, u32)) -> i64 {
    let date = civil(date).unwrap_or_else(|| panic!("{date:?} is not a date"));
    days_of(date) * DAY_MS
}

/// The date of the instant `ms` and the seconds into its day (an instant before year -9999
/// or after 9999 has the first or last date).
fn date_and_seconds(ms: i64) -> (Date, i64) {
    let days = ms.div_euclid(DAY_MS);
    let date = jiff::Span::new()
        .try_days(days)
        .and_then(|span| EPOCH.checked_add(span))
        .unwrap_or(if days < 0 { Date::MIN } else { Date::MAX });
    (date, ms.rem_euclid(DAY_MS) / 1000)
}

/// `2025-03-03T09:00:00Z` (seconds precision, UTC).
pub fn iso_seconds(ms: i64) -> String {
    let (date, rest) = date_and_seconds(ms);
    let (y, m, d) = (date.year(), date.month(), date.day());
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// `2025-03-03T09:00:00.000Z` (milliseconds precision, UTC).
pub fn iso_millis(ms: i64) -> String {
    let seconds = iso_seconds(ms);
    format!(
        "{}.{:03}Z",
        seconds.trim_end_matches('Z'),
        ms.rem_euclid(1000)
    )
}

/// `Wed, 30 Sep 2026 00:00:00 GMT`: an HTTP date (RFC 9110 IMF-fixdate), as in `Sunset`.
pub fn http_date(ms: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (date, rest) = date_and_seconds(ms);
    let (y, m, d) = (date.year(), date.month(), date.day());
    let weekday = WEEKDAYS[date.weekday().to_sunday_zero_offset() as usize];
    format!(
        "{weekday}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        MONTHS[(m - 1) as usize],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// `3/3/25 09:00:00` (UTC): month and day without leading zeros, a two-digit year and the
/// time to the second, the form of the title row of the platform's CSV reports (a published
/// client of the platform expects `This report reflects activity up to 2/24/17 23:59:59` for a
/// report ending on 2017-02-24).
pub fn us_short_datetime(ms: i64) -> String {
    let (date, rest) = date_and_seconds(ms);
    let (y, m, d) = (date.year(), date.month(), date.day());
    format!(
        "{m}/{d}/{:02} {:02}:{:02}:{:02}",
        y.rem_euclid(100),
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// `2025-03-03` (UTC).
#[cfg(test)]
fn iso_date(ms: i64) -> String {
    let (date, _) = date_and_seconds(ms);
    let (y, m, d) = (date.year(), date.month(), date.day());
    format!("{y:04}-{m:02}-{d:02}")
}

/// A request date as the reference allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestDate {
    /// The instant, epoch milliseconds (midnight UTC for a plain date).
    pub ms: i64,
    /// Whether a time portion was given.
    pub has_time: bool,
}

impl RequestDate {
    /// Midnight UTC of the same day.
    pub fn day_start(self) -> i64 {
        self.ms.div_euclid(DAY_MS) * DAY_MS
    }
}

/// Parses `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`; anything else is `None`.
pub fn parse_request_date(text: &str) -> Option<RequestDate> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if bytes.len() != 10 && bytes.len() != 20 {
        return None;
    }
    if bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = digits(0..4)?;
    let month = u32::try_from(digits(5..7)?).ok()?;
    let day = u32::try_from(digits(8..10)?).ok()?;
    let mut ms = days_of(civil((year, month, day))?) * DAY_MS;
    if bytes.len() == 10 {
        return Some(RequestDate {
            ms,
            has_time: false,
        });
    }
    if bytes[10] != b'T' || bytes[13] != b':' || bytes[16] != b':' || bytes[19] != b'Z' {
        return None;
    }
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    ms += ((h * 60 + mi) * 60 + s) * 1000;
    Some(RequestDate { ms, has_time: true })
}

/// Parses a plain `YYYY-MM-DD` date into midnight UTC.
pub fn parse_plain_date(text: &str) -> Option<i64> {
    parse_request_date(text)
        .filter(|d| !d.has_time)
        .map(|d| d.ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for days in [-800_000, -1, 0, 1, 59, 365, 11_016, 20_150, 2_000_000] {
            let (date, seconds) = date_and_seconds(days * DAY_MS + 1_999);
            assert_eq!((days_of(date), seconds), (days, 1));
            let ymd = (
                i64::from(date.year()),
                date.month() as u32,
                date.day() as u32,
            );
            assert_eq!(midnight_ms(ymd), days * DAY_MS);
        }
        assert_eq!(midnight_ms((1970, 1, 1)), 0);
        assert_eq!(midnight_ms((2000, 3, 1)), 11_017 * DAY_MS);
    }

    #[test]
    fn the_clocks_last_instant_has_its_date() {
        assert_eq!(iso_millis(crate::clock::MAX_MS), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            http_date(crate::clock::MAX_MS),
            "Fri, 31 Dec 9999 23:59:59 GMT"
        );
    }

    #[test]
    fn formats_iso_8601() {
        let ms = midnight_ms((2025, 3, 3)) + 9 * 3_600_000 + 5_123;
        assert_eq!(iso_seconds(ms), "2025-03-03T09:00:05Z");
        assert_eq!(iso_millis(ms), "2025-03-03T09:00:05.123Z");
        assert_eq!(iso_date(ms), "2025-03-03");
    }

    #[test]
    fn formats_http_dates() {
        assert_eq!(
            http_date(midnight_ms((2026, 9, 30))),
            "Wed, 30 Sep 2026 00:00:00 GMT"
        );
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(midnight_ms((2024, 2, 29)) + 86_399_999),
            "Thu, 29 Feb 2024 23:59:59 GMT"
        );
    }

    #[test]
    fn formats_the_short_us_form_of_csv_titles() {
        let end = midnight_ms((2017, 2, 25)) - 1;
        assert_eq!(us_short_datetime(end), "2/24/17 23:59:59");
        let ms = midnight_ms((2025, 3, 3)) + 9 * 3_600_000 + 5_123;
        assert_eq!(us_short_datetime(ms), "3/3/25 09:00:05");
        assert_eq!(
            us_short_datetime(midnight_ms((2100, 12, 31))),
            "12/31/00 00:00:00"
        );
    }

    #[test]
    fn parses_both_request_date_forms_only() {
        let d = parse_request_date("2024-02-29").unwrap();
        assert!(!d.has_time);
        assert_eq!(iso_date(d.ms), "2024-02-29");
        let t = parse_request_date("2024-02-29T23:59:59Z").unwrap();
        assert!(t.has_time);
        assert_eq!(iso_seconds(t.ms), "2024-02-29T23:59:59Z");
        assert_eq!(t.day_start(), d.ms);
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024-01-01T10:00:00",
            "2024-01-01T24:00:00Z",
            "2024-01-01 10:00:00Z",
            "2024-01-01T10:00:00+01:00",
            "yesterday",
            "",
        ] {
            assert!(parse_request_date(bad).is_none(), "{bad}");
        }
    }
}
