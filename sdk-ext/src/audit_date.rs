//! Audit request dates: `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`, on `jiff`'s calendar.

use jiff::civil::Date;
use std::fmt;

/// A date or UTC timestamp as the audit API accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AuditDate {
    date: Date,
    /// Seconds since midnight; `None` for a date without time.
    time: Option<u32>,
}

impl AuditDate {
    /// Parses `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`, checking that the calendar date and
    /// the time exist.
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::AuditDate;
    /// assert!(AuditDate::parse("2024-02-29").is_some());
    /// assert!(AuditDate::parse("2023-02-29").is_none());
    /// assert!(AuditDate::parse("2024-01-31T23:59:59Z").is_some());
    /// assert!(AuditDate::parse("2024-01-31 23:59").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<AuditDate> {
        let bytes = text.as_bytes();
        let number = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = bytes.get(range)?;
            part.iter()
                .all(u8::is_ascii_digit)
                .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
        };
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
            return None;
        }
        // Four digits, two and two: each fits, and the calendar says whether the day exists.
        let date = Date::new(year as i16, month as i8, day as i8).ok()?;
        let time = match bytes.len() {
            10 => None,
            20 if bytes[10] == b'T'
                && bytes[13] == b':'
                && bytes[16] == b':'
                && bytes[19] == b'Z' =>
            {
                let (h, m, s) = (number(11..13)?, number(14..16)?, number(17..19)?);
                if h > 23 || m > 59 || s > 59 {
                    return None;
                }
                Some(h * 3600 + m * 60 + s)
            }
            _ => return None,
        };
        Some(AuditDate { date, time })
    }

    /// The same calendar day without its time (for reports whose API ignores the time).
    pub fn date_only(self) -> AuditDate {
        AuditDate { time: None, ..self }
    }

    /// The calendar date.
    pub(crate) fn date(&self) -> Date {
        self.date
    }

    /// Whether a time of day was given.
    pub fn has_time(&self) -> bool {
        self.time.is_some()
    }

    /// Whether a report period that ends at `self` (its `date_end`) ends after one that
    /// begins at `start` (its `date_start`) begins, the rule of reference 4.7 ("`date_end`
    /// must be after `date_start`").
    ///
    /// A timestamp is that instant. A plain date begins at its midnight as `date_start`,
    /// and as `date_end` is the last day covered, ending at the end of that day (the
    /// platform's clients document it so and the sandbox reads it so). A same-day range of
    /// plain dates is therefore that whole day, and is valid.
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::AuditDate;
    /// let day = |text| AuditDate::parse(text).unwrap();
    /// assert!(day("2026-01-01").ends_after(&day("2026-01-01")));
    /// assert!(day("2026-01-01").ends_after(&day("2026-01-01T23:59:59Z")));
    /// assert!(!day("2026-01-01T10:00:00Z").ends_after(&day("2026-01-01T10:00:00Z")));
    /// assert!(!day("2026-01-01").ends_after(&day("2026-01-02")));
    /// ```
    pub fn ends_after(&self, start: &AuditDate) -> bool {
        const END_OF_DAY: u32 = 24 * 3600;
        let end = (self.date, self.time.unwrap_or(END_OF_DAY));
        let begin = (start.date, start.time.unwrap_or(0));
        end > begin
    }
}

impl fmt::Display for AuditDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.date)?;
        if let Some(t) = self.time {
            write!(f, "T{:02}:{:02}:{:02}Z", t / 3600, t / 60 % 60, t % 60)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_documented_forms_parse_and_print_back() {
        for text in ["2024-01-01", "2024-12-31T23:59:59Z", "2000-02-29"] {
            assert_eq!(AuditDate::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn malformed_or_impossible_dates_are_refused() {
        for text in [
            "",
            "2024-1-01",
            "2024/01/01",
            "2024-13-01",
            "2024-04-31",
            "1900-02-29",
            "2024-01-01T24:00:00Z",
            "2024-01-01T10:00:00",
            "2024-01-01T10:00:00+01:00",
            "2024-01-01T10:00Z",
            "２０２４-01-01",
        ] {
            assert!(AuditDate::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn date_end_must_be_after_date_start_with_a_plain_date_end_covering_its_day() {
        // (date_start, date_end, valid): reference 4.7, with a plain-date `date_end` the
        // last day covered.
        let cases = [
            ("2024-01-01", "2024-01-01", true),
            ("2024-01-01", "2024-01-02", true),
            ("2024-01-02", "2024-01-01", false),
            ("2024-01-01T12:00:00Z", "2024-01-01", true),
            ("2024-01-01T23:59:59Z", "2024-01-01", true),
            ("2024-01-02T00:00:00Z", "2024-01-01", false),
            ("2024-01-01", "2024-01-01T00:00:00Z", false),
            ("2024-01-01", "2024-01-01T00:00:01Z", true),
            ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z", false),
            ("2024-01-01T10:00:00Z", "2024-01-01T10:00:01Z", true),
            ("2024-12-31", "2025-01-01T00:00:00Z", true),
        ];
        for (start, end, valid) in cases {
            let (start_date, end_date) = (
                AuditDate::parse(start).unwrap(),
                AuditDate::parse(end).unwrap(),
            );
            assert_eq!(end_date.ends_after(&start_date), valid, "{start} .. {end}");
        }
    }

    /// The rule the parser kept by hand before it used `jiff`: the oracle of the property
    /// below.
    fn days_in_month(year: u32, month: u32) -> u32 {
        match month {
            2 if (year.is_multiple_of(4) && !year.is_multiple_of(100))
                || year.is_multiple_of(400) =>
            {
                29
            }
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// A date parses exactly when the old rule said it exists (leap days, century years,
        /// month ends, months 00 and 13), and prints back as given.
        #[test]
        fn a_date_exists_as_the_old_rule_said(year in 0u32..=9999, month in 0u32..=13, day in 0u32..=32) {
            let text = format!("{year:04}-{month:02}-{day:02}");
            let exists = (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
            let parsed = AuditDate::parse(&text);
            proptest::prop_assert_eq!(parsed.is_some(), exists, "{}", text);
            if let Some(date) = parsed {
                proptest::prop_assert_eq!(date.to_string(), text);
            }
        }

        /// Plain dates and timestamps order as the old fields did: by year, month, day, then
        /// time (none first).
        #[test]
        fn dates_order_by_day_then_time(a in 0u32..=9999, b in 0u32..=9999, t in 0u32..86_400) {
            let day = |y: u32| AuditDate::parse(&format!("{y:04}-12-31")).unwrap();
            let timed = |y: u32| {
                AuditDate::parse(&format!(
                    "{y:04}-12-31T{:02}:{:02}:{:02}Z",
                    t / 3600,
                    t / 60 % 60,
                    t % 60
                ))
                .unwrap()
            };
            proptest::prop_assert_eq!(day(a).cmp(&day(b)), a.cmp(&b));
            proptest::prop_assert!(day(a) < timed(a));
            proptest::prop_assert_eq!(timed(a).cmp(&day(b)), if a == b { std::cmp::Ordering::Greater } else { a.cmp(&b) });
        }
    }
}
