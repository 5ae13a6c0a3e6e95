//! [`ExportDay`]: one UTC calendar day, the unit an export writes and records.

use std::fmt;

const DAY_MS: i64 = 86_400_000;

/// One UTC calendar day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExportDay {
    /// Days since 1970-01-01.
    days: i64,
}

impl ExportDay {
    /// The day `YYYY-MM-DD`; `None` when `text` is not a real date in that form.
    pub fn parse(text: &str) -> Option<ExportDay> {
        // Checked by the SDK's date parser first: `YYYY-MM-DD`, a real date, no time.
        crate::audit_date::AuditDate::parse(text).filter(|d| !d.has_time())?;
        let (y, m, d) = (
            text[0..4].parse::<i64>().ok()?,
            text[5..7].parse::<u32>().ok()?,
            text[8..10].parse::<u32>().ok()?,
        );
        Some(ExportDay {
            days: days_from_civil(y, m, d),
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
}

impl fmt::Display for ExportDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days(self.days);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
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
}
