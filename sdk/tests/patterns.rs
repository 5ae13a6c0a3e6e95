//! The plain checks the `plain_patterns` transform generates for the spec's string `pattern`s
//! accept exactly what the pattern, run by `regress` (the ECMAScript engine typify used),
//! accepts: each checked type's `FromStr` against the pattern, on generated strings that
//! cluster around the edges (white space of every kind, `*` and `/` first, dates and times one
//! digit off, leap days).

use proptest::prelude::*;
use proptest::sample::select;
use pubapi_sdk::types::{
    AgentAskRequestQuestion, CalendarDate, FilesAuditRequestFile, FilesAuditRequestFoldersItem,
    ReportDate,
};
use std::str::FromStr;

const NON_BLANK: &str = r"\S";
const NOT_STAR_FIRST: &str = "^[^*]";
const SLASH_FIRST: &str = "^/";
const DATE: &str = "^([0-9]{4}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)";
const TIME: &str = "(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)?";

/// Characters around the edges of ECMAScript's `\s`: every white space and line terminator,
/// and the near misses (U+0085 and U+180E, U+200B, which Rust or older Unicode count as space).
const SPACEISH: [char; 27] = [
    '\t',
    '\n',
    '\u{b}',
    '\u{c}',
    '\r',
    ' ',
    '\u{a0}',
    '\u{1680}',
    '\u{2000}',
    '\u{2005}',
    '\u{200a}',
    '\u{2028}',
    '\u{2029}',
    '\u{202f}',
    '\u{205f}',
    '\u{3000}',
    '\u{feff}',
    '\u{85}',
    '\u{180e}',
    '\u{200b}',
    '\u{1f}',
    '\u{e}',
    'a',
    '*',
    '/',
    '-',
    '\u{1f600}',
];

/// Whether `value` matches `pattern` as the spec means it.
fn regress_matches(pattern: &str, value: &str) -> bool {
    regress::Regex::new(pattern).unwrap().find(value).is_some()
}

/// The spec writes every pattern compared here.
#[test]
fn the_patterns_are_the_specs() {
    let full_date = format!("{DATE}$");
    let report_date = format!("{DATE}{TIME}$");
    for pattern in [
        NON_BLANK,
        NOT_STAR_FIRST,
        SLASH_FIRST,
        &full_date,
        &report_date,
    ] {
        assert!(
            pubapi_sdk::SPEC_YAML.contains(&format!("pattern: '{pattern}'")),
            "{pattern}"
        );
    }
}

fn short_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop_oneof![select(&SPACEISH[..]), any::<char>()], 0..6)
        .prop_map(|chars| chars.into_iter().collect())
}

/// A date (and time) with each field one step around its bounds, sometimes with a character
/// changed, added or cut.
fn date_like() -> impl Strategy<Value = String> {
    let field = |values: &'static [u32]| select(values);
    (
        prop_oneof![
            select(&[0u32, 4, 100, 400, 1900, 2000, 2023, 2024, 2100, 9996, 9999][..]),
            0u32..10000
        ],
        field(&[0, 1, 2, 3, 4, 9, 10, 11, 12, 13]),
        field(&[0, 1, 9, 10, 19, 20, 28, 29, 30, 31, 32]),
        prop::option::of((
            field(&[0, 9, 19, 20, 23, 24]),
            field(&[0, 59, 60]),
            field(&[0, 59, 60]),
        )),
        prop::option::of((
            any::<prop::sample::Index>(),
            select(&['0', 'T', 'Z', ' ', '-', 'x'][..]),
            0u8..3,
        )),
    )
        .prop_map(|(year, month, day, time, edit)| {
            let mut text = format!("{year:04}-{month:02}-{day:02}");
            if let Some((h, m, s)) = time {
                text.push_str(&format!("T{h:02}:{m:02}:{s:02}Z"));
            }
            if let Some((at, c, how)) = edit {
                let at = at.index(text.len());
                match how {
                    0 => text.insert(at, c),
                    1 => text.replace_range(at..=at, &c.to_string()),
                    _ => {
                        text.remove(at);
                    }
                }
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn non_blank_is_the_patterns(text in short_text()) {
        prop_assert_eq!(
            AgentAskRequestQuestion::from_str(&text).is_ok(),
            !text.is_empty() && regress_matches(NON_BLANK, &text),
            "{:?}", text
        );
    }

    #[test]
    fn audited_paths_are_the_patterns(text in short_text()) {
        prop_assert_eq!(
            FilesAuditRequestFile::from_str(&text).is_ok(),
            regress_matches(NOT_STAR_FIRST, &text),
            "{:?}", text
        );
        prop_assert_eq!(
            FilesAuditRequestFoldersItem::from_str(&text).is_ok(),
            regress_matches(SLASH_FIRST, &text),
            "{:?}", text
        );
    }

    #[test]
    fn dates_are_the_patterns(text in prop_oneof![date_like(), short_text()]) {
        prop_assert_eq!(
            CalendarDate::from_str(&text).is_ok(),
            regress_matches(&format!("{DATE}$"), &text),
            "{:?}", text
        );
        prop_assert_eq!(
            ReportDate::from_str(&text).is_ok(),
            regress_matches(&format!("{DATE}{TIME}$"), &text),
            "{:?}", text
        );
    }
}

/// Every day of four centuries around the leap rules, as both date types and with a time.
#[test]
fn every_day_of_the_leap_cycle_is_the_patterns() {
    let date = regress::Regex::new(&format!("{DATE}$")).unwrap();
    let report = regress::Regex::new(&format!("{DATE}{TIME}$")).unwrap();
    for year in (1896..=1904).chain(1996..=2004).chain([0, 100, 400, 2100]) {
        for month in 0..=13 {
            for day in 0..=32 {
                let text = format!("{year:04}-{month:02}-{day:02}");
                let expected = date.find(&text).is_some();
                assert_eq!(CalendarDate::from_str(&text).is_ok(), expected, "{text}");
                assert_eq!(ReportDate::from_str(&text).is_ok(), expected, "{text}");
                let timed = format!("{text}T23:59:59Z");
                assert_eq!(
                    ReportDate::from_str(&timed).is_ok(),
                    report.find(&timed).is_some(),
                    "{timed}"
                );
            }
        }
    }
}
