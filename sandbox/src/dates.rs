//! Calendar arithmetic on epoch milliseconds (UTC), without a date crate: ISO 8601
//! formatting and the two request date forms of the reference (`YYYY-MM-DD` and
//! `YYYY-MM-DDTHH:MM:SSZ`).

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// `2025-03-03T09:00:00Z` (seconds precision, UTC).
pub fn iso_seconds(ms: i64) -> String {
    let days = ms.div_euclid(DAY_MS);
    let rest = ms.rem_euclid(DAY_MS) / 1000;
    let (y, m, d) = civil_from_days(days);
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
    let days = ms.div_euclid(DAY_MS);
    let rest = ms.rem_euclid(DAY_MS) / 1000;
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let weekday = WEEKDAYS[(days + 4).rem_euclid(7) as usize];
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
    let days = ms.div_euclid(DAY_MS);
    let rest = ms.rem_euclid(DAY_MS) / 1000;
    let (y, m, d) = civil_from_days(days);
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
    let (y, m, d) = civil_from_days(ms.div_euclid(DAY_MS));
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
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * DAY_MS;
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
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn formats_iso_8601() {
        let ms = days_from_civil(2025, 3, 3) * DAY_MS + 9 * 3_600_000 + 5_123;
        assert_eq!(iso_seconds(ms), "2025-03-03T09:00:05Z");
        assert_eq!(iso_millis(ms), "2025-03-03T09:00:05.123Z");
        assert_eq!(iso_date(ms), "2025-03-03");
    }

    #[test]
    fn formats_http_dates() {
        assert_eq!(
            http_date(days_from_civil(2026, 9, 30) * DAY_MS),
            "Wed, 30 Sep 2026 00:00:00 GMT"
        );
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(days_from_civil(2024, 2, 29) * DAY_MS + 86_399_999),
            "Thu, 29 Feb 2024 23:59:59 GMT"
        );
    }

    #[test]
    fn formats_the_short_us_form_of_csv_titles() {
        let end = days_from_civil(2017, 2, 25) * DAY_MS - 1;
        assert_eq!(us_short_datetime(end), "2/24/17 23:59:59");
        let ms = days_from_civil(2025, 3, 3) * DAY_MS + 9 * 3_600_000 + 5_123;
        assert_eq!(us_short_datetime(ms), "3/3/25 09:00:05");
        assert_eq!(
            us_short_datetime(days_from_civil(2100, 12, 31) * DAY_MS),
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
