//! A sample history: everyday activity of the default users from [`HISTORY_START_MS`]
//! (2025-12-01) until the sandbox's start, so that audit reports, the events stream and
//! the search corpus have something to show in a sandbox nobody has used yet.
//!
//! The history is the same for the same seed and end day: every id the sandbox assigns is
//! drawn in the same order, so two sandboxes started on the same day hold the same events
//! under the same ids (a consumer's checkpoint from one is valid in the other).
//!
//! Each day brings the default users' logins (a failed attempt now and then, from three
//! access points), and every few days a monthly project folder, a meeting-notes file, a
//! note on it, a new version, a permission change, a rename or a deletion.

use crate::{Activity, ActivityError, Sandbox};
use std::time::Duration;

/// 2025-12-01T00:00:00Z, the first day of the sample history.
pub const HISTORY_START_MS: i64 = 1_764_547_200_000;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

/// The users who log in every day, with their address and usual access point.
const LOGINS: [(&str, &str, &str); 3] = [
    ("admin", "192.0.2.10", "Web"),
    ("power", "198.51.100.23", "Mobile"),
    ("sam", "203.0.113.7", "Web"),
];

/// Plays the history on `sandbox`, whose clock stands at or before [`HISTORY_START_MS`],
/// one day at a time until the day before `end_ms`, then moves the clock to `end_ms`.
/// Returns how many things happened.
pub(crate) fn play(sandbox: &Sandbox, end_ms: i64) -> Result<usize, ActivityError> {
    let mut happened = 0;
    let days = (end_ms - HISTORY_START_MS).div_euclid(DAY_MS);
    for day in 0..days.max(0) {
        let midnight = HISTORY_START_MS + day * DAY_MS;
        at(sandbox, midnight + 8 * HOUR_MS);
        for (n, (user, ip, access)) in LOGINS.iter().enumerate() {
            let who = sandbox.activity_as(user);
            if (day + n as i64) % 9 == 0 {
                who.login("failed_attempts", "198.18.0.66", access)?;
                happened += 1;
            }
            who.login("logins", ip, if day % 5 == 4 { "FTP" } else { access })?;
            happened += 1;
        }
        at(sandbox, midnight + 10 * HOUR_MS);
        happened += files_of_the_day(sandbox, day)?;
        at(sandbox, midnight + 17 * HOUR_MS);
        for (user, ip, _) in LOGINS.iter().take(2) {
            sandbox.activity_as(user).login("logouts", ip, "Web")?;
            happened += 1;
        }
    }
    at(sandbox, end_ms);
    Ok(happened)
}

/// The clock at `ms` (never back: a sandbox started later than a step keeps its time).
fn at(sandbox: &Sandbox, ms: i64) {
    let now = sandbox.now_ms();
    if ms > now {
        sandbox.advance(Duration::from_millis((ms - now) as u64));
    }
}

/// Every third day a project's meeting notes; a note, a new version, a permission change,
/// a rename or a deletion on the days that follow.
fn files_of_the_day(sandbox: &Sandbox, day: i64) -> Result<usize, ActivityError> {
    // The notes of days 3k, 3k+1 and 3k+2 live in the folder of day 3k's month.
    let first = day - day % 3;
    let month = crate::iso_seconds(HISTORY_START_MS + first * DAY_MS)[..7].to_string();
    let folder = format!("/Projects/{month}");
    let sam = sandbox.activity_as("sam");
    let power = sandbox.activity_as("power");
    let mut happened = 0;
    if sandbox.entry(&folder).is_none() {
        if sandbox.entry("/Projects").is_none() {
            sandbox.activity().create_folder("/Projects")?;
            happened += 1;
        }
        power.create_folder(&folder)?;
        happened += 1;
    }
    let notes = format!("{folder}/meeting-{first:03}.txt");
    let text = |version: i64| {
        format!(
            "Meeting notes of day {}, version {version}: review the travel policy, the \
             retention of invoices and the webhook deliveries.",
            first
        )
    };
    let act = |activity: &Activity, step: &dyn Fn(&Activity) -> Result<(), ActivityError>| {
        step(activity).map(|()| 1)
    };
    happened += match day % 3 {
        0 => act(&sam, &|a| a.create_file(&notes, &text(1)).map(drop))?,
        1 => {
            act(&power, &|a| a.add_note(&notes, "Agreed, thanks."))?
                + act(&sam, &|a| a.create_file(&notes, &text(2)).map(drop))?
        }
        _ => match day % 4 {
            0 => act(&sandbox.activity(), &|a| {
                a.change_permission(&folder, "sam", Some("Viewer"), Some("Editor"))
            })?,
            1 => act(&sam, &|a| {
                a.move_entry(&notes, &notes.replace(".txt", "-final.txt"))
                    .map(drop)
            })?,
            2 => act(&power, &|a| a.delete(&notes).map(drop))?,
            _ => act(&sam, &|a| {
                a.add_note(&notes, "One more point for next time.")
            })?,
        },
    };
    Ok(happened)
}
