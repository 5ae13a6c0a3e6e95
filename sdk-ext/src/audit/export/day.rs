//! [`ExportDay`]: one UTC calendar day, the unit an export writes and records. The calendar
//! is `jiff`'s (proleptic Gregorian); a day is kept as its count since 1970-01-01 so that the
//! day of an instant is one division.

use jiff::Span;
use jiff::civil::Date;
use std::fmt;

const DAY_MS: i64 = 86_400_000;

/// 1970-01-01, day 0.
const EPOCH: Date = jiff::civil::date(1970, 1, 1);

/// One UTC calendar day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExportDay {
    /// Days since 1970-01-01.
    days: i64,
}

impl ExportDay {
    /// The day `YYYY-MM-DD`; `None` when `text` is not a real date in that form.
    pub fn parse(text: &str) -> Option<ExportDay> {
        // The SDK's date parser: `YYYY-MM-DD`, a real date, no time.
        let date = crate::audit_date::AuditDate::parse(text).filter(|d| !d.has_time())?;
        let days = date.date().since(EPOCH).ok()?.get_days();
        Some(ExportDay {
            days: i64::from(days),
        })
    }

    /// The day `days` days after 1970-01-01.
    pub(super) const fn from_unix_days(days: i64) -> ExportDay {
        ExportDay { days }
    }

    /// The UTC day that contains `epoch_ms`.
    pub fn containing(epoch_ms: i64) -> ExportDay {
        ExportDay {
            days: epoch_ms.div_euclid(DAY_MS),
        }
    }

    /// The day after.
    pub fn next(self) -> ExportDay {
        ExportDay {
            days: self.days + 1,
        }
    }

    /// Its first instant, epoch milliseconds.
    pub fn start_ms(self) -> i64 {
        self.days * DAY_MS
    }

    /// The instant it ends (the next day's midnight), epoch milliseconds.
    pub fn end_ms(self) -> i64 {
        self.start_ms() + DAY_MS
    }

    /// Its date, `None` outside the years -9999 to 9999.
    fn date(self) -> Option<Date> {
        let days = Span::new().try_days(self.days).ok()?;
        EPOCH.checked_add(days).ok()
    }
}

impl fmt::Display for ExportDay {
    /// `YYYY-MM-DD`; a day outside the years -9999 to 9999 (which no state file names: a
    /// day is read as four digits of year) as its count of days since 1970-01-01.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.date() {
            Some(date) => write!(f, "{date}"),
            None => write!(f, "{} days from 1970-01-01", self.days),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_print_and_parse_back() {
        for text in [
            "1970-01-01",
            "2024-02-29",
            "2026-03-10",
            "2026-12-31",
            "9999-12-31",
        ] {
            let day = ExportDay::parse(text).unwrap();
            assert_eq!(day.to_string(), text);
            assert_eq!(ExportDay::containing(day.start_ms()), day);
            assert_eq!(ExportDay::containing(day.end_ms() - 1), day);
            assert_eq!(ExportDay::containing(day.end_ms()), day.next());
        }
        assert_eq!(ExportDay::parse("2026-02-29"), None);
        assert_eq!(ExportDay::parse("2026-03-10T00:00:00Z"), None);
        assert_eq!(ExportDay::parse("2026-3-1"), None);
        assert_eq!(
            ExportDay::parse("2026-12-31").unwrap().next().to_string(),
            "2027-01-01"
        );
    }

    /// The calendar the export kept by hand before it used `jiff` (Howard Hinnant's
    /// algorithm), kept here as the oracle the property below compares with.
    fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    fn civil_from_days(days: i64) -> (i64, u32, u32) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    /// Days of the years 0000 to 9999, the years a state file can name.
    const FIRST: i64 = -719_528;
    const LAST: i64 = 2_932_896;

    #[test]
    fn the_days_a_state_file_can_name_are_those_of_four_digit_years() {
        assert_eq!(ExportDay::parse("0000-01-01").unwrap().days, FIRST);
        assert_eq!(ExportDay::parse("9999-12-31").unwrap().days, LAST);
        assert_eq!(
            ExportDay { days: LAST + 1 }.to_string(),
            "2932897 days from 1970-01-01"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Every day prints as the old calendar printed it and parses back to itself: the
        /// year ends, February 29 of leap years and the century years among them.
        #[test]
        fn days_print_as_the_old_calendar_did_and_parse_back(days in FIRST..=LAST) {
            let day = ExportDay { days };
            let (y, m, d) = civil_from_days(days);
            let text = format!("{y:04}-{m:02}-{d:02}");
            proptest::prop_assert_eq!(&day.to_string(), &text);
            proptest::prop_assert_eq!(ExportDay::parse(&text), Some(day));
            proptest::prop_assert_eq!(days_from_civil(y, m, d), days);
        }

        /// The days around each year's end and each February's end, every year.
        #[test]
        fn year_ends_and_february_ends_follow_the_old_calendar(year in 0i64..=9999) {
            for (m, d) in [(1, 1), (2, 28), (3, 1), (12, 31)] {
                let days = days_from_civil(year, m, d);
                let text = format!("{year:04}-{m:02}-{d:02}");
                proptest::prop_assert_eq!(ExportDay::parse(&text).map(|day| day.days), Some(days));
                let before = ExportDay { days: days - 1 }.to_string();
                let (y, m, d) = civil_from_days(days - 1);
                if y >= 0 {
                    proptest::prop_assert_eq!(before, format!("{y:04}-{m:02}-{d:02}"));
                }
            }
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
            let feb29 = format!("{year:04}-02-29");
            proptest::prop_assert_eq!(ExportDay::parse(&feb29).is_some(), leap);
        }
    }
}
